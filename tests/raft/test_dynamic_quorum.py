"""A dynamic quorum (KIP-853) on the sans-I/O core: voters from the bootstrap snapshot, written into
the log by the first leader, found by observers through bootstrap servers; AddRaftVoter and
RemoveRaftVoter with Kafka's checks and texts.

The nodes talk through a small synchronous router that delivers each effect to the node the
address names (the core's own address book: voters' endpoints, bootstrap servers, the leader
endpoints of Fetch responses); ApiVersions, which the core sends to a voter being added, is
answered with the ranges the test chooses (that answer belongs to the controller, not to raft).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import KRAFT_VERSION_RECORD, VOTERS_RECORD, ControlRecordType
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.raft import (
    MemoryQuorumStateStore,
    MemoryRaftLog,
    RaftConfig,
    RaftNode,
    Role,
    SendRequest,
    SendResponse,
    SnapshotId,
    Voter,
    VoterEndpoint,
    VoterSet,
)
from kraftwerk.records.batch import iter_batches
from kraftwerk.storage.metadata_log import snapshot_file_batches

LISTENER = "CONTROLLER"
BOOTSTRAP = (("c1", 9001), ("c2", 9002), ("c3", 9003))
TOOL = -1  # the source id of a request from an admin tool


def directory(node_id: int) -> uuid.UUID:
    return uuid.UUID(int=1000 + node_id)


def voter(node_id: int) -> Voter:
    endpoint = VoterEndpoint(node_id, LISTENER, f"c{node_id}", 9000 + node_id)
    return Voter(node_id, directory(node_id), (endpoint,), (0, 1))


def bootstrap_log(voters: VoterSet) -> MemoryRaftLog:
    """What ``kafka-storage format --initial-controllers`` leaves: the 0-0 snapshot with the voters."""
    log = MemoryRaftLog()
    data = b"".join(snapshot_file_batches([], kraft_version=1, voters=voters.to_record(), clock=lambda: 0))
    log.write_snapshot(SnapshotId(0, 0), data)
    return log


class Net:
    """Delivers every effect at once, by address; time moves in steps of ``tick`` ms."""

    def __init__(self) -> None:
        self.nodes: dict[int, RaftNode] = {}
        self.now = 0
        self.kraft_ranges: dict[int, tuple[int, int]] = {}
        self.answers: dict[int, dict[str, Any]] = {}  # correlation id -> a tool's response
        self.in_flight: dict[tuple[int, int], int] = {}  # (requester, correlation id) -> id sent to

    def add(self, node_id: int, *, log: MemoryRaftLog | None = None,
            static: tuple[int, ...] = ()) -> RaftNode:
        cfg = RaftConfig(node_id, static, cluster_id="dyn", directory_id=directory(node_id),
                         listener_name=LISTENER, bootstrap_servers=() if static else BOOTSTRAP,
                         voter_endpoints=tuple(e for v in static for e in voter(v).endpoints))
        node = RaftNode(cfg, log or MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=self.now, seed=node_id)
        self.nodes[node_id] = node
        self.kraft_ranges.setdefault(node_id, (0, 1))
        return node

    def _node_at(self, src: RaftNode, dest: int) -> int | None:
        address = src.address_of(dest)
        if address is None:
            return dest if dest in self.nodes else None
        return next((i for i in self.nodes if address == (f"c{i}", 9000 + i)), None)

    def deliver(self, src_id: int, effects: list[Any]) -> None:
        queue = [(src_id, e) for e in effects]
        while queue:
            src, effect = queue.pop(0)
            if isinstance(effect, SendResponse):
                if effect.destination == TOOL:
                    self.answers[effect.correlation_id] = effect.body
                    continue
                # the requester knows the request by the id it sent it to (a bootstrap id maybe)
                sent_to = self.in_flight.pop((effect.destination, effect.correlation_id))
                queue += [(effect.destination, e) for e in self.nodes[effect.destination].handle_response(
                    sent_to, effect.api_key, effect.version, effect.body, effect.correlation_id, self.now)]
                continue
            assert isinstance(effect, SendRequest)
            dest = self._node_at(self.nodes[src], effect.destination)
            if dest is None:
                queue += [(src, e) for e in self.nodes[src].handle_send_failure(
                    effect.destination, effect.correlation_id, self.now)]
            elif effect.api_key == ApiKey.API_VERSIONS:
                low, high = self.kraft_ranges[dest]
                body: dict[str, Any] = {"errorCode": 0, "supportedFeatures": [
                    {"name": "kraft.version", "minVersion": low, "maxVersion": high}]}
                queue += [(src, e) for e in self.nodes[src].handle_response(
                    effect.destination, effect.api_key, effect.version, body, effect.correlation_id,
                    self.now)]
            else:
                self.in_flight[(src, effect.correlation_id)] = effect.destination
                queue += [(dest, e) for e in self.nodes[dest].handle_request(
                    src, effect.api_key, effect.version, effect.body, effect.correlation_id, self.now)]

    def run(self, ms: int, tick: int = 10) -> None:
        end = self.now + ms
        while self.now < end:
            self.now += tick
            for node_id, node in list(self.nodes.items()):
                self.deliver(node_id, node.poll(self.now))

    def leader(self) -> RaftNode:
        leaders = [n for n in self.nodes.values() if n.role is Role.LEADER]
        assert len(leaders) == 1, [(i, n.role) for i, n in self.nodes.items()]
        return leaders[0]

    def request(self, api_key: int, body: dict[str, Any], correlation_id: int) -> None:
        leader = self.leader()
        self.deliver(leader.node_id, leader.handle_request(TOOL, api_key, 0, body, correlation_id, self.now))


def dynamic_cluster(voters: int = 3) -> Net:
    net = Net()
    initial = VoterSet.of(voter(i) for i in range(1, voters + 1))
    for i in range(1, voters + 1):
        net.add(i, log=bootstrap_log(initial))
    net.run(4_000)
    return net


def add_body(node_id: int, **overrides: Any) -> dict[str, Any]:
    body = {"clusterId": "dyn", "timeoutMs": 5_000, "voterId": node_id,
            "voterDirectoryId": directory(node_id),
            "listeners": [{"name": LISTENER, "host": f"c{node_id}", "port": 9000 + node_id}]}
    body.update(overrides)
    return body


def test_voters_come_from_the_bootstrap_snapshot_and_the_first_leader_logs_them() -> None:
    net = dynamic_cluster()
    leader = net.leader()
    assert leader.voters == (1, 2, 3) and leader.kraft_version == 1
    first = next(iter_batches(leader.log.read(0, 1 << 20)))
    types = [int.from_bytes(bytes(r.key or b"")[2:4], "big") for r in first.records()]
    assert types == [ControlRecordType.LEADER_CHANGE, ControlRecordType.KRAFT_VERSION,
                     ControlRecordType.KRAFT_VOTERS]
    values = [bytes(r.value or b"") for r in first.records()]
    assert codec.decode(KRAFT_VERSION_RECORD, 0, values[1])["kRaftVersion"] == 1
    logged = VoterSet.from_record(codec.decode(VOTERS_RECORD, 0, values[2]))
    assert logged == VoterSet.of(voter(i) for i in (1, 2, 3))
    for node in net.nodes.values():
        assert node.kraft_version_at(node.high_watermark or 0) == 1
        assert node.is_voter


def test_an_observer_finds_the_leader_through_the_bootstrap_servers() -> None:
    net = dynamic_cluster()
    broker = net.add(7)  # no snapshot, no static voters: only controller.quorum.bootstrap.servers
    assert broker.voters == () and not broker.is_voter
    net.run(2_000)
    leader = net.leader()
    assert broker.leader_id == leader.node_id and broker.role is Role.FOLLOWER
    assert broker.voters == (1, 2, 3) and not broker.is_voter
    assert broker.high_watermark == leader.high_watermark
    assert broker.address_of(leader.node_id) == (f"c{leader.node_id}", 9000 + leader.node_id)


def test_add_voter_after_it_caught_up_then_remove_the_leader(caplog: pytest.LogCaptureFixture) -> None:
    net = dynamic_cluster()
    newcomer = net.add(4)
    net.run(2_000)  # it follows as an observer first
    with caplog.at_level("INFO", logger="kraftwerk.raft.roles.leader"):
        net.request(ApiKey.ADD_RAFT_VOTER, add_body(4), 1)
        net.run(1_000)
    assert net.answers[1] == {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None}
    for node in net.nodes.values():
        assert node.voters == (1, 2, 3, 4)
    adder = net.leader()
    [appended] = [m for m in caplog.messages if "appended the voter set" in m]
    where = adder.log.end_offset - 1  # the VotersRecord, the last record (nothing appended since)
    keys = adder.voter_set.keys_text
    assert appended == f"node {adder.node_id} appended the voter set {keys} at offset {where}"
    assert newcomer.is_voter
    # the new voter now counts: removing the leader makes it resign once the change commits
    old = net.leader()
    net.request(ApiKey.REMOVE_RAFT_VOTER, {"clusterId": "dyn", "voterId": old.node_id,
                                        "voterDirectoryId": directory(old.node_id)}, 2)
    with caplog.at_level("INFO", logger="kraftwerk.raft.roles.leader"):
        net.run(6_000)
    assert net.answers[2]["errorCode"] == 0
    resigned = [m for m in caplog.messages if "resigning" in m]
    new = net.leader()
    assert resigned[0] == (f"leader {old.node_id} is not in the committed voter set "
                           f"{new.voter_set.keys_text}; resigning from epoch {old.epoch}")
    assert new is not old and not old.is_voter and old.role is not Role.LEADER
    assert new.voters == tuple(sorted({1, 2, 3, 4} - {old.node_id}))


def _error(net: Net, api_key: int, body: dict[str, Any], correlation_id: int) -> tuple[Errors, str | None]:
    net.request(api_key, body, correlation_id)
    net.run(200)
    answer = net.answers[correlation_id]
    return Errors.for_code(answer["errorCode"]), answer["errorMessage"]


def key(node_id: int, directory_id: uuid.UUID | None = None) -> str:
    shown = uuid_to_str(directory_id or directory(node_id))
    return f"ReplicaKey(id={node_id}, directoryId=Optional[{shown}])"


def test_voter_changes_are_refused_with_kafkas_errors() -> None:
    net = dynamic_cluster()
    keys = f"[{key(1)}, {key(2)}, {key(3)}]"
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(2), 1) == (
        Errors.DUPLICATE_VOTER, f"The voter id for {key(2)} is already part of the set of voters {keys}.")
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(5, voterDirectoryId=uuid.UUID(int=0)), 2) == (
        Errors.INVALID_REQUEST, "Add voter request didn't include a valid voter")
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(5, clusterId="other"), 3) == (
        Errors.INCONSISTENT_CLUSTER_ID, 'The given id "other" doesn\'t match the cluster id "dyn"')
    # a voter whose software cannot run kraft.version 1
    net.add(5)
    net.kraft_ranges[5] = (0, 0)
    net.run(1_000)
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(5), 4) == (
        Errors.INVALID_REQUEST,
        f"Aborted add voter operation for {key(5)} since the kraft.version range (min: 0, max: 0 doesn't "
        "support the finalized version 1")
    # nothing listens where voter 6 would be
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(6), 5) == (
        Errors.REQUEST_TIMED_OUT, f"New voter {key(6)} is not ready to receive requests")
    assert _error(net, ApiKey.REMOVE_RAFT_VOTER, {"clusterId": "dyn", "voterId": 2,
                                               "voterDirectoryId": directory(9)}, 6) == (
        Errors.VOTER_NOT_FOUND, f"Cannot remove voter {key(2, directory(9))} from the set of voters {keys}")
    follower = next(n for n in net.nodes.values() if n.role is Role.FOLLOWER and n.is_voter)
    effects = follower.handle_request(TOOL, ApiKey.REMOVE_RAFT_VOTER, 0, {"voterId": 1,
                                      "voterDirectoryId": directory(1)}, 7, net.now)
    assert [e.body["errorCode"] for e in effects] == [Errors.NOT_LEADER_OR_FOLLOWER.value.code]
    assert [n.voters for n in net.nodes.values()] == [(1, 2, 3)] * len(net.nodes)
    net.add(7)  # it answers ApiVersions, but has not fetched from the leader yet
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(7), 8) == (
        Errors.REQUEST_TIMED_OUT, f"Aborted add voter operation for {key(7)} since it is lagging behind")


def test_a_static_quorum_cannot_change_its_voters() -> None:
    net = Net()
    for i in (1, 2, 3):
        net.add(i, static=(1, 2, 3))
    net.run(4_000)
    assert _error(net, ApiKey.ADD_RAFT_VOTER, add_body(4), 1) == (
        Errors.UNSUPPORTED_VERSION,
        "Cluster doesn't support adding voter because the kraft.version feature is 0")
    assert _error(net, ApiKey.REMOVE_RAFT_VOTER, {"voterId": 3, "voterDirectoryId": directory(3)}, 2) == (
        Errors.UNSUPPORTED_VERSION,
        "Cluster doesn't support removing voter because the kraft.version feature is 0")
