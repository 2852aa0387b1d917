"""The log and election-state stores the raft core writes through, and an in-memory log.

:class:`RaftLog` is ``__cluster_metadata-0`` seen as a sequence of v2 record batches (each
carrying its partition leader epoch) plus snapshots; :class:`EpochCache` is Kafka's
leader-epoch cache (``leader-epoch-checkpoint``) derived from the batches. :class:`MemoryRaftLog`
keeps everything in one bytearray with an explicit flushed position, so the simulator can model
fsync (unflushed bytes may be lost or torn on a crash) and recovery (scan, cut at the torn tail).
The file-backed log lives in ``kraftwerk.runtime.raft_log_files``.
"""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from kraftwerk.records.errors import RecordsError
from kraftwerk.records.recovery import BatchScanner
from kraftwerk.storage.metadata_log import SnapshotId

__all__ = [
    "ElectionState",
    "EpochCache",
    "LogBatchInfo",
    "MemoryQuorumStateStore",
    "MemoryRaftLog",
    "OffsetAndEpoch",
    "QuorumStateStore",
    "RaftLog",
    "SnapshotId",
]


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """Kafka's OffsetAndEpoch: an end offset (exclusive) and the epoch it belongs to."""

    offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What ``quorum-state`` persists: the epoch, the known leader and this node's vote in it."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


@dataclass(frozen=True, slots=True)
class LogBatchInfo:
    """Where one batch of the log lives (used by log implementations and readers)."""

    base_offset: int
    last_offset: int
    epoch: int
    position: int
    size: int


class QuorumStateStore(ABC):
    """Durable election state (Kafka's FileQuorumStateStore). ``write`` returns once it is durable."""

    @abstractmethod
    def read(self) -> ElectionState | None:
        """The last written state, or None on a fresh node."""

    @abstractmethod
    def write(self, state: ElectionState) -> None:
        """Replace the state atomically and durably."""


class MemoryQuorumStateStore(QuorumStateStore):
    """An in-memory store; every write is durable (it survives a simulated crash)."""

    def __init__(self, state: ElectionState | None = None) -> None:
        self.state = state
        self.writes = 0

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
        self.writes += 1


class EpochCache:
    """Kafka's LeaderEpochFileCache: (epoch, start offset) entries, epochs and offsets increasing."""

    __slots__ = ("_entries",)

    def __init__(self, entries: Iterable[tuple[int, int]] = ()) -> None:
        self._entries: list[tuple[int, int]] = []
        for epoch, start in entries:
            self.assign(epoch, start)

    @property
    def entries(self) -> tuple[tuple[int, int], ...]:
        return tuple(self._entries)

    def latest_epoch(self) -> int | None:
        return self._entries[-1][0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (a no-op for the latest epoch)."""
        if self._entries and self._entries[-1][0] >= epoch:
            if self._entries[-1][0] == epoch:
                return
            raise ValueError(f"epoch {epoch} is older than the latest cached epoch {self._entries[-1][0]}")
        if self._entries and self._entries[-1][1] > start_offset:
            raise ValueError(f"epoch {epoch} start offset {start_offset} is below the previous entry")
        self._entries.append((epoch, start_offset))

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries that start at or after ``end_offset`` (the log was truncated there)."""
        while self._entries and self._entries[-1][1] >= end_offset:
            self._entries.pop()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly below ``start_offset``; the first kept entry starts there at the earliest."""
        keep = 0
        for i, (_, start) in enumerate(self._entries):
            if start <= start_offset:
                keep = i
        self._entries = self._entries[keep:]
        if self._entries and self._entries[0][1] < start_offset:
            self._entries[0] = (self._entries[0][0], start_offset)

    def clear(self) -> None:
        self._entries = []

    def end_offset_for(self, epoch: int, log_end_offset: int) -> OffsetAndEpoch | None:
        """The end offset of the largest cached epoch <= ``epoch`` and that epoch, or None when
        every cached epoch is larger (Kafka's endOffsetFor)."""
        idx = bisect.bisect_right([e for e, _ in self._entries], epoch) - 1
        if idx < 0:
            return None
        found_epoch = self._entries[idx][0]
        end = self._entries[idx + 1][1] if idx + 1 < len(self._entries) else log_end_offset
        return OffsetAndEpoch(end, found_epoch)


class RaftLog(ABC):
    """``__cluster_metadata-0`` as the raft core sees it: v2 batches plus snapshots.

    Offsets are absolute. ``start_offset`` is the log start (0, or the end offset of the snapshot
    the log was cleaned behind), ``end_offset`` the next offset to write, ``flushed_offset`` the
    durable end. Implementations keep the epoch cache in step with appends and truncations.
    """

    @property
    @abstractmethod
    def start_offset(self) -> int: ...

    @property
    @abstractmethod
    def end_offset(self) -> int: ...

    @property
    @abstractmethod
    def flushed_offset(self) -> int: ...

    @abstractmethod
    def append(self, batch: bytes) -> None:
        """Append one v2 batch whose base offset is ``end_offset`` (not yet durable)."""

    @abstractmethod
    def flush(self) -> None:
        """Make everything appended durable (fsync)."""

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset`` on, at least one batch when any exists,
        stopping before ``max_bytes`` is exceeded; ``b""`` at the end of the log."""
        start, end = self.start_offset, self.end_offset
        if offset < start or offset > end:
            raise ValueError(f"offset {offset} outside [{start}, {end}]")
        if offset == end:
            return b""  # not the last batch again: a fetch at the end (a wake-up) carries none
        return self._read_from(offset, max_bytes)

    @abstractmethod
    def _read_from(self, offset: int, max_bytes: int) -> bytes:
        """:meth:`read` below the end offset (``offset`` is within the log)."""

    @abstractmethod
    def batches(self, start: int, end: int) -> list[tuple[LogBatchInfo, bytes]]:
        """The batches holding offsets in ``[start, end)`` with their bytes."""

    @abstractmethod
    def truncate_to(self, offset: int) -> None:
        """Remove offsets >= ``offset`` (durably: a truncation never comes back after a crash)."""

    @property
    @abstractmethod
    def epoch_cache(self) -> EpochCache:
        """The leader-epoch cache the implementation keeps in step with appends and truncations."""

    @abstractmethod
    def last_batch_epoch(self) -> int | None:
        """The epoch of the last batch at or above the log start, None when there is none."""

    # The epoch lookups, written once over what every implementation keeps.

    def epoch_entries(self) -> tuple[tuple[int, int], ...]:
        """The leader-epoch cache: (epoch, start offset) pairs."""
        return self.epoch_cache.entries

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's endOffsetForEpoch, including the snapshot at the log start as the oldest entry;
        ``OffsetAndEpoch(-1, -1)`` when the log has nothing at or below ``epoch``."""
        return end_offset_for_epoch(
            self.epoch_cache, epoch, self.end_offset, self.start_offset, self.earliest_snapshot()
        )

    def last_fetched_epoch(self) -> int:
        """The epoch of the last batch, else of the snapshot at the log start, else 0."""
        last = self.last_batch_epoch()
        if last is not None:
            return last
        for sid in self.snapshots():
            if sid.end_offset == self.start_offset:
                return sid.epoch
        return 0

    @abstractmethod
    def snapshots(self) -> list[SnapshotId]:
        """Complete snapshots, oldest first."""

    @abstractmethod
    def snapshot_size(self, snapshot_id: SnapshotId) -> int | None:
        """The snapshot file's size in bytes, None when it does not exist."""

    @abstractmethod
    def read_snapshot(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        """Raw bytes of the snapshot file from ``position`` (FetchSnapshot's UnalignedRecords)."""

    @abstractmethod
    def write_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        """Store a complete snapshot file crash-safely (temp name, fsync, rename)."""

    @abstractmethod
    def reset_to_snapshot(self, snapshot_id: SnapshotId) -> None:
        """Drop the whole log so it restarts at the snapshot's end offset (a follower that
        installed a fetched snapshot); the snapshot must exist."""

    @abstractmethod
    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        """Log cleaning: drop batches (segments) wholly below the snapshot's end offset and older
        snapshots, moving ``start_offset`` up to the snapshot's end offset. True if anything went."""

    def latest_snapshot(self) -> SnapshotId | None:
        snaps = self.snapshots()
        return snaps[-1] if snaps else None

    def earliest_snapshot(self) -> SnapshotId | None:
        snaps = self.snapshots()
        return snaps[0] if snaps else None


def scan_batch_infos(data: bytes | bytearray | memoryview, base: int = 0) -> tuple[list[LogBatchInfo], int]:
    """Frame ``data`` into batches; returns their infos and the length of the valid prefix (a torn
    or corrupt tail is cut off, as Kafka's log recovery does)."""
    infos: list[LogBatchInfo] = []
    valid = 0
    try:
        for batch in BatchScanner(data, validate=True):
            infos.append(
                LogBatchInfo(
                    batch.base_offset,
                    batch.last_offset,
                    batch.partition_leader_epoch,
                    base + batch.position,
                    batch.size,
                )
            )
            valid = batch.position + batch.size
    except RecordsError:
        pass
    return infos, valid


class MemoryRaftLog(RaftLog):
    """A log held in memory with an explicit durable prefix, used by unit tests and the simulator.

    ``durable_image()`` returns what would survive a crash (optionally with a torn, partial copy of
    the first unflushed write); ``MemoryRaftLog.recover(image)`` rebuilds a log from it the way
    Kafka recovers a segment: scan batches, cut at the first invalid one.
    """

    def __init__(self) -> None:
        self._data = bytearray()
        self._infos: list[LogBatchInfo] = []
        self._bases: list[int] = []
        self._start = 0
        self._flushed_pos = 0
        self._flushed_offset = 0
        self._cache = EpochCache()
        self._snapshots: dict[SnapshotId, bytes] = {}

    # -------------------------------------------------------------- crash model
    def durable_image(self, torn_bytes: int = 0) -> tuple[int, bytes, dict[SnapshotId, bytes]]:
        """(log start, surviving log bytes, snapshots); ``torn_bytes`` of the unflushed tail are kept
        (a torn last write)."""
        unflushed = len(self._data) - self._flushed_pos
        keep = self._flushed_pos + max(0, min(torn_bytes, unflushed))
        return self._start, bytes(self._data[:keep]), dict(self._snapshots)

    @property
    def unflushed_bytes(self) -> int:
        return len(self._data) - self._flushed_pos

    @classmethod
    def recover(cls, image: tuple[int, bytes, dict[SnapshotId, bytes]]) -> MemoryRaftLog:
        start, data, snaps = image
        log = cls()
        infos, valid = scan_batch_infos(data)
        log._data = bytearray(data[:valid])
        log._flushed_pos = valid
        log._snapshots = dict(snaps)
        log._start = start
        for info in infos:
            log._add_info(info)
        log._flushed_offset = log.end_offset
        return log

    # -------------------------------------------------------------- RaftLog
    def _add_info(self, info: LogBatchInfo) -> None:
        self._infos.append(info)
        self._bases.append(info.base_offset)
        self._cache.assign(info.epoch, max(info.base_offset, self._start))

    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        if self._infos:
            return self._infos[-1].last_offset + 1
        return self._start

    @property
    def flushed_offset(self) -> int:
        return self._flushed_offset

    def append(self, batch: bytes) -> None:
        infos, valid = scan_batch_infos(batch, len(self._data))
        if len(infos) != 1 or valid != len(batch):
            raise ValueError("append takes exactly one valid record batch")
        info = infos[0]
        if info.base_offset != self.end_offset:
            raise ValueError(
                f"batch base offset {info.base_offset} is not the log end offset {self.end_offset}"
            )
        self._data += batch
        self._add_info(info)

    def flush(self) -> None:
        self._flushed_pos = len(self._data)
        self._flushed_offset = self.end_offset

    def _index_of(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    def _read_from(self, offset: int, max_bytes: int) -> bytes:
        idx = max(self._index_of(offset), 0)
        if idx >= len(self._infos):
            return b""
        first = self._infos[idx]
        end = first.position + first.size
        for info in self._infos[idx + 1 :]:
            if info.position + info.size - first.position > max_bytes:
                break
            end = info.position + info.size
        return bytes(self._data[first.position : end])

    def batches(self, start: int, end: int) -> list[tuple[LogBatchInfo, bytes]]:
        idx = max(self._index_of(start), 0)
        out = []
        for info in self._infos[idx:]:
            if info.base_offset >= end:
                break
            if info.last_offset >= start:
                out.append((info, bytes(self._data[info.position : info.position + info.size])))
        return out

    def truncate_to(self, offset: int) -> None:
        if offset >= self.end_offset:
            return
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset}, below the log start {self._start}")
        idx = bisect.bisect_left(self._bases, offset)
        if idx < len(self._infos) and idx > 0 and self._infos[idx - 1].last_offset >= offset:
            raise ValueError(f"truncation offset {offset} is inside a batch")
        pos = self._infos[idx].position if idx < len(self._infos) else len(self._data)
        del self._data[pos:]
        del self._infos[idx:]
        del self._bases[idx:]
        self._flushed_pos = min(self._flushed_pos, pos)
        self._flushed_offset = min(self._flushed_offset, offset)
        self._cache.truncate_from_end(offset)

    @property
    def epoch_cache(self) -> EpochCache:
        return self._cache

    def last_batch_epoch(self) -> int | None:
        return self._infos[-1].epoch if self._infos else None

    def snapshots(self) -> list[SnapshotId]:
        return sorted(self._snapshots)

    def snapshot_size(self, snapshot_id: SnapshotId) -> int | None:
        data = self._snapshots.get(snapshot_id)
        return None if data is None else len(data)

    def read_snapshot(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        return self._snapshots[snapshot_id][position : position + max_bytes]

    def write_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        self._snapshots[snapshot_id] = bytes(data)

    def reset_to_snapshot(self, snapshot_id: SnapshotId) -> None:
        if snapshot_id not in self._snapshots:
            raise ValueError(f"no snapshot {snapshot_id}")
        self._data = bytearray()
        self._infos = []
        self._bases = []
        self._flushed_pos = 0
        self._cache.clear()
        self._start = snapshot_id.end_offset
        self._flushed_offset = self._start
        for sid in list(self._snapshots):
            if sid < snapshot_id:
                del self._snapshots[sid]

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        if snapshot_id not in self._snapshots or snapshot_id.end_offset <= self._start:
            return False
        if snapshot_id.end_offset > self.end_offset:
            return False
        idx = bisect.bisect_left(self._bases, snapshot_id.end_offset)
        if idx < len(self._infos) and idx > 0 and self._infos[idx - 1].last_offset >= snapshot_id.end_offset:
            return False  # not at a batch boundary
        cut = self._infos[idx].position if idx < len(self._infos) else len(self._data)
        del self._data[:cut]
        self._flushed_pos = max(0, self._flushed_pos - cut)
        kept = self._infos[idx:]
        self._infos = [
            LogBatchInfo(i.base_offset, i.last_offset, i.epoch, i.position - cut, i.size) for i in kept
        ]
        self._bases = [i.base_offset for i in self._infos]
        self._start = snapshot_id.end_offset
        self._cache.truncate_from_start(self._start)
        for sid in list(self._snapshots):
            if sid < snapshot_id:
                del self._snapshots[sid]
        return True


def end_offset_for_epoch(
    cache: EpochCache, epoch: int, log_end: int, log_start: int, earliest_snapshot: SnapshotId | None
) -> OffsetAndEpoch:
    """Kafka's KafkaMetadataLog.endOffsetForEpoch: the epoch cache, falling back to the snapshot
    at the log start when the cache has nothing at or below ``epoch``."""
    found = cache.end_offset_for(epoch, log_end)
    snap = (
        earliest_snapshot
        if earliest_snapshot is not None and earliest_snapshot.end_offset == log_start
        else None
    )
    if found is not None:
        if snap is not None and found.epoch < snap.epoch:
            return OffsetAndEpoch(snap.end_offset, snap.epoch)
        return found
    if snap is not None and snap.epoch <= epoch:
        return OffsetAndEpoch(snap.end_offset, snap.epoch)
    return OffsetAndEpoch(-1, -1)
