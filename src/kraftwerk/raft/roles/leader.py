"""Leader: appends (metadata batches, kraft.version and voter changes), answers Fetch and
FetchSnapshot, moves the high watermark, keeps the voters told (BeginQuorumEpoch) and resigns when
a majority stops fetching or it left the voter set.

The high watermark is the largest offset a majority of voters has durably: the followers' fetch
offsets (they flush before fetching again) and the leader's own *flushed* end offset; it moves only
once the leader's LeaderChange record of the epoch is committed. A Fetch with nothing new waits
(long poll) until there is, the high watermark moves past what the fetcher knows, or it expires.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import (
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    VOTERS_RECORD,
    ControlRecordType,
)
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.api_versions import ApiVersionsResponse
from kraftwerk.protocol.messages.data import (
    FetchRequest,
    FetchRequestFetchPartition,
    FetchResponsePartitionData,
)
from kraftwerk.protocol.messages.raft import (
    BeginQuorumEpochResponsePartitionData,
    FetchSnapshotRequest,
    FetchSnapshotRequestPartitionSnapshot,
)
from kraftwerk.raft.log import OffsetAndEpoch, SnapshotId
from kraftwerk.raft.reconfig import VoterChanges
from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.state import (
    INVALID_REQUEST,
    NEVER,
    NONE,
    NOT_LEADER,
    POSITION_OUT_OF_RANGE,
    SNAPSHOT_NOT_FOUND,
    InFlight,
    QuorumState,
    first_partition,
)
from kraftwerk.raft.types import (
    METADATA_PARTITION,
    METADATA_TOPIC_ID,
    Body,
    KRaftVersionError,
    ReplicaProgress,
    Role,
)
from kraftwerk.raft.voters import VoterSet
from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.versions.features import KRAFT_VERSION

log = logging.getLogger(__name__)


@dataclass(slots=True)
class ReplicaState:
    """What the leader knows of one replica: its durable end, when it last fetched and caught up."""

    end_offset: int = -1
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch with nothing new to answer yet (long poll)."""

    source: int
    version: int
    correlation_id: int
    fetch_offset: int
    max_bytes: int
    deadline_ms: int
    high_watermark: int | None  # the one the fetcher knows: the last this leader sent it


class Leader(RoleState):
    role = Role.LEADER

    def __init__(self, q: QuorumState, moves: Transitions, now_ms: int, granting: list[int]) -> None:
        super().__init__(q, moves)
        self.epoch_start_offset = q.log.end_offset
        self.needs_flush = False
        self.flush_at = 0
        self.resign_requested = False  # it removed itself from the voters; resign once committed
        self.parked: list[ParkedFetch] = []
        # the high watermark the leader last sent each fetcher (one fetch in flight per fetcher:
        # what it knows when its next fetch arrives), so a parked fetch wakes when it is behind
        self.sent_hw: dict[int, int | None] = {}
        self.changes = VoterChanges(self)  # AddRaftVoter / RemoveRaftVoter in progress
        self._append_start_of_epoch(now_ms, granting)
        self.replicas = {v: ReplicaState(last_fetch_ms=now_ms) for v in q.voters}
        self.begin_pending = {v: now_ms for v in q.voters if v != q.node_id}  # voter -> next send
        self.begin_sent_ms: dict[int, int] = {}  # voter -> when BeginQuorumEpoch last went out
        log.info("node %d became leader of epoch %d", q.node_id, q.epoch)

    def _append_start_of_epoch(self, now_ms: int, granting: list[int]) -> None:
        """The LeaderChange record every new epoch starts with (and the voters, see below)."""
        q = self.q
        value = codec.encode(
            LEADER_CHANGE_MESSAGE,
            0,
            {
                "version": 0,
                "leaderId": q.node_id,
                "voters": [{"voterId": v} for v in q.voters],
                "grantingVoters": [{"voterId": v} for v in granting],
            },
        )
        builder = RecordsBuilder(
            base_offset=q.log.end_offset, is_control=True, partition_leader_epoch=q.epoch
        )
        builder.append_control_record(now_ms, ControlRecordType.LEADER_CHANGE, value)
        last_voters = q.control.last_voters_offset
        if q.control.kraft_version >= 1 and last_voters is not None and last_voters < 0:
            # Kafka's appendStartOfEpochControlRecords: voters known only from the bootstrap
            # snapshot go into the log, so that followers and observers replicate them
            kraft = {"version": 0, "kRaftVersion": q.control.kraft_version}
            builder.append_control_record(
                now_ms, ControlRecordType.KRAFT_VERSION, codec.encode(KRAFT_VERSION_RECORD, 0, kraft)
            )
            builder.append_control_record(
                now_ms,
                ControlRecordType.KRAFT_VOTERS,
                codec.encode(VOTERS_RECORD, 0, q.voter_set.to_record()),
            )
        batch = builder.build()
        q.log.append(batch)
        q.control.track(batch, q.node_id)
        self.needs_flush = True
        self.flush_at = now_ms

    def voters_changed(self) -> None:
        for v in self.q.voters:
            self.replicas.setdefault(v, ReplicaState())

    def leave(self) -> None:
        """A change in progress and every parked fetch are told this node no longer leads."""
        q = self.q
        self.changes.abort()
        parked, self.parked = self.parked, []
        for p in parked:
            q.respond(p.source, ApiKey.FETCH, p.version, p.correlation_id, q.fetch_error_body(NOT_LEADER))

    # ------------------------------------------------------------------ writes
    def _flush_soon(self, now_ms: int) -> None:
        if not self.needs_flush:
            self.needs_flush = True
            self.flush_at = now_ms + self.q.config.append_linger_ms

    def append(self, records: Sequence[bytes], now_ms: int) -> int:
        q = self.q
        builder = RecordsBuilder(base_offset=q.log.end_offset, partition_leader_epoch=q.epoch)
        for value in records:
            builder.append(now_ms, None, value)
        q.log.append(builder.build())
        self._flush_soon(now_ms)
        return q.log.end_offset - 1

    def upgrade_kraft_version(self, level: int, now_ms: int, validate_only: bool) -> bool:
        q = self.q
        current = q.control.kraft_version
        if level == current:
            return False
        if level < current:
            raise KRaftVersionError(
                f"Invalid upgrade of {KRAFT_VERSION} from version {current} to {level} "
                "because the new version is a downgrade"
            )
        low, high = q.config.kraft_version_range
        if current != 0 or level != 1 or not low <= level <= high:
            raise KRaftVersionError(f"Invalid upgrade of {KRAFT_VERSION} from version {current} to {level}")
        if validate_only:
            return True
        voters = VoterSet.static(q.config.voters, q.config.voter_endpoints, (low, high))
        builder = RecordsBuilder(
            base_offset=q.log.end_offset, is_control=True, partition_leader_epoch=q.epoch
        )
        builder.append_control_record(
            now_ms,
            ControlRecordType.KRAFT_VERSION,
            codec.encode(KRAFT_VERSION_RECORD, 0, {"version": 0, "kRaftVersion": level}),
        )
        builder.append_control_record(
            now_ms, ControlRecordType.KRAFT_VOTERS, codec.encode(VOTERS_RECORD, 0, voters.to_record())
        )
        base = q.log.end_offset
        q.log.append(builder.build())
        q.control.upgraded(base, level, voters)
        self._flush_soon(now_ms)
        log.info("node %d appended kraft.version %d at offset %d", q.node_id, level, base)
        return True

    def append_voters(self, voters: VoterSet, now_ms: int) -> int:
        """Append a control batch holding one VotersRecord; returns its offset. The new voter set
        is in force at once, before it commits (Kafka's KRaft listener reads it)."""
        q = self.q
        builder = RecordsBuilder(
            base_offset=q.log.end_offset, is_control=True, partition_leader_epoch=q.epoch
        )
        builder.append_control_record(
            now_ms, ControlRecordType.KRAFT_VOTERS, codec.encode(VOTERS_RECORD, 0, voters.to_record())
        )
        offset = q.log.end_offset
        batch = builder.build()
        q.log.append(batch)
        q.control.track(batch, q.node_id)
        self._flush_soon(now_ms)
        log.info("node %d appended the voter set %s at offset %d", q.node_id, voters.keys_text, offset)
        return offset

    def replica_caught_up(self, replica: int, now_ms: int, window_ms: int) -> bool:
        """Kafka's ``isReplicaCaughtUp`` for an observer about to become a voter."""
        rep = self.replicas.get(replica)
        return rep is not None and rep.last_caught_up_ms > 0 and rep.last_fetch_ms > now_ms - window_ms

    # ------------------------------------------------------------------ progress
    def progress(self, now_ms: int | None) -> tuple[tuple[ReplicaProgress, ...], tuple[ReplicaProgress, ...]]:
        """DescribeQuorum's replica states: (voters, observers)."""
        q = self.q
        voters: list[ReplicaProgress] = []
        observers: list[ReplicaProgress] = []
        for rid, rep in self.replicas.items():
            end = q.log.flushed_offset if rid == q.node_id else rep.end_offset
            fetch = now_ms if (rid == q.node_id and now_ms is not None) else rep.last_fetch_ms
            progress = ReplicaProgress(rid, end, -1 if fetch is None else fetch, rep.last_caught_up_ms)
            (voters if rid in q.voters else observers).append(progress)
        return tuple(voters), tuple(observers)

    def successors(self) -> list[int]:
        """The other voters, most caught-up first, ties (and those that never fetched) in id order:
        the preferred successors a resigning leader names (Kafka's
        ``nonLeaderVotersByDescendingFetchOffset``), so the voter with the most of the log stands
        first and the election needs no truncation."""
        q = self.q
        return sorted((v for v in q.voters if v != q.node_id), key=lambda v: (-self._replica_end(v), v))

    def _replica_end(self, replica: int) -> int:
        rep = self.replicas.get(replica)
        return -1 if rep is None else rep.end_offset

    def _update_replica(self, replica: int, offset: int, now_ms: int) -> None:
        q = self.q
        rep = self.replicas.get(replica)
        if rep is None:
            rep = self.replicas[replica] = ReplicaState()
        if replica in q.voters:
            self.begin_pending.pop(replica, None)
        rep.last_fetch_ms = now_ms
        # a fetch offset can go down after a follower truncated; Kafka tracks the latest
        rep.end_offset = offset
        if offset >= q.log.end_offset:
            rep.last_caught_up_ms = now_ms
        self._update_high_watermark()

    def _update_high_watermark(self) -> None:
        q = self.q
        ends = sorted(
            (q.log.flushed_offset if v == q.node_id else self._replica_end(v) for v in q.voters), reverse=True
        )
        candidate = ends[q.majority() - 1]
        if candidate > self.epoch_start_offset and (q.hw is None or candidate > q.hw):
            q.hw = candidate
            self.changes.high_watermark_updated()

    # ------------------------------------------------------------------ Fetch
    def on_fetch(
        self, source: int, version: int, body: FetchRequest, part: FetchRequestFetchPartition, corr: int,
        now_ms: int,
    ) -> None:
        """A Fetch whose epoch is this leader's (the node checked cluster, shape and epoch)."""
        q = self.q
        replica = int(body["replicaState"]["replicaId"])  # Fetch v17 (the only version raft takes)
        fetch_offset = int(part["fetchOffset"])
        last_epoch = int(part.get("lastFetchedEpoch", -1))
        max_bytes = min(
            int(part.get("partitionMaxBytes", q.config.fetch_max_bytes)), q.config.fetch_max_bytes
        )
        if fetch_offset < 0:
            q.respond(source, ApiKey.FETCH, version, corr, q.fetch_error_body(INVALID_REQUEST))
            return
        start = q.log.start_offset
        snap = q.log.latest_snapshot()
        behind_start = start > 0 and (
            fetch_offset < start or (fetch_offset == start and last_epoch != self._snapshot_epoch_at(start))
        )
        # Kafka: a replica with an empty log starts from the latest snapshot (not the bootstrap one)
        # even where the log behind it was kept, rather than replaying every record from offset 0
        empty_replica = fetch_offset == 0 and snap is not None and snap.end_offset > 0
        if snap is not None and (behind_start or empty_replica):
            q.respond(source, ApiKey.FETCH, version, corr, self._fetch_body(snapshot=snap))
            return
        if fetch_offset > 0 or last_epoch > 0:
            # Kafka's validateOffsetAndEpoch; a fetch offset past our end always diverges here
            eo = q.log.end_offset_for_epoch(last_epoch)
            if eo.epoch != last_epoch or eo.offset < fetch_offset:
                if eo.offset < start and snap is not None:
                    answer = self._fetch_body(snapshot=snap)
                elif eo.offset < 0:
                    answer = self._fetch_body(diverging=OffsetAndEpoch(0, 0))
                else:
                    answer = self._fetch_body(diverging=eo)
                q.respond(source, ApiKey.FETCH, version, corr, answer)
                return
        # a valid position: it is the replica's durable end offset
        self._update_replica(replica, fetch_offset, now_ms)
        max_wait = int(body.get("maxWaitMs", 0))
        known_hw = self.sent_hw.get(source)
        if fetch_offset < q.log.end_offset or max_wait <= 0 or self._hw_news(known_hw):
            self._answer_fetch(source, version, corr, fetch_offset, max_bytes)
        else:
            self.parked.append(
                ParkedFetch(source, version, corr, fetch_offset, max_bytes, now_ms + max_wait, known_hw)
            )

    def _hw_news(self, known_hw: int | None) -> bool:
        """Whether a fetcher that knows ``known_hw`` is behind this leader's high watermark
        (Kafka completes its delayed fetches when the high watermark advances)."""
        hw = self.q.hw
        return hw is not None and (known_hw is None or hw > known_hw)

    def _answer_fetch(self, source: int, version: int, corr: int, fetch_offset: int, max_bytes: int) -> None:
        records = self.q.log.read(fetch_offset, max_bytes) or None
        self.q.respond(source, ApiKey.FETCH, version, corr, self._fetch_body(records=records))
        self.sent_hw[source] = self.q.hw

    def _snapshot_epoch_at(self, offset: int) -> int:
        for sid in self.q.log.snapshots():
            if sid.end_offset == offset:
                return sid.epoch
        return -1

    def _fetch_body(
        self,
        *,
        records: bytes | None = None,
        snapshot: SnapshotId | None = None,
        diverging: OffsetAndEpoch | None = None,
    ) -> Body:
        """A Fetch answer: records, or where to go instead (a snapshot, a diverging epoch)."""
        q = self.q
        part: FetchResponsePartitionData = {
            "partitionIndex": METADATA_PARTITION,
            "errorCode": NONE,
            "highWatermark": -1 if q.hw is None else q.hw,
            "logStartOffset": q.log.start_offset,
            "currentLeader": {"leaderId": q.node_id, "leaderEpoch": q.epoch},
            "records": records,
        }
        if snapshot is not None:
            part["snapshotId"] = {"endOffset": snapshot.end_offset, "epoch": snapshot.epoch}
        elif diverging is not None:
            part["divergingEpoch"] = {"epoch": diverging.epoch, "endOffset": diverging.offset}
        return {
            "errorCode": NONE,
            "responses": [{"topicId": METADATA_TOPIC_ID, "partitions": [part]}],
            "nodeEndpoints": q.leader_endpoints(),
        }

    def on_fetch_snapshot(
        self, body: FetchSnapshotRequest, part: FetchSnapshotRequestPartitionSnapshot
    ) -> Body:
        """A FetchSnapshot chunk (the node checked shape and epoch). As Kafka's, an error answer
        names only the error and the leader (no snapshot id, size or position)."""
        q = self.q
        wanted = part["snapshotId"]
        sid = SnapshotId(int(wanted["endOffset"]), int(wanted["epoch"]))
        size = q.log.snapshot_size(sid)
        if size is None:
            return q.fetch_snapshot_body(SNAPSHOT_NOT_FOUND)
        position = int(part["position"])
        if position < 0 or position >= size:
            return q.fetch_snapshot_body(POSITION_OUT_OF_RANGE)
        limit = min(
            int(body.get("maxBytes", q.config.fetch_snapshot_max_bytes)), q.config.fetch_snapshot_max_bytes
        )
        return q.fetch_snapshot_body(
            NONE, as_body(wanted), size, position, q.log.read_snapshot(sid, position, limit)
        )

    # ------------------------------------------------------------------ timers
    def _begin_resend_candidates(self) -> list[int]:
        """Voters the beginQuorumEpoch timer may pick: not already pending, none in flight."""
        q = self.q
        return [
            v
            for v in q.voters
            if v != q.node_id
            and v not in self.begin_pending
            and not q.has_in_flight(ApiKey.BEGIN_QUORUM_EPOCH, v)
        ]

    def _begin_resend_due(self, voter: int) -> int:
        """When a voter that has stopped fetching is told again who leads (Kafka's
        beginQuorumEpoch timer, half a fetch timeout). A voter stuck at a higher epoch, e.g. a
        prospective candidate whose own election never reached the others, answers with that
        epoch, and this leader steps down so the quorum can take it back."""
        half = self.q.config.fetch_timeout_ms // 2
        return max(self.replicas[voter].last_fetch_ms, self.begin_sent_ms.get(voter, -half)) + half

    def _check_quorum_deadline(self) -> int:
        """When the leader resigns if a majority of voters has not fetched (Kafka's check-quorum,
        1.5 x fetch timeout)."""
        q = self.q
        others = sorted((self.replicas[v].last_fetch_ms for v in q.voters if v != q.node_id), reverse=True)
        need = q.majority() - (1 if q.is_voter else 0)
        if need <= 0 or not others:
            return NEVER
        return others[need - 1] + q.config.fetch_timeout_ms * 3 // 2

    def deadlines(self) -> list[int]:
        times: list[int] = []
        if self.needs_flush:
            times.append(self.flush_at)
        end = self.q.log.end_offset
        times.extend(
            0 if end > p.fetch_offset or self._hw_news(p.high_watermark) else p.deadline_ms
            for p in self.parked
        )
        times.extend(self.begin_pending.values())
        times.extend(self._begin_resend_due(v) for v in self._begin_resend_candidates())
        times.append(self._check_quorum_deadline())
        change_deadline = self.changes.next_deadline_ms()
        if change_deadline is not None:
            times.append(change_deadline)
        if self.resign_requested:
            times.append(0)
        return times

    def poll(self, now_ms: int) -> None:
        q = self.q
        if self.needs_flush and now_ms >= self.flush_at:
            q.log.flush()  # the leader's records count only once durable
            self.needs_flush = False
            self._update_high_watermark()
        self.changes.expire(now_ms)
        if self.resign_requested:
            log.info(
                "leader %d is not in the committed voter set %s; resigning from epoch %d",
                q.node_id,
                q.voter_set.keys_text,
                q.epoch,
            )
            self.moves.become_resigned(now_ms)
            return
        if now_ms >= self._check_quorum_deadline():
            log.info("leader %d of epoch %d lost contact with a majority; resigning", q.node_id, q.epoch)
            self.moves.become_resigned(now_ms)
            return
        for voter in self._begin_resend_candidates():
            if now_ms >= self._begin_resend_due(voter):
                self.begin_pending[voter] = now_ms
        for voter, at in list(self.begin_pending.items()):
            if now_ms >= at and not q.has_in_flight(ApiKey.BEGIN_QUORUM_EPOCH, voter):
                self.begin_pending[voter] = now_ms + q.config.request_timeout_ms
                self.begin_sent_ms[voter] = now_ms
                body = q.request_body(voter, leaderId=q.node_id, leaderEpoch=q.epoch)
                q.send(voter, ApiKey.BEGIN_QUORUM_EPOCH, body, now_ms)
        if self.parked:
            keep = []
            end = q.log.end_offset
            for p in self.parked:
                if now_ms >= p.deadline_ms or end > p.fetch_offset or self._hw_news(p.high_watermark):
                    self._answer_fetch(p.source, p.version, p.correlation_id, p.fetch_offset, p.max_bytes)
                else:
                    keep.append(p)
            self.parked = keep

    # ------------------------------------------------------------------ answers to its requests
    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        if api_key == ApiKey.API_VERSIONS:
            self.changes.api_versions_response(source, cast(ApiVersionsResponse, body), now_ms)
            return
        found = first_partition(body)  # BeginQuorumEpoch
        if found is None or body.get("errorCode", NONE) != NONE:
            return
        part = cast(BeginQuorumEpochResponsePartitionData, found)
        if self.moves.observe_epoch(int(part["leaderId"]), int(part["leaderEpoch"]), now_ms):
            return
        if part["errorCode"] == NONE:
            self.begin_pending.pop(source, None)

    def request_failed(self, flight: InFlight, now_ms: int) -> None:
        if flight.api_key == ApiKey.API_VERSIONS:
            self.changes.api_versions_failed(flight.destination)
        elif flight.destination in self.begin_pending:
            self.begin_pending[flight.destination] = now_ms + self.q.config.retry_backoff_ms


__all__ = ["Leader", "ParkedFetch", "ReplicaState"]
