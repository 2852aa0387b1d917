"""Format conversion: v0/v1 -> v2 (KIP-724, Kafka 4.0 cleaner rules) and v2 -> v1/v0 (RecordsUtil).

Up-conversion follows ``MemoryRecords.filterTo`` as of Kafka 4.0: every retained v0/v1 "batch"
(one shallow message) is rebuilt as one v2 batch with the same codec, so an uncompressed message
becomes a single-record v2 batch and a compressed wrapper becomes one v2 batch over the same
absolute offsets; v0 gets CreateTime with timestamp -1; LOG_APPEND_TIME keeps the wrapper time.

Down-conversion follows ``RecordsUtil.downConvert``: control batches are dropped, zstd cannot be
expressed before v2, batches already at or below the target pass through unchanged.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator

from crc32c import crc32c

from kraftwerk.records.batch import (
    _CODECS,
    NATIVE,
    Buffer,
    RecordBatch,
    _as_view,
    _new_batch,
    iter_batches,
    iter_spans,
)
from kraftwerk.records.builder import (
    V2_HEAD,
    V2_TAIL,
    RecordsBuilder,
    encode_v2_record,
    join_v2_batch,
    small_varint,
)
from kraftwerk.records.compression import compress, decompress
from kraftwerk.records.digest import RECORD_HEAD, ContentDigest
from kraftwerk.records.errors import ConversionError, CorruptRecordError, RecordsError
from kraftwerk.records.legacy import LEGACY_CRC_START, LegacyLayout, legacy_layout
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
_LOG_HEADER = struct.Struct(">qi")
_INT32_MAX = 0x7FFFFFFF


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


def _upconvert_message_py(mv: Buffer, pos: int, size: int, magic: int, check_crc: bool) -> bytes | None:
    """The v2 batch of the uncompressed v0/v1 message ``mv[pos:pos + size]``, or None for a
    compressed wrapper: :func:`legacy_layout`'s checks, the stored CRC-32 when ``check_crc``
    (``CorruptRecordError`` naming ``pos``), then :func:`_upconvert_single`. The pure reference of
    ``_cbatch.upconvert_message``."""
    view = _as_view(mv)
    layout = legacy_layout(view, pos, size, magic)
    if check_crc:
        computed = zlib.crc32(view[pos + LEGACY_CRC_START:pos + size])
        if computed != layout[1]:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {layout[1]}, computed crc = {computed})", pos)
    if layout[2] & 0x07:
        return None
    return _upconvert_single(view, layout, magic)


#: the converter of one message in use: the compiled twin when built (see :mod:`kraftwerk.native`)
_upconvert_message: Callable[[Buffer, int, int, int, bool], bytes | None] = (
    _upconvert_message_py if NATIVE is None else NATIVE.upconvert_message)


def upconvert_legacy(mv: memoryview, pos: int, size: int, magic: int, digest: ContentDigest | None = None, *,
                     check_crc: bool = True,
                     max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """The v2 form of the v0/v1 batch ``mv[pos:pos + size]`` (``size`` includes the log overhead).

    The up-conversion hot path: no batch object, the message framed once. ``check_crc`` checks the
    stored CRC-32 first (``CorruptRecordError`` naming ``pos``); a ``digest`` receives what a consumer
    reads from the old batch, for verifying the new one. A compressed wrapper is decompressed once
    (bounded) and its inner messages are framed directly; any unusual wrapper (null value, inner
    compression or magic, offsets Kafka's builder would reject) takes the batch-object path, which
    raises Kafka's errors.
    """
    out = _upconvert_message(mv, pos, size, magic, check_crc)
    if out is not None:
        if digest is not None:
            offset, _, _, ts, key_at, key_len, value_at, value_len = legacy_layout(mv, pos, size, magic)
            digest.record(offset, ts, None if key_len < 0 else mv[key_at + 4:key_at + 4 + key_len],
                          None if value_len < 0 else mv[value_at + 4:value_at + 4 + value_len])
        return out
    layout = legacy_layout(mv, pos, size, magic)
    wrapped = _upconvert_wrapper(mv, pos, magic, layout, digest, max_decompressed_size)
    if wrapped is not None:
        return wrapped
    batch = _new_batch(mv, pos, size, magic, max_decompressed_size)
    wrapped = _upconvert_general(batch)
    if digest is not None:
        digest.records(batch.records())
    return wrapped


def _upconvert_wrapper(mv: memoryview, pos: int, magic: int, layout: LegacyLayout,
                       digest: ContentDigest | None, max_decompressed_size: int) -> bytes | None:
    """A compressed v0/v1 wrapper as one v2 batch, or None when the batch-object path must decide.

    The same result as :func:`_upconvert_general` (Kafka's rules as in ``RecordBatch.messages``): inner
    v1 offsets are relative to the wrapper's (its last), inner v1 messages of a LOG_APPEND_TIME
    wrapper take its timestamp, inner v0 messages have none; a partial inner message ends the set.
    """
    last_offset, _, attrs, wrapper_ts, _, _, value_at, value_len = layout
    if value_len < 0:
        return None
    codec = _CODECS[attrs & 0x07]
    try:
        data = decompress(codec, mv[value_at + 4:value_at + 4 + value_len], magic=magic,
                          max_size=max_decompressed_size)
    except RecordsError:
        return None
    lat = magic == MAGIC_V1 and attrs & 0x08
    unpack = _LOG_HEADER.unpack_from
    offsets: list[int] = []
    stamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    n = len(data)
    p = 0
    try:
        while n - p >= 12:
            stored, msg_size = unpack(data, p)
            end = p + 12 + msg_size
            if msg_size < 14:
                return None
            if end > n:
                break
            inner_magic = data[p + 16]
            if inner_magic > MAGIC_V1:
                return None
            _, _, inner_attrs, ts, key_at, key_len, v_at, v_len = legacy_layout(data, p, end - p, inner_magic)
            if inner_attrs & 0x07:
                return None
            offsets.append(stored)
            stamps.append((wrapper_ts if lat else ts) if inner_magic == MAGIC_V1 else NO_TIMESTAMP)
            keys.append(None if key_len < 0 else data[key_at + 4:key_at + 4 + key_len])
            values.append(None if v_len < 0 else data[v_at + 4:v_at + 4 + v_len])
            p = end
    except RecordsError:
        return None
    if not offsets:
        return None
    if magic == MAGIC_V1:
        if last_offset == 0:
            shift = 0  # some librdkafka versions wrote wrapper offset 0
        elif last_offset < offsets[-1]:
            return None
        else:
            shift = last_offset - offsets[-1]
        if shift:
            offsets = [o + shift for o in offsets]
    base = offsets[0]
    base_ts = stamps[0]
    if offsets[-1] - base > _INT32_MAX or min(stamps) < NO_TIMESTAMP:
        return None
    prev = base - 1
    records: list[bytes] = []
    parts: list[Buffer] = []
    add = parts.append
    pack = RECORD_HEAD.pack
    for o, t, k, v in zip(offsets, stamps, keys, values, strict=True):
        if o <= prev:
            return None
        prev = o
        records.append(encode_v2_record(o - base, t - base_ts, k, v))
        add(pack(o, t, -1 if k is None else len(k), -1 if v is None else len(v), 0))
        if k:
            add(k)
        if v:
            add(v)
    if digest is not None:
        digest.parts(parts, len(offsets))
    payload = compress(codec, b"".join(records), magic=MAGIC_V2)
    max_ts = wrapper_ts if lat else max(NO_TIMESTAMP, max(stamps))
    return join_v2_batch((payload,), base, NO_PARTITION_LEADER_EPOCH, int(codec) | (0x08 if lat else 0),
                         prev - base, base_ts, max_ts, NO_PRODUCER_ID, NO_PRODUCER_EPOCH, NO_SEQUENCE,
                         len(records))


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
        else:
            yield upconvert_legacy(mv, pos, size, magic, check_crc=False,
                                   max_decompressed_size=max_decompressed_size)


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
