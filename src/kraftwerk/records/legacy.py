"""The v0/v1 message format (KIP-724's "old message formats"): its layout, messages and wrapper sets.

:class:`~kraftwerk.records.batch.RecordBatch` is the one view of a batch of any magic; for v0/v1 it
calls in here for the message layout and, for a compressed wrapper, its inner message set.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from kraftwerk.records.errors import CorruptRecordError, InvalidRecordError, UnsupportedMagicError
from kraftwerk.records.types import (
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_TIMESTAMP,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
    CompressionType,
    TimestampType,
)

Buffer = bytes | bytearray | memoryview

# offset, size, crc, magic, attributes (v1: timestamp), then the key length: one unpack per message
# in legacy_layout
_LEGACY_V0_KEY = struct.Struct(">qiIbbi")
_LEGACY_V1_KEY = struct.Struct(">qiIbbqi")
_LOG_HEADER = struct.Struct(">qi")
_I32 = struct.Struct(">i")
_LOG_HEADER_OFFSET = struct.Struct(">q")

LEGACY_CRC_START = LOG_OVERHEAD + 4  # CRC-32 covers magic .. end of message
MAGIC_POS = 16  # where the magic byte sits in a batch or message of any magic

#: (offset, crc, attributes, timestamp, key length position, key length, value length position,
#: value length) of a shallow v0/v1 message, from :func:`legacy_layout`
LegacyLayout = tuple[int, int, int, int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class LegacyMessage:
    """One v0/v1 message with its on-disk details (the dump tool's deep iteration, CRC checks).

    ``stored_offset`` is the offset as written (relative for inner v1 messages of a compressed
    wrapper); ``offset`` is the absolute one. ``position`` is relative to the buffer that holds
    the message: the segment for shallow messages, the decompressed wrapper value for inner ones.
    """

    offset: int
    stored_offset: int
    position: int
    size: int
    crc: int
    computed_crc: int
    magic: int
    attributes: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def compression(self) -> CompressionType:
        return CompressionType.from_id(self.attributes & 0x07)


def legacy_layout(mv: Buffer, pos: int, size: int, magic: int, where: int | None = None) -> LegacyLayout:
    """Parse and bounds-check the shallow v0/v1 message at ``pos`` (``size`` includes the log overhead).

    The one place the legacy framing rules live: minimum size, codec id, key and value lengths
    inside the message. Returns ``LegacyLayout``; the length positions are where each int32
    length is stored (the bytes follow it). v0 messages report timestamp -1. Errors name ``where``
    (default ``pos``): the wrapper's position for the inner messages of a compressed set.
    """
    at = pos if where is None else where
    if magic == MAGIC_V1:
        if size - LOG_OVERHEAD < RECORD_OVERHEAD_V1:
            raise CorruptRecordError(f"Record size {size - LOG_OVERHEAD} is less than the minimum record "
                                     f"overhead ({RECORD_OVERHEAD_V1})", at)
        offset, _, crc, _, attrs, ts, key_len = _LEGACY_V1_KEY.unpack_from(mv, pos)
        key_at = pos + LOG_OVERHEAD + RECORD_OVERHEAD_V1 - 8
    else:
        if size - LOG_OVERHEAD < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"Record size {size - LOG_OVERHEAD} is less than the minimum record "
                                     f"overhead ({RECORD_OVERHEAD_V0})", at)
        offset, _, crc, _, attrs, key_len = _LEGACY_V0_KEY.unpack_from(mv, pos)
        ts = NO_TIMESTAMP
        key_at = pos + LOG_OVERHEAD + RECORD_OVERHEAD_V0 - 8
    if attrs & 0x07 > 3:
        raise CorruptRecordError(f"Invalid compression type id {attrs & 0x07} for magic {magic}", at)
    end = pos + size
    if key_len < -1 or key_len > end - key_at - 8:
        raise CorruptRecordError(f"Invalid key size {key_len} in legacy record", at)
    value_at = key_at + 4 + (key_len if key_len > 0 else 0)
    (value_len,) = _I32.unpack_from(mv, value_at)
    if value_len < -1 or value_len > end - value_at - 4:
        raise CorruptRecordError(f"Invalid value size {value_len} in legacy record", at)
    return offset, crc, attrs, ts, key_at, key_len, value_at, value_len


def wrapper_offsets_and_count(payload: bytes, magic: int, wrapper_offset: int) -> tuple[int, int] | None:
    """(first offset, message count) of a compressed v0/v1 wrapper from its inner message set
    ``payload``, by framing the inner messages only; None for an unusual wrapper (no inner message,
    wrapper offset 0 or below its last inner one), which :meth:`RecordBatch.messages` must decide.
    Raises ``CorruptRecordError`` for bad inner framing. Inner v1 offsets are relative to the
    wrapper's, which is the last one (Kafka's rule)."""
    last_pos, count = last_span(payload)
    if count == 0:
        return None
    (first,) = _LOG_HEADER_OFFSET.unpack_from(payload, 0)
    if magic == MAGIC_V0:
        return first, count
    (last,) = _LOG_HEADER_OFFSET.unpack_from(payload, last_pos)
    if wrapper_offset == 0 or wrapper_offset < last:
        return None
    return wrapper_offset - last + first, count


def with_offset(m: LegacyMessage, offset: int) -> LegacyMessage:
    return LegacyMessage(offset, m.stored_offset, m.position, m.size, m.crc, m.computed_crc, m.magic,
                         m.attributes, m.timestamp, m.timestamp_type, m.key, m.value)


def parse_legacy(buf: memoryview, pos: int, end: int, wrapper_ts: int | None,
                  wrapper_type: TimestampType | None, where: int | None = None) -> LegacyMessage:
    """Parse one v0/v1 log entry (offset, size, message) occupying ``buf[pos:end]``."""
    at = pos if where is None else where
    magic = buf[pos + MAGIC_POS]
    if magic not in (MAGIC_V0, MAGIC_V1):
        signed = magic if magic < 128 else magic - 256
        raise InvalidRecordError(f"Invalid magic found in legacy record: {signed}", at)
    offset, crc, attributes, own_ts, key_at, key_len, value_at, value_len = legacy_layout(
        buf, pos, end - pos, magic, at)
    if magic == MAGIC_V1:
        if wrapper_type is TimestampType.LOG_APPEND_TIME and wrapper_ts is not None:
            timestamp = wrapper_ts
        else:
            timestamp = own_ts
        if wrapper_type is not None:
            ts_type = wrapper_type  # inner messages take the wrapper's type (LegacyRecord.timestampType)
        else:
            ts_type = TimestampType.LOG_APPEND_TIME if attributes & 0x08 else TimestampType.CREATE_TIME
    else:
        timestamp = NO_TIMESTAMP
        ts_type = TimestampType.NO_TIMESTAMP_TYPE
    key = None if key_len < 0 else bytes(buf[key_at + 4:key_at + 4 + key_len])
    value = None if value_len < 0 else bytes(buf[value_at + 4:value_at + 4 + value_len])
    computed = zlib.crc32(buf[pos + LEGACY_CRC_START:end])
    return LegacyMessage(offset, offset, pos, end - pos, crc, computed, magic, attributes, timestamp, ts_type,
                         key, value)


def inner_messages(data: memoryview, magic: int, wrapper_offset: int, wrapper_ts: int,
                   wrapper_type: TimestampType, where: int) -> tuple[LegacyMessage, ...]:
    """The messages of a compressed v0/v1 wrapper's decompressed value ``data``, with absolute offsets.

    Kafka's rules: inner messages must not be compressed, a wrapper holds at least one, a partial
    inner message at the end is ignored, inner v1 offsets are relative to the wrapper's (its last
    one; wrapper offset 0, as some librdkafka versions wrote, counts from 0). Errors name ``where``,
    the wrapper's position.
    """
    inner: list[LegacyMessage] = []
    pos = 0
    n = len(data)
    while n - pos >= LOG_OVERHEAD:
        _, size = _LOG_HEADER.unpack_from(data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError("Record size is less than the minimum record overhead "
                                     f"({RECORD_OVERHEAD_V0})", where)
        if pos + LOG_OVERHEAD + size > n:
            break  # Kafka's DataLogInputStream stops at a partial inner message
        msg = parse_legacy(data, pos, pos + LOG_OVERHEAD + size, wrapper_ts, wrapper_type, where=where)
        if msg.attributes & 0x07:
            raise InvalidRecordError("Inner messages must not be compressed", where)
        inner.append(msg)
        pos += LOG_OVERHEAD + size
    if not inner:
        raise InvalidRecordError("Found invalid compressed record set with no inner records", where)
    if magic == MAGIC_V1:
        last_inner = inner[-1].stored_offset
        if wrapper_offset == 0:
            base = 0  # some librdkafka versions wrote wrapper offset 0
        elif wrapper_offset < last_inner:
            raise InvalidRecordError(
                "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                f"'{wrapper_offset}' is less than the last inner message offset '{last_inner}' "
                "and it is not zero.", where)
        else:
            base = wrapper_offset - last_inner
        inner = [with_offset(m, base + m.stored_offset) for m in inner]
    return tuple(inner)


def record_too_small(size: int, pos: int) -> CorruptRecordError:
    """The framing error of a size below the smallest message (a v0 one), for batches of any magic."""
    return CorruptRecordError(
        f"Record size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})", pos)


def bad_magic(magic: int, pos: int) -> UnsupportedMagicError:
    """The framing error of a magic byte above 2, signed as Kafka prints it."""
    signed = magic if magic < 128 else magic - 256
    return UnsupportedMagicError(f"Invalid magic found in record: {signed}", pos)


def last_span(data: bytes) -> tuple[int, int]:
    """(position of the last message, number of messages) of an inner message set: :func:`iter_spans`
    folded into one loop (same checks, a partial tail ignored), because counting the messages of
    every compressed v0/v1 wrapper was half of a fleet scan's time."""
    unpack = _LOG_HEADER.unpack_from
    end = len(data)
    pos = 0
    last = -1
    count = 0
    while end - pos >= LOG_OVERHEAD:
        _, size = unpack(data, pos)
        if size < RECORD_OVERHEAD_V0:
            raise record_too_small(size, pos)
        if end - pos < MAGIC_POS + 1:
            break
        if data[pos + MAGIC_POS] > MAGIC_V2:
            raise bad_magic(data[pos + MAGIC_POS], pos)
        if size + LOG_OVERHEAD > end - pos:
            break
        last = pos
        count += 1
        pos += size + LOG_OVERHEAD
    return last, count
