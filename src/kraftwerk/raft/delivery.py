"""Committed output of one replica: batches below the high watermark and snapshot loads, in log
order, handed to the state machine exactly once; and the state machine's own snapshots.

Every role delivers (a follower and an observer as much as the leader), so this is not a role's
state: it reads the high watermark the roles move and the log they write.
"""

from __future__ import annotations

from collections.abc import Sequence

from kraftwerk.protocol import codec
from kraftwerk.protocol.control_records import SNAPSHOT_HEADER_RECORD, ControlRecordType
from kraftwerk.raft.control import KRaftControl
from kraftwerk.raft.log import RaftLog, SnapshotId
from kraftwerk.raft.types import (
    Committed,
    CommittedBatch,
    InvalidSnapshotError,
    RaftStateError,
    SnapshotLoad,
)
from kraftwerk.records.batch import iter_batches
from kraftwerk.records.errors import RecordsError
from kraftwerk.storage.metadata_log import snapshot_file_batches


def _snapshot_load(log: RaftLog, sid: SnapshotId) -> SnapshotLoad:
    """The data records of snapshot ``sid`` and the last log timestamp its header names."""
    raw = log.read_snapshot(sid, 0, log.snapshot_size(sid) or 0)
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
                        header = codec.decode(SNAPSHOT_HEADER_RECORD, 0, bytes(rec.value))
                        last_ts = int(header["lastContainedLogTimestamp"])
                elif rec.value is not None:
                    records.append(bytes(rec.value))
    except RecordsError as exc:
        raise RaftStateError(f"snapshot {sid.file_name} is corrupt: {exc}") from None
    return SnapshotLoad(sid.end_offset, sid.epoch, tuple(records), last_ts)


class Delivery:
    """What was handed out (``applied``: the next offset to deliver) and what waits to be."""

    def __init__(self, log: RaftLog, node_id: int) -> None:
        self.log = log
        self.node_id = node_id
        self.applied = log.start_offset
        self.pending: list[Committed] = []
        snap = log.latest_snapshot()
        if snap is not None and snap.end_offset >= log.start_offset and snap.end_offset > 0:
            # (the bootstrap snapshot 0-0 holds only the initial voters: nothing to load)
            self.queue_snapshot(snap)

    def queue_snapshot(self, sid: SnapshotId) -> None:
        self.pending.append(_snapshot_load(self.log, sid))
        self.applied = sid.end_offset

    def installed(self, sid: SnapshotId) -> None:
        """A downloaded snapshot replaced the log: anything undrained is older than it."""
        self.pending = []
        self.queue_snapshot(sid)

    def deliver(self, hw: int | None) -> None:
        """Queue every whole batch below ``hw`` that is also flushed here."""
        if hw is None:
            return
        log = self.log
        limit = min(hw, log.flushed_offset)
        if self.applied < log.start_offset:
            snap = log.latest_snapshot()
            if snap is None or snap.end_offset < log.start_offset:
                raise RaftStateError(
                    f"node {self.node_id}: log starts at {log.start_offset} without a snapshot there"
                )
            self.queue_snapshot(snap)
        if limit <= self.applied:
            return
        for info, raw in log.batches(self.applied, limit):
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
                self.pending.append(
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
            self.applied = info.last_offset + 1

    def drain(self, hw: int | None) -> list[Committed]:
        self.deliver(hw)
        out, self.pending = self.pending, []
        return out

    def create_snapshot(
        self,
        end_offset: int,
        records: Sequence[bytes],
        now_ms: int,
        *,
        hw: int | None,
        control: KRaftControl,
        clean_log: bool,
    ) -> SnapshotId:
        """Store the state machine's snapshot of everything below ``end_offset`` (a committed batch
        boundary already handed out), then clean the log behind it when configured to."""
        self.deliver(hw)
        log = self.log
        if end_offset > self.applied:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is past the committed offset {self.applied}"
            )
        latest = log.latest_snapshot()
        if latest is not None and end_offset <= latest.end_offset:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is not past the latest snapshot {latest.end_offset}"
            )
        if end_offset <= log.start_offset:
            raise InvalidSnapshotError(
                f"snapshot end offset {end_offset} is not past the log start {log.start_offset}"
            )
        found = log.batches(end_offset - 1, end_offset)
        if not found or found[-1][0].last_offset != end_offset - 1:
            raise InvalidSnapshotError(f"snapshot end offset {end_offset} is not at a batch boundary")
        info, raw = found[-1]
        last_time = max((b.max_timestamp for b in iter_batches(raw)), default=0)
        sid = SnapshotId(end_offset, info.epoch)
        # Kafka's snapshot header batch carries the kraft.version and voters when kraft.version >= 1
        kraft_level = control.kraft_version_at(end_offset)
        data = b"".join(
            snapshot_file_batches(
                [tuple(records)] if records else [],
                epoch=info.epoch,
                last_contained_log_timestamp=last_time,
                kraft_version=kraft_level,
                voters=control.voters_record_at(end_offset) if kraft_level > 0 else None,
                clock=lambda: now_ms,
            )
        )
        log.write_snapshot(sid, data)
        if clean_log:
            log.delete_before_snapshot(sid)
        return sid
