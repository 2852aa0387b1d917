"""The KRaft replica behind one facade (Kafka's KafkaRaftClient, pull-based, sans-I/O).

Roles follow Kafka's EpochStates, one class each in :mod:`kraftwerk.raft.roles`: Unattached,
Prospective (KIP-996 pre-vote) and Candidate, Leader, Follower (an observer is a follower that is
not a voter) and Resigned. They share one :class:`~kraftwerk.raft.state.QuorumState`. This module
keeps the host's interface, routes each event to the role that owns it, answers the election RPCs
every role answers (Vote, Begin/EndQuorumEpoch: Kafka's handlers ask the epoch state a question or
two) and makes the role changes. Every election state change is written to ``quorum-state`` before
the node acts on it; a node that restarts as the recorded leader comes back Resigned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import cast

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.messages.data import FetchRequest, FetchRequestFetchPartition
from kraftwerk.protocol.messages.raft import (
    AddRaftVoterRequest,
    BeginQuorumEpochRequestPartitionData,
    DescribeQuorumResponseReplicaState,
    EndQuorumEpochRequestPartitionData,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartitionSnapshot,
    RemoveRaftVoterRequest,
    VoteRequestPartitionData,
)
from kraftwerk.raft.delivery import Delivery
from kraftwerk.raft.log import QuorumStateStore, RaftLog, SnapshotId
from kraftwerk.raft.reconfig import cluster_error, voter_change_response
from kraftwerk.raft.roles import Candidate, Follower, Leader, Resigned, RoleState, Unattached
from kraftwerk.raft.state import (
    FENCED,
    INCONSISTENT_CLUSTER,
    INVALID_REQUEST,
    NEVER,
    NONE,
    NOT_LEADER,
    UNKNOWN_EPOCH,
    QuorumState,
    first_partition,
)
from kraftwerk.raft.types import (
    Body,
    Committed,
    Effect,
    NotLeaderError,
    QuorumInfo,
    RaftConfig,
    RaftStateError,
    ReplicaProgress,
    Role,
)
from kraftwerk.raft.voters import VoterSet

log = logging.getLogger(__name__)


class RaftNode:
    """One KRaft replica (voter or observer) of ``__cluster_metadata-0``."""

    def __init__(
        self, config: RaftConfig, log: RaftLog, state: QuorumStateStore, *, now_ms: int, seed: int
    ) -> None:
        self.config = config
        self.log = log
        q = self.q = QuorumState(config, log, state, seed)
        self._role: RoleState = Unattached(q, self, voter=False, deadline=NEVER)  # until _initialize
        q.voters_changed_hook = self._voters_changed
        q.control.rebuild(config.node_id)
        self._delivery = Delivery(log, config.node_id)
        self._initialize(now_ms)

    def _voters_changed(self) -> None:
        self._role.voters_changed()

    def _leader(self) -> Leader | None:
        role = self._role
        return role if isinstance(role, Leader) else None

    # ================================================================== public properties
    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def role(self) -> Role:
        return self._role.role

    @property
    def epoch(self) -> int:
        return self.q.epoch

    @property
    def leader_id(self) -> int | None:
        return self.q.leader_id

    @property
    def voted_id(self) -> int | None:
        return self.q.voted_id

    @property
    def is_leader(self) -> bool:
        return self._leader() is not None

    @property
    def high_watermark(self) -> int | None:
        """The committed end offset this node knows (None until it learns one after a start)."""
        return self.q.hw

    @property
    def kraft_version(self) -> int:
        """The latest kraft.version in this replica's log (Kafka's ``lastKraftVersion``): on the
        leader it includes an upgrade not committed yet, on a follower what it has replicated."""
        return self.q.control.kraft_version

    def kraft_version_at(self, offset: int) -> int:
        """The kraft.version in force for the log below ``offset`` (e.g. the high watermark)."""
        return self.q.control.kraft_version_at(offset)

    @property
    def voter_set(self) -> VoterSet:
        """The voters in force (Kafka's ``lastVoterSet``): the latest VotersRecord in the log or
        snapshot, committed or not, else the static ``controller.quorum.voters``."""
        return self.q.voter_set

    @property
    def voters(self) -> tuple[int, ...]:
        return self.q.voters

    @property
    def is_voter(self) -> bool:
        return self.q.is_voter

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        """Where to send requests for ``node_id``: a voter's controller endpoint, a bootstrap
        server (negative ids), or an endpoint a response or AddRaftVoter named."""
        return self.q.address_of(node_id)

    @property
    def epoch_start_offset(self) -> int:
        """Offset of the leader's LeaderChange record of the current epoch (-1 when not leader)."""
        leader = self._leader()
        return -1 if leader is None else leader.epoch_start_offset

    def quorum_info(self, now_ms: int | None = None) -> QuorumInfo:
        """A read-only view for DescribeQuorum, status output and the simulator's checks."""
        q, leader = self.q, self._leader()
        voters, observers = ((), ()) if leader is None else leader.progress(now_ms)
        return QuorumInfo(
            q.node_id,
            self.role,
            q.epoch,
            q.leader_id,
            q.voted_id,
            q.hw,
            q.log.start_offset,
            q.log.end_offset,
            voters,
            observers,
        )

    @property
    def resigning(self) -> bool:
        """Whether this node resigned and some voter has not yet answered its EndQuorumEpoch."""
        role = self._role
        return isinstance(role, Resigned) and bool(role.end_pending)

    # ================================================================== public inputs
    def resign(self, now_ms: int) -> bool:
        """Give up leadership before a clean shutdown, as Kafka's ``KafkaRaftClient.shutdown``
        does: the other voters hear EndQuorumEpoch and one stands at once instead of waiting out
        its fetch timeout. False when this node is not the leader (nothing to hand over)."""
        if self._leader() is None:
            return False
        log.info("node %d resigns leadership of epoch %d for shutdown", self.q.node_id, self.q.epoch)
        self.become_resigned(now_ms)
        return True

    def take_effects(self) -> list[Effect]:
        """Effects accumulated by calls that return something else (``append``)."""
        q = self.q
        out, q.outbox = q.outbox, []
        return out

    def poll(self, now_ms: int) -> list[Effect]:
        """Run timers: elections, fetch timeouts, retries, long-poll expiry, the leader's flush."""
        in_flight = self.q.in_flight
        for corr in [c for c, f in in_flight.items() if now_ms >= f.deadline_ms]:
            self._role.request_failed(in_flight.pop(corr), now_ms)
        self._role.poll(now_ms)
        return self.take_effects()

    def next_deadline_ms(self) -> int:
        """The earliest time ``poll`` has something to do (the host may call it earlier)."""
        times = [f.deadline_ms for f in self.q.in_flight.values()]
        times.extend(self._role.deadlines())
        return min(times) if times else NEVER

    def _require_leader(self, what: str) -> Leader:
        leader = self._leader()
        if leader is None:
            q = self.q
            raise NotLeaderError(
                f"{what}node {q.node_id} is not the leader (role {self.role.value}, "
                f"epoch {q.epoch}, leader {q.leader_id})",
                q.leader_id,
                q.epoch,
            )
        return leader

    def append(self, records: Sequence[bytes], now_ms: int) -> int:
        """Append one batch of record values (metadata record frames) as leader; returns the
        offset of the last record. It is committed once ``high_watermark`` passes that offset."""
        leader = self._require_leader("")
        if not records:
            raise ValueError("append needs at least one record")
        return leader.append(records, now_ms)

    def upgrade_kraft_version(self, level: int, now_ms: int, validate_only: bool = False) -> bool:
        """Raise kraft.version to ``level`` (KIP-853, Kafka's ``RaftClient.upgradeKRaftVersion``).

        Leader only. The same level is a no-op (False), a lower one or one outside
        ``config.kraft_version_range`` is refused with :class:`KRaftVersionError`. 0 -> 1 appends one
        control batch holding a KRaftVersionRecord and a VotersRecord of the static voters (their
        endpoints from the config, directory ids unknown, so Kafka's zero uuid); it commits like any
        append. ``validate_only`` runs the checks and writes nothing. True when it (would) write.
        """
        leader = self._require_leader("Upgrade kraft version failed because ")
        return leader.upgrade_kraft_version(level, now_ms, validate_only)

    def drain_committed(self) -> list[Committed]:
        """Committed batches (and snapshot loads) not handed out yet, in log order."""
        return self._delivery.drain(self.q.hw)

    def create_snapshot(self, end_offset: int, records: Sequence[bytes], now_ms: int) -> SnapshotId:
        """Store the state machine's snapshot of everything below ``end_offset`` (a committed batch
        boundary already handed out by ``drain_committed``), then clean the log behind it."""
        return self._delivery.create_snapshot(
            end_offset,
            records,
            now_ms,
            hw=self.q.hw,
            control=self.q.control,
            clean_log=self.config.clean_log_behind_snapshot,
        )

    def handle_send_failure(self, destination: int, correlation_id: int, now_ms: int) -> list[Effect]:
        """The host could not deliver request ``correlation_id`` (connection refused or closed)."""
        flight = self.q.in_flight.pop(correlation_id, None)
        if flight is not None:
            self._role.request_failed(flight, now_ms)
        return self.take_effects()

    def handle_request(
        self, source_id: int, api_key: int, version: int, body: Body, correlation_id: int, now_ms: int
    ) -> list[Effect]:
        """A request from node ``source_id``; the response may be deferred (long-poll Fetch)."""
        if api_key == ApiKey.FETCH:
            self._on_fetch_request(source_id, version, body, correlation_id, now_ms)
        elif api_key in _ANSWERS:
            answer = _ANSWERS[api_key](self, version, body, now_ms)
            self.q.respond(source_id, api_key, version, correlation_id, answer)
        elif api_key in (ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER):
            self._on_voter_change(source_id, api_key, version, body, correlation_id, now_ms)
        else:
            raise ValueError(f"raft does not handle api key {api_key}")
        return self.take_effects()

    def _on_voter_change(
        self, source: int, api_key: int, version: int, body: Body, correlation_id: int, now_ms: int
    ) -> None:
        """AddRaftVoter / RemoveRaftVoter: the leader's business; anyone else refuses."""
        leader = self._leader()
        if leader is None:
            refusal = cluster_error(cast(RemoveRaftVoterRequest, body), self.config.cluster_id)
            self.q.respond(
                source,
                api_key,
                version,
                correlation_id,
                refusal or voter_change_response(Errors.NOT_LEADER_OR_FOLLOWER),
            )
        elif api_key == ApiKey.ADD_RAFT_VOTER:
            leader.changes.add_voter(source, version, cast(AddRaftVoterRequest, body), correlation_id, now_ms)
        else:
            removal = cast(RemoveRaftVoterRequest, body)
            leader.changes.remove_voter(source, version, removal, correlation_id, now_ms)

    def handle_response(
        self, source_id: int, api_key: int, version: int, body: Body, correlation_id: int, now_ms: int
    ) -> list[Effect]:
        """A response to one of this node's requests; stale or duplicated ones are ignored."""
        in_flight = self.q.in_flight
        flight = in_flight.get(correlation_id)
        if flight is not None and flight.destination == source_id and flight.api_key == api_key:
            del in_flight[correlation_id]
            self._role.on_response(source_id, api_key, body, flight, now_ms)
        return self.take_effects()

    def describe_quorum(self, now_ms: int) -> Body:
        """A DescribeQuorum response body (v0-2 share this shape; NOT_LEADER unless leader)."""
        q, leader = self.q, self._leader()
        hw = -1 if q.hw is None else q.hw
        if leader is None:
            return q.partition_body(NONE, NOT_LEADER, highWatermark=hw, currentVoters=[], observers=[])

        def states(progress: tuple[ReplicaProgress, ...]) -> list[DescribeQuorumResponseReplicaState]:
            return [
                {
                    "replicaId": p.replica_id,
                    "logEndOffset": p.log_end_offset,
                    "lastFetchTimestamp": p.last_fetch_ms,
                    "lastCaughtUpTimestamp": p.last_caught_up_ms,
                }
                for p in progress
            ]

        voters, observers = leader.progress(now_ms)
        return q.partition_body(
            NONE, NONE, highWatermark=hw, currentVoters=states(voters), observers=states(observers)
        )

    # ================================================================== role changes
    def _initialize(self, now_ms: int) -> None:
        q = self.q
        node_id = q.node_id
        if q.leader_id == node_id and q.is_voter:
            # Kafka: a leader that restarts comes back resigned in its epoch, never leader
            self._role = Resigned(q, self, now_ms, successors=[])
        elif q.leader_id is not None and q.leader_id != node_id:
            self._start_follower(now_ms)
        elif q.voted_id == node_id and q.is_voter:
            self.become_prospective(now_ms, q.backoff())
        elif q.is_voter:
            self._role = Unattached(q, self, voter=True, deadline=now_ms + q.randomized_election_timeout())
        else:
            self._role = Unattached(q, self, voter=False, deadline=now_ms)
        if q.is_voter and len(q.voters) == 1 and self.role is not Role.RESIGNED:
            self.become_prospective(now_ms, 0)

    def _leave(self) -> None:
        """End the current role; requests in flight die with it (their answers are ignored)."""
        self._role.leave()
        self.q.in_flight = {}

    def become_unattached(self, epoch: int, now_ms: int, *, persist: bool = True) -> None:
        q = self.q
        changed = epoch != q.epoch
        self._leave()
        if changed:
            q.epoch = epoch
            q.leader_id = None
            q.voted_id = None
        elif not persist:
            q.leader_id = None
        if persist:
            q.persist()
        if q.is_voter:
            self._role = Unattached(q, self, voter=True, deadline=now_ms + q.randomized_election_timeout())
        else:
            self._role = Unattached(q, self, voter=False, deadline=now_ms + q.config.retry_backoff_ms)

    def become_follower(self, leader_id: int, epoch: int, now_ms: int) -> None:
        q = self.q
        if epoch != q.epoch:
            q.voted_id = None
        self._leave()
        q.epoch = epoch
        q.leader_id = leader_id
        q.persist()
        self._start_follower(now_ms)

    def _start_follower(self, now_ms: int) -> None:
        follower = Follower(self.q, self, self._delivery, now_ms)
        self._role = follower
        follower.maybe_send_fetch(now_ms)

    def become_prospective(self, now_ms: int, delay_ms: int) -> None:
        """KIP-996: ask for pre-votes for epoch + 1 without bumping the epoch."""
        q = self.q
        if not q.is_voter:
            return
        abandoned = q.leader_id
        if q.leader_id == q.node_id:
            q.leader_id = None  # a resigned leader no longer advertises itself
        self._leave()
        prospective = Candidate(q, self, now_ms, pre_vote=True, delay_ms=delay_ms, abandoned_leader=abandoned)
        self._role = prospective
        if delay_ms == 0:
            prospective.send_votes(now_ms)

    def become_candidate(self, now_ms: int) -> None:
        q = self.q
        self._leave()
        q.epoch += 1
        q.leader_id = None
        q.voted_id = q.node_id
        q.persist()
        candidate = Candidate(q, self, now_ms, pre_vote=False, delay_ms=0, abandoned_leader=None)
        self._role = candidate
        candidate.send_votes(now_ms)

    def become_leader(self, now_ms: int, granting: list[int]) -> None:
        q = self.q
        self._leave()
        q.leader_id = q.node_id
        q.persist()
        leader = Leader(q, self, now_ms, granting)
        self._role = leader
        leader.poll(now_ms)

    def become_resigned(self, now_ms: int) -> None:
        leader = self._leader()
        successors = [] if leader is None else leader.successors()
        self._leave()
        resigned = Resigned(self.q, self, now_ms, successors)
        self._role = resigned
        resigned.send_end_quorum(now_ms)

    def observe_epoch(self, leader_id: int, epoch: int, now_ms: int) -> bool:
        """React to (leader, epoch) learned from any message; True if the node changed state
        (a higher epoch, or a leader discovered in the current one)."""
        q = self.q
        leader = None if leader_id < 0 else leader_id
        if epoch > q.epoch:
            if leader is not None and leader != q.node_id:
                self.become_follower(leader, epoch, now_ms)
            else:
                self.become_unattached(epoch, now_ms)
            return True
        if (
            epoch == q.epoch
            and leader is not None
            and leader != q.node_id
            and (
                self.role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE)
                or (self.role is Role.FOLLOWER and q.leader_id != leader)
            )
        ):
            self.become_follower(leader, epoch, now_ms)
            return True
        return False

    # ================================================================== Vote
    def _recently_fetched_from_leader(self, now_ms: int) -> bool:
        if self.role is Role.LEADER:
            return True
        last = self.q.last_fetch_ok_ms
        return (
            self.role is Role.FOLLOWER and last is not None and now_ms - last < self.config.fetch_timeout_ms
        )

    def _on_vote_request(self, version: int, body: Body, now_ms: int) -> Body:
        q = self.q
        if not q.cluster_ok(body):
            return q.partition_body(INCONSISTENT_CLUSTER, NONE, voteGranted=False)
        found = first_partition(body)
        if found is None:
            return q.partition_body(INVALID_REQUEST, NONE, voteGranted=False)
        part = cast(VoteRequestPartitionData, found)
        candidate = int(part["replicaId"])
        epoch = int(part["replicaEpoch"])
        pre = bool(part.get("preVote", False)) and version >= 2
        if not q.is_voter or candidate not in q.voters:
            return q.partition_body(NONE, NONE, voteGranted=False)
        up_to_date = (int(part["lastOffsetEpoch"]), int(part["lastOffset"])) >= (
            q.log.last_fetched_epoch(),
            q.log.end_offset,
        )
        if pre:
            # KIP-996: grant unless we know of a live leader or our log is further along
            granted = (
                (epoch > q.epoch or (epoch == q.epoch and q.leader_id is None))
                and up_to_date
                and not self._recently_fetched_from_leader(now_ms)
            )
            return q.partition_body(NONE, NONE, voteGranted=granted)
        if epoch < q.epoch:
            return q.partition_body(NONE, FENCED, voteGranted=False)
        if epoch > q.epoch:
            self.become_unattached(epoch, now_ms)
        granted = False
        role = self._role
        if role.role is Role.UNATTACHED or (role.role is Role.PROSPECTIVE and q.leader_id is None):
            if q.voted_id in (None, candidate) and q.leader_id is None and up_to_date:
                granted = True
                if q.voted_id != candidate:
                    q.voted_id = candidate
                    q.persist()
                if isinstance(role, Unattached):
                    role.deadline = now_ms + q.randomized_election_timeout()
                else:
                    self.become_unattached(q.epoch, now_ms)
        elif role.role is Role.CANDIDATE and q.voted_id == candidate:
            granted = True
        return q.partition_body(NONE, NONE, voteGranted=granted)

    # ================================================================== Begin/EndQuorumEpoch
    def _epoch_claim(self, body: Body) -> Body | tuple[int, int]:
        """The (leader, epoch) a Begin/EndQuorumEpoch request claims, or the answer refusing it
        (another cluster, no partition, an older epoch)."""
        q = self.q
        if not q.cluster_ok(body):
            return q.partition_body(INCONSISTENT_CLUSTER, NONE)
        found = first_partition(body)
        if found is None:
            return q.partition_body(INVALID_REQUEST, NONE)
        part = cast(BeginQuorumEpochRequestPartitionData | EndQuorumEpochRequestPartitionData, found)
        leader, epoch = int(part["leaderId"]), int(part["leaderEpoch"])
        if epoch < q.epoch:
            return q.partition_body(NONE, FENCED)
        return leader, epoch

    def _on_begin_quorum_request(self, version: int, body: Body, now_ms: int) -> Body:
        q = self.q
        claim = self._epoch_claim(body)
        if not isinstance(claim, tuple):
            return claim
        leader, epoch = claim
        if leader == q.node_id:
            return q.partition_body(INVALID_REQUEST, NONE)
        if epoch == q.epoch and self.role is Role.LEADER:
            raise RaftStateError(f"node {q.node_id} is leader of epoch {epoch} and node {leader} claims it")
        if not (self.role is Role.FOLLOWER and q.leader_id == leader and q.epoch == epoch):
            self.become_follower(leader, epoch, now_ms)
        return q.partition_body(NONE, NONE)

    def _on_end_quorum_request(self, version: int, body: Body, now_ms: int) -> Body:
        q = self.q
        claim = self._epoch_claim(body)
        if not isinstance(claim, tuple):
            return claim
        leader, epoch = claim
        role = self._role
        if epoch > q.epoch:
            self.become_unattached(epoch, now_ms)
        elif isinstance(role, Follower) and q.leader_id == leader and q.is_voter:
            role.end_quorum(cast(EndQuorumEpochRequestPartitionData, first_partition(body)), now_ms)
        return q.partition_body(NONE, NONE)

    # ================================================================== Fetch, FetchSnapshot
    def _on_fetch_request(self, source: int, version: int, body: Body, corr: int, now_ms: int) -> None:
        q = self.q
        if not q.cluster_ok(body):
            q.respond(
                source, ApiKey.FETCH, version, corr, {"errorCode": INCONSISTENT_CLUSTER, "responses": []}
            )
            return
        found = first_partition(body)
        if found is None:
            q.respond(source, ApiKey.FETCH, version, corr, {"errorCode": INVALID_REQUEST, "responses": []})
            return
        part = cast(FetchRequestFetchPartition, found)
        req_epoch = int(part.get("currentLeaderEpoch", -1))
        leader = self._leader()
        if req_epoch > q.epoch:
            q.respond(source, ApiKey.FETCH, version, corr, q.fetch_error_body(UNKNOWN_EPOCH))
        elif 0 <= req_epoch < q.epoch:
            q.respond(source, ApiKey.FETCH, version, corr, q.fetch_error_body(FENCED))
        elif leader is None:
            q.respond(source, ApiKey.FETCH, version, corr, q.fetch_error_body(NOT_LEADER))
        else:
            leader.on_fetch(source, version, cast(FetchRequest, body), part, corr, now_ms)

    def _on_fetch_snapshot_request(self, version: int, body: Body, now_ms: int) -> Body:
        q = self.q
        found = first_partition(body)
        if found is None:
            return q.fetch_snapshot_body(INVALID_REQUEST)
        part = cast(FetchSnapshotRequestPartitionSnapshot, found)
        req_epoch = int(part["currentLeaderEpoch"])
        leader = self._leader()
        if req_epoch < q.epoch:
            return q.fetch_snapshot_body(FENCED)
        if req_epoch > q.epoch:
            return q.fetch_snapshot_body(UNKNOWN_EPOCH)
        if leader is None:
            return q.fetch_snapshot_body(NOT_LEADER)
        return leader.on_fetch_snapshot(cast(FetchSnapshotRequest, body), part)


def _describe_quorum(node: RaftNode, version: int, body: Body, now_ms: int) -> Body:
    return node.describe_quorum(now_ms)


#: The requests answered at once, whatever the role: api key -> handler of (version, body, now).
_ANSWERS: dict[int, Callable[[RaftNode, int, Body, int], Body]] = {
    ApiKey.VOTE: RaftNode._on_vote_request,
    ApiKey.BEGIN_QUORUM_EPOCH: RaftNode._on_begin_quorum_request,
    ApiKey.END_QUORUM_EPOCH: RaftNode._on_end_quorum_request,
    ApiKey.FETCH_SNAPSHOT: RaftNode._on_fetch_snapshot_request,
    ApiKey.DESCRIBE_QUORUM: _describe_quorum,
}
