"""Kafka's sparse segment indexes: ``.index`` (offset → position) and ``.timeindex`` (time → offset).

Offset index entries are 8 bytes: relative offset int32 + file position int32. Time index entries
are 12 bytes: timestamp int64 + relative offset int32. Kafka preallocates active indexes and trims
them on roll/close; a preallocated tail reads as zero entries, which (like kafka-dump-log) we stop
at. :func:`build_indexes` reproduces LogSegment.recover: an offset entry whenever more than
``index.interval.bytes`` of batches lie between the previous entry and the current batch, a time
entry alongside it when the max timestamp grew, and a final time entry for the segment's max
timestamp (what a normally closed segment carries).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.storage.errors import CorruptFileError

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")
DEFAULT_INDEX_INTERVAL_BYTES = 4096
_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class OffsetIndexEntry:
    """An absolute offset and the file position of the batch that holds it."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class TimeIndexEntry:
    """A timestamp and the (absolute) offset of the batch where it was first reached."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class BatchSummary:
    """What index building needs from one batch (kept tiny so callers can stream)."""

    position: int
    size: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class IndexProblem:
    """One finding of an index verification, worded like kafka-dump-log's ``--verify-index-only``."""

    path: Path
    entry: int
    message: str


# ---------------------------------------------------------------------- parse / format

def iter_offset_index(data: bytes | memoryview, base_offset: int, path: Path | str = "<index>",
                      *, stop_at_zero: bool = True) -> Iterator[OffsetIndexEntry]:
    """Stream the entries of an offset index (e.g. a memory-mapped file) without building a list.

    A size that is not a multiple of 8 is corrupt (Kafka's sanityCheck) and raises before the
    first entry; ``stop_at_zero`` stops at the first all-zero entry after the first (preallocated).
    """
    if len(data) % OFFSET_ENTRY.size:
        raise CorruptFileError(path, f"Index file is corrupt, found {len(data)} bytes which is neither "
                                     f"positive nor a multiple of {OFFSET_ENTRY.size}")
    return _offset_entries(data, base_offset, stop_at_zero)


def _offset_entries(data: bytes | memoryview, base_offset: int, stop_at_zero: bool
                    ) -> Iterator[OffsetIndexEntry]:
    for i, (rel, pos) in enumerate(OFFSET_ENTRY.iter_unpack(data)):
        if stop_at_zero and i > 0 and rel == 0 and pos == 0:
            return  # preallocated, never written
        yield OffsetIndexEntry(base_offset + rel, pos)


def iter_time_index(data: bytes | memoryview, base_offset: int, path: Path | str = "<timeindex>",
                    *, stop_at_zero: bool = True) -> Iterator[TimeIndexEntry]:
    """Stream the entries of a time index; a size that is not a multiple of 12 is corrupt."""
    if len(data) % TIME_ENTRY.size:
        raise CorruptFileError(path, f"Time index file is corrupt, found {len(data)} bytes which is "
                                     f"neither positive nor a multiple of {TIME_ENTRY.size}")
    return _time_entries(data, base_offset, stop_at_zero)


def _time_entries(data: bytes | memoryview, base_offset: int, stop_at_zero: bool) -> Iterator[TimeIndexEntry]:
    for i, (ts, rel) in enumerate(TIME_ENTRY.iter_unpack(data)):
        if stop_at_zero and i > 0 and ts == 0 and rel == 0:
            return
        yield TimeIndexEntry(ts, base_offset + rel)


def parse_offset_index(data: bytes | memoryview, base_offset: int, path: Path | str = "<index>",
                       *, stop_at_zero: bool = True) -> list[OffsetIndexEntry]:
    """Entries of an offset index; a size that is not a multiple of 8 is corrupt (Kafka's sanityCheck)."""
    return list(iter_offset_index(data, base_offset, path, stop_at_zero=stop_at_zero))


def parse_time_index(data: bytes | memoryview, base_offset: int, path: Path | str = "<timeindex>",
                     *, stop_at_zero: bool = True) -> list[TimeIndexEntry]:
    return list(iter_time_index(data, base_offset, path, stop_at_zero=stop_at_zero))


def lookup_offset(data: bytes | memoryview, base_offset: int, offset: int) -> OffsetIndexEntry | None:
    """Kafka's OffsetIndex.lookup over an index's bytes in place (e.g. a mapped file): the last entry
    whose offset is at most ``offset`` by binary search, or ``None`` when there is none (read the log
    from position 0). Only whole entries count; whatever entry is returned is at or below ``offset``
    even when the index is not sorted (a preallocated zero tail), so scanning forward from its position
    stays correct."""
    lo, hi = 0, len(data) // OFFSET_ENTRY.size
    unpack = OFFSET_ENTRY.unpack_from
    while lo < hi:
        mid = (lo + hi) // 2
        if base_offset + unpack(data, mid * OFFSET_ENTRY.size)[0] <= offset:
            lo = mid + 1
        else:
            hi = mid
    if lo == 0:
        return None
    rel, pos = unpack(data, (lo - 1) * OFFSET_ENTRY.size)
    return OffsetIndexEntry(base_offset + rel, pos)


def check_offset_index_sanity(data: bytes | memoryview, base_offset: int, path: Path | str) -> None:
    """kafka-dump-log's ``--index-sanity-check`` of an offset index: whole entries (Kafka), no offset
    below the base offset (Kafka checks the last one), and, stricter, offsets that increase up to a
    preallocated zero tail."""
    if len(data) % OFFSET_ENTRY.size:
        raise CorruptFileError(path, f"Index file {Path(path).name} is corrupt, found {len(data)} bytes "
                                     f"which is neither positive nor a multiple of {OFFSET_ENTRY.size}.")
    last = -1
    for i, e in enumerate(_offset_entries(data, base_offset, False)):
        if i > 0 and e.offset == base_offset:
            return  # the preallocated tail
        if e.offset < base_offset:
            raise CorruptFileError(path, f"Corrupt index found, index file ({path}) has non-zero size but "
                                         f"the last offset is {e.offset} which is less than the base offset "
                                         f"{base_offset}.")
        if i > 0 and e.offset <= last:
            raise CorruptFileError(path, f"Corrupt index found, index file ({path}) has offset {e.offset} "
                                         f"after offset {last} (entry {i}): offsets must increase.")
        last = e.offset


def check_time_index_sanity(data: bytes | memoryview, path: Path | str) -> None:
    """kafka-dump-log's ``--index-sanity-check`` of a time index: whole 12-byte entries."""
    if len(data) % TIME_ENTRY.size:
        raise CorruptFileError(path, f"Time index file {Path(path).name} is corrupt, found {len(data)} bytes "
                                     f"which is neither positive nor a multiple of {TIME_ENTRY.size}.")


def _relative(offset: int, base_offset: int) -> int:
    rel = offset - base_offset
    if not 0 <= rel <= _INT32_MAX:
        raise ValueError(f"offset {offset} does not fit an index of base offset {base_offset}")
    return rel


def format_offset_index(entries: Iterable[OffsetIndexEntry], base_offset: int) -> bytes:
    return b"".join(OFFSET_ENTRY.pack(_relative(e.offset, base_offset), e.position) for e in entries)


def format_time_index(entries: Iterable[TimeIndexEntry], base_offset: int) -> bytes:
    return b"".join(TIME_ENTRY.pack(e.timestamp, _relative(e.offset, base_offset)) for e in entries)


# ---------------------------------------------------------------------- building

def build_indexes(batches: Iterable[BatchSummary], index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
                  ) -> tuple[list[OffsetIndexEntry], list[TimeIndexEntry]]:
    """The offset and time index entries Kafka's LogSegment.recover writes for these batches."""
    offsets: list[OffsetIndexEntry] = []
    times: list[TimeIndexEntry] = []
    valid_bytes = 0
    last_index_entry = 0
    max_ts = -1
    max_ts_offset = -1

    def maybe_append_time(ts: int, offset: int) -> None:
        # TimeIndex.maybeAppend: only a strictly larger timestamp makes a new entry
        if (not times and ts > -1) or (times and ts > times[-1].timestamp):
            times.append(TimeIndexEntry(ts, offset))

    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, max_ts_offset = b.max_timestamp, b.last_offset
        if valid_bytes - last_index_entry > index_interval_bytes:
            if not offsets or b.last_offset > offsets[-1].offset:
                offsets.append(OffsetIndexEntry(b.last_offset, valid_bytes))
            maybe_append_time(max_ts, max_ts_offset)
            last_index_entry = valid_bytes
        valid_bytes += b.size
    if max_ts_offset >= 0:
        maybe_append_time(max_ts, max_ts_offset)
    return offsets, times


# ---------------------------------------------------------------------- verification

def verify_offset_index(path: Path, entries: Sequence[OffsetIndexEntry], batches: Sequence[BatchSummary]
                        ) -> list[IndexProblem]:
    """Every entry must point at a batch start whose last offset is the entry's offset; offsets and
    positions must increase (kafka-dump-log's index mismatch and non-consecutive checks)."""
    by_position = {b.position: b for b in batches}
    problems: list[IndexProblem] = []
    prev: OffsetIndexEntry | None = None
    for i, e in enumerate(entries):
        batch = by_position.get(e.position)
        if batch is None:
            problems.append(IndexProblem(path, i, f"Index position {e.position} is not the start of a batch "
                                                  f"(offset {e.offset})"))
        elif batch.last_offset != e.offset:
            problems.append(IndexProblem(path, i,
                                         f"Index offset: {e.offset}, log offset: {batch.last_offset}"))
        if prev is not None and (e.offset <= prev.offset or e.position <= prev.position):
            problems.append(IndexProblem(path, i,
                                         f"Index offset {e.offset} at position {e.position} does not "
                                                  f"follow {prev.offset} at position {prev.position}"))
        prev = e
    return problems


def verify_time_index(path: Path, entries: Sequence[TimeIndexEntry], batches: Sequence[BatchSummary]
                      ) -> list[IndexProblem]:
    """Each entry must name a batch's last offset and that batch's max timestamp; entries increase."""
    by_last = {b.last_offset: b for b in batches}
    problems: list[IndexProblem] = []
    prev: TimeIndexEntry | None = None
    for i, e in enumerate(entries):
        batch = by_last.get(e.offset)
        if batch is None:
            problems.append(IndexProblem(path, i, f"Time index offset {e.offset} is not the last offset of "
                                                  "a batch"))
        elif batch.max_timestamp != e.timestamp:
            problems.append(IndexProblem(path, i,
                                         f"Found timestamp mismatch: Index timestamp: {e.timestamp}, "
                                                  f"log timestamp: {batch.max_timestamp}"))
        if prev is not None and (e.timestamp < prev.timestamp or e.offset < prev.offset):
            problems.append(IndexProblem(path, i, f"Found out of order timestamp: Index timestamp: "
                                                  f"{e.timestamp}, Previously indexed timestamp: "
                                                  f"{prev.timestamp}"))
        prev = e
    return problems
