"""One partition's log on disk, as a broker reads and writes it (Kafka's UnifiedLog, file side).

The files are Kafka's: ``<topic>-<partition>/`` with ``%020d.log`` segments, ``.index`` and
``.timeindex`` (written when a segment is rolled or the log is closed; the active segment's are
rebuilt on open), ``leader-epoch-checkpoint`` and ``partition.metadata``. Opening recovers the log
with :func:`kraftwerk.storage.partition.recover_log` (torn tail cut, indexes rebuilt). Appends go
to the active segment without an fsync per batch, as Kafka's default ``flush.messages`` does:
durability comes from replication, and recovery cuts whatever a crash tore.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftwerk.records.batch import RecordBatch
from kraftwerk.records.recovery import scan_batches
from kraftwerk.records.types import MAGIC_V2
from kraftwerk.storage.checkpoints import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
    write_leader_epoch_checkpoint,
    write_partition_metadata,
)
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.index import DEFAULT_INDEX_INTERVAL_BYTES, OffsetIndexEntry
from kraftwerk.storage.partition import recover_log
from kraftwerk.storage.segment import (
    Segment,
    SegmentReader,
    delete_segment_files,
    list_segments,
    read_offset_index,
    read_time_index,
    truncate_file,
    write_indexes,
)
from kraftwerk.storage.upconvert import Status, upconvert_partition

log = logging.getLogger(__name__)

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
_HEADER = struct.Struct(">qi")  # offset (base or, for v0/v1, last) and size after it
_V2_LAST_DELTA = struct.Struct(">i")
_V2_MAX_TS = struct.Struct(">q")
_PEEK = 61  # enough of a batch header for magic, last offset delta and max timestamp


class LogAppendError(StorageError):
    """A batch that cannot go into this log (offsets out of order, unreadable bytes)."""


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs a log obeys (Kafka's LogConfig, the part kraftwerk uses)."""

    segment_bytes: int = 1 << 30
    segment_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    force_upgrade_to_v2: bool = False
    """``log.record.version.force.upgrade=2`` (KIP-724's future work): rewrite v0/v1 batches as v2
    after recovery, before the log serves anything."""


@dataclass(slots=True)
class _ActiveSegment:
    base_offset: int
    size: int
    created_ms: int
    max_timestamp: int = -1
    bytes_since_index: int = 0
    index: list[OffsetIndexEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What the log needs from one batch it appends."""

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    leader_epoch: int


def batch_infos(data: bytes) -> list[BatchInfo]:
    """Every whole, CRC-valid batch of ``data`` (raises on bad bytes: a client's or a leader's)."""
    out = []
    result = scan_batches(data, validate=True)
    if result.tail is not None:
        raise LogAppendError(f"invalid record batch at byte {result.tail.position}: {result.tail.message}")
    for b in result.batches:
        out.append(_info(b))
    return out


def _info(b: RecordBatch) -> BatchInfo:
    return BatchInfo(b.position, b.size, b.magic, b.base_offset, b.last_offset, b.max_timestamp,
                     b.partition_leader_epoch)


class PartitionLog:
    """A partition's segments: append, read by offset, truncate, roll, retention, epochs."""

    def __init__(self, directory: Path, topic_id: uuid.UUID, config: LogConfig, *, now_ms: int) -> None:
        self.directory = Path(directory)
        self.config = config
        self.directory.mkdir(parents=True, exist_ok=True)
        meta = self.directory / PARTITION_METADATA_FILE
        if meta.exists():
            stored = read_partition_metadata(meta)
            if stored != topic_id:
                raise StorageError(f"{meta}: topic id {stored} does not match the metadata's {topic_id}")
        else:
            write_partition_metadata(meta, topic_id)
        report = recover_log(self.directory, index_interval_bytes=config.index_interval_bytes)
        if config.force_upgrade_to_v2:
            self._force_upgrade()
        segments = list_segments(self.directory)
        if segments:
            write_indexes(segments[-1], config.index_interval_bytes)  # may be stale after a crash
        self._bases = [s.base_offset for s in segments]
        self.log_end_offset = report.next_offset if report.next_offset is not None else (
            self._bases[-1] if self._bases else 0)
        if not self._bases:
            self._bases = [0]
            self._create_segment_file(0)
        self.log_start_offset = self._bases[0]
        last = Segment(self.directory, self._bases[-1])
        entries = read_offset_index(last.index_path) if last.index_path.exists() else []
        times = read_time_index(last.time_index_path) if last.time_index_path.exists() else []
        self._active = _ActiveSegment(last.base_offset, last.size(), now_ms,
                                      times[-1].timestamp if times else -1, 0, entries)
        self._fd = os.open(last.log_path, os.O_RDWR | os.O_APPEND)
        epochs_path = self.directory / LEADER_EPOCH_FILE
        self.epochs = read_leader_epoch_checkpoint(epochs_path) if epochs_path.exists() else []
        self._trim_epochs_above(self.log_end_offset)
        self._closed_indexes: dict[int, list[OffsetIndexEntry]] = {}

    def _force_upgrade(self) -> None:
        """Rewrite every segment holding v0/v1 batches as v2 with the crash-safe up-converter (same
        offsets, keys, values); a segment it cannot convert stops the start of this log."""
        for outcome in upconvert_partition(self.directory, in_place=True):
            if outcome.status is Status.CONVERTED:
                log.info("[UnifiedLog partition=%s] log.record.version.force.upgrade=2: rewrote segment %d "
                         "as v2 (%d records)", self.directory.name, outcome.base_offset, outcome.records)
            elif outcome.status.is_problem:
                raise StorageError(f"{self.directory}: log.record.version.force.upgrade=2 cannot convert "
                                   f"segment {outcome.base_offset}: {outcome.message}")

    # ------------------------------------------------------------------ writing

    def append(self, data: bytes, infos: list[BatchInfo], *, assign_from: int | None, leader_epoch: int,
               now_ms: int) -> tuple[int, int]:
        """Append whole batches; returns (first offset, last offset).

        ``assign_from`` (a leader) rewrites each v2 batch's base offset from there and stamps
        ``leader_epoch`` (neither is covered by the CRC); ``None`` (a follower) keeps the leader's
        offsets, which must follow the log end offset.
        """
        if not infos:
            return self.log_end_offset, self.log_end_offset - 1
        buf = bytearray(data) if assign_from is not None else data
        next_offset = self.log_end_offset
        first = next_offset
        for info in infos:
            if assign_from is not None:
                if info.magic != MAGIC_V2:
                    raise LogAppendError("a leader only appends record batches with magic 2")
                count = info.last_offset - info.base_offset + 1
                struct.pack_into(">q", buf, info.position, next_offset)
                struct.pack_into(">i", buf, info.position + 12, leader_epoch)
                self._note_epoch(leader_epoch, next_offset)
                next_offset += count
            else:
                if info.base_offset < next_offset:
                    raise LogAppendError(f"batch at offset {info.base_offset} is below the log end "
                                         f"offset {next_offset}")
                if info.magic == MAGIC_V2 and info.leader_epoch >= 0:
                    self._note_epoch(info.leader_epoch, info.base_offset)
                next_offset = info.last_offset + 1
        self.roll_if_due(now_ms, len(buf))
        view = memoryview(buf)
        seg = self._active
        for info in infos:
            if seg.bytes_since_index > self.config.index_interval_bytes:
                last = info.last_offset if assign_from is None else (
                    first + (info.last_offset - infos[0].base_offset))
                seg.index.append(OffsetIndexEntry(last, seg.size + info.position - infos[0].position))
                seg.bytes_since_index = 0
            seg.bytes_since_index += info.size
            seg.max_timestamp = max(seg.max_timestamp, info.max_timestamp)
        _write_all(self._fd, view)
        seg.size += len(buf)
        self.log_end_offset = next_offset
        return first, next_offset - 1

    def _note_epoch(self, epoch: int, start_offset: int) -> None:
        if not self.epochs or epoch > self.epochs[-1].epoch:
            self.epochs.append(EpochEntry(epoch, start_offset))
            write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_FILE, self.epochs)

    def roll_if_due(self, now_ms: int, incoming: int = 0) -> None:
        """Roll when ``incoming`` more bytes would pass ``segment.bytes`` or the active segment is
        older than ``segment.ms`` (an empty segment never rolls)."""
        seg = self._active
        if seg.size == 0:
            return
        young = now_ms - seg.created_ms < self.config.segment_ms
        if seg.size + incoming <= self.config.segment_bytes and young:
            return
        self.roll(now_ms)

    def roll(self, now_ms: int) -> None:
        """Close the active segment (its indexes written) and start one at the log end offset."""
        if self._active.size == 0:
            return
        self._finish_active()
        os.close(self._fd)
        base = self.log_end_offset
        self._create_segment_file(base)
        self._bases.append(base)
        self._active = _ActiveSegment(base, 0, now_ms)
        self._fd = os.open(Segment(self.directory, base).log_path, os.O_RDWR | os.O_APPEND)
        log.info("[LocalLog partition=%s] Rolled new log segment at offset %d", self.directory.name, base)

    def _create_segment_file(self, base: int) -> None:
        Segment(self.directory, base).log_path.touch()

    def _finish_active(self) -> None:
        os.fsync(self._fd)
        write_indexes(Segment(self.directory, self._active.base_offset), self.config.index_interval_bytes)

    def truncate_to(self, offset: int) -> None:
        """Drop every batch holding ``offset`` or above (a follower whose log diverged); the log end
        offset becomes the end of the last batch kept, at most ``offset``."""
        if offset >= self.log_end_offset:
            return
        offset = max(offset, self.log_start_offset)
        os.close(self._fd)
        while len(self._bases) > 1 and self._bases[-1] >= offset and self._bases[-1] > self.log_start_offset:
            self._delete(Segment(self.directory, self._bases.pop()))
        seg = Segment(self.directory, self._bases[-1])
        position = self._position_of(seg, offset)
        self._closed_indexes.pop(seg.base_offset, None)
        truncate_file(seg.log_path, position)
        write_indexes(seg, self.config.index_interval_bytes)
        with SegmentReader(seg.log_path) as reader:
            kept_end = reader.scan().next_offset
        offset = kept_end if kept_end is not None else seg.base_offset
        self.log_end_offset = offset
        entries = read_offset_index(seg.index_path)
        self._active = _ActiveSegment(seg.base_offset, position, self._active.created_ms, -1, 0, entries)
        self._fd = os.open(seg.log_path, os.O_RDWR | os.O_APPEND)
        self._trim_epochs_above(offset)
        log.info("[UnifiedLog partition=%s] Truncated to offset %d", self.directory.name, offset)

    def _trim_epochs_above(self, end_offset: int) -> None:
        kept = [e for e in self.epochs if e.start_offset < end_offset]
        if kept != self.epochs:
            self.epochs = kept
            write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_FILE, kept)

    def apply_retention(self, now_ms: int) -> int:
        """Delete the oldest closed segments past ``retention.bytes`` or ``retention.ms`` (never the
        active one); returns how many went."""
        deleted = 0
        while len(self._bases) > 1:
            oldest = Segment(self.directory, self._bases[0])
            total = sum(Segment(self.directory, b).size() for b in self._bases[:-1]) + self._active.size
            too_big = 0 <= self.config.retention_bytes <= total - oldest.size()
            times = read_time_index(oldest.time_index_path) if oldest.time_index_path.exists() else []
            newest = times[-1].timestamp if times else -1
            too_old = 0 <= self.config.retention_ms < now_ms - newest and newest >= 0
            if not (too_big or too_old):
                break
            self._delete(oldest)
            self._bases.pop(0)
            self.log_start_offset = self._bases[0]
            deleted += 1
            log.info("[UnifiedLog partition=%s] Deleted segment %d (%s)", self.directory.name,
                     oldest.base_offset, "retention.bytes" if too_big else "retention.ms")
        return deleted

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, upto: int, *, min_one: bool = True) -> bytes:
        """Whole batches from the one holding ``offset`` while their last offset is below ``upto``,
        at most ``max_bytes`` unless the first batch alone is bigger and ``min_one`` (KIP-74)."""
        if offset >= upto or offset >= self.log_end_offset:
            return b""
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        out = bytearray()
        while i < len(self._bases):
            seg = Segment(self.directory, self._bases[i])
            start = self._position_of(seg, offset)
            budget = max_bytes - len(out)
            chunk, done = self._read_segment(seg, start, budget, upto, min_one and not out)
            out += chunk
            if done or len(out) >= max_bytes:
                break
            i += 1
        return bytes(out)

    def _read_segment(self, seg: Segment, start: int, budget: int, upto: int, min_one: bool
                      ) -> tuple[bytes, bool]:
        end = start
        with open(seg.log_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(start)
            while end < size:
                head = f.read(_PEEK)
                if len(head) < _HEADER.size:
                    break
                _, length = _HEADER.unpack_from(head)
                total = length + _HEADER.size
                if end + total > size:
                    break
                if _last_offset(head) >= upto:
                    return self._pread(f, start, end), True
                if end - start + total > budget and not (min_one and end == start):
                    return self._pread(f, start, end), True
                end += total
                f.seek(end)
            return self._pread(f, start, end), False

    @staticmethod
    def _pread(f: object, start: int, end: int) -> bytes:
        return os.pread(f.fileno(), end - start, start) if end > start else b""  # type: ignore[attr-defined]

    def _position_of(self, seg: Segment, offset: int) -> int:
        """File position of the first batch whose last offset is ≥ ``offset`` (the end of the valid
        batches when there is none)."""
        entries = self._active.index if seg.base_offset == self._active.base_offset else self._index_of(seg)
        position = 0
        for e in entries:
            if e.offset >= offset:
                break
            position = e.position
        with open(seg.log_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            while position < size:
                f.seek(position)
                head = f.read(_PEEK)
                if len(head) < _HEADER.size:
                    break
                _, length = _HEADER.unpack_from(head)
                if _last_offset(head) >= offset or position + length + _HEADER.size > size:
                    return position
                position += length + _HEADER.size
        return position

    def _delete(self, seg: Segment) -> None:
        delete_segment_files(seg)
        self._closed_indexes.pop(seg.base_offset, None)  # a later segment may reuse the base offset

    def _index_of(self, seg: Segment) -> list[OffsetIndexEntry]:
        cached = self._closed_indexes.get(seg.base_offset)
        if cached is None:
            cached = read_offset_index(seg.index_path) if seg.index_path.exists() else []
            self._closed_indexes[seg.base_offset] = cached
        return cached

    def iter_segments(self) -> Iterator[Segment]:
        for b in self._bases:
            yield Segment(self.directory, b)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """Kafka's LeaderEpochFileCache.endOffsetFor: (the largest epoch ≤ ``epoch``, where the next
        epoch starts); the log end offset for the latest epoch; (``epoch``, the first start offset)
        below the first epoch; (-1, -1) when nothing is known."""
        if epoch < 0 or not self.epochs:
            return -1, -1
        if epoch == self.epochs[-1].epoch:
            return epoch, self.log_end_offset
        higher = next((e for e in self.epochs if e.epoch > epoch), None)
        if higher is None:
            return -1, -1
        floor = [e for e in self.epochs if e.epoch <= epoch]
        return (floor[-1].epoch if floor else epoch), higher.start_offset

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first batch whose max timestamp is ≥ ``timestamp``."""
        for seg in self.iter_segments():
            with open(seg.log_path, "rb") as f:
                data = f.read()
            for b in scan_batches(data, validate=False).batches:
                if b.max_timestamp >= timestamp:
                    for r in b:
                        if r.timestamp >= timestamp:
                            return r.offset, r.timestamp
        return None

    def close(self) -> None:
        if self._fd < 0:
            return
        self._finish_active()
        os.close(self._fd)
        self._fd = -1


def _last_offset(head: bytes) -> int:
    base, _ = _HEADER.unpack_from(head)
    if len(head) > 16 and head[16] == MAGIC_V2 and len(head) >= 27:
        return int(base) + int(_V2_LAST_DELTA.unpack_from(head, 23)[0])
    return int(base)  # v0/v1: the (wrapper's) offset is the last offset


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        n = os.write(fd, view)
        view = view[n:]
