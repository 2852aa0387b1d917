"""Format conversion: v0/v1 -> v2 (KIP-724, Kafka 4.0 cleaner rules) and v2 -> v1/v0 (RecordsUtil).

Up-conversion follows ``MemoryRecords.filterTo`` as of Kafka 4.0: every retained v0/v1 "batch"
(one shallow message) is rebuilt as one v2 batch with the same codec, so an uncompressed message
becomes a single-record v2 batch and a compressed wrapper becomes one v2 batch over the same
absolute offsets; v0 gets CreateTime with timestamp -1; LOG_APPEND_TIME keeps the wrapper time.

Down-conversion follows ``RecordsUtil.downConvert``: control batches are dropped, zstd cannot be
expressed before v2, batches already at or below the target pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

from crc32c import crc32c

from kraftwerk.records.batch import (
    Buffer,
    LegacyLayout,
    RecordBatch,
    _as_view,
    _new_batch,
    iter_batches,
    iter_spans,
    legacy_layout,
)
from kraftwerk.records.builder import V2_HEAD, V2_TAIL, RecordsBuilder, small_varint
from kraftwerk.records.errors import ConversionError
from kraftwerk.records.types import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    CompressionType,
    TimestampType,
)

_RECORD_FIXED = b"\x00\x00\x00"  # attributes, timestamp delta 0, offset delta 0
_NO_HEADERS = b"\x00"


def upconvert_batch(batch: RecordBatch) -> bytes:
    """One v0/v1 batch as one v2 batch (a v2 batch is returned unchanged)."""
    if batch.magic >= MAGIC_V2:
        return bytes(batch.raw)
    if batch.compression is CompressionType.NONE:
        raw = batch.raw
        layout = legacy_layout(raw, 0, batch.size, batch.magic, batch.position)
        return _upconvert_single(raw, layout, batch.magic)
    return _upconvert_general(batch)


def _upconvert_single(mv: memoryview, layout: LegacyLayout, magic: int) -> bytes:
    """The v2 form of one uncompressed v0/v1 message, built directly (the hot path).

    The bytes RecordsBuilder would write: one record with deltas 0 and no headers; base and max
    timestamp are the message timestamp (also the log-append time of a LOG_APPEND_TIME message);
    v0 gives CreateTime and -1. Key and value are read straight from ``mv``.
    """
    offset, _, attrs, ts, key_at, key_len, value_at, value_len = layout
    key_size = small_varint(key_len)
    value_size = small_varint(value_len)
    key_len = key_len if key_len > 0 else 0
    value_len = value_len if value_len > 0 else 0
    body = 4 + len(key_size) + key_len + len(value_size) + value_len
    covered = b"".join((
        V2_TAIL.pack(attrs & 0x08 if magic == MAGIC_V1 else 0, 0, ts, ts, NO_PRODUCER_ID, NO_PRODUCER_EPOCH,
                     NO_SEQUENCE, 1),
        small_varint(body), _RECORD_FIXED,
        key_size, mv[key_at + 4:key_at + 4 + key_len],
        value_size, mv[value_at + 4:value_at + 4 + value_len],
        _NO_HEADERS,
    ))
    head = V2_HEAD.pack(offset, len(covered) + 9, NO_PARTITION_LEADER_EPOCH, MAGIC_V2, crc32c(covered))
    return head + covered


def _upconvert_general(batch: RecordBatch) -> bytes:
    """Kafka's buildRetainedRecordsInto with CURRENT_MAGIC through the builder."""
    ts_type = batch.timestamp_type
    if ts_type is TimestampType.NO_TIMESTAMP_TYPE:
        ts_type = TimestampType.CREATE_TIME
    log_append_time = batch.max_timestamp if ts_type is TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
    records = batch.records()
    first = next(records)
    builder = RecordsBuilder(MAGIC_V2, batch.compression, ts_type, first.offset,
                             log_append_time=log_append_time)
    builder.append_with_offset(first.offset, first.timestamp, first.key, first.value)
    for r in records:
        builder.append_with_offset(r.offset, r.timestamp, r.key, r.value)
    return builder.build()


def iter_upconverted(data: Buffer, start: int = 0, end: int | None = None, *,
                     max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[bytes]:
    """The batches of ``data`` as v2 batch bytes, one output batch per input batch.

    Streams: nothing but the current batch is held, and an uncompressed v0/v1 message (the common
    case of an old log: one batch per message) is converted without building a batch object. A
    partial batch at the end is skipped like ``iter_batches`` does; bad framing raises
    ``CorruptRecordError``.
    """
    mv = _as_view(data)
    for pos, size, magic in iter_spans(mv, start, end):
        if magic >= MAGIC_V2:
            yield bytes(mv[pos:pos + size])
            continue
        layout = legacy_layout(mv, pos, size, magic)
        if layout[2] & 0x07:
            yield _upconvert_general(_new_batch(mv, pos, size, magic, max_decompressed_size))
        else:
            yield _upconvert_single(mv, layout, magic)


def upconvert(data: Buffer, start: int = 0, end: int | None = None, *,
              max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """A whole buffer of batches rewritten as v2 (v2 batches are copied as they are)."""
    return b"".join(iter_upconverted(data, start, end, max_decompressed_size=max_decompressed_size))


def upconvert_into(out: bytearray, data: Buffer, start: int = 0, end: int | None = None, *,
                   max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> int:
    """Append the v2 form of ``data``'s batches to ``out`` (e.g. a reused write buffer); returns how
    many batches were written."""
    written = 0
    for chunk in iter_upconverted(data, start, end, max_decompressed_size=max_decompressed_size):
        out += chunk
        written += 1
    return written


def downconvert_batch(batch: RecordBatch, to_magic: int, first_offset: int = 0) -> bytes:
    """One batch at ``to_magic`` (empty bytes when Kafka would drop it)."""
    if to_magic not in (0, 1, 2):
        raise ConversionError(f"Invalid target magic {to_magic}")
    if to_magic < MAGIC_V2:
        if batch.is_control:
            return b""
        if batch.compression is CompressionType.ZSTD:
            raise ConversionError("Down-conversion of zstandard-compressed batches is not supported")
    if batch.magic <= to_magic:
        return bytes(batch.raw)
    records = [r for r in batch.records()
               if to_magic > MAGIC_V1 or batch.is_compressed or r.offset >= first_offset]
    if not records:
        return b""
    base_offset = records[0].offset
    ts_type = batch.timestamp_type
    log_append_time = batch.max_timestamp if ts_type is TimestampType.LOG_APPEND_TIME else NO_TIMESTAMP
    builder = RecordsBuilder(to_magic, batch.compression, ts_type, base_offset,
                             log_append_time=log_append_time)
    for r in records:
        builder.append_with_offset(r.offset, r.timestamp, r.key, r.value)
    return builder.build()


def downconvert(data: Buffer, to_magic: int, first_offset: int = 0, start: int = 0, end: int | None = None, *,
                max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Kafka's RecordsUtil.downConvert over a buffer of batches."""
    return b"".join(downconvert_batch(b, to_magic, first_offset)
                    for b in iter_batches(data, start, end, max_decompressed_size=max_decompressed_size))
