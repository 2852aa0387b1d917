"""Leader and follower rules over a hand-run network of real RaftNodes (bodies passed as dicts)."""

from __future__ import annotations

from typing import Any

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import LEADER_CHANGE_MESSAGE
from kraftwerk.raft import (
    METADATA_TOPIC_ID,
    CommittedBatch,
    Effect,
    ElectionState,
    KRaftVersionError,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    RaftConfig,
    RaftNode,
    RaftStateError,
    Role,
    SendRequest,
    SendResponse,
    SnapshotLoad,
)
from kraftwerk.records import RecordsBuilder

Body = dict[str, Any]


class Net:
    """Nodes and the messages between them; ``drop`` names the destinations cut off."""

    def __init__(self, *nodes: RaftNode) -> None:
        self.nodes = {n.node_id: n for n in nodes}
        self.queue: list[tuple[int, Effect]] = []
        self.drop: set[int] = set()
        self.seen: list[tuple[int, Effect]] = []
        self.now = 0  # when the set-up finished

    def add(self, src: int, effects: list[Effect]) -> None:
        self.queue.extend((src, e) for e in effects)

    def run(self, now: int, steps: int = 200) -> None:
        while self.queue and steps:
            steps -= 1
            src, e = self.queue.pop(0)
            self.seen.append((src, e))
            dst = self.nodes.get(e.destination)
            if dst is None or e.destination in self.drop or src in self.drop:
                continue
            if isinstance(e, SendRequest):
                out = dst.handle_request(src, e.api_key, e.version, e.body, e.correlation_id, now)
            else:
                out = dst.handle_response(src, e.api_key, e.version, e.body, e.correlation_id, now)
            self.add(e.destination, out)

    def tick(self, now: int) -> None:
        for nid, n in self.nodes.items():
            self.add(nid, n.poll(now))
        self.run(now)

    def sent(self, api_key: int, src: int | None = None) -> list[SendRequest]:
        return [e for s, e in self.seen if isinstance(e, SendRequest) and e.api_key == api_key
                and (src is None or s == src)]


def make(nid: int, voters: tuple[int, ...], state: ElectionState | None = None, **cfg: Any) -> RaftNode:
    store = MemoryQuorumStateStore(state) if state is not None else MemoryQuorumStateStore()
    return RaftNode(RaftConfig(nid, voters, **cfg), MemoryRaftLog(), store, now_ms=0, seed=nid)


def leader_and_follower(**cfg: Any) -> tuple[Net, RaftNode, RaftNode]:
    """Node 1 leads voters (1, 2), elected from epoch 2; 2 follows and has fetched once."""
    leader = make(1, (1, 2), ElectionState(2, None, None), **cfg)
    follower = make(2, (1, 2), ElectionState(2, None, None), **cfg)
    net = Net(leader, follower)
    now = 0
    while leader.role is not Role.LEADER:
        now = min(leader.next_deadline_ms(), follower.next_deadline_ms())
        net.add(1, leader.poll(now))
        net.run(now)
    net.tick(now)
    net.now = now
    return net, leader, follower


def commit(net: Net, leader: RaftNode, values: list[bytes], now: int) -> int:
    last = leader.append(values, now)
    for t in range(now, now + 200, 5):
        net.tick(t)
    assert leader.high_watermark is not None and leader.high_watermark > last
    return last


# ---------------------------------------------------------------------------------- follower
def test_a_follower_replicates_and_commits_what_the_leader_commits() -> None:
    net, leader, follower = leader_and_follower()
    assert follower.role is Role.FOLLOWER and follower.leader_id == 1 and follower.epoch == leader.epoch
    last = commit(net, leader, [b"a", b"b"], net.now + 10)
    assert follower.log.end_offset == leader.log.end_offset and follower.log.flushed_offset == last + 1
    assert follower.high_watermark == leader.high_watermark
    batches = [c for c in follower.drain_committed() if isinstance(c, CommittedBatch) and not c.is_control]
    assert [b.records for b in batches] == [(b"a", b"b")]
    fetch = net.sent(ApiKey.FETCH, 2)[-1]
    part = fetch.body["topics"][0]["partitions"][0]
    assert (part["fetchOffset"], part["lastFetchedEpoch"], part["currentLeaderEpoch"]) == (
        follower.log.end_offset, leader.epoch, leader.epoch)
    assert fetch.body["replicaState"]["replicaId"] == 2


def test_a_follower_never_claims_more_committed_than_it_holds() -> None:
    _, _leader, follower = leader_and_follower()
    fetch_body = {"errorCode": 0, "responses": [{"partitions": [{
        "partitionIndex": 0, "errorCode": 0, "highWatermark": 50, "currentLeader":
        {"leaderId": 1, "leaderEpoch": follower.epoch}, "records": None}]}]}
    out = follower.poll(follower.next_deadline_ms())
    req = [e for e in out + follower.take_effects() if isinstance(e, SendRequest)]
    if not req:  # its fetch is parked at the leader: answer the one in flight
        return
    follower.handle_response(1, ApiKey.FETCH, 17, fetch_body, req[0].correlation_id, 5)
    assert follower.high_watermark == follower.log.flushed_offset


def test_a_voter_follower_stands_for_election_when_the_leader_goes_quiet() -> None:
    net, _leader, follower = leader_and_follower()
    start = net.now + 300
    for t in range(net.now, start, 10):  # the follower fetches and is answered
        net.tick(t)
    net.drop.add(1)
    deadline = start
    while follower.role is Role.FOLLOWER:
        deadline = follower.next_deadline_ms()
        net.add(2, follower.poll(deadline))
        net.run(deadline)
    assert follower.role is Role.PROSPECTIVE
    assert start <= deadline <= start + follower.config.fetch_timeout_ms  # its last good fetch + timeout


def test_an_observer_follower_goes_back_to_looking_when_the_leader_goes_quiet() -> None:
    net, _leader, _ = leader_and_follower()
    obs = make(3, (1, 2))
    net.nodes[3] = obs
    net.tick(net.now + 50)
    net.tick(net.now + 60)
    assert obs.role is Role.FOLLOWER and obs.leader_id == 1
    stored = obs.quorum_info().epoch
    net.drop.add(1)
    while obs.role is Role.FOLLOWER:
        t = obs.next_deadline_ms()
        net.add(3, obs.poll(t))
        net.run(t)
    assert obs.role is Role.UNATTACHED and obs.leader_id is None and obs.epoch == stored


def test_a_follower_retries_a_failed_fetch_after_the_backoff() -> None:
    follower = make(2, (1, 2), ElectionState(3, 1, None))
    [fetch] = [e for e in follower.poll(0) if isinstance(e, SendRequest)]
    bad = {"errorCode": 0, "responses": [{"partitions": [{
        "partitionIndex": 0, "errorCode": 6, "highWatermark": -1,  # NOT_LEADER_OR_FOLLOWER
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "records": None}]}]}
    assert follower.handle_response(1, ApiKey.FETCH, 17, bad, fetch.correlation_id, 10) == []
    retry = 10 + follower.config.retry_backoff_ms
    assert follower.next_deadline_ms() == retry
    [fetch] = follower.poll(retry)
    assert isinstance(fetch, SendRequest) and fetch.api_key == ApiKey.FETCH
    follower.handle_send_failure(1, fetch.correlation_id, retry)
    assert follower.next_deadline_ms() == retry + follower.config.retry_backoff_ms
    [fetch] = follower.poll(retry + follower.config.retry_backoff_ms)
    assert isinstance(fetch, SendRequest)
    whole = {"errorCode": 37, "responses": []}  # the answer failed as a whole
    follower.handle_response(1, ApiKey.FETCH, 17, whole, fetch.correlation_id, 100)
    assert follower.next_deadline_ms() == 100 + follower.config.retry_backoff_ms


def test_end_quorum_epoch_lets_the_preferred_successor_time_out_first() -> None:
    timeouts = {}
    for nid, successors in ((2, [2, 3]), (3, [2, 3])):
        n = make(nid, (1, 2, 3), ElectionState(3, 1, None), fetch_timeout_ms=5000)
        n.poll(0)
        body = {"clusterId": None, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
            "partitionIndex": 0, "leaderId": 1, "leaderEpoch": 3,
            "preferredCandidates": [{"candidateId": s} for s in successors]}]}]}
        [resp] = n.handle_request(1, ApiKey.END_QUORUM_EPOCH, 1, body, 9, 100)
        assert isinstance(resp, SendResponse) and resp.body["topics"][0]["partitions"][0]["errorCode"] == 0
        t = n.next_deadline_ms()
        while n.role is Role.FOLLOWER:
            t = n.next_deadline_ms()
            n.poll(t)
        timeouts[nid] = t
        assert n.role is Role.PROSPECTIVE
    # first in line at once, second after half of election.backoff.max.ms (the rule: test_follower.py)
    assert timeouts == {2: 100, 3: 100 + RaftConfig(1, (1,)).election_backoff_max_ms // 2}


def test_end_quorum_epoch_from_the_leader_allows_pre_votes_at_once() -> None:
    net, _leader, follower = leader_and_follower()
    part = {"partitionIndex": 0, "replicaId": 1, "replicaEpoch": follower.epoch + 1, "lastOffsetEpoch": 99,
            "lastOffset": 99, "preVote": True}
    prevote = {"clusterId": None, "voterId": 2,
               "topics": [{"topicName": "__cluster_metadata", "partitions": [part]}]}
    [no] = follower.handle_request(1, ApiKey.VOTE, 2, prevote, 1, net.now + 1)
    assert no.body["topics"][0]["partitions"][0]["voteGranted"] is False  # it hears from its leader
    end = {"clusterId": None, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
        "partitionIndex": 0, "leaderId": 1, "leaderEpoch": follower.epoch, "preferredCandidates": []}]}]}
    follower.handle_request(1, ApiKey.END_QUORUM_EPOCH, 1, end, 2, net.now + 2)
    [yes] = follower.handle_request(1, ApiKey.VOTE, 2, prevote, 3, net.now + 3)
    assert yes.body["topics"][0]["partitions"][0]["voteGranted"] is True


def test_a_lagging_follower_downloads_the_leaders_snapshot_in_chunks() -> None:
    net, leader, _follower = leader_and_follower(fetch_snapshot_max_bytes=64)
    commit(net, leader, [b"x" * 40, b"y" * 40], net.now + 10)
    hw = leader.high_watermark
    assert hw is not None
    leader.drain_committed()
    sid = leader.create_snapshot(hw, [b"state"], net.now + 300)
    assert leader.log.start_offset == hw
    # a fresh replica with an empty log catches up from the snapshot
    fresh = make(2, (1, 2), ElectionState(leader.epoch, 1, None), fetch_snapshot_max_bytes=64)
    net.nodes[2] = fresh
    for t in range(net.now + 400, net.now + 2000, 5):
        net.tick(t)
        if fresh.log.end_offset >= hw:
            break
    chunks = net.sent(ApiKey.FETCH_SNAPSHOT, 2)
    positions = [c.body["topics"][0]["partitions"][0]["position"] for c in chunks]
    assert len(positions) >= 2 and positions[:2] == [0, 64]
    assert fresh.log.start_offset == sid.end_offset and fresh.high_watermark is not None
    assert fresh.high_watermark >= sid.end_offset
    loads = [c for c in fresh.drain_committed() if isinstance(c, SnapshotLoad)]
    assert loads and loads[0].records == (b"state",) and loads[0].end_offset == sid.end_offset


def test_a_snapshot_the_leader_no_longer_has_restarts_the_fetch() -> None:
    follower = make(2, (1, 2), ElectionState(3, 1, None))
    [fetch] = [e for e in follower.poll(0) if isinstance(e, SendRequest)]
    to_snapshot = {"errorCode": 0, "responses": [{"partitions": [{
        "partitionIndex": 0, "errorCode": 0, "highWatermark": 5, "snapshotId": {"endOffset": 5, "epoch": 3},
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "records": None}]}]}
    out = follower.handle_response(1, ApiKey.FETCH, 17, to_snapshot, fetch.correlation_id, 1)
    [chunk_req] = [e for e in out if isinstance(e, SendRequest)]
    assert chunk_req.api_key == ApiKey.FETCH_SNAPSHOT
    part = chunk_req.body["topics"][0]["partitions"][0]
    assert part["snapshotId"] == {"endOffset": 5, "epoch": 3} and part["position"] == 0
    gone = {"errorCode": 0, "topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "errorCode": 98, "snapshotId": {"endOffset": 5, "epoch": 3},  # SNAPSHOT_NOT_FOUND
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "size": 0, "position": 0,
        "unalignedRecords": b""}]}]}
    follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1, gone, chunk_req.correlation_id, 2)
    retry = 2 + follower.config.retry_backoff_ms
    assert follower.next_deadline_ms() == retry
    [again] = follower.poll(retry)
    assert isinstance(again, SendRequest) and again.api_key == ApiKey.FETCH  # asks which snapshot now


def test_a_chunk_at_the_wrong_position_restarts_the_download() -> None:
    follower = make(2, (1, 2), ElectionState(3, 1, None))
    [fetch] = [e for e in follower.poll(0) if isinstance(e, SendRequest)]
    to_snapshot = {"errorCode": 0, "responses": [{"partitions": [{
        "partitionIndex": 0, "errorCode": 0, "highWatermark": 5, "snapshotId": {"endOffset": 5, "epoch": 3},
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "records": None}]}]}
    [chunk_req] = follower.handle_response(1, ApiKey.FETCH, 17, to_snapshot, fetch.correlation_id, 1)
    wrong = {"errorCode": 0, "topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "errorCode": 0, "snapshotId": {"endOffset": 5, "epoch": 3},
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "size": 100, "position": 10,
        "unalignedRecords": b"z" * 10}]}]}
    assert follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1, wrong, chunk_req.correlation_id, 2) == []
    retry = 2 + follower.config.retry_backoff_ms
    [again] = follower.poll(retry)
    assert isinstance(again, SendRequest) and again.api_key == ApiKey.FETCH
    assert follower.log.end_offset == 0


def fetch_answer(follower: RaftNode, **part: Any) -> Body:
    return {"errorCode": 0, "responses": [{"partitions": [{
        "partitionIndex": 0, "errorCode": 0, "highWatermark": -1, "records": None,
        "currentLeader": {"leaderId": 1, "leaderEpoch": follower.epoch}, **part}]}]}


def test_a_follower_refuses_to_truncate_below_what_it_committed() -> None:
    follower = make(2, (1, 2), ElectionState(3, 1, None))
    [fetch] = follower.poll(0)
    assert isinstance(fetch, SendRequest)
    batch = RecordsBuilder(base_offset=0, partition_leader_epoch=3)
    batch.append(0, None, b"a")
    out = follower.handle_response(1, ApiKey.FETCH, 17, fetch_answer(follower, records=batch.build(),
                                                                    highWatermark=1), fetch.correlation_id, 5)
    assert follower.high_watermark == 1 and follower.log.flushed_offset == 1
    assert [c.records for c in follower.drain_committed() if isinstance(c, CommittedBatch)] == [(b"a",)]
    [fetch] = [e for e in out if isinstance(e, SendRequest)]
    assert fetch.body["topics"][0]["partitions"][0]["fetchOffset"] == 1  # the next one went at once
    diverge = fetch_answer(follower, divergingEpoch={"epoch": 2, "endOffset": 0})
    with pytest.raises(RaftStateError, match="below the committed offset 1"):
        follower.handle_response(1, ApiKey.FETCH, 17, diverge, fetch.correlation_id, 6)


# ---------------------------------------------------------------------------------- leader
def fetch_request(offset: int, last_epoch: int, leader_epoch: int, replica: int = 2, wait: int = 0,
                  cluster: str | None = None) -> Body:
    return {"clusterId": cluster, "replicaState": {"replicaId": replica, "replicaEpoch": -1},
            "maxWaitMs": wait, "minBytes": 0, "topics": [{"partitions": [{
                "partition": 0, "currentLeaderEpoch": leader_epoch, "fetchOffset": offset,
                "lastFetchedEpoch": last_epoch, "partitionMaxBytes": 1 << 20}]}]}


def fetch_error(n: RaftNode, body: Body, now: int = 5000) -> tuple[int, int]:
    [resp] = n.handle_request(2, ApiKey.FETCH, 17, body, 77, now)
    assert isinstance(resp, SendResponse) and resp.correlation_id == 77
    top = resp.body["errorCode"]
    parts = resp.body["responses"]
    return top, parts[0]["partitions"][0]["errorCode"] if parts else -1


def test_the_leader_refuses_fetches_it_cannot_serve() -> None:
    _, leader, follower = leader_and_follower(cluster_id="c1")
    e = leader.epoch
    other = fetch_request(0, 0, e, cluster="other")
    assert fetch_error(leader, other) == (104, -1)  # INCONSISTENT_CLUSTER_ID
    assert fetch_error(leader, {"clusterId": None, "topics": []}) == (42, -1)  # INVALID_REQUEST
    assert fetch_error(leader, fetch_request(0, 0, e + 1)) == (0, 75)  # UNKNOWN_LEADER_EPOCH
    assert fetch_error(leader, fetch_request(0, 0, e - 1)) == (0, 74)  # FENCED_LEADER_EPOCH
    assert fetch_error(leader, fetch_request(-1, 0, e)) == (0, 42)  # INVALID_REQUEST
    assert fetch_error(follower, fetch_request(0, 0, e)) == (0, 6)  # NOT_LEADER_OR_FOLLOWER
    [resp] = follower.handle_request(3, ApiKey.FETCH, 17, fetch_request(0, 0, e), 5, 5000)
    part = resp.body["responses"][0]["partitions"][0]
    assert part["currentLeader"] == {"leaderId": 1, "leaderEpoch": e}  # who to ask instead


def test_the_leader_parks_a_fetch_at_its_end_until_it_expires() -> None:
    net, leader, _ = leader_and_follower()
    e, end = leader.epoch, leader.log.end_offset
    now = net.now + 10
    at_end = fetch_request(end, e, e, replica=5, wait=500)
    first = leader.handle_request(5, ApiKey.FETCH, 17, at_end, 1, now)
    assert len(first) == 1  # first contact: it learns the high watermark at once
    assert leader.handle_request(5, ApiKey.FETCH, 17, at_end, 2, now) == []
    assert leader.next_deadline_ms() <= now + 500
    assert [r for r in leader.poll(now + 499) if r.destination == 5] == []
    [late] = [r for r in leader.poll(now + 500) if r.destination == 5]
    assert late.correlation_id == 2 and late.body["responses"][0]["partitions"][0]["records"] is None


def test_a_leader_that_steps_down_answers_its_parked_fetches() -> None:
    net, leader, _ = leader_and_follower()
    e, end = leader.epoch, leader.log.end_offset
    now = net.now + 10
    leader.handle_request(5, ApiKey.FETCH, 17, fetch_request(end, e, e, replica=5, wait=500), 1, now)
    leader.handle_request(5, ApiKey.FETCH, 17, fetch_request(end, e, e, replica=5, wait=500), 2, now)
    begin = {"clusterId": None, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
        "partitionIndex": 0, "leaderId": 2, "leaderEpoch": e + 1}]}]}
    out = leader.handle_request(2, ApiKey.BEGIN_QUORUM_EPOCH, 1, begin, 3, now + 1)
    assert leader.role is Role.FOLLOWER and leader.leader_id == 2
    [parked] = [r for r in out if isinstance(r, SendResponse) and r.destination == 5]
    part = parked.body["responses"][0]["partitions"][0]
    assert (parked.api_key, parked.version, parked.correlation_id) == (ApiKey.FETCH, 17, 2)
    assert part["errorCode"] == 6
    assert part["currentLeader"] == {"leaderId": 1, "leaderEpoch": e}  # as it stood when it left


def test_a_leader_without_a_fetching_majority_resigns(caplog: pytest.LogCaptureFixture) -> None:
    leader = make(1, (1, 2, 3), ElectionState(2, None, None))
    net = Net(leader, *(make(nid, (1, 2, 3), ElectionState(2, None, None)) for nid in (2, 3)))
    t = 0
    while leader.role is not Role.LEADER:
        t = min(n.next_deadline_ms() for n in net.nodes.values())
        net.tick(t)
    net.drop.add(3)
    for now in range(t, t + 500, 10):  # 2 keeps fetching for a while, 3 has gone
        net.tick(now)
    net.drop.add(2)
    last_fetch = max(p.last_fetch_ms for p in leader.quorum_info(now).voters if p.replica_id == 2)
    deadline = last_fetch + leader.config.fetch_timeout_ms * 3 // 2  # Kafka's check-quorum timeout
    assert leader.next_deadline_ms() <= deadline
    with caplog.at_level("INFO", logger="kraftwerk.raft.roles.leader"):
        leader.poll(deadline - 1)
        assert leader.role is Role.LEADER
        leader.poll(deadline)
    assert leader.role is Role.RESIGNED
    assert f"leader 1 of epoch {leader.epoch} lost contact with a majority; resigning" in caplog.messages


def elected_by_hand(leader: RaftNode) -> tuple[int, list[SendRequest]]:
    """Grant every vote ``leader`` asks for by hand; when it leads and the BeginQuorumEpochs it sent."""
    t = leader.next_deadline_ms()
    pending = leader.poll(t)
    begins: list[SendRequest] = []
    while pending:
        e = pending.pop(0)
        if isinstance(e, SendRequest) and e.api_key == ApiKey.VOTE:
            grant = {"errorCode": 0, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
                "partitionIndex": 0, "errorCode": 0, "leaderId": -1, "leaderEpoch": leader.epoch,
                "voteGranted": True}]}]}
            pending += leader.handle_response(e.destination, e.api_key, e.version, grant, e.correlation_id, t)
        elif isinstance(e, SendRequest) and e.api_key == ApiKey.BEGIN_QUORUM_EPOCH:
            begins.append(e)
    assert leader.role is Role.LEADER
    return t, begins


def begun(effects: list[Effect]) -> list[int]:
    return [e.destination for e in effects
            if isinstance(e, SendRequest) and e.api_key == ApiKey.BEGIN_QUORUM_EPOCH]


def test_begin_quorum_epoch_answers() -> None:
    leader = make(1, (1, 2, 3), ElectionState(2, None, None), request_timeout_ms=500)
    t, begins = elected_by_hand(leader)
    to2 = next(b for b in begins if b.destination == 2)
    to3 = next(b for b in begins if b.destination == 3)
    assert to2.body["voterId"] == 2

    def begin_answer(error: int, epoch: int, leader_id: int, top: int = 0) -> Body:
        return {"errorCode": top, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
            "partitionIndex": 0, "errorCode": error, "leaderId": leader_id, "leaderEpoch": epoch}]}]}

    e = leader.epoch
    leader.handle_response(2, to2.api_key, to2.version, begin_answer(0, e, 1), to2.correlation_id, t + 1)
    failed = begin_answer(0, e, 1, top=37)
    leader.handle_response(3, to3.api_key, to3.version, failed, to3.correlation_id, t + 1)
    resent = leader.poll(t + leader.config.request_timeout_ms)  # 2 answered; 3's answer failed
    assert [r.destination for r in resent if isinstance(r, SendRequest)
            and r.api_key == ApiKey.BEGIN_QUORUM_EPOCH] == [3]
    again = next(r for r in resent if isinstance(r, SendRequest) and r.destination == 3)
    leader.handle_response(3, again.api_key, again.version, begin_answer(0, e + 2, 2), again.correlation_id,
                           t + 2 + leader.config.request_timeout_ms)
    assert (leader.role, leader.leader_id, leader.epoch) == (Role.FOLLOWER, 2, e + 2)


def test_the_leader_tells_a_voter_that_stopped_fetching_again() -> None:
    leader = make(1, (1, 2, 3), ElectionState(2, None, None))
    others = (make(nid, (1, 2, 3), ElectionState(2, None, None)) for nid in (2, 3))
    net = Net(leader, *others)
    t = 0
    while leader.role is not Role.LEADER:
        t = min(n.next_deadline_ms() for n in net.nodes.values())
        net.tick(t)
    begins = net.sent(ApiKey.BEGIN_QUORUM_EPOCH, 1)
    assert sorted(b.destination for b in begins) == [2, 3]
    part = begins[0].body["topics"][0]["partitions"][0]
    assert (part["leaderId"], part["leaderEpoch"]) == (1, leader.epoch)
    net.drop.add(3)  # 3 stops hearing and fetching; 2 keeps fetching, so 1 keeps leading
    start = t
    while t < start + leader.config.fetch_timeout_ms:
        t = min(n.next_deadline_ms() for n in (leader, net.nodes[2]))
        net.tick(t)
    again = [b for b in net.sent(ApiKey.BEGIN_QUORUM_EPOCH, 1) if b.destination == 3]
    assert len(again) >= 2 and leader.role is Role.LEADER
    assert [b for b in net.sent(ApiKey.BEGIN_QUORUM_EPOCH, 1) if b.destination == 2] == [
        b for b in begins if b.destination == 2]  # the voter that fetches is not told again


def test_begin_quorum_epoch_goes_again_after_a_failed_send_but_not_to_a_voter_that_fetches() -> None:
    """A voter's fetch tells the leader it knows who leads (Kafka: it has acknowledged the leader)."""
    leader = make(1, (1, 2, 3), ElectionState(2, None, None), request_timeout_ms=500)
    t, begins = elected_by_hand(leader)
    backoff, e = leader.config.retry_backoff_ms, leader.epoch
    to3 = next(b for b in begins if b.destination == 3)
    assert len(leader.handle_request(2, ApiKey.FETCH, 17, fetch_request(0, 0, e), 9, t + 1)) == 1
    leader.handle_send_failure(3, to3.correlation_id, t + 1)  # 2's BeginQuorumEpoch stays unanswered
    assert begun(leader.poll(t + backoff)) == []
    assert begun(leader.poll(t + 1 + backoff)) == [3]
    resent = leader.poll(t + leader.config.request_timeout_ms) + leader.poll(
        t + leader.config.request_timeout_ms + backoff)
    assert 2 not in begun(resent)


def test_the_leader_tells_a_silent_voter_again_half_a_fetch_timeout_after_its_last_fetch() -> None:
    cfg = {"fetch_timeout_ms": 2001}  # odd: half of it is 1000 ms, not 1000.5
    leader = make(1, (1, 2, 3), ElectionState(2, None, None), **cfg)
    net = Net(leader, *(make(nid, (1, 2, 3), ElectionState(2, None, None), **cfg) for nid in (2, 3)))
    t = 0
    while leader.role is not Role.LEADER:
        t = min(n.next_deadline_ms() for n in net.nodes.values())
        net.tick(t)
    net.tick(t)
    net.drop.add(3)
    [last3] = [p.last_fetch_ms for p in leader.quorum_info(t).voters if p.replica_id == 3]
    due = last3 + 1000
    while (t := min(leader.next_deadline_ms(), net.nodes[2].next_deadline_ms())) < due - 1:
        net.tick(t)  # 2 keeps fetching
    assert leader.next_deadline_ms() <= due
    assert begun(leader.poll(due - 1)) == []
    assert begun(leader.poll(due)) == [3]
    assert 1 not in {b.destination for b in net.sent(ApiKey.BEGIN_QUORUM_EPOCH, 1)}  # never itself


def test_check_quorum_counts_the_most_recent_fetches_a_majority_needs() -> None:
    """Five voters: the leader and two others are a majority, so it resigns 1.5 fetch timeouts after
    the second most recent fetch of the others (Kafka's check-quorum)."""
    voters, cfg = (1, 2, 3, 4, 5), {"fetch_timeout_ms": 2001}  # 1.5 x 2001 = 3001 (not 3001.5)
    leader = make(1, voters, ElectionState(2, None, None), **cfg)
    net = Net(leader, *(make(nid, voters, ElectionState(2, None, None), **cfg) for nid in voters[1:]))
    t = 0
    while leader.role is not Role.LEADER:
        t = min(n.next_deadline_ms() for n in net.nodes.values())
        net.tick(t)
    for gone in ((4, 5), (3,), (2,)):  # each group stops fetching 600 ms after the one before
        leader.append([b"x"], t)  # wakes the parked fetches: who is left fetches again
        for now in range(t, t + 600, 5):
            net.tick(now)
        t += 600
        net.drop.update(gone)
    last = {p.replica_id: p.last_fetch_ms for p in leader.quorum_info(t).voters}
    assert last[2] > last[3] > max(last[4], last[5])
    deadline = last[3] + 3001
    assert leader.role is Role.LEADER and leader.next_deadline_ms() <= deadline
    leader.poll(deadline - 1)
    assert leader.role is Role.LEADER
    leader.poll(deadline)
    assert leader.role is Role.RESIGNED


def test_the_high_watermark_waits_for_the_first_record_of_the_leaders_epoch() -> None:
    """Kafka's maybeUpdateHighWatermark: only an offset past the epoch's start commits, so a new
    leader's fetch answers carry no high watermark (-1) until a majority has its LeaderChange."""
    log = MemoryRaftLog()
    log.append(batch(0, 1, b"a", b"b"))
    log.flush()
    leader = RaftNode(RaftConfig(1, (1, 2, 3)), log, MemoryQuorumStateStore(ElectionState(1, None, None)),
                      now_ms=0, seed=1)
    t, _ = elected_by_hand(leader)
    leader.poll(t + leader.config.append_linger_ms)  # its LeaderChange (at 2) is durable here
    e = leader.epoch
    assert leader.epoch_start_offset == 2 and leader.high_watermark is None

    def hw_answer(offset: int, last_epoch: int, now: int) -> int:
        [resp] = leader.handle_request(2, ApiKey.FETCH, 17, fetch_request(offset, last_epoch, e), 5, now)
        hw: int = resp.body["responses"][0]["partitions"][0]["highWatermark"]
        return hw

    assert hw_answer(2, 1, t + 100) == -1  # 2 has everything before the epoch, not its first record
    assert leader.high_watermark is None
    assert hw_answer(3, e, t + 101) == 3
    assert leader.high_watermark == 3


def test_describe_quorum_reports_voters_and_observers() -> None:
    net, leader, follower = leader_and_follower()
    obs = make(3, (1, 2))
    net.nodes[3] = obs
    for t in range(net.now, net.now + 100, 10):
        net.tick(t)
    body = leader.describe_quorum(net.now + 100)
    part = body["topics"][0]["partitions"][0]
    assert part["errorCode"] == 0 and part["highWatermark"] == leader.high_watermark
    voters = {v["replicaId"]: v for v in part["currentVoters"]}
    assert set(voters) == {1, 2} and [o["replicaId"] for o in part["observers"]] == [3]
    assert voters[1]["logEndOffset"] == leader.log.flushed_offset
    assert voters[1]["lastFetchTimestamp"] == net.now + 100
    assert voters[2]["logEndOffset"] == follower.log.end_offset
    assert follower.describe_quorum(0)["topics"][0]["partitions"][0]["errorCode"] == 6
    info = leader.quorum_info(net.now + 100)
    assert [p.replica_id for p in info.voters] == [1, 2] and [p.replica_id for p in info.observers] == [3]
    assert follower.quorum_info().voters == () and leader.epoch_start_offset == 0
    assert follower.epoch_start_offset == -1


def test_fetch_snapshot_errors_and_chunks() -> None:
    net, leader, _ = leader_and_follower(fetch_snapshot_max_bytes=50)
    commit(net, leader, [b"x" * 40], net.now + 10)
    hw = leader.high_watermark
    assert hw is not None
    leader.drain_committed()
    sid = leader.create_snapshot(hw, [b"s" * 100], net.now + 300)
    e = leader.epoch

    def ask(end: int, epoch: int, position: int, leader_epoch: int = e, max_bytes: int = 1000) -> Body:
        asked = {"partition": 0, "currentLeaderEpoch": leader_epoch,
                 "snapshotId": {"endOffset": end, "epoch": epoch}, "position": position}
        body = {"clusterId": None, "replicaId": 2, "maxBytes": max_bytes,
                "topics": [{"name": "__cluster_metadata", "partitions": [asked]}]}
        [resp] = leader.handle_request(2, ApiKey.FETCH_SNAPSHOT, 1, body, 1, net.now + 400)
        part: Body = resp.body["topics"][0]["partitions"][0]
        return part

    def error(code: int) -> Body:  # Kafka's error answer: the error and the leader, nothing else
        return {"index": 0, "errorCode": code, "snapshotId": {"endOffset": -1, "epoch": -1},
                "currentLeader": {"leaderId": 1, "leaderEpoch": e}, "size": 0, "position": 0,
                "unalignedRecords": b""}

    assert ask(sid.end_offset + 1, sid.epoch, 0) == error(98)  # SNAPSHOT_NOT_FOUND
    first = ask(sid.end_offset, sid.epoch, 0)
    size = first["size"]
    assert first["snapshotId"] == {"endOffset": sid.end_offset, "epoch": sid.epoch} and size > 50
    assert ask(sid.end_offset, sid.epoch, size) == error(99)  # POSITION_OUT_OF_RANGE
    assert ask(sid.end_offset, sid.epoch, -1) == error(99)
    assert ask(sid.end_offset, sid.epoch, 0, leader_epoch=e - 1)["errorCode"] == 74
    assert ask(sid.end_offset, sid.epoch, 0, leader_epoch=e + 1)["errorCode"] == 75
    chunk = ask(sid.end_offset, sid.epoch, 10)
    assert chunk["errorCode"] == 0 and chunk["position"] == 10 and len(chunk["unalignedRecords"]) == 50
    assert len(ask(sid.end_offset, sid.epoch, 10, max_bytes=7)["unalignedRecords"]) == 7
    assert len(ask(sid.end_offset, sid.epoch, size - 3)["unalignedRecords"]) == 3


# ---------------------------------------------------------------------------------- follower details
def batch(base: int, epoch: int, *values: bytes) -> bytes:
    b = RecordsBuilder(base_offset=base, partition_leader_epoch=epoch)
    for v in values:
        b.append(0, None, v)
    return b.build()


def fresh_follower() -> tuple[RaftNode, SendRequest]:
    """Follower 2 of leader 1 in epoch 3 with an empty log, and its first fetch."""
    follower = make(2, (1, 2), ElectionState(3, 1, None))
    [fetch] = follower.poll(0)
    assert isinstance(fetch, SendRequest)
    return follower, fetch


def reply(follower: RaftNode, fetch: SendRequest, now: int, **part: Any) -> list[Effect]:
    body = fetch_answer(follower, **part)
    return follower.handle_response(1, ApiKey.FETCH, 17, body, fetch.correlation_id, now)


def next_fetch(out: list[Effect]) -> SendRequest:
    [req] = [e for e in out if isinstance(e, SendRequest)]
    return req


def test_a_follower_takes_a_high_watermark_of_zero_and_ignores_a_missing_one() -> None:
    follower, fetch = fresh_follower()
    answer = fetch_answer(follower, records=batch(0, 3, b"a"))
    del answer["responses"][0]["partitions"][0]["highWatermark"]
    out = follower.handle_response(1, ApiKey.FETCH, 17, answer, fetch.correlation_id, 1)
    assert follower.log.end_offset == 1 and follower.high_watermark is None
    reply(follower, next_fetch(out), 2, highWatermark=0)
    assert follower.high_watermark == 0


def test_a_follower_skips_batches_it_already_has() -> None:
    follower, fetch = fresh_follower()
    out = reply(follower, fetch, 1, records=batch(0, 3, b"a"), highWatermark=0)
    both = batch(0, 3, b"a") + batch(1, 3, b"b")
    out = reply(follower, next_fetch(out), 2, records=both, highWatermark=2)
    assert follower.log.end_offset == 2 and follower.high_watermark == 2
    committed = [c.records for c in follower.drain_committed() if isinstance(c, CommittedBatch)]
    assert committed == [(b"a",), (b"b",)]


def test_diverging_at_epoch_zero_truncates_an_uncommitted_log(caplog: pytest.LogCaptureFixture) -> None:
    follower, fetch = fresh_follower()
    out = reply(follower, fetch, 1, records=batch(0, 3, b"a") + batch(1, 3, b"b"))
    assert follower.log.end_offset == 2 and follower.high_watermark is None
    with caplog.at_level("DEBUG", logger="kraftwerk.raft.roles.follower"):
        out = reply(follower, next_fetch(out), 2, divergingEpoch={"epoch": 0, "endOffset": 0})
    assert follower.log.end_offset == 0
    assert "node 2 truncates to 0 (diverging epoch 0 end 0)" in caplog.text
    assert next_fetch(out).body["topics"][0]["partitions"][0]["fetchOffset"] == 0


def test_diverging_at_an_epoch_the_follower_lacks_truncates_to_the_leaders_end() -> None:
    follower, fetch = fresh_follower()
    out = reply(follower, fetch, 1, records=batch(0, 1, b"a") + batch(1, 3, b"b") + batch(2, 3, b"c"),
                highWatermark=1)
    follower.drain_committed()
    out = reply(follower, next_fetch(out), 2, divergingEpoch={"epoch": 2, "endOffset": 1})
    assert follower.log.end_offset == 1  # exactly its committed offset: allowed


def test_a_follower_follows_a_newer_leader_a_fetch_answer_names() -> None:
    follower, fetch = fresh_follower()
    body = fetch_answer(follower)
    body["responses"][0]["partitions"][0]["currentLeader"] = {"leaderId": 3, "leaderEpoch": 4}
    out = follower.handle_response(1, ApiKey.FETCH, 17, body, fetch.correlation_id, 7)
    assert follower.role is Role.FOLLOWER and (follower.leader_id, follower.epoch) == (3, 4)
    assert next_fetch(out).destination == 3


def test_the_snapshot_request_asks_for_the_named_snapshot() -> None:
    follower = make(2, (1, 2), ElectionState(3, 1, None), cluster_id="c1", fetch_snapshot_max_bytes=4096)
    [fetch] = follower.poll(0)
    assert isinstance(fetch, SendRequest)
    out = reply(follower, fetch, 1, snapshotId={"endOffset": 5, "epoch": 3})
    req = next_fetch(out)
    assert req.api_key == ApiKey.FETCH_SNAPSHOT and req.destination == 1
    asked = {"partition": 0, "currentLeaderEpoch": 3, "snapshotId": {"endOffset": 5, "epoch": 3},
             "position": 0}
    assert req.body == {"clusterId": "c1", "replicaId": 2, "maxBytes": 4096,
                        "topics": [{"name": "__cluster_metadata", "partitions": [asked]}]}
    failed = {"topics": []}
    follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1, failed, req.correlation_id, 2)
    retry = 2 + follower.config.retry_backoff_ms
    again = next_fetch(follower.poll(retry))
    assert again.api_key == ApiKey.FETCH_SNAPSHOT  # still downloading the same snapshot
    whole = {"errorCode": 58, "topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "errorCode": 0, "snapshotId": {"endOffset": 5, "epoch": 3},
        "currentLeader": {"leaderId": 1, "leaderEpoch": 3}, "size": 10, "position": 0,
        "unalignedRecords": b"0123456789"}]}]}
    follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1, whole, again.correlation_id, 30)
    assert follower.log.end_offset == 0
    assert follower.next_deadline_ms() == 30 + follower.config.retry_backoff_ms


# ---------------------------------------------------------------------------------- leader answers
def epochs_leader(**cfg: Any) -> RaftNode:
    """Node 1 leads epoch 5 alone, its log: epoch 1 at 0-1, then its LeaderChange at 2 (committed)."""
    log = MemoryRaftLog()
    log.append(batch(0, 1, b"a", b"b"))
    log.flush()
    n = RaftNode(RaftConfig(1, (1,), **cfg), log, MemoryQuorumStateStore(ElectionState(4, None, None)),
                 now_ms=0, seed=1)
    n.poll(0)
    assert n.role is Role.LEADER and n.epoch == 5 and n.high_watermark == 3
    return n


def leader_answer(n: RaftNode, offset: int, last_epoch: int, now: int = 10, **extra: Any) -> Body:
    req = fetch_request(offset, last_epoch, n.epoch, replica=7)
    req["topics"][0]["partitions"][0].update(extra)
    [resp] = n.handle_request(7, ApiKey.FETCH, 17, req, 41, now)
    assert isinstance(resp, SendResponse)
    assert (resp.destination, resp.api_key, resp.version) == (7, ApiKey.FETCH, 17)
    assert resp.correlation_id == 41
    body: Body = resp.body
    return body


def shape(n: RaftNode, **part: Any) -> Body:
    """Kafka's FetchResponse as the leader builds it, with this partition's own fields."""
    fields = {"partitionIndex": 0, "errorCode": 0, "highWatermark": n.high_watermark,
              "logStartOffset": n.log.start_offset, "currentLeader": {"leaderId": 1, "leaderEpoch": n.epoch},
              "records": None, **part}
    return {"errorCode": 0, "nodeEndpoints": [],
            "responses": [{"topicId": METADATA_TOPIC_ID, "partitions": [fields]}]}


def test_the_leaders_fetch_answers_records_divergence_and_snapshots() -> None:
    n = epochs_leader()
    body = leader_answer(n, 2, 1)
    assert body == shape(n, records=n.log.read(2, 1 << 20))
    assert leader_answer(n, 3, 5) == shape(n)  # at the end: nothing (maxWaitMs 0 answers at once)
    assert leader_answer(n, 3, 3) == shape(n, divergingEpoch={"epoch": 1, "endOffset": 2})
    assert leader_answer(n, 9, 5) == shape(n, divergingEpoch={"epoch": 5, "endOffset": 3})  # past its end
    assert leader_answer(n, 1, 0) == shape(n, divergingEpoch={"epoch": 0, "endOffset": 0})  # unknown epoch
    limited = leader_answer(n, 0, -1, partitionMaxBytes=10)["responses"][0]["partitions"][0]["records"]
    assert limited == n.log.read(0, 10)
    sid = n.create_snapshot(3, [b"s"], 20)
    assert leader_answer(n, 0, -1, now=21) == shape(n, snapshotId={"endOffset": 3, "epoch": sid.epoch})
    assert n.log.start_offset == 3
    assert leader_answer(n, 2, 1, now=22) == shape(n, snapshotId={"endOffset": 3, "epoch": sid.epoch})
    assert leader_answer(n, 3, 1, now=23) == shape(n, snapshotId={"endOffset": 3, "epoch": sid.epoch})
    assert leader_answer(n, 3, sid.epoch, now=24) == shape(n)  # right at the snapshot: reads on
    n.append([b"c"], 25)
    n.poll(25 + n.config.append_linger_ms)
    # past the log start, but the epoch it last fetched (1) ended behind it: only the snapshot helps
    assert leader_answer(n, 4, 1, now=30) == shape(n, snapshotId={"endOffset": 3, "epoch": sid.epoch})
    invalid = leader_answer(n, -1, -1, now=31)  # answered to the fetcher, as a Fetch v17
    assert invalid["responses"][0]["partitions"][0]["errorCode"] == 42  # INVALID_REQUEST


def test_the_leader_tracks_each_fetchers_progress() -> None:
    n = epochs_leader()
    leader_answer(n, 2, 1, now=10)
    leader_answer(n, 3, 5, now=20)
    [obs] = n.quorum_info(30).observers
    assert (obs.replica_id, obs.log_end_offset, obs.last_fetch_ms, obs.last_caught_up_ms) == (7, 3, 20, 20)
    leader_answer(n, 2, 1, now=40)  # truncated: its offset went down; caught up stays at 20
    [obs] = n.quorum_info(50).observers
    assert (obs.log_end_offset, obs.last_fetch_ms, obs.last_caught_up_ms) == (2, 40, 20)
    [me] = n.quorum_info(50).voters
    assert (me.replica_id, me.log_end_offset, me.last_fetch_ms) == (1, 3, 50)


def test_the_leader_logs_what_it_becomes_and_appends(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="kraftwerk.raft.roles.leader"):
        n = make(1, (1,))
        n.poll(0)
        base = n.log.end_offset
        assert n.upgrade_kraft_version(1, 5) is True
    assert "node 1 became leader of epoch 1" in caplog.messages
    assert f"node 1 appended kraft.version 1 at offset {base}" in caplog.messages


def test_the_leader_change_record_names_the_leader_the_voters_and_who_granted() -> None:
    _, leader, _ = leader_and_follower()
    [first] = [c for c in leader.drain_committed() if isinstance(c, CommittedBatch) and c.is_control][-1:]
    value = codec.decode(LEADER_CHANGE_MESSAGE, 0, first.records[0])
    assert value == {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}, {"voterId": 2}],
                     "grantingVoters": [{"voterId": 1}, {"voterId": 2}]}


def test_kraft_version_upgrades_only_from_0_to_1_within_the_supported_range() -> None:
    n = make(1, (1,), kraft_version_range=(0, 2))
    n.poll(0)
    assert n.upgrade_kraft_version(0, 1) is False  # the level it has: nothing to do
    with pytest.raises(KRaftVersionError, match=r"from version 0 to 2$"):
        n.upgrade_kraft_version(2, 1)
    n.upgrade_kraft_version(1, 2)
    with pytest.raises(KRaftVersionError, match=r"^Invalid upgrade of kraft.version from version 1 to 0 "
                                                r"because the new version is a downgrade$"):
        n.upgrade_kraft_version(0, 3)
    only_one = make(1, (1,), kraft_version_range=(1, 1))
    only_one.poll(0)
    assert only_one.upgrade_kraft_version(1, 1) is True
    assert only_one.kraft_version == 1


def test_a_snapshot_answer_naming_a_newer_leader_moves_the_follower_there() -> None:
    follower, fetch = fresh_follower()
    [chunk_req] = reply(follower, fetch, 1, snapshotId={"endOffset": 5, "epoch": 3})
    assert isinstance(chunk_req, SendRequest)
    moved = {"errorCode": 0, "topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "errorCode": 74, "snapshotId": {"endOffset": -1, "epoch": -1},  # FENCED_LEADER_EPOCH
        "currentLeader": {"leaderId": 3, "leaderEpoch": 4}, "size": 0, "position": 0,
        "unalignedRecords": b""}]}]}
    out = follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1, moved, chunk_req.correlation_id, 2)
    assert (follower.role, follower.leader_id, follower.epoch) == (Role.FOLLOWER, 3, 4)
    assert next_fetch(out).api_key == ApiKey.FETCH and next_fetch(out).destination == 3


# ---------------------------------------------------------------------------------- clean shutdown
def test_a_leader_resigning_for_shutdown_hands_over_before_the_fetch_timeout() -> None:
    net, leader, follower = leader_and_follower()
    assert not follower.resign(net.now)  # only a leader has something to hand over
    assert leader.resign(net.now)
    assert leader.role is Role.RESIGNED and leader.resigning
    net.add(1, leader.take_effects())
    net.run(net.now)
    assert [e.destination for e in net.sent(ApiKey.END_QUORUM_EPOCH, 1)] == [2]
    assert not leader.resigning  # the follower answered
    stood = None
    for t in range(net.now, net.now + follower.config.fetch_timeout_ms, 5):
        net.add(2, follower.poll(t))
        if follower.role in (Role.PROSPECTIVE, Role.CANDIDATE):
            stood = t
            break
    assert stood is not None, "the follower waited out its fetch timeout"


def test_a_resigning_leader_names_the_most_caught_up_voters_first() -> None:
    """Kafka's nonLeaderVotersByDescendingFetchOffset: the successor with the most of the log
    stands first; voters at the same offset (here 2 and 5, cut off together) in id order."""
    voters = (1, 2, 3, 4, 5)
    leader = make(1, voters, ElectionState(2, None, None))
    net = Net(leader, *(make(nid, voters, ElectionState(2, None, None)) for nid in voters[1:]))
    t = 0
    while leader.role is not Role.LEADER:
        t = min(n.next_deadline_ms() for n in net.nodes.values())
        net.tick(t)
    for behind in ((2, 5), (3,)):  # 2 and 5 miss both appends, 3 the second, 4 none
        net.drop.update(behind)
        leader.append([b"x"], t)
        for now in range(t, t + 200, 5):
            net.tick(now)
        t += 200
    ends = {p.replica_id: p.log_end_offset for p in leader.quorum_info(t).voters}
    assert ends[4] > ends[3] > ends[2] == ends[5]
    assert leader.resign(t)
    sent = [e for e in leader.take_effects() if isinstance(e, SendRequest)]
    assert sorted(e.destination for e in sent) == [2, 3, 4, 5]
    for e in sent:
        successors = e.body["topics"][0]["partitions"][0]["preferredCandidates"]
        assert [s["candidateId"] for s in successors] == [4, 3, 2, 5]
