"""The KRaft state machine (Kafka's KafkaRaftClient, pull-based, sans-I/O).

Roles follow Kafka's EpochStates: Unattached, Prospective (KIP-996 pre-vote), Candidate, Leader,
Follower and Resigned. Followers and observers pull with Fetch; the leader answers, long-polls
when it has nothing new, detects divergence with the leader-epoch cache (DivergingEpoch) and sends
a SnapshotId to replicas below its log start. The high watermark is the largest offset a majority
of voters has durably: the followers' fetch offsets (they flush before fetching again) and the
leader's own *flushed* end offset; it only starts moving once the leader's LeaderChange record of
the current epoch is committed. Every election state change is written to ``quorum-state`` before
the node acts on it; a node that restarts as the recorded leader comes back Resigned.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.protocol import codec
from kraftwerk.protocol.control_records import (
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
    ControlRecordType,
    parse_control_key,
)
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.messages.raft import VoteRequestPartitionData, VoteResponsePartitionData
from kraftwerk.raft.log import ElectionState, QuorumStateStore, RaftLog, SnapshotId, scan_batch_infos
from kraftwerk.raft.reconfig import VoterChanges
from kraftwerk.raft.types import (
    API_ADD_RAFT_VOTER,
    API_API_VERSIONS,
    API_BEGIN_QUORUM_EPOCH,
    API_DESCRIBE_QUORUM,
    API_END_QUORUM_EPOCH,
    API_FETCH,
    API_FETCH_SNAPSHOT,
    API_REMOVE_RAFT_VOTER,
    API_VOTE,
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    REQUEST_VERSIONS,
    Body,
    Committed,
    CommittedBatch,
    Effect,
    InvalidSnapshotError,
    KRaftVersionError,
    NotLeaderError,
    QuorumInfo,
    RaftConfig,
    RaftStateError,
    ReplicaProgress,
    Role,
    SendRequest,
    SendResponse,
    SnapshotLoad,
)
from kraftwerk.raft.voters import VoterSet
from kraftwerk.records.batch import iter_batches
from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.records.errors import RecordsError
from kraftwerk.storage.metadata_log import snapshot_file_batches

log = logging.getLogger(__name__)

_NONE = Errors.NONE.value.code
_FENCED = Errors.FENCED_LEADER_EPOCH.value.code
_UNKNOWN_EPOCH = Errors.UNKNOWN_LEADER_EPOCH.value.code
_NOT_LEADER = Errors.NOT_LEADER_OR_FOLLOWER.value.code
_SNAPSHOT_NOT_FOUND = Errors.SNAPSHOT_NOT_FOUND.value.code
_POSITION_OUT_OF_RANGE = Errors.POSITION_OUT_OF_RANGE.value.code
_INVALID_REQUEST = Errors.INVALID_REQUEST.value.code
_INCONSISTENT_CLUSTER = Errors.INCONSISTENT_CLUSTER_ID.value.code
_KRAFT_VERSION = "kraft.version"


def _kraft_controls(raw: bytes) -> list[tuple[int, ControlRecordType, bytes]]:
    """The KRaftVersion and KRaftVoters records of the control batches in ``raw``: (offset of the
    record, type, value). Data batches are skipped without decoding their records."""
    out: list[tuple[int, ControlRecordType, bytes]] = []
    for batch in iter_batches(raw):
        if not batch.is_control:
            continue
        for rec in batch.records():
            try:
                rtype, _code = parse_control_key(None if rec.key is None else bytes(rec.key))
            except ProtocolError:
                continue
            if rtype in (ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS) and rec.value:
                out.append((rec.offset, rtype, bytes(rec.value)))
    return out


@dataclass(slots=True)
class _InFlight:
    destination: int
    api_key: int
    deadline_ms: int
    context: Any = None


@dataclass(slots=True)
class _Replica:
    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(slots=True)
class _ParkedFetch:
    source: int
    version: int
    correlation_id: int
    fetch_offset: int
    max_bytes: int
    deadline_ms: int
    high_watermark: int | None


class RaftNode:
    """One KRaft replica (voter or observer) of ``__cluster_metadata-0``."""

    def __init__(
        self, config: RaftConfig, log: RaftLog, state: QuorumStateStore, *, now_ms: int, seed: int
    ) -> None:
        self.config = config
        self.log = log
        self._store = state
        self._rng = random.Random(seed)
        self._next_correlation = 1
        self._outbox: list[Effect] = []
        self._in_flight: dict[int, _InFlight] = {}
        self._committed: list[Committed] = []
        self._hw: int | None = None
        # election state
        stored = state.read() or ElectionState(0)
        self._epoch = stored.epoch
        self._leader_id: int | None = stored.leader_id
        self._voted_id: int | None = stored.voted_id
        self._role = Role.UNATTACHED
        # timers
        self._election_deadline: int | None = None
        self._fetch_deadline: int | None = None
        self._send_at: int | None = None  # when the follower/observer may send its next request
        # candidate / prospective
        self._grants: set[int] = set()
        self._rejects: set[int] = set()
        self._votes_sent = False
        # leader
        self._replicas: dict[int, _Replica] = {}
        self._epoch_start_offset = -1
        self._begin_pending: dict[int, int] = {}  # voter -> next send time
        self._begin_sent_ms: dict[int, int] = {}  # voter -> when BeginQuorumEpoch last went out
        self._parked: list[_ParkedFetch] = []
        self._needs_flush = False
        self._flush_at = 0
        self._changes = VoterChanges(self)  # AddRaftVoter / RemoveRaftVoter in progress
        self._resign_requested = False
        # resigned
        self._end_pending: dict[int, int] = {}
        # follower snapshot download
        self._download: tuple[SnapshotId, bytearray, int] | None = None  # id, bytes so far, size
        self._last_fetch_ok_ms: int | None = None
        self._abandoned_leader: int | None = None
        # KIP-853 control state: (offset of the record, value) in log order; the entries of a
        # snapshot's header sit at its end offset - 1 (Kafka's KRaftControlRecordStateMachine)
        self._kraft_history: list[tuple[int, int]] = []
        self._voters_history: list[tuple[int, VoterSet]] = []
        self._static_voters = VoterSet.static(config.voters, config.voter_endpoints,
                                              config.kraft_version_range)
        self._voter_set = self._static_voters
        self._addresses: dict[int, tuple[str, int]] = dict(zip(config.bootstrap_ids, config.bootstrap_servers,
                                                                strict=True))
        self._rebuild_kraft_state()
        # committed delivery
        snap = log.latest_snapshot()
        self._applied = log.start_offset
        if snap is not None and snap.end_offset >= log.start_offset and snap.end_offset > 0:
            # (the bootstrap snapshot 0-0 holds only the initial voters: nothing to load)
            self._queue_snapshot_load(snap)
        self._initialize(now_ms)

    # ================================================================== public properties
    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def role(self) -> Role:
        return self._role

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def leader_id(self) -> int | None:
        return self._leader_id

    @property
    def voted_id(self) -> int | None:
        return self._voted_id

    @property
    def is_leader(self) -> bool:
        return self._role is Role.LEADER

    @property
    def high_watermark(self) -> int | None:
        """The committed end offset this node knows (None until it learns one after a start)."""
        return self._hw

    @property
    def kraft_version(self) -> int:
        """The latest kraft.version in this replica's log (Kafka's ``lastKraftVersion``): on the
        leader it includes an upgrade not committed yet, on a follower what it has replicated."""
        return self._kraft_history[-1][1] if self._kraft_history else 0

    def kraft_version_at(self, offset: int) -> int:
        """The kraft.version in force for the log below ``offset`` (e.g. the high watermark)."""
        level = 0
        for at, value in self._kraft_history:
            if at >= offset:
                break
            level = value
        return level

    def _voters_record_at(self, offset: int) -> Body | None:
        """The VotersRecord value in force for the log below ``offset`` (a snapshot's header)."""
        found: VoterSet | None = None
        for at, value in self._voters_history:
            if at >= offset:
                break
            found = value
        return None if found is None else found.to_record()

    @property
    def voter_set(self) -> VoterSet:
        """The voters in force (Kafka's ``lastVoterSet``): the latest VotersRecord in the log or
        snapshot, committed or not, else the static ``controller.quorum.voters``."""
        return self._voter_set

    @property
    def voters(self) -> tuple[int, ...]:
        return self._voter_set.ids

    @property
    def is_voter(self) -> bool:
        return self._voter_set.is_voter(self.node_id, self.config.directory_id)

    def _majority(self) -> int:
        return len(self._voter_set.voters) // 2 + 1

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        """Where to send requests for ``node_id``: a voter's controller endpoint, a bootstrap
        server (negative ids), or an endpoint a response or AddRaftVoter named."""
        voter = self._voter_set.get(node_id)
        found = voter.address(self.config.listener_name) if voter is not None else None
        return found or self._addresses.get(node_id)

    def _voters_changed(self) -> None:
        """The latest VotersRecord changed (appended, replicated, truncated away, or loaded)."""
        self._voter_set = self._voters_history[-1][1] if self._voters_history else self._static_voters
        if self._role is Role.LEADER:
            for v in self._voter_set.ids:
                self._replicas.setdefault(v, _Replica())

    @property
    def epoch_start_offset(self) -> int:
        """Offset of the leader's LeaderChange record of the current epoch (-1 when not leader)."""
        return self._epoch_start_offset if self._role is Role.LEADER else -1

    def quorum_info(self, now_ms: int | None = None) -> QuorumInfo:
        """A read-only view for DescribeQuorum, status output and the simulator's checks."""
        voters: list[ReplicaProgress] = []
        observers: list[ReplicaProgress] = []
        if self._role is Role.LEADER:
            for rid, rep in self._replicas.items():
                end = self.log.flushed_offset if rid == self.node_id else rep.end_offset
                fetch = now_ms if (rid == self.node_id and now_ms is not None) else rep.last_fetch_ms
                progress = ReplicaProgress(rid, end, -1 if fetch is None else fetch, rep.last_caught_up_ms)
                (voters if rid in self.voters else observers).append(progress)
        return QuorumInfo(
            self.node_id,
            self._role,
            self._epoch,
            self._leader_id,
            self._voted_id,
            self._hw,
            self.log.start_offset,
            self.log.end_offset,
            tuple(voters),
            tuple(observers),
        )

    # ================================================================== public inputs
    def take_effects(self) -> list[Effect]:
        """Effects accumulated by calls that return something else (``append``)."""
        out, self._outbox = self._outbox, []
        return out

    def poll(self, now_ms: int) -> list[Effect]:
        """Run timers: elections, fetch timeouts, retries, long-poll expiry, the leader's flush."""
        self._expire_in_flight(now_ms)
        role = self._role
        if role is Role.LEADER:
            self._leader_poll(now_ms)
        elif role is Role.RESIGNED:
            self._send_end_quorum(now_ms)
            if self._election_deadline is not None and now_ms >= self._election_deadline:
                self._become_prospective(now_ms, 0)
        elif role in (Role.PROSPECTIVE, Role.CANDIDATE):
            if not self._votes_sent and self._send_at is not None and now_ms >= self._send_at:
                self._send_votes(now_ms)
            elif self._election_deadline is not None and now_ms >= self._election_deadline:
                self._become_prospective(now_ms, self._backoff())
        elif role is Role.FOLLOWER:
            if self._fetch_deadline is not None and now_ms >= self._fetch_deadline:
                if self.is_voter:
                    self._become_prospective(now_ms, 0)
                else:
                    self._become_unattached(self._epoch, now_ms, persist=False)
            else:
                self._maybe_send_fetch(now_ms)
        elif role is Role.UNATTACHED:
            if self.is_voter:
                if self._election_deadline is None:  # an observer the voter set just took in
                    self._election_deadline = now_ms + self._randomized_election_timeout()
                elif now_ms >= self._election_deadline:
                    self._become_prospective(now_ms, 0)
            else:
                self._maybe_discover(now_ms)
        return self.take_effects()

    def next_deadline_ms(self) -> int:
        """The earliest time ``poll`` has something to do (the host may call it earlier)."""
        times = [f.deadline_ms for f in self._in_flight.values()]
        for t in (self._election_deadline, self._fetch_deadline):
            if t is not None:
                times.append(t)
        if self._send_at is not None:
            role = self._role
            if role in (Role.PROSPECTIVE, Role.CANDIDATE):
                if not self._votes_sent:
                    times.append(self._send_at)
            elif (role is Role.FOLLOWER or (role is Role.UNATTACHED and not self.is_voter)) and not (
                self._has_in_flight(API_FETCH) or self._has_in_flight(API_FETCH_SNAPSHOT)
            ):
                times.append(self._send_at)
        if self._role is Role.LEADER:
            if self._needs_flush:
                times.append(self._flush_at)
            end = self.log.end_offset
            times.extend(
                0 if end > p.fetch_offset or p.high_watermark != self._hw else p.deadline_ms
                for p in self._parked
            )
            times.extend(self._begin_pending.values())
            times.extend(self._begin_resend_due(v) for v in self._begin_resend_candidates())
            times.append(self._check_quorum_deadline())
            change_deadline = self._changes.next_deadline_ms()
            if change_deadline is not None:
                times.append(change_deadline)
            if self._resign_requested:
                times.append(0)
        elif self._role is Role.RESIGNED:
            times.extend(self._end_pending.values())
        return min(times) if times else 1 << 62

    def append(self, records: Sequence[bytes], now_ms: int) -> int:
        """Append one batch of record values (metadata record frames) as leader; returns the
        offset of the last record. It is committed once ``high_watermark`` passes that offset."""
        if self._role is not Role.LEADER:
            raise NotLeaderError(
                f"node {self.node_id} is not the leader (role {self._role.value}, "
                f"epoch {self._epoch}, leader {self._leader_id})",
                self._leader_id,
                self._epoch,
            )
        if not records:
            raise ValueError("append needs at least one record")
        builder = RecordsBuilder(base_offset=self.log.end_offset, partition_leader_epoch=self._epoch)
        for value in records:
            builder.append(now_ms, None, value)
        self.log.append(builder.build())
        if not self._needs_flush:
            self._needs_flush = True
            self._flush_at = now_ms + self.config.append_linger_ms
        return self.log.end_offset - 1

    def upgrade_kraft_version(self, level: int, now_ms: int, validate_only: bool = False) -> bool:
        """Raise kraft.version to ``level`` (KIP-853, Kafka's ``RaftClient.upgradeKRaftVersion``).

        Leader only. The same level is a no-op (False), a lower one or one outside
        ``config.kraft_version_range`` is refused with :class:`KRaftVersionError`. 0 -> 1 appends one
        control batch holding a KRaftVersionRecord and a VotersRecord of the static voters (their
        endpoints from the config, directory ids unknown, so Kafka's zero uuid); it commits like any
        append. ``validate_only`` runs the checks and writes nothing. True when it (would) write.
        """
        if self._role is not Role.LEADER:
            raise NotLeaderError(
                f"Upgrade kraft version failed because node {self.node_id} is not the leader "
                f"(role {self._role.value}, epoch {self._epoch}, leader {self._leader_id})",
                self._leader_id,
                self._epoch,
            )
        current = self.kraft_version
        if level == current:
            return False
        if level < current:
            raise KRaftVersionError(
                f"Invalid upgrade of {_KRAFT_VERSION} from version {current} to {level} "
                "because the new version is a downgrade"
            )
        low, high = self.config.kraft_version_range
        if current != 0 or level != 1 or not low <= level <= high:
            raise KRaftVersionError(f"Invalid upgrade of {_KRAFT_VERSION} from version {current} to {level}")
        if validate_only:
            return True
        voters = VoterSet.static(self.config.voters, self.config.voter_endpoints, (low, high))
        builder = RecordsBuilder(
            base_offset=self.log.end_offset, is_control=True, partition_leader_epoch=self._epoch
        )
        builder.append_control_record(
            now_ms,
            ControlRecordType.KRAFT_VERSION,
            codec.encode(KRAFT_VERSION_RECORD, 0, {"version": 0, "kRaftVersion": level}),
        )
        builder.append_control_record(
            now_ms, ControlRecordType.KRAFT_VOTERS, codec.encode(VOTERS_RECORD, 0, voters.to_record())
        )
        base = self.log.end_offset
        self.log.append(builder.build())
        self._kraft_history.append((base, level))
        self._voters_history.append((base + 1, voters))
        self._voters_changed()
        if not self._needs_flush:
            self._needs_flush = True
            self._flush_at = now_ms + self.config.append_linger_ms
        log.info("node %d appended kraft.version %d at offset %d", self.node_id, level, base)
        return True

    def _track_controls(self, raw: bytes) -> None:
        """Record the KRaftVersion/KRaftVoters records of batches just added to the log."""
        try:
            controls = _kraft_controls(raw)
        except RecordsError as exc:
            raise RaftStateError(f"node {self.node_id}: corrupt control batch: {exc}") from None
        for offset, rtype, value in controls:
            if rtype is ControlRecordType.KRAFT_VERSION:
                level = int(codec.decode(KRAFT_VERSION_RECORD, 0, value)["kRaftVersion"])
                self._kraft_history.append((offset, level))
            else:
                voters = VoterSet.from_record(codec.decode(VOTERS_RECORD, 0, value))
                self._voters_history.append((offset, voters))
                self._voters_changed()

    def _rebuild_kraft_state(self) -> None:
        """Read the control state from the latest snapshot and the log after it (start-up, a
        downloaded snapshot): it persists across restarts through the log."""
        self._kraft_history = []
        self._voters_history = []
        start = self.log.start_offset
        snap = self.log.latest_snapshot()
        if snap is not None and snap.end_offset >= start:
            raw = self.log.read_snapshot(snap, 0, self.log.snapshot_size(snap) or 0)
            try:
                controls = _kraft_controls(raw)
            except RecordsError as exc:
                raise RaftStateError(f"snapshot {snap.file_name} is corrupt: {exc}") from None
            for _offset, rtype, value in controls:
                if rtype is ControlRecordType.KRAFT_VERSION:
                    level = int(codec.decode(KRAFT_VERSION_RECORD, 0, value)["kRaftVersion"])
                    self._kraft_history.append((snap.end_offset - 1, level))
                else:
                    voters = VoterSet.from_record(codec.decode(VOTERS_RECORD, 0, value))
                    self._voters_history.append((snap.end_offset - 1, voters))
            start = snap.end_offset
        if start < self.log.end_offset:
            for _info, raw in self.log.batches(start, self.log.end_offset):
                self._track_controls(raw)
        self._voters_changed()

    def _forget_controls_from(self, offset: int) -> None:
        """The log was truncated to ``offset``: its control records there are gone."""
        self._kraft_history = [e for e in self._kraft_history if e[0] < offset]
        self._voters_history = [e for e in self._voters_history if e[0] < offset]
        self._voters_changed()

    def _append_voters(self, voters: VoterSet, now_ms: int) -> int:
        """Append a control batch holding one VotersRecord (leader); returns its offset. The new
        voter set is in force at once, before it commits (Kafka's KRaft listener reads it)."""
        builder = RecordsBuilder(
            base_offset=self.log.end_offset, is_control=True, partition_leader_epoch=self._epoch
        )
        builder.append_control_record(
            now_ms, ControlRecordType.KRAFT_VOTERS, codec.encode(VOTERS_RECORD, 0, voters.to_record())
        )
        offset = self.log.end_offset
        batch = builder.build()
        self.log.append(batch)
        self._track_controls(batch)
        if not self._needs_flush:
            self._needs_flush = True
            self._flush_at = now_ms + self.config.append_linger_ms
        log.info("node %d appended the voter set %s at offset %d", self.node_id, voters.keys_text, offset)
        return offset

    def _replica_caught_up(self, replica: int, now_ms: int, window_ms: int) -> bool:
        """Kafka's ``isReplicaCaughtUp`` for an observer about to become a voter."""
        rep = self._replicas.get(replica)
        return rep is not None and rep.last_caught_up_ms > 0 and rep.last_fetch_ms > now_ms - window_ms

    def _resign_after_removal(self) -> None:
        self._resign_requested = True

    def drain_committed(self) -> list[Committed]:
        """Committed batches (and snapshot loads) not handed out yet, in log order."""
        self._deliver_committed()
        out, self._committed = self._committed, []
        return out

    def create_snapshot(self, end_offset: int, records: Sequence[bytes], now_ms: int) -> SnapshotId:
        """Store the state machine's snapshot of everything below ``end_offset`` (a committed batch
        boundary already handed out by ``drain_committed``), then clean the log behind it."""
        self._deliver_committed()
        if end_offset > self._applied:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is past the committed offset {self._applied}"
            )
        latest = self.log.latest_snapshot()
        if latest is not None and end_offset <= latest.end_offset:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is not past the latest snapshot {latest.end_offset}"
            )
        if end_offset <= self.log.start_offset:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is not past the log start {self.log.start_offset}"
            )
        found = self.log.batches(end_offset - 1, end_offset)
        if not found or found[-1][0].last_offset != end_offset - 1:
            raise InvalidSnapshotError(f"snapshot end offset {end_offset} is not at a batch boundary")
        info, raw = found[-1]
        last_time = max((b.max_timestamp for b in iter_batches(raw)), default=0)
        sid = SnapshotId(end_offset, info.epoch)
        # Kafka's snapshot header batch carries the kraft.version and voters when kraft.version >= 1
        kraft_level = self.kraft_version_at(end_offset)
        data = b"".join(
            snapshot_file_batches(
                [tuple(records)] if records else [],
                epoch=info.epoch,
                last_contained_log_timestamp=last_time,
                kraft_version=kraft_level,
                voters=self._voters_record_at(end_offset) if kraft_level > 0 else None,
                clock=lambda: now_ms,
            )
        )
        self.log.write_snapshot(sid, data)
        if self.config.clean_log_behind_snapshot:
            self.log.delete_before_snapshot(sid)
        return sid

    def handle_send_failure(self, destination: int, correlation_id: int, now_ms: int) -> list[Effect]:
        """The host could not deliver request ``correlation_id`` (connection refused or closed)."""
        flight = self._in_flight.pop(correlation_id, None)
        if flight is not None:
            self._request_failed(flight, now_ms)
        return self.take_effects()

    def handle_request(
        self, source_id: int, api_key: int, version: int, body: Body, correlation_id: int, now_ms: int
    ) -> list[Effect]:
        """A request from node ``source_id``; the response may be deferred (long-poll Fetch)."""
        if api_key == API_FETCH:
            self._on_fetch_request(source_id, version, body, correlation_id, now_ms)
        elif api_key == API_VOTE:
            self._respond(
                source_id, API_VOTE, version, correlation_id, self._on_vote_request(version, body, now_ms)
            )
        elif api_key == API_BEGIN_QUORUM_EPOCH:
            self._respond(
                source_id, api_key, version, correlation_id, self._on_begin_quorum_request(body, now_ms)
            )
        elif api_key == API_END_QUORUM_EPOCH:
            self._respond(
                source_id, api_key, version, correlation_id, self._on_end_quorum_request(body, now_ms)
            )
        elif api_key == API_FETCH_SNAPSHOT:
            self._respond(source_id, api_key, version, correlation_id, self._on_fetch_snapshot_request(body))
        elif api_key == API_DESCRIBE_QUORUM:
            self._respond(source_id, api_key, version, correlation_id, self.describe_quorum(now_ms))
        elif api_key == API_ADD_RAFT_VOTER:
            self._changes.add_voter(source_id, version, body, correlation_id, now_ms)
        elif api_key == API_REMOVE_RAFT_VOTER:
            self._changes.remove_voter(source_id, version, body, correlation_id, now_ms)
        else:
            raise ValueError(f"raft does not handle api key {api_key}")
        return self.take_effects()

    def handle_response(
        self, source_id: int, api_key: int, version: int, body: Body, correlation_id: int, now_ms: int
    ) -> list[Effect]:
        """A response to one of this node's requests; stale or duplicated ones are ignored."""
        flight = self._in_flight.get(correlation_id)
        if flight is None or flight.destination != source_id or flight.api_key != api_key:
            return self.take_effects()
        del self._in_flight[correlation_id]
        if api_key == API_FETCH:
            self._on_fetch_response(source_id, body, flight, now_ms)
        elif api_key == API_VOTE:
            self._on_vote_response(source_id, body, flight, now_ms)
        elif api_key == API_BEGIN_QUORUM_EPOCH:
            self._on_begin_quorum_response(source_id, body, now_ms)
        elif api_key == API_END_QUORUM_EPOCH:
            self._on_end_quorum_response(source_id, body, now_ms)
        elif api_key == API_FETCH_SNAPSHOT:
            self._on_fetch_snapshot_response(source_id, body, flight, now_ms)
        elif api_key == API_API_VERSIONS:
            self._changes.api_versions_response(source_id, body, now_ms)
        return self.take_effects()

    def describe_quorum(self, now_ms: int) -> Body:
        """A DescribeQuorum response body (v0-2 share this shape; NOT_LEADER unless leader)."""
        hw = -1 if self._hw is None else self._hw
        if self._role is not Role.LEADER:
            return self._partition_body(_NONE, _NOT_LEADER, highWatermark=hw, currentVoters=[], observers=[])
        info = self.quorum_info(now_ms)

        def states(progress: tuple[ReplicaProgress, ...]) -> list[Body]:
            return [
                {
                    "replicaId": p.replica_id,
                    "logEndOffset": p.log_end_offset,
                    "lastFetchTimestamp": p.last_fetch_ms,
                    "lastCaughtUpTimestamp": p.last_caught_up_ms,
                }
                for p in progress
            ]

        return self._partition_body(
            _NONE,
            _NONE,
            highWatermark=hw,
            currentVoters=states(info.voters),
            observers=states(info.observers),
        )

    def _request_body(self, voter: int | None, **fields: Any) -> Body:
        """The one-partition request shape Vote and Begin/EndQuorumEpoch share (``voter``: the
        VoterId field, None where the RPC has none)."""
        body: Body = {
            "clusterId": self.config.cluster_id,
            "topics": [
                {
                    "topicName": METADATA_TOPIC,
                    "partitions": [{"partitionIndex": METADATA_PARTITION, **fields}],
                }
            ],
        }
        if voter is not None:
            body["voterId"] = voter
        return body

    def _partition_body(self, error: int, partition_error: int, **fields: Any) -> Body:
        """The one-partition response shape Vote, Begin/EndQuorumEpoch and DescribeQuorum share:
        this node's view of the leader plus the RPC's own ``fields``."""
        return {
            "errorCode": error,
            "topics": [
                {
                    "topicName": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partitionIndex": METADATA_PARTITION,
                            "errorCode": partition_error,
                            "leaderId": -1 if self._leader_id is None else self._leader_id,
                            "leaderEpoch": self._epoch,
                            **fields,
                        }
                    ],
                }
            ],
        }

    # ================================================================== state transitions
    def _initialize(self, now_ms: int) -> None:
        cfg = self.config
        if self._leader_id == cfg.node_id and self.is_voter:
            # Kafka: a leader that restarts comes back resigned in its epoch, never leader
            self._role = Role.RESIGNED
            self._election_deadline = now_ms + self._randomized_election_timeout()
            self._end_pending = {v: now_ms for v in self.voters if v != cfg.node_id}
        elif self._leader_id is not None and self._leader_id != cfg.node_id:
            self._start_follower(now_ms)
        elif self._voted_id == cfg.node_id and self.is_voter:
            self._become_prospective(now_ms, self._backoff())
        else:
            self._role = Role.UNATTACHED
            if self.is_voter:
                self._election_deadline = now_ms + self._randomized_election_timeout()
            else:
                self._send_at = now_ms
        if self.is_voter and len(self.voters) == 1 and self._role is not Role.RESIGNED:
            self._become_prospective(now_ms, 0)

    def _persist(self) -> None:
        self._store.write(ElectionState(self._epoch, self._leader_id, self._voted_id))

    def _leave_role(self) -> None:
        """Clear per-role state; a leader answers its parked fetches with NOT_LEADER."""
        if self._role is Role.LEADER:
            self._changes.abort()
            self._resign_requested = False
            parked, self._parked = self._parked, []
            for p in parked:
                self._respond(
                    p.source, API_FETCH, p.version, p.correlation_id, self._fetch_error_body(_NOT_LEADER)
                )
        self._replicas = {}
        self._begin_pending = {}
        self._begin_sent_ms = {}
        self._end_pending = {}
        self._grants = set()
        self._rejects = set()
        self._votes_sent = False
        self._election_deadline = None
        self._fetch_deadline = None
        self._send_at = None
        self._epoch_start_offset = -1
        self._needs_flush = False
        # forget in-flight requests of the old role (their responses are ignored)
        self._in_flight = {}

    def _become_unattached(
        self, epoch: int, now_ms: int, *, voted: int | None = None, persist: bool = True
    ) -> None:
        changed = epoch != self._epoch
        self._leave_role()
        self._role = Role.UNATTACHED
        if changed:
            self._epoch = epoch
            self._leader_id = None
            self._voted_id = voted
        elif not persist:
            self._leader_id = None
        if persist:
            self._persist()
        if self.is_voter:
            self._election_deadline = now_ms + self._randomized_election_timeout()
        else:
            self._send_at = now_ms + self.config.retry_backoff_ms
        self._download = None

    def _become_follower(self, leader_id: int, epoch: int, now_ms: int) -> None:
        if epoch != self._epoch:
            self._voted_id = None
        self._leave_role()
        self._epoch = epoch
        self._leader_id = leader_id
        self._persist()
        self._start_follower(now_ms)

    def _start_follower(self, now_ms: int) -> None:
        self._role = Role.FOLLOWER
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._send_at = now_ms
        self._download = None
        self._maybe_send_fetch(now_ms)

    def _become_prospective(self, now_ms: int, delay_ms: int) -> None:
        """KIP-996: ask for pre-votes for epoch + 1 without bumping the epoch."""
        if not self.is_voter:
            return
        # the leader we gave up on: vote responses that still name it must not pull us back
        self._abandoned_leader = self._leader_id
        if self._leader_id == self.node_id:
            self._leader_id = None  # a resigned leader no longer advertises itself
        self._leave_role()
        self._role = Role.PROSPECTIVE
        self._grants = {self.node_id}
        self._send_at = now_ms + delay_ms
        self._election_deadline = self._send_at + self._randomized_election_timeout()
        if delay_ms == 0:
            self._send_votes(now_ms)

    def _become_candidate(self, now_ms: int) -> None:
        self._leave_role()
        self._role = Role.CANDIDATE
        self._epoch += 1
        self._leader_id = None
        self._voted_id = self.node_id
        self._persist()
        self._grants = {self.node_id}
        self._send_at = now_ms
        self._election_deadline = now_ms + self._randomized_election_timeout()
        self._send_votes(now_ms)

    def _become_leader(self, now_ms: int) -> None:
        granting = sorted(self._grants)
        self._leave_role()
        self._role = Role.LEADER
        self._leader_id = self.node_id
        self._persist()
        self._download = None
        self._epoch_start_offset = self.log.end_offset
        value = codec.encode(
            LEADER_CHANGE_MESSAGE,
            0,
            {
                "version": 0,
                "leaderId": self.node_id,
                "voters": [{"voterId": v} for v in self.voters],
                "grantingVoters": [{"voterId": v} for v in granting],
            },
        )
        builder = RecordsBuilder(
            base_offset=self.log.end_offset, is_control=True, partition_leader_epoch=self._epoch
        )
        builder.append_control_record(now_ms, ControlRecordType.LEADER_CHANGE, value)
        if self.kraft_version >= 1 and self._voters_history and self._voters_history[-1][0] < 0:
            # Kafka's appendStartOfEpochControlRecords: voters known only from the bootstrap
            # snapshot go into the log, so that followers and observers replicate them
            kraft = {"version": 0, "kRaftVersion": self.kraft_version}
            builder.append_control_record(now_ms, ControlRecordType.KRAFT_VERSION,
                                          codec.encode(KRAFT_VERSION_RECORD, 0, kraft))
            builder.append_control_record(now_ms, ControlRecordType.KRAFT_VOTERS,
                                          codec.encode(VOTERS_RECORD, 0, self._voter_set.to_record()))
        batch = builder.build()
        self.log.append(batch)
        self._track_controls(batch)
        self._needs_flush = True
        self._flush_at = now_ms
        self._replicas = {v: _Replica(last_fetch_ms=now_ms) for v in self.voters}
        self._begin_pending = {v: now_ms for v in self.voters if v != self.node_id}
        log.info("node %d became leader of epoch %d", self.node_id, self._epoch)
        self._leader_poll(now_ms)

    def _become_resigned(self, now_ms: int) -> None:
        self._leave_role()
        self._role = Role.RESIGNED
        self._election_deadline = now_ms + self._randomized_election_timeout()
        self._end_pending = {v: now_ms for v in self.voters if v != self.node_id}
        self._send_end_quorum(now_ms)

    def _observe_epoch(self, leader_id: int, epoch: int, now_ms: int) -> bool:
        """React to (leader, epoch) learned from any message; True if the node changed state
        (a higher epoch, or a leader discovered in the current one)."""
        leader = None if leader_id < 0 else leader_id
        if epoch > self._epoch:
            if leader is not None and leader != self.node_id:
                self._become_follower(leader, epoch, now_ms)
            else:
                self._become_unattached(epoch, now_ms)
            return True
        same_epoch_leader = epoch == self._epoch and leader is not None and leader != self.node_id
        if same_epoch_leader and leader is not None and (
            self._role in (Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE)
            or (self._role is Role.FOLLOWER and self._leader_id != leader)
        ):
            self._become_follower(leader, epoch, now_ms)
            return True
        return False

    # ================================================================== helpers
    def _randomized_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self._rng.randint(0, t)

    def _backoff(self) -> int:
        return self._rng.randint(
            self.config.retry_backoff_ms,
            max(self.config.retry_backoff_ms, self.config.election_backoff_max_ms),
        )

    def _send(self, destination: int, api_key: int, body: Body, now_ms: int, context: Any = None) -> int:
        corr = self._next_correlation
        self._next_correlation += 1
        self._in_flight[corr] = _InFlight(
            destination, api_key, now_ms + self.config.request_timeout_ms, context
        )
        self._outbox.append(SendRequest(destination, api_key, REQUEST_VERSIONS[api_key], body, corr))
        return corr

    def _respond(self, destination: int, api_key: int, version: int, correlation_id: int, body: Body) -> None:
        self._outbox.append(SendResponse(destination, api_key, version, body, correlation_id))

    def _has_in_flight(self, api_key: int, destination: int | None = None) -> bool:
        return any(
            f.api_key == api_key and (destination is None or f.destination == destination)
            for f in self._in_flight.values()
        )

    def _expire_in_flight(self, now_ms: int) -> None:
        expired = [c for c, f in self._in_flight.items() if now_ms >= f.deadline_ms]
        for c in expired:
            self._request_failed(self._in_flight.pop(c), now_ms)

    def _request_failed(self, flight: _InFlight, now_ms: int) -> None:
        retry = now_ms + self.config.retry_backoff_ms
        if flight.api_key in (API_FETCH, API_FETCH_SNAPSHOT):
            self._send_at = retry
        elif flight.api_key == API_BEGIN_QUORUM_EPOCH and flight.destination in self._begin_pending:
            self._begin_pending[flight.destination] = retry
        elif flight.api_key == API_END_QUORUM_EPOCH and flight.destination in self._end_pending:
            self._end_pending[flight.destination] = retry
        elif flight.api_key == API_API_VERSIONS:
            self._changes.api_versions_failed(flight.destination)

    def _cluster_ok(self, body: Body) -> bool:
        cid = body.get("clusterId")
        return cid is None or self.config.cluster_id is None or cid == self.config.cluster_id

    @staticmethod
    def _partition(body: Body, topics_key: str = "topics") -> Body | None:
        topics = body.get(topics_key) or []
        if not topics:
            return None
        parts = topics[0].get("partitions") or []
        return parts[0] if parts else None

    # ================================================================== Vote
    def _send_votes(self, now_ms: int) -> None:
        pre = self._role is Role.PROSPECTIVE
        self._votes_sent = True
        self._send_at = None
        if self._has_majority(self._grants):
            if pre:
                self._become_candidate(now_ms)
            else:
                self._become_leader(now_ms)
            return
        epoch = self._epoch + 1 if pre else self._epoch
        for voter in self.voters:
            if voter == self.node_id:
                continue
            body = self._request_body(
                voter,
                replicaEpoch=epoch,
                replicaId=self.node_id,
                lastOffsetEpoch=self.log.last_fetched_epoch(),
                lastOffset=self.log.end_offset,
                preVote=pre,
            )
            self._send(voter, API_VOTE, body, now_ms, context=(pre, epoch))

    def _has_majority(self, ids: set[int]) -> bool:
        return len(ids & set(self.voters)) >= self._majority()

    def _log_up_to_date(self, last_epoch: int, last_offset: int) -> bool:
        return (last_epoch, last_offset) >= (self.log.last_fetched_epoch(), self.log.end_offset)

    def _vote_body(self, error: int, granted: bool, partition_error: int = _NONE) -> Body:
        return self._partition_body(error, partition_error, voteGranted=granted)

    def _recently_fetched_from_leader(self, now_ms: int) -> bool:
        if self._role is Role.LEADER:
            return True
        return (
            self._role is Role.FOLLOWER
            and self._last_fetch_ok_ms is not None
            and now_ms - self._last_fetch_ok_ms < self.config.fetch_timeout_ms
        )

    def _on_vote_request(self, version: int, body: Body, now_ms: int) -> Body:
        if not self._cluster_ok(body):
            return self._vote_body(_INCONSISTENT_CLUSTER, False)
        found = self._partition(body)
        if found is None:
            return self._vote_body(_INVALID_REQUEST, False)
        part = cast(VoteRequestPartitionData, found)
        candidate = int(part["replicaId"])
        epoch = int(part["replicaEpoch"])
        pre = bool(part.get("preVote", False)) and version >= 2
        if not self.is_voter or candidate not in self.voters:
            return self._vote_body(_NONE, False)
        up_to_date = self._log_up_to_date(int(part["lastOffsetEpoch"]), int(part["lastOffset"]))
        if pre:
            # KIP-996: grant unless we know of a live leader or our log is further along
            granted = (
                (epoch > self._epoch or (epoch == self._epoch and self._leader_id is None))
                and up_to_date
                and not self._recently_fetched_from_leader(now_ms)
            )
            return self._vote_body(_NONE, granted)
        if epoch < self._epoch:
            return self._vote_body(_NONE, False, _FENCED)
        if epoch > self._epoch:
            self._become_unattached(epoch, now_ms)
        granted = False
        if self._role is Role.UNATTACHED or (self._role is Role.PROSPECTIVE and self._leader_id is None):
            if self._voted_id in (None, candidate) and self._leader_id is None and up_to_date:
                granted = True
                if self._voted_id != candidate:
                    self._voted_id = candidate
                    self._persist()
                if self._role is not Role.UNATTACHED:
                    self._become_unattached(self._epoch, now_ms)
                else:
                    self._election_deadline = now_ms + self._randomized_election_timeout()
        elif self._role is Role.CANDIDATE and self._voted_id == candidate:
            granted = True
        return self._vote_body(_NONE, granted)

    def _on_vote_response(self, source: int, body: Body, flight: _InFlight, now_ms: int) -> None:
        found = self._partition(body)
        if body.get("errorCode", _NONE) != _NONE or found is None:
            return
        part = cast(VoteResponsePartitionData, found)
        leader_id, leader_epoch = int(part["leaderId"]), int(part["leaderEpoch"])
        granted = part["errorCode"] == _NONE and bool(part["voteGranted"])
        # a voter that grants a pre-vote has lost its leader too: the leader it still names is the
        # one we gave up on, so it must not pull us back (a rejection means that leader is alive)
        stale = (
            granted
            and self._role is Role.PROSPECTIVE
            and leader_epoch == self._epoch
            and leader_id == self._abandoned_leader
        )
        if not stale and self._observe_epoch(leader_id, leader_epoch, now_ms):
            return
        pre, epoch = flight.context
        if (self._role is Role.PROSPECTIVE and pre and epoch == self._epoch + 1) or (
            self._role is Role.CANDIDATE and not pre and epoch == self._epoch
        ):
            pass
        else:
            return
        if granted:
            self._grants.add(source)
            if self._has_majority(self._grants):
                if pre:
                    self._become_candidate(now_ms)
                else:
                    self._become_leader(now_ms)
        else:
            self._rejects.add(source)

    # ================================================================== Begin/EndQuorumEpoch
    def _quorum_epoch_body(self, error: int, partition_error: int = _NONE) -> Body:
        return self._partition_body(error, partition_error)

    def _on_begin_quorum_request(self, body: Body, now_ms: int) -> Body:
        if not self._cluster_ok(body):
            return self._quorum_epoch_body(_INCONSISTENT_CLUSTER)
        part = self._partition(body)
        if part is None:
            return self._quorum_epoch_body(_INVALID_REQUEST)
        leader, epoch = int(part["leaderId"]), int(part["leaderEpoch"])
        if epoch < self._epoch:
            return self._quorum_epoch_body(_NONE, _FENCED)
        if leader == self.node_id:
            return self._quorum_epoch_body(_INVALID_REQUEST)
        if epoch == self._epoch and self._role is Role.LEADER:
            raise RaftStateError(
                f"node {self.node_id} is leader of epoch {epoch} and node {leader} claims it"
            )
        if not (self._role is Role.FOLLOWER and self._leader_id == leader and self._epoch == epoch):
            self._become_follower(leader, epoch, now_ms)
        return self._quorum_epoch_body(_NONE)

    def _on_begin_quorum_response(self, source: int, body: Body, now_ms: int) -> None:
        part = self._partition(body)
        if part is None or body.get("errorCode", _NONE) != _NONE:
            return
        if self._observe_epoch(int(part["leaderId"]), int(part["leaderEpoch"]), now_ms):
            return
        if self._role is Role.LEADER and part["errorCode"] == _NONE:
            self._begin_pending.pop(source, None)

    def _send_end_quorum(self, now_ms: int) -> None:
        successors = sorted(
            (v for v in self.voters if v != self.node_id), key=lambda v: (-self._replica_end(v), v)
        )
        for voter, at in list(self._end_pending.items()):
            if now_ms < at or self._has_in_flight(API_END_QUORUM_EPOCH, voter):
                continue
            self._end_pending[voter] = now_ms + self.config.request_timeout_ms
            body = self._request_body(
                None,
                leaderId=self.node_id,
                leaderEpoch=self._epoch,
                preferredCandidates=[{"candidateId": s} for s in successors],
            )
            self._send(voter, API_END_QUORUM_EPOCH, body, now_ms)

    def _replica_end(self, replica: int) -> int:
        rep = self._replicas.get(replica)
        return -1 if rep is None else rep.end_offset

    def _on_end_quorum_request(self, body: Body, now_ms: int) -> Body:
        if not self._cluster_ok(body):
            return self._quorum_epoch_body(_INCONSISTENT_CLUSTER)
        part = self._partition(body)
        if part is None:
            return self._quorum_epoch_body(_INVALID_REQUEST)
        leader, epoch = int(part["leaderId"]), int(part["leaderEpoch"])
        if epoch < self._epoch:
            return self._quorum_epoch_body(_NONE, _FENCED)
        if epoch > self._epoch:
            self._become_unattached(epoch, now_ms)
        elif self._role is Role.FOLLOWER and self._leader_id == leader and self.is_voter:
            # Kafka's endQuorumEpochElectionBackoff: preferred successors time out first
            cands = [int(c["candidateId"]) for c in part.get("preferredCandidates") or []]
            if not cands:
                cands = [int(c) for c in part.get("preferredSuccessors") or []]
            pos = cands.index(self.node_id) if self.node_id in cands else len(cands)
            successor = ExponentialBackoff(self.config.retry_backoff_ms, self.config.election_backoff_max_ms)
            backoff = 0 if pos == 0 else successor.delay_ms(min(pos, 16))
            backoff += self._rng.randint(0, self.config.retry_backoff_ms)
            self._fetch_deadline = min(self._fetch_deadline or now_ms + backoff, now_ms + backoff)
            self._last_fetch_ok_ms = None
        return self._quorum_epoch_body(_NONE)

    def _on_end_quorum_response(self, source: int, body: Body, now_ms: int) -> None:
        part = self._partition(body)
        if part is None:
            return
        if self._observe_epoch(int(part["leaderId"]), int(part["leaderEpoch"]), now_ms):
            return
        if self._role is Role.RESIGNED:
            self._end_pending.pop(source, None)

    # ================================================================== leader: Fetch
    def _fetch_error_body(self, error: int) -> Body:
        return {
            "errorCode": _NONE,
            "responses": [
                {
                    "topicId": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partitionIndex": METADATA_PARTITION,
                            "errorCode": error,
                            "highWatermark": -1 if self._hw is None else self._hw,
                            "logStartOffset": self.log.start_offset,
                            "currentLeader": {
                                "leaderId": -1 if self._leader_id is None else self._leader_id,
                                "leaderEpoch": self._epoch,
                            },
                            "records": None,
                        }
                    ],
                }
            ],
            "nodeEndpoints": self._leader_endpoints(),
        }

    def _leader_endpoints(self) -> list[Body]:
        """Fetch's NodeEndpoints: where the leader this node knows listens, so that an observer
        that found the quorum through a bootstrap server can fetch from the leader itself."""
        leader = self._leader_id
        address = None if leader is None else self.address_of(leader)
        if leader is None or address is None:
            return []
        return [{"nodeId": leader, "host": address[0], "port": address[1], "rack": None}]

    def _on_fetch_request(self, source: int, version: int, body: Body, corr: int, now_ms: int) -> None:
        if not self._cluster_ok(body):
            self._respond(
                source, API_FETCH, version, corr, {"errorCode": _INCONSISTENT_CLUSTER, "responses": []}
            )
            return
        part = self._partition(body)
        if part is None:
            self._respond(source, API_FETCH, version, corr, {"errorCode": _INVALID_REQUEST, "responses": []})
            return
        replica = int(body["replicaState"]["replicaId"]) if version >= 15 else int(body.get("replicaId", -1))
        req_epoch = int(part.get("currentLeaderEpoch", -1))
        if req_epoch > self._epoch:
            self._respond(source, API_FETCH, version, corr, self._fetch_error_body(_UNKNOWN_EPOCH))
            return
        if req_epoch >= 0 and req_epoch < self._epoch:
            self._respond(source, API_FETCH, version, corr, self._fetch_error_body(_FENCED))
            return
        if self._role is not Role.LEADER:
            self._respond(source, API_FETCH, version, corr, self._fetch_error_body(_NOT_LEADER))
            return
        fetch_offset = int(part["fetchOffset"])
        last_epoch = int(part.get("lastFetchedEpoch", -1))
        max_bytes = min(
            int(part.get("partitionMaxBytes", self.config.fetch_max_bytes)), self.config.fetch_max_bytes
        )
        if fetch_offset < 0:
            self._respond(source, API_FETCH, version, corr, self._fetch_error_body(_INVALID_REQUEST))
            return
        start = self.log.start_offset
        snap = self.log.latest_snapshot()
        behind_start = start > 0 and (
            fetch_offset < start or (fetch_offset == start and last_epoch != self._snapshot_epoch_at(start))
        )
        # Kafka: a replica with an empty log starts from the latest snapshot (not the bootstrap one)
        # even where the log behind it was kept, rather than replaying every record from offset 0
        empty_replica = fetch_offset == 0 and snap is not None and snap.end_offset > 0
        if snap is not None and (behind_start or empty_replica):
            self._respond(source, API_FETCH, version, corr, self._fetch_body(snapshot=snap))
            return
        if fetch_offset > 0 or last_epoch > 0:
            # Kafka's validateOffsetAndEpoch; a fetch offset past our end always diverges here
            eo = self.log.end_offset_for_epoch(last_epoch)
            if eo.epoch != last_epoch or eo.offset < fetch_offset:
                if eo.offset < start and snap is not None:
                    body = self._fetch_body(snapshot=snap)
                elif eo.offset < 0:
                    body = self._fetch_body(diverge_to_zero=True)
                else:
                    body = self._fetch_body(diverging=eo)
                self._respond(source, API_FETCH, version, corr, body)
                return
        # a valid position: it is the replica's durable end offset
        self._update_replica(replica, fetch_offset, now_ms)
        max_wait = int(body.get("maxWaitMs", 0))
        if fetch_offset < self.log.end_offset or max_wait <= 0:
            self._respond(source, API_FETCH, version, corr, self._fetch_body(fetch_offset, max_bytes))
        else:
            self._parked.append(
                _ParkedFetch(source, version, corr, fetch_offset, max_bytes, now_ms + max_wait, self._hw)
            )

    def _snapshot_epoch_at(self, offset: int) -> int:
        for sid in self.log.snapshots():
            if sid.end_offset == offset:
                return sid.epoch
        return -1

    def _fetch_body(
        self,
        fetch_offset: int = -1,
        max_bytes: int = 0,
        *,
        snapshot: SnapshotId | None = None,
        diverging: Any = None,
        diverge_to_zero: bool = False,
    ) -> Body:
        part: Body = {
            "partitionIndex": METADATA_PARTITION,
            "errorCode": _NONE,
            "highWatermark": -1 if self._hw is None else self._hw,
            "logStartOffset": self.log.start_offset,
            "currentLeader": {"leaderId": self.node_id, "leaderEpoch": self._epoch},
            "records": None,
        }
        if snapshot is not None:
            part["snapshotId"] = {"endOffset": snapshot.end_offset, "epoch": snapshot.epoch}
        elif diverging is not None:
            part["divergingEpoch"] = {"epoch": diverging.epoch, "endOffset": diverging.offset}
        elif diverge_to_zero:
            part["divergingEpoch"] = {"epoch": 0, "endOffset": 0}
        elif fetch_offset >= 0:
            data = self.log.read(fetch_offset, max_bytes)
            part["records"] = data or None
        return {"errorCode": _NONE, "responses": [{"topicId": METADATA_TOPIC_ID, "partitions": [part]}],
                "nodeEndpoints": self._leader_endpoints()}

    def _update_replica(self, replica: int, offset: int, now_ms: int) -> None:
        rep = self._replicas.get(replica)
        if rep is None:
            rep = self._replicas[replica] = _Replica()
        if replica in self.voters:
            self._begin_pending.pop(replica, None)
        rep.last_fetch_ms = now_ms
        # a fetch offset can go down after a follower truncated; Kafka tracks the latest
        rep.end_offset = offset
        if offset >= self.log.end_offset:
            rep.last_caught_up_ms = now_ms
        self._update_high_watermark(now_ms)

    def _update_high_watermark(self, now_ms: int) -> None:
        if self._role is not Role.LEADER:
            return
        ends = sorted(
            (
                self.log.flushed_offset if v == self.node_id else self._replica_end(v)
                for v in self.voters
            ),
            reverse=True,
        )
        candidate = ends[self._majority() - 1]
        if candidate > self._epoch_start_offset and (self._hw is None or candidate > self._hw):
            self._hw = candidate
            self._changes.high_watermark_updated()

    def _begin_resend_candidates(self) -> list[int]:
        """Voters the beginQuorumEpoch timer may pick: not already pending, none in flight."""
        return [v for v in self.voters if v != self.node_id and v not in self._begin_pending
                and not self._has_in_flight(API_BEGIN_QUORUM_EPOCH, v)]

    def _begin_resend_due(self, voter: int) -> int:
        """When a voter that has stopped fetching is told again who leads (Kafka's
        beginQuorumEpoch timer, half a fetch timeout). A voter stuck at a higher epoch, e.g. a
        prospective candidate whose own election never reached the others, answers with that
        epoch, and this leader steps down so the quorum can take it back."""
        half = self.config.fetch_timeout_ms // 2
        return max(self._replicas[voter].last_fetch_ms, self._begin_sent_ms.get(voter, -half)) + half

    def _check_quorum_deadline(self) -> int:
        """When the leader resigns if a majority of voters has not fetched (Kafka's check-quorum,
        1.5 x fetch timeout)."""
        others = sorted(
            (self._replicas[v].last_fetch_ms for v in self.voters if v != self.node_id), reverse=True
        )
        need = self._majority() - (1 if self.is_voter else 0)
        if need <= 0 or not others:
            return 1 << 62
        return others[need - 1] + self.config.fetch_timeout_ms * 3 // 2

    def _leader_poll(self, now_ms: int) -> None:
        if self._needs_flush and now_ms >= self._flush_at:
            self.log.flush()  # the leader's records count only once durable
            self._needs_flush = False
            self._update_high_watermark(now_ms)
        self._changes.expire(now_ms)
        if self._resign_requested:
            log.info("leader %d is not in the committed voter set %s; resigning from epoch %d",
                     self.node_id, self.voter_set.keys_text, self._epoch)
            self._become_resigned(now_ms)
            return
        if now_ms >= self._check_quorum_deadline():
            log.info(
                "leader %d of epoch %d lost contact with a majority; resigning", self.node_id, self._epoch
            )
            self._become_resigned(now_ms)
            return
        for voter in self._begin_resend_candidates():
            if now_ms >= self._begin_resend_due(voter):
                self._begin_pending[voter] = now_ms
        for voter, at in list(self._begin_pending.items()):
            if now_ms >= at and not self._has_in_flight(API_BEGIN_QUORUM_EPOCH, voter):
                self._begin_pending[voter] = now_ms + self.config.request_timeout_ms
                self._begin_sent_ms[voter] = now_ms
                body = self._request_body(voter, leaderId=self.node_id, leaderEpoch=self._epoch)
                self._send(voter, API_BEGIN_QUORUM_EPOCH, body, now_ms)
        if self._parked:
            keep = []
            end = self.log.end_offset
            for p in self._parked:
                if now_ms >= p.deadline_ms or end > p.fetch_offset or p.high_watermark != self._hw:
                    self._respond(
                        p.source,
                        API_FETCH,
                        p.version,
                        p.correlation_id,
                        self._fetch_body(p.fetch_offset, p.max_bytes),
                    )
                else:
                    keep.append(p)
            self._parked = keep

    # ================================================================== leader: FetchSnapshot
    def _on_fetch_snapshot_request(self, body: Body) -> Body:
        part = self._partition(body)

        def reply(
            error: int, sid: Body | None = None, size: int = 0, position: int = 0, data: bytes = b""
        ) -> Body:
            return {
                "errorCode": _NONE,
                "topics": [
                    {
                        "name": METADATA_TOPIC,
                        "partitions": [
                            {
                                "index": METADATA_PARTITION,
                                "errorCode": error,
                                "snapshotId": sid or {"endOffset": -1, "epoch": -1},
                                "currentLeader": {
                                    "leaderId": -1 if self._leader_id is None else self._leader_id,
                                    "leaderEpoch": self._epoch,
                                },
                                "size": size,
                                "position": position,
                                "unalignedRecords": data,
                            }
                        ],
                    }
                ],
            }

        if part is None:
            return reply(_INVALID_REQUEST)
        req_epoch = int(part["currentLeaderEpoch"])
        if req_epoch < self._epoch:
            return reply(_FENCED)
        if req_epoch > self._epoch:
            return reply(_UNKNOWN_EPOCH)
        if self._role is not Role.LEADER:
            return reply(_NOT_LEADER)
        sid = SnapshotId(int(part["snapshotId"]["endOffset"]), int(part["snapshotId"]["epoch"]))
        size = self.log.snapshot_size(sid)
        if size is None:
            return reply(_SNAPSHOT_NOT_FOUND, part["snapshotId"])
        position = int(part["position"])
        if position < 0 or position >= size:
            return reply(_POSITION_OUT_OF_RANGE, part["snapshotId"], size, position)
        limit = min(
            int(body.get("maxBytes", self.config.fetch_snapshot_max_bytes)),
            self.config.fetch_snapshot_max_bytes,
        )
        return reply(_NONE, part["snapshotId"], size, position, self.log.read_snapshot(sid, position, limit))

    # ================================================================== follower side
    def _maybe_discover(self, now_ms: int) -> None:
        """An observer without a leader asks a random voter (Kafka's bootstrap fetch)."""
        if self._send_at is None or now_ms < self._send_at or self._has_in_flight(API_FETCH):
            return
        voter = self._rng.choice(self.voters or self.config.bootstrap_ids)
        self._send_fetch(voter, now_ms)
        self._send_at = now_ms + self.config.request_timeout_ms

    def _maybe_send_fetch(self, now_ms: int) -> None:
        if (
            self._role is not Role.FOLLOWER
            or self._leader_id is None
            or self._send_at is None
            or now_ms < self._send_at
        ):
            return
        if self._has_in_flight(API_FETCH) or self._has_in_flight(API_FETCH_SNAPSHOT):
            return
        if self._download is not None:
            sid, buf, _ = self._download
            body = {
                "clusterId": self.config.cluster_id,
                "replicaId": self.node_id,
                "maxBytes": self.config.fetch_snapshot_max_bytes,
                "topics": [
                    {
                        "name": METADATA_TOPIC,
                        "partitions": [
                            {
                                "partition": METADATA_PARTITION,
                                "currentLeaderEpoch": self._epoch,
                                "snapshotId": {"endOffset": sid.end_offset, "epoch": sid.epoch},
                                "position": len(buf),
                            }
                        ],
                    }
                ],
            }
            self._send(self._leader_id, API_FETCH_SNAPSHOT, body, now_ms, context=(sid, len(buf)))
        else:
            self._send_fetch(self._leader_id, now_ms)
        self._send_at = None

    def _send_fetch(self, destination: int, now_ms: int) -> None:
        offset = self.log.end_offset
        body = {
            "clusterId": self.config.cluster_id,
            "replicaState": {"replicaId": self.node_id, "replicaEpoch": -1},
            "maxWaitMs": self.config.fetch_max_wait_ms,
            "minBytes": 0,
            "maxBytes": self.config.fetch_max_bytes,
            "topics": [
                {
                    "topicId": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partition": METADATA_PARTITION,
                            "currentLeaderEpoch": self._epoch,
                            "fetchOffset": offset,
                            "lastFetchedEpoch": self.log.last_fetched_epoch(),
                            "logStartOffset": self.log.start_offset,
                            "partitionMaxBytes": self.config.fetch_max_bytes,
                        }
                    ],
                }
            ],
        }
        self._send(destination, API_FETCH, body, now_ms, context=(self._epoch, offset))

    def _on_fetch_response(self, source: int, body: Body, flight: _InFlight, now_ms: int) -> None:
        retry = now_ms + self.config.retry_backoff_ms
        responses = body.get("responses") or []
        part = responses[0]["partitions"][0] if responses and responses[0].get("partitions") else None
        if body.get("errorCode", _NONE) != _NONE or part is None:
            self._send_at = retry
            return
        for endpoint in body.get("nodeEndpoints") or ():
            self._addresses[int(endpoint["nodeId"])] = (str(endpoint["host"]), int(endpoint["port"]))
        leader = part.get("currentLeader") or {}
        leader_id, leader_epoch = int(leader.get("leaderId", -1)), int(leader.get("leaderEpoch", -1))
        if self._observe_epoch(leader_id, leader_epoch, now_ms):
            return
        sent_epoch, sent_offset = flight.context
        if (
            part["errorCode"] != _NONE
            or self._role is not Role.FOLLOWER
            or source != self._leader_id
            or sent_epoch != self._epoch
            or sent_offset != self.log.end_offset
        ):
            if self._role in (Role.FOLLOWER, Role.UNATTACHED):
                self._send_at = retry
            return
        self._last_fetch_ok_ms = now_ms
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        self._send_at = now_ms
        diverging = part.get("divergingEpoch") or {}
        snapshot = part.get("snapshotId") or {}
        if int(snapshot.get("endOffset", -1)) >= 0 and int(snapshot.get("epoch", -1)) >= 0:
            sid = SnapshotId(int(snapshot["endOffset"]), int(snapshot["epoch"]))
            self._download = (sid, bytearray(), -1)
        elif int(diverging.get("endOffset", -1)) >= 0 and int(diverging.get("epoch", -1)) >= 0:
            self._truncate_diverging(int(diverging["epoch"]), int(diverging["endOffset"]))
        else:
            data = part.get("records")
            if data:
                self._append_as_follower(bytes(data))
            self._update_follower_hw(int(part.get("highWatermark", -1)))
        self._maybe_send_fetch(now_ms)

    def _truncate_diverging(self, epoch: int, end_offset: int) -> None:
        local = self.log.end_offset_for_epoch(epoch)
        target = end_offset if local.offset < 0 else min(end_offset, local.offset)
        committed = max(self._applied, self._hw or 0)
        if target < committed:
            raise RaftStateError(
                f"node {self.node_id}: diverging epoch {epoch} at {end_offset} would truncate "
                f"to {target}, below the committed offset {committed}"
            )
        if target < self.log.start_offset:
            raise RaftStateError(
                f"node {self.node_id}: truncation to {target} is below the log start {self.log.start_offset}"
            )
        log.debug(
            "node %d truncates to %d (diverging epoch %d end %d)", self.node_id, target, epoch, end_offset
        )
        self.log.truncate_to(target)
        self._forget_controls_from(target)

    def _append_as_follower(self, data: bytes) -> None:
        infos, _valid = scan_batch_infos(data)
        for info in infos:
            if info.base_offset < self.log.end_offset:
                continue  # already have it (cannot happen with one fetch in flight, but harmless)
            if info.base_offset > self.log.end_offset:
                break
            batch = data[info.position : info.position + info.size]
            self.log.append(batch)
            self._track_controls(batch)
        self.log.flush()  # voters flush before fetching again: their fetch offset acknowledges

    def _update_follower_hw(self, leader_hw: int) -> None:
        if leader_hw < 0:
            return
        hw = min(leader_hw, self.log.flushed_offset)
        if self._hw is None or hw > self._hw:
            self._hw = hw

    def _on_fetch_snapshot_response(self, source: int, body: Body, flight: _InFlight, now_ms: int) -> None:
        retry = now_ms + self.config.retry_backoff_ms
        part = self._partition(body)
        if part is None or body.get("errorCode", _NONE) != _NONE:
            self._send_at = retry
            return
        leader = part.get("currentLeader") or {}
        if self._observe_epoch(int(leader.get("leaderId", -1)), int(leader.get("leaderEpoch", -1)), now_ms):
            return
        if self._download is None or self._role is not Role.FOLLOWER:
            return
        sid, buf, _ = self._download
        exp_sid, exp_pos = flight.context
        if part["errorCode"] != _NONE or exp_sid != sid or exp_pos != len(buf):
            if part["errorCode"] in (_SNAPSHOT_NOT_FOUND, _POSITION_OUT_OF_RANGE):
                self._download = None  # fetch again and learn the current snapshot
            self._send_at = retry
            return
        self._last_fetch_ok_ms = now_ms
        self._fetch_deadline = now_ms + self.config.fetch_timeout_ms
        size = int(part["size"])
        chunk = bytes(part.get("unalignedRecords") or b"")
        if int(part["position"]) != len(buf) or len(buf) + len(chunk) > size:
            self._download = None
            self._send_at = retry
            return
        buf += chunk
        self._download = (sid, buf, size)
        if len(buf) == size:
            self._install_snapshot(sid, bytes(buf))
        self._send_at = now_ms
        self._maybe_send_fetch(now_ms)

    def _install_snapshot(self, sid: SnapshotId, data: bytes) -> None:
        self._download = None
        if sid.end_offset <= self._applied and self.log.end_offset >= sid.end_offset:
            return
        self.log.write_snapshot(sid, data)
        self.log.reset_to_snapshot(sid)
        self._rebuild_kraft_state()
        if self._hw is None or self._hw < sid.end_offset:
            self._hw = sid.end_offset
        self._committed = []  # anything undrained is older than the snapshot
        self._queue_snapshot_load(sid)

    # ================================================================== committed output
    def _queue_snapshot_load(self, sid: SnapshotId) -> None:
        size = self.log.snapshot_size(sid) or 0
        raw = self.log.read_snapshot(sid, 0, size)
        records: list[bytes] = []
        last_ts = 0
        try:
            for batch in iter_batches(raw, validate=True):
                for rec in batch.records():
                    if batch.is_control:
                        key = bytes(rec.key) if rec.key is not None else b""
                        if (
                            len(key) >= 4
                            and int.from_bytes(key[2:4], "big") == ControlRecordType.SNAPSHOT_HEADER
                            and rec.value is not None
                        ):
                            last_ts = int(
                                codec.decode(SNAPSHOT_HEADER_RECORD, 0, bytes(rec.value))[
                                    "lastContainedLogTimestamp"
                                ]
                            )
                    elif rec.value is not None:
                        records.append(bytes(rec.value))
        except RecordsError as exc:
            raise RaftStateError(f"snapshot {sid.file_name} is corrupt: {exc}") from None
        self._committed.append(SnapshotLoad(sid.end_offset, sid.epoch, tuple(records), last_ts))
        self._applied = sid.end_offset

    def _deliver_committed(self) -> None:
        if self._hw is None:
            return
        limit = min(self._hw, self.log.flushed_offset)
        if self._applied < self.log.start_offset:
            snap = self.log.latest_snapshot()
            if snap is None or snap.end_offset < self.log.start_offset:
                raise RaftStateError(
                    f"node {self.node_id}: log starts at {self.log.start_offset} without a snapshot there"
                )
            self._queue_snapshot_load(snap)
        if limit <= self._applied:
            return
        for info, raw in self.log.batches(self._applied, limit):
            if info.last_offset >= limit:
                break
            for batch in iter_batches(raw):
                values: list[bytes] = []
                types: list[int] = []
                for rec in batch.records():
                    values.append(b"" if rec.value is None else bytes(rec.value))
                    if batch.is_control:
                        key = bytes(rec.key) if rec.key is not None else b""
                        types.append(int.from_bytes(key[2:4], "big", signed=True) if len(key) >= 4 else -1)
                self._committed.append(
                    CommittedBatch(
                        batch.base_offset,
                        batch.last_offset,
                        batch.partition_leader_epoch,
                        batch.max_timestamp,
                        batch.is_control,
                        tuple(values),
                        tuple(types),
                    )
                )
            self._applied = info.last_offset + 1
