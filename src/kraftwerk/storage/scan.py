"""Batch-level (and record-level) rows of log segments: the format logic of a fleet scan.

This is what ``kraftwerk pipeline scan`` computes, with or without Spark: the Spark data source
(``kraftwerk.spark.source``) only plans :class:`SegmentSplit` values and turns the chunks of
:func:`iter_batch_columns` / the rows of :func:`iter_record_rows` into Arrow batches. A scan reads
batch headers from a memory-mapped segment and checks CRCs; v2 batches and v0/v1 messages are framed
one by one but their headers are copied out in one NumPy step per window. It decompresses only v0/v1
compressed wrappers (their base offset and record count live inside the payload), and frames their
inner messages without parsing them. Memory therefore stays at one batch and one chunk of rows,
never a segment. Damage never stops a scan: a batch with a bad CRC is a row with ``crc_valid``
false, and unreadable bytes (bad framing, a torn tail) become one row with ``error`` set.

Which segments and splits a scan reads is :mod:`kraftwerk.storage.segment_splits`; the
per-partition and fleet totals folded from the rows are :mod:`kraftwerk.storage.scan_summary`.
"""

from __future__ import annotations

import itertools
import logging
import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from crc32c import crc32c

from kraftwerk.records.batch import V2_CRC_START, V2_HEADER, Header, RecordBatch
from kraftwerk.records.compression import decompress
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.legacy import LEGACY_CRC_START, LegacyLayout, legacy_layout, wrapper_offsets_and_count
from kraftwerk.records.recovery import BatchScanner, TailReason
from kraftwerk.records.types import (
    LOG_OVERHEAD,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    CompressionType,
    TimestampType,
)
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.segment import RELEASE_INTERVAL_BYTES, SegmentReader
from kraftwerk.storage.segment_splits import DEFAULT_MAX_SPLIT_BYTES, SegmentFile, SegmentSplit, plan_splits

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------- rows

class BatchRow(NamedTuple):
    """One batch of a segment (or, with ``error`` set, a run of unreadable bytes)."""

    log_dir: str
    topic: str
    partition: int
    segment: int
    position: int
    base_offset: int | None
    last_offset: int | None
    magic: int | None
    codec: str | None
    record_count: int | None
    batch_size: int
    base_timestamp: int | None
    max_timestamp: int | None
    timestamp_type: str | None
    crc_valid: bool
    is_transactional: bool
    is_control: bool
    producer_id: int | None
    partition_leader_epoch: int | None
    error: str | None


#: (name, type) of every batch-row column; types are Spark SQL type names.
BATCH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("log_dir", "string"), ("topic", "string"), ("partition", "int"), ("segment", "bigint"),
    ("position", "bigint"), ("base_offset", "bigint"), ("last_offset", "bigint"), ("magic", "int"),
    ("codec", "string"), ("record_count", "int"), ("batch_size", "bigint"), ("base_timestamp", "bigint"),
    ("max_timestamp", "bigint"), ("timestamp_type", "string"), ("crc_valid", "boolean"),
    ("is_transactional", "boolean"), ("is_control", "boolean"), ("producer_id", "bigint"),
    ("partition_leader_epoch", "int"), ("error", "string"),
)
assert tuple(n for n, _ in BATCH_COLUMNS) == BatchRow._fields


class RecordRow(NamedTuple):
    """One record with the batch facts a consumer would need to interpret it."""

    log_dir: str
    topic: str
    partition: int
    segment: int
    magic: int
    is_control: bool
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("log_dir", "string"), ("topic", "string"), ("partition", "int"), ("segment", "bigint"),
    ("magic", "int"), ("is_control", "boolean"), ("offset", "bigint"), ("timestamp", "bigint"),
    ("key", "binary"), ("value", "binary"), ("headers", "array<struct<key:string,value:binary>>"),
)
assert tuple(n for n, _ in RECORD_COLUMNS) == RecordRow._fields


def _batch_row(seg: SegmentFile, b: RecordBatch, validate: bool) -> BatchRow:
    error: str | None = None
    crc_valid = b.is_valid if validate else True
    base: int | None
    count: int | None
    try:
        base, count = b.offsets_and_count()
    except RecordsError as exc:  # a v0/v1 wrapper whose payload cannot be read
        base, count, error = None, None, str(exc)
    return BatchRow(seg.log_dir, seg.topic, seg.partition, seg.base_offset, b.position, base, b.last_offset,
                    b.magic, b.compression.kafka_name, count, b.size, b.base_timestamp, b.max_timestamp,
                    b.timestamp_type.kafka_name, crc_valid, b.is_transactional, b.is_control, b.producer_id,
                    b.partition_leader_epoch, error)


def _error_row(seg: SegmentFile, position: int, size: int, message: str) -> BatchRow:
    return BatchRow(seg.log_dir, seg.topic, seg.partition, seg.base_offset, position, None, None, None, None,
                    None, size, None, None, None, False, False, False, None, None, message)


def _scanned(split: SegmentSplit, reader: SegmentReader, start: int | None = None
             ) -> Iterator[tuple[RecordBatch | None, BatchRow | None]]:
    """The batches starting in the split (from ``start``); a final ``(None, error row)`` for
    unreadable bytes."""
    seg = split.segment
    end = min(split.end, reader.size)
    # frame up to the segment end so a batch that starts in the split but ends after it is read whole
    scanner = BatchScanner(reader.data, split.start if start is None else start, reader.size, validate=False,
                           max_decompressed_size=reader.max_decompressed_size)
    for b in scanner:
        if b.position >= end:
            return
        yield b, None
    tail = scanner.tail
    if tail is not None and tail.position < end:
        what = "truncated" if tail.reason is TailReason.TRUNCATED else "corrupt"
        yield None, _error_row(seg, tail.position, tail.length, f"{what}: {tail.message}")


#: A v2 batch header and the start of a v0/v1 message as NumPy records (big-endian, packed): the scan
#: frames plain batches one by one but copies their headers out of the map in one step per window.
_V2_HEADER_RECORD = np.dtype([
    ("base_offset", ">i8"), ("length", ">i4"), ("partition_leader_epoch", ">i4"), ("magic", "i1"),
    ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_timestamp", ">i8"),
    ("max_timestamp", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"), ("base_sequence", ">i4"),
    ("record_count", ">i4")])
assert _V2_HEADER_RECORD.itemsize == V2_HEADER.size == RECORD_BATCH_OVERHEAD
_LEGACY_HEADER_RECORD = np.dtype([
    ("offset", ">i8"), ("length", ">i4"), ("crc", ">u4"), ("magic", "i1"), ("attributes", "i1"),
    ("timestamp", ">i8")])  # the timestamp is only there at magic 1
assert _LEGACY_HEADER_RECORD.itemsize == LOG_OVERHEAD + RECORD_OVERHEAD_V0
#: The header fields that decide whether a v2 batch is "plain": length, magic, attributes, record count.
_V2_FRAME = struct.Struct(">8xi4xb4xh34xi")
#: size, magic and attributes of a v0/v1 message (after its offset)
_LEGACY_FRAME = struct.Struct(">8xi4xBb")
_CODEC_NAMES = np.array([c.kafka_name for c in CompressionType], dtype=object)
_LAST_CODEC = int(max(CompressionType))
#: by magic + timestamp-type bit: v0 has none, v1 create or log-append time
_LEGACY_TIMESTAMP_TYPES = np.array([TimestampType.NO_TIMESTAMP_TYPE.kafka_name,
                                    TimestampType.CREATE_TIME.kafka_name,
                                    TimestampType.LOG_APPEND_TIME.kafka_name], dtype=object)
_TIMESTAMP_TYPE_NAMES = _LEGACY_TIMESTAMP_TYPES[1:]


class _Headers(NamedTuple):
    """Header-framed rows of one kind in a piece: where they are, their headers, whether their CRC
    matched, their indices among the piece's rows, and (v0/v1 wrappers only, which need their inner
    messages for these) their first offsets and record counts."""

    positions: np.ndarray
    headers: np.ndarray
    crc_valid: np.ndarray
    indices: np.ndarray
    bases: np.ndarray
    counts: np.ndarray


class _Framed:
    """Rows of one kind framed from their headers while the segment is mapped: positions, computed
    CRCs and row indices now; the headers are copied out by :meth:`gather`, before the scan
    releases the pages behind it."""

    __slots__ = ("bases", "counts", "crcs", "gathered", "indices", "native", "positions", "record")

    def __init__(self, record: np.dtype[Any]) -> None:
        self.record = record
        self.native = record.newbyteorder("=")
        self.positions: list[int] = []
        self.crcs: list[int] = []
        self.indices: list[int] = []
        self.bases: list[int] = []
        self.counts: list[int] = []
        self.gathered: list[tuple[np.ndarray, np.ndarray]] = []

    def gather(self, data: np.ndarray) -> None:
        if self.positions:
            positions = np.array(self.positions, dtype=np.int64)
            raw = data[positions[:, None] + np.arange(self.record.itemsize)]
            self.gathered.append((positions, raw.view(self.record)[:, 0].astype(self.native)))
            self.positions.clear()

    def finish(self, data: np.ndarray, validate: bool) -> _Headers:
        self.gather(data)
        if self.gathered:
            positions = np.concatenate([p for p, _ in self.gathered])
            headers = np.concatenate([h for _, h in self.gathered])
        else:
            positions = np.empty(0, dtype=np.int64)
            headers = np.empty(0, dtype=self.native)
        if validate:
            crc_valid = headers["crc"] == np.array(self.crcs, dtype=np.uint32)
        else:
            crc_valid = np.ones(len(headers), dtype=bool)
        return _Headers(positions, headers, crc_valid, np.array(self.indices, dtype=np.int64),
                        np.array(self.bases, dtype=np.int64), np.array(self.counts, dtype=np.int32))


class _Piece(NamedTuple):
    """The rows one split added to a chunk: plain v2 batches, uncompressed v0/v1 messages and
    v0/v1 wrappers as gathered headers, the rest as row objects (each with its index among the
    piece's rows)."""

    segment: SegmentFile
    rows: int
    v2: _Headers
    legacy: _Headers
    wrappers: _Headers
    others: list[tuple[int, BatchRow]]


class _SplitRows:
    """The rows of one split while its segment is mapped: header-framed v2 batches, v0/v1
    messages and wrappers, and every other batch (damage, unusual wrappers) as a whole
    :class:`BatchRow`."""

    __slots__ = ("count", "legacy", "others", "segment", "v2", "wrappers")

    def __init__(self, segment: SegmentFile) -> None:
        self.segment = segment
        self.count = 0
        self.v2 = _Framed(_V2_HEADER_RECORD)
        self.legacy = _Framed(_LEGACY_HEADER_RECORD)
        self.wrappers = _Framed(_LEGACY_HEADER_RECORD)
        self.others: list[tuple[int, BatchRow]] = []

    def add_row(self, row: BatchRow) -> None:
        self.others.append((self.count, row))
        self.count += 1

    def gather(self, data: np.ndarray) -> None:
        self.v2.gather(data)
        self.legacy.gather(data)
        self.wrappers.gather(data)

    def finish(self, data: np.ndarray, validate: bool) -> _Piece:
        return _Piece(self.segment, self.count, self.v2.finish(data, validate),
                      self.legacy.finish(data, validate), self.wrappers.finish(data, validate), self.others)


def _v2_fields(framed: _Headers) -> list[np.ndarray]:
    """The batch columns from ``base_offset`` to ``partition_leader_epoch`` of plain v2 batches."""
    h, crc_valid = framed.headers, framed.crc_valid
    attrs = h["attributes"]
    base = h["base_offset"]
    return [base, base + h["last_offset_delta"], np.full(len(h), MAGIC_V2, dtype=np.int32),
            _CODEC_NAMES[attrs & 0x07], h["record_count"], h["length"].astype(np.int64) + LOG_OVERHEAD,
            h["base_timestamp"], h["max_timestamp"], _TIMESTAMP_TYPE_NAMES[(attrs >> 3) & 1], crc_valid,
            attrs & 0x10 != 0, attrs & 0x20 != 0, h["producer_id"], h["partition_leader_epoch"]]


def _legacy_fields(framed: _Headers) -> list[np.ndarray]:
    """The same columns of uncompressed v0/v1 messages: one record each, no producer or epoch."""
    h, crc_valid = framed.headers, framed.crc_valid
    magic = h["magic"].astype(np.int32)
    ts = np.where(magic == MAGIC_V1, h["timestamp"], NO_TIMESTAMP)
    n = len(h)
    return [h["offset"], h["offset"], magic, np.full(n, _CODEC_NAMES[0], dtype=object),
            np.ones(n, dtype=np.int32), h["length"].astype(np.int64) + LOG_OVERHEAD, ts, ts,
            _LEGACY_TIMESTAMP_TYPES[magic + (magic & (h["attributes"] >> 3) & 1)], crc_valid,
            np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), np.full(n, NO_PRODUCER_ID, dtype=np.int64),
            np.full(n, NO_PARTITION_LEADER_EPOCH, dtype=np.int32)]


def _wrapper_fields(framed: _Headers) -> list[np.ndarray]:
    """The same columns of compressed v0/v1 wrappers: the offset in the header is the last one, the
    first offset and the count come from the inner messages."""
    columns = _legacy_fields(framed)
    columns[0], columns[3], columns[4] = (framed.bases, _CODEC_NAMES[framed.headers["attributes"] & 0x07],
                                          framed.counts)
    return columns


def _per_row(values: list[object], dtype: type[Any], piece_of_row: np.ndarray) -> np.ndarray:
    """A column of per-split values (log dir, topic, ...) for rows given by their piece."""
    column: np.ndarray = np.array(values, dtype=dtype)
    out: np.ndarray = column[piece_of_row]
    return out


class BatchColumns:
    """A chunk of batch rows, in scan order, as :meth:`rows` or as one Arrow batch (:meth:`to_arrow`).

    A scan produces ~100k batches per GiB: building a row object per plain batch (and transposing
    the rows for Arrow) cost more than reading the batches, so their columns come straight from the
    gathered headers as NumPy arrays; only damaged batches and unusual v0/v1 wrappers are row
    objects.
    """

    __slots__ = ("_pieces", "_rows")

    def __init__(self) -> None:
        self._pieces: list[_Piece] = []
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def add(self, piece: _Piece) -> None:
        self._pieces.append(piece)
        self._rows += piece.rows

    def _starts(self) -> list[int]:
        return [0, *itertools.accumulate(p.rows for p in self._pieces)][:-1]

    def _framed(self) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """(indices in the chunk, every :data:`BATCH_COLUMNS` column) of each kind of framed rows."""
        pieces, starts = self._pieces, self._starts()
        out = []
        for kind, fields in ((attrgetter("v2"), _v2_fields), (attrgetter("legacy"), _legacy_fields),
                             (attrgetter("wrappers"), _wrapper_fields)):
            groups: list[_Headers] = [kind(p) for p in pieces]
            sizes = [len(g.positions) for g in groups]
            if not sum(sizes):
                continue
            piece_of_row = np.repeat(np.arange(len(pieces)), sizes)
            framed = _Headers(*(np.concatenate(parts) for parts in zip(*groups, strict=True)))
            columns = [
                _per_row([p.segment.log_dir for p in pieces], object, piece_of_row),
                _per_row([p.segment.topic for p in pieces], object, piece_of_row),
                _per_row([p.segment.partition for p in pieces], np.int32, piece_of_row),
                _per_row([p.segment.base_offset for p in pieces], np.int64, piece_of_row),
                framed.positions,
                *fields(framed),
                np.full(len(framed.positions), None, dtype=object),
            ]
            indices = np.concatenate([g.indices + start for g, start in zip(groups, starts, strict=True)])
            out.append((indices, columns))
        return out

    def _others(self) -> tuple[np.ndarray, list[BatchRow]]:
        """The chunk's row objects and their indices among all its rows."""
        indices: list[int] = []
        rows: list[BatchRow] = []
        for p, start in zip(self._pieces, self._starts(), strict=True):
            for i, row in p.others:
                indices.append(start + i)
                rows.append(row)
        return np.array(indices, dtype=np.int64), rows

    def rows(self) -> Iterator[BatchRow]:
        new = tuple.__new__
        rows: list[BatchRow] = []
        indices = []
        for where, columns in self._framed():
            rows += [new(BatchRow, r) for r in zip(*(c.tolist() for c in columns), strict=True)]
            indices.append(where)
        where, others = self._others()
        rows += others
        indices.append(where)
        order = np.argsort(np.concatenate(indices), kind="stable")
        return (rows[i] for i in order.tolist())

    def to_arrow(self, schema: pa.Schema) -> pa.RecordBatch:
        """The chunk as one Arrow record batch of ``schema`` (the batch table's)."""
        import pyarrow as pa

        framed = self._framed()
        parts = [[pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)]
                 for _, columns in framed]
        indices = [where for where, _ in framed]
        where, others = self._others()
        if others:
            parts.append(columns_to_arrow(list(zip(*others, strict=True)), schema).columns)
            indices.append(where)
        if len(parts) == 1:
            return pa.RecordBatch.from_arrays(parts[0], schema=schema)
        order = pa.array(np.argsort(np.concatenate(indices), kind="stable"))
        merged = [pa.concat_arrays(list(column)).take(order) for column in zip(*parts, strict=True)]
        return pa.RecordBatch.from_arrays(merged, schema=schema)


def _plain_v2_run(mv: memoryview, pos: int, stop: int, size: int, validate: bool, out: _SplitRows,
                  room: int) -> int:
    """Frame the plain v2 batches starting in ``[pos, stop)`` (at most ``room`` of them) into ``out``;
    return where the first batch that is not one (or ``stop``) begins.

    "Plain" means whole within the segment, magic 2, a sane size, a known codec and a non-negative
    count: anything else is left to :class:`BatchScanner`, which frames it or reports it.
    """
    framed = out.v2
    position, crc, index = framed.positions.append, framed.crcs.append, framed.indices.append
    unpack = _V2_FRAME.unpack_from
    n = out.count
    while pos < stop and room > 0 and size - pos >= RECORD_BATCH_OVERHEAD:
        length, magic, attrs, count = unpack(mv, pos)
        total = length + LOG_OVERHEAD
        if (magic != MAGIC_V2 or total < RECORD_BATCH_OVERHEAD or total > size - pos
                or attrs & 0x07 > _LAST_CODEC or count < 0):
            break
        position(pos)
        index(n)
        if validate:
            crc(crc32c(mv[pos + V2_CRC_START:pos + total]))
        pos += total
        room -= 1
        n += 1
    out.count = n
    return pos


def _legacy_run(mv: memoryview, pos: int, stop: int, size: int, validate: bool, out: _SplitRows,
                room: int, max_decompressed: int) -> int:
    """Frame the v0/v1 messages starting in ``[pos, stop)`` (at most ``room``) into ``out``: plain
    messages, and compressed wrappers with their inner messages counted; return where the first
    message that is neither begins.

    An old client's uncompressed messages are one batch each: through :class:`BatchScanner` and a
    batch object they cost ~3 us apiece, which made a legacy topic scan at ~75 MB/s; a wrapper cost
    ~10 us more as a batch object and a row than its decompression and count. The records layer's
    :func:`legacy_layout` still checks each one; anything odd (bad framing or layout, an unusual
    wrapper, a payload that does not decompress) is left to :func:`_other_batch`.
    """
    plain, wrappers = out.legacy, out.wrappers
    position, crc, index = plain.positions.append, plain.crcs.append, plain.indices.append
    unpack = _LEGACY_FRAME.unpack_from
    n = out.count
    while pos < stop and room > 0 and size - pos >= LOG_OVERHEAD + RECORD_OVERHEAD_V0:
        length, magic, attrs = unpack(mv, pos)
        total = length + LOG_OVERHEAD
        if magic > MAGIC_V1 or length < RECORD_OVERHEAD_V0 or total > size - pos:
            break
        try:
            layout = legacy_layout(mv, pos, total, magic)
            counted = _counted_wrapper(mv, layout, magic, max_decompressed) if attrs & 0x07 else None
        except RecordsError:
            break
        if not attrs & 0x07:
            position(pos)
            index(n)
            if validate:
                crc(zlib.crc32(mv[pos + LEGACY_CRC_START:pos + total]))
        elif counted is None:
            break  # an unusual wrapper: a batch object decides
        else:
            wrappers.positions.append(pos)
            wrappers.indices.append(n)
            wrappers.bases.append(counted[0])
            wrappers.counts.append(counted[1])
            if validate:
                wrappers.crcs.append(zlib.crc32(mv[pos + LEGACY_CRC_START:pos + total]))
        pos += total
        room -= 1
        n += 1
    out.count = n
    return pos


def _counted_wrapper(mv: memoryview, layout: LegacyLayout, magic: int, max_decompressed: int
                     ) -> tuple[int, int] | None:
    """(first offset, record count) of the compressed v0/v1 wrapper with ``layout``, as
    :meth:`RecordBatch.offsets_and_count` gives them; None where a batch object must decide."""
    codec, value_at, value_len = layout[2] & 0x07, layout[6], layout[7]
    if value_len < 0 or codec > _LAST_CODEC:
        return None
    payload = decompress(CompressionType(codec), mv[value_at + 4:value_at + 4 + value_len],
                         magic=magic, max_size=max_decompressed)
    return wrapper_offsets_and_count(payload, magic, layout[0])


def _other_batch(split: SegmentSplit, reader: SegmentReader, pos: int, validate: bool,
                 out: _SplitRows) -> int | None:
    """Add the batch at ``pos`` through :class:`BatchScanner` (damage, or an unusual v0/v1 wrapper); return
    where the next one starts, or None when the split ends in unreadable bytes there."""
    for b, err in _scanned(split, reader, pos):
        if b is None:
            out.add_row(err)  # type: ignore[arg-type]
            return None
        out.add_row(_batch_row(split.segment, b, validate))
        return b.position + b.size
    return min(split.end, reader.size)


def iter_batch_columns(splits: Iterable[SegmentSplit], *, validate: bool = True,
                       max_rows: int = 8192) -> Iterator[BatchColumns]:
    """The batch rows of ``splits`` as chunks of at most ``max_rows`` rows, streaming from memory
    maps whose pages are released behind the scan (memory stays at one chunk)."""
    out = BatchColumns()
    for split in splits:
        seg = split.segment
        rows = _SplitRows(seg)
        try:
            reader = SegmentReader(Path(seg.path))
        except StorageError as exc:
            rows.add_row(_error_row(seg, split.start, 0, f"unreadable: {exc}"))
            out.add(rows.finish(np.empty(0, dtype=np.uint8), validate))
            reader = None
        if reader is not None:
            end = min(split.end, reader.size)
            with reader:
                mv, size = reader.data, reader.size
                data = np.frombuffer(mv, dtype=np.uint8)
                try:
                    pos: int | None = split.start
                    released = split.start
                    while pos is not None and pos < end:
                        stop = min(end, pos + RELEASE_INTERVAL_BYTES)
                        at = pos
                        pos = _plain_v2_run(mv, pos, stop, size, validate, rows,
                                            max_rows - len(out) - rows.count)
                        pos = _legacy_run(mv, pos, stop, size, validate, rows,
                                          max_rows - len(out) - rows.count, reader.max_decompressed_size)
                        if pos == at and len(out) + rows.count < max_rows:
                            pos = _other_batch(split, reader, pos, validate, rows)
                        if len(out) + rows.count >= max_rows:
                            out.add(rows.finish(data, validate))
                            yield out
                            out = BatchColumns()
                            rows = _SplitRows(seg)
                        if pos is not None and pos - released >= RELEASE_INTERVAL_BYTES:
                            rows.gather(data)  # before the pages behind go
                            released = reader.release(released, pos)
                    if rows.count:
                        out.add(rows.finish(data, validate))
                finally:
                    del data  # the map cannot close while NumPy holds its buffer
        if len(out) >= max_rows:
            yield out
            out = BatchColumns()
    if len(out):
        yield out


def iter_batch_rows(split: SegmentSplit | SegmentFile, *, validate: bool = True) -> Iterator[BatchRow]:
    """The batch rows of a split (or a whole segment), streaming from a memory map."""
    if isinstance(split, SegmentFile):
        split = SegmentSplit(split, 0, split.size)
    for chunk in iter_batch_columns([split], validate=validate):
        yield from chunk.rows()


def iter_record_rows(split: SegmentSplit | SegmentFile) -> Iterator[RecordRow]:
    """Every record of the batches in a split; undecodable batches are skipped (logged)."""
    if isinstance(split, SegmentFile):
        split = SegmentSplit(split, 0, split.size)
    seg = split.segment
    new = tuple.__new__
    with SegmentReader(Path(seg.path)) as reader:
        for b, _ in _scanned(split, reader):
            if b is None:
                continue
            try:
                for r in b.records():
                    yield new(RecordRow, (seg.log_dir, seg.topic, seg.partition, seg.base_offset, b.magic,
                                          b.is_control, r.offset, r.timestamp,
                                          None if r.key is None else bytes(r.key),
                                          None if r.value is None else bytes(r.value), r.headers))
            except RecordsError as exc:
                log.warning("%s: skipping the records of the batch at %d: %s", seg.path, b.position, exc)


def scan_segments(segments: Iterable[SegmentFile], *, validate: bool = True,
                  max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES) -> Iterator[BatchRow]:
    """The batch rows of many segments, in order (the single-process scan)."""
    for chunk in scan_segment_columns(segments, validate=validate, max_split_bytes=max_split_bytes):
        yield from chunk.rows()


def scan_segment_columns(segments: Iterable[SegmentFile], *, validate: bool = True,
                         max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES,
                         max_rows: int = 8192) -> Iterator[BatchColumns]:
    """The batch rows of many segments as column chunks, in order."""
    splits = (split for seg in segments for split in plan_splits(seg, max_split_bytes))
    yield from iter_batch_columns(splits, validate=validate, max_rows=max_rows)


def batch_arrow_schema() -> pa.Schema:
    """The batch table's Arrow schema (what Spark derives from :data:`BATCH_COLUMNS`), for writing it
    without Spark."""
    import pyarrow as pa

    types = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "boolean": pa.bool_()}
    return pa.schema([(name, types[t]) for name, t in BATCH_COLUMNS])


def columns_to_arrow(columns: Sequence[Sequence[object]], schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow record batch of ``schema`` from its columns (the batch or record table's)."""
    import pyarrow as pa

    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


__all__ = [
    "BATCH_COLUMNS",
    "RECORD_COLUMNS",
    "BatchColumns",
    "BatchRow",
    "RecordRow",
    "batch_arrow_schema",
    "columns_to_arrow",
    "iter_batch_columns",
    "iter_batch_rows",
    "iter_record_rows",
    "scan_segment_columns",
    "scan_segments",
]
