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

from kraftwerk.records.batch import Buffer, RecordBatch, iter_batches
from kraftwerk.records.builder import RecordsBuilder, encode_v2_record, write_v2_header
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
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    TimestampType,
)


def upconvert_batch(batch: RecordBatch) -> bytes:
    """One v0/v1 batch as one v2 batch (a v2 batch is returned unchanged)."""
    if batch.magic >= MAGIC_V2:
        return bytes(batch.raw)
    if batch.compression is CompressionType.NONE:
        return _upconvert_single(batch)
    return _upconvert_general(batch)


def _upconvert_single(batch: RecordBatch) -> bytes:
    """Fast path for one uncompressed message: the bytes RecordsBuilder would write, built directly.

    One record with deltas 0; base and max timestamp are the message timestamp (which is also the
    log-append time of a LOG_APPEND_TIME message); v0 gives CreateTime and -1.
    """
    key, value = batch.legacy_key_value()
    ts = batch.max_timestamp
    lat = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    out = bytearray(RECORD_BATCH_OVERHEAD)
    out += encode_v2_record(0, 0, key, value)
    write_v2_header(out, batch.last_offset, NO_PARTITION_LEADER_EPOCH, 0x08 if lat else 0, 0, ts, ts,
                    NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE, 1)
    return bytes(out)


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
    """The batches of ``data`` as v2 batch bytes, one output batch per input batch."""
    for batch in iter_batches(data, start, end, max_decompressed_size=max_decompressed_size):
        yield upconvert_batch(batch)


def upconvert(data: Buffer, start: int = 0, end: int | None = None, *,
              max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """A whole buffer of batches rewritten as v2 (v2 batches are copied as they are)."""
    return b"".join(iter_upconverted(data, start, end, max_decompressed_size=max_decompressed_size))


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
