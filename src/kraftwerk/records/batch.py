"""Reading record batches (magic 0, 1, 2) out of a buffer without copying or decompressing.

``iter_batches`` frames a buffer into ``RecordBatch`` views using only the fixed headers (one
``struct`` call per batch); payloads are decompressed and records decoded only when ``records()``
(or ``messages()`` for the v0/v1 deep structure) is called, and then lazily, one record at a time.

The recovery-friendly variant, which stops at the first truncated or corrupt batch and reports where
the valid bytes end and why instead of raising, is :mod:`kraftwerk.records.recovery`; the v0/v1
message layout and wrapper sets are :mod:`kraftwerk.records.legacy`.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Callable, Iterator

from crc32c import crc32c

from kraftwerk.native import compiled
from kraftwerk.protocol.codec import read_varint, read_varlong
from kraftwerk.protocol.errors import DecodeError
from kraftwerk.records.compression import decompress
from kraftwerk.records.errors import (
    CorruptRecordError,
    DecompressionLimitError,
    InvalidRecordError,
    RecordsError,
    UnsupportedCompressionError,
)
from kraftwerk.records.legacy import (
    LEGACY_CRC_START,
    MAGIC_POS,
    LegacyMessage,
    bad_magic,
    inner_messages,
    legacy_layout,
    parse_legacy,
    record_too_small,
    wrapper_offsets_and_count,
)
from kraftwerk.records.types import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    LOG_OVERHEAD,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
    RECORD_OVERHEAD_V0,
    CompressionType,
    ControlRecordType,
    TimestampType,
)
from kraftwerk.records.types import Header as Header  # re-exported: declared with the record formats
from kraftwerk.records.types import Record as Record

log = logging.getLogger(__name__)

#: the compiled twin of this module's hot loops, or None (pure Python)
NATIVE = compiled("kraftwerk.records._cbatch")

Buffer = bytes | bytearray | memoryview

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_LOG_HEADER = struct.Struct(">qi")
_CONTROL_KEY = struct.Struct(">hh")

V2_CRC_START = 21  # CRC-32C covers attributes .. end of batch
_INT32_MAX = 0x7FFFFFFF
_MIN_V2_RECORD = 7  # length, attributes, ts delta, offset delta, key len, value len, header count
_NO_HEADERS: tuple[tuple[str, bytes | None], ...] = ()
_CODECS = tuple(CompressionType)

# Zig-zag values of every one- and two-byte varint, indexed by ``b0`` (< 0x80) or ``b0 + (b1 << 7)``
# (``b0`` >= 0x80, ``b1`` < 0x80; the ranges do not overlap): the decoder's hot path is one table
# lookup per field instead of a function call (most lengths and deltas in real batches take two bytes).
def _zig_zag_table() -> tuple[int, ...]:  # pragma: no mutate block
    # Built once at import, where mutation testing cannot reach it: every entry is checked against
    # the general varint reader in tests/records/test_batch_framing.py instead.
    table = [0] * (0x80 + (0x80 << 7))
    for b0 in range(0x80):
        table[b0] = (b0 >> 1) ^ -(b0 & 1)
    for b1 in range(0x80):
        for b0 in range(0x80, 0x100):
            u = (b0 & 0x7F) | (b1 << 7)
            table[b0 + (b1 << 7)] = (u >> 1) ^ -(u & 1)
    return tuple(table)


_ZZ = _zig_zag_table()

def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at Int.MAX_VALUE to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def parse_control_key(key: bytes | None) -> tuple[int, ControlRecordType]:
    """(version, type) of a control record key; an unknown type maps to UNKNOWN like Kafka."""
    if key is None or len(key) < 4:
        raise InvalidRecordError("Invalid value size found for end control record key")
    version, type_id = _CONTROL_KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for control record: {version}")
    try:
        return version, ControlRecordType(type_id)
    except ValueError:
        return version, ControlRecordType.UNKNOWN


class RecordBatch:
    """A read-only view of one batch in a buffer: every header field, records on demand.

    For v0/v1 a "batch" is one shallow message (Kafka's AbstractLegacyRecordBatch): either a
    single uncompressed message, or a compressed wrapper whose value holds an inner message set.
    Fields that v0/v1 lack take Kafka's defaults (producer id -1, leader epoch -1, ...).
    ``base_offset`` and ``record_count`` of a compressed v0/v1 wrapper need the payload; they are
    computed on first access and cached.
    """

    __slots__ = (
        "_base_offset",
        "_buf",
        "_count",
        "_legacy",
        "attributes",
        "base_sequence",
        "base_timestamp",
        "compression",
        "crc",
        "delete_horizon_ms",
        "is_control",
        "is_transactional",
        "last_offset",
        "magic",
        "max_decompressed_size",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "size",
        "timestamp_type",
    )

    _buf: memoryview
    _base_offset: int | None
    _count: int | None
    _legacy: tuple[LegacyMessage, ...] | None
    position: int
    size: int
    magic: int
    last_offset: int
    crc: int
    attributes: int
    compression: CompressionType
    timestamp_type: TimestampType
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    max_decompressed_size: int

    # ------------------------------------------------------------------ derived fields

    @property
    def base_offset(self) -> int:
        """First offset; for a compressed v0/v1 wrapper this decompresses the payload once."""
        if self._base_offset is None:
            self._base_offset = self.messages()[0].offset
        return self._base_offset

    @property
    def record_count(self) -> int:
        """Number of records; for a compressed v0/v1 wrapper this decompresses the payload once."""
        if self._count is None:
            self._count = len(self.messages())
        return self._count

    @property
    def count_or_none(self) -> int | None:
        """The record count when known without decompressing (Kafka's countOrNull)."""
        return self._count

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_compressed(self) -> bool:
        return self.compression is not CompressionType.NONE

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset - self.base_offset)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def raw(self) -> memoryview:
        """The batch bytes, log overhead included (no copy)."""
        return self._buf[self.position:self.position + self.size]

    @property
    def payload(self) -> memoryview:
        """The records section as stored: v2 records (maybe compressed) or the message value."""
        if self.magic >= MAGIC_V2:
            return self._buf[self.position + RECORD_BATCH_OVERHEAD:self.position + self.size]
        start, end = self._legacy_value_span()
        return self._buf[start:end]

    def sequence_of(self, offset: int) -> int:
        """Sequence number of the record at ``offset`` (-1 when the batch carries none)."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, offset - self.base_offset)

    # ------------------------------------------------------------------ validation

    def computed_crc(self) -> int:
        """The checksum of the stored bytes (CRC-32C for v2, CRC-32 for v0/v1)."""
        p = self.position
        if self.magic >= MAGIC_V2:
            return int(crc32c(self._buf[p + V2_CRC_START:p + self.size]))
        return zlib.crc32(self._buf[p + LEGACY_CRC_START:p + self.size])

    @property
    def is_valid(self) -> bool:
        """Kafka's isValid: the size is sane and the stored CRC matches."""
        return self.crc == self.computed_crc()

    def ensure_valid(self) -> None:
        """Raise ``CorruptRecordError`` (naming the position) when the CRC does not match."""
        computed = self.computed_crc()
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})", self.position)

    # ------------------------------------------------------------------ records

    def records(self) -> Iterator[Record]:
        """Iterate the records lazily (decompressing first when needed).

        Raises ``CorruptRecordError``/``InvalidRecordError`` for malformed content,
        ``DecompressionLimitError`` when the payload exceeds ``max_decompressed_size``.
        """
        if self.magic >= MAGIC_V2:
            return self._v2_records()
        return self._legacy_records()

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def decompressed_payload(self) -> bytes:
        """The records section uncompressed (v2 records or the v0/v1 inner message set)."""
        data = self.payload
        if self.compression is CompressionType.NONE:
            return bytes(data)
        try:
            return decompress(self.compression, data, magic=self.magic, max_size=self.max_decompressed_size)
        except (CorruptRecordError, DecompressionLimitError, UnsupportedCompressionError) as e:
            e.args = (f"{e.args[0]} (batch at position {self.position})",)
            raise

    def _v2_records(self) -> Iterator[Record]:
        count = self._count or 0
        buf: Buffer
        if self.compression is CompressionType.NONE:
            p = self.position
            buf = self._buf[p + RECORD_BATCH_OVERHEAD:p + self.size]
        else:
            buf = self.decompressed_payload()
        if count > len(buf) // _MIN_V2_RECORD:
            raise CorruptRecordError(
                f"Record count {count} cannot fit in {len(buf)} bytes of records", self.position)
        lat = self.max_timestamp if self.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        return _decode_v2(buf, count, self._base_offset or 0, self.base_timestamp, lat, self.position)

    def _legacy_value_span(self) -> tuple[int, int]:
        """(start, end) of the shallow message value in the buffer."""
        *_, value_at, value_len = legacy_layout(self._buf, self.position, self.size, self.magic)
        return value_at + 4, value_at + 4 + max(value_len, 0)

    def legacy_key_value(self) -> tuple[bytes | None, bytes | None]:
        """Key and value of a shallow v0/v1 message straight from the buffer (no CRC, no objects)."""
        if self.magic >= MAGIC_V2:
            raise RecordsError("legacy_key_value() is only defined for magic v0/v1 batches")
        buf = self._buf
        *_, key_at, key_len, value_at, value_len = legacy_layout(buf, self.position, self.size, self.magic)
        key = None if key_len < 0 else bytes(buf[key_at + 4:key_at + 4 + key_len])
        value = None if value_len < 0 else bytes(buf[value_at + 4:value_at + 4 + value_len])
        return key, value

    def messages(self) -> tuple[LegacyMessage, ...]:
        """The v0/v1 deep structure: the message itself, or the inner messages of a wrapper."""
        if self.magic >= MAGIC_V2:
            raise RecordsError("messages() is only defined for magic v0/v1 batches")
        if self._legacy is None:
            if self.compression is CompressionType.NONE:
                msg = parse_legacy(self._buf, self.position, self.position + self.size, None, None)
                self._legacy = (msg,)
            else:
                self._legacy = self._inner_messages()
        return self._legacy

    def wrapper(self) -> LegacyMessage:
        """The shallow v0/v1 message itself (for a wrapper: its key is null, value the payload)."""
        if self.magic >= MAGIC_V2:
            raise RecordsError("wrapper() is only defined for magic v0/v1 batches")
        return parse_legacy(self._buf, self.position, self.position + self.size, None, None)

    def _inner_messages(self) -> tuple[LegacyMessage, ...]:
        *_, value_len = legacy_layout(self._buf, self.position, self.size, self.magic)
        if value_len < 0:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {self.magic})", self.position)
        inner = inner_messages(memoryview(self.decompressed_payload()), self.magic, self.last_offset,
                               self.max_timestamp, self.timestamp_type, self.position)
        self._base_offset = inner[0].offset
        self._count = len(inner)
        return inner

    def offsets_and_count(self) -> tuple[int, int]:
        """(base offset, record count) without decoding any record.

        Free for v2 batches and uncompressed v0/v1 messages. A compressed v0/v1 wrapper is
        decompressed (bounded) and its inner messages are only framed, not parsed (~10x cheaper
        than ``messages()``, which dominated legacy-heavy scans); the first offset follows Kafka's
        rule for inner v1 offsets (relative to the wrapper's, which is the last one). Any unusual
        wrapper (offset 0, inconsistent offsets, no inner message) takes ``messages()``, which also
        raises Kafka's errors for a malformed one.
        """
        if self._base_offset is not None and self._count is not None:
            return self._base_offset, self._count
        counted = wrapper_offsets_and_count(self.decompressed_payload(), self.magic, self.last_offset)
        return (self.base_offset, self.record_count) if counted is None else counted

    def _legacy_records(self) -> Iterator[Record]:
        for m in self.messages():
            yield Record(m.offset, m.timestamp, m.key, m.value, _NO_HEADERS)

    def __repr__(self) -> str:
        return (f"RecordBatch(magic={self.magic}, position={self.position}, size={self.size}, "
                f"last_offset={self.last_offset}, compression={self.compression.kafka_name}, "
                f"count={self._count})")


def _decode_v2_py(data: Buffer, count: int, base_offset: int, base_ts: int, lat: int | None,
                  where: int) -> Iterator[Record]:
    """Decode ``count`` v2 records from ``buf`` (the pure reference of ``_cbatch.decode_v2``).

    The hot path: one- and two-byte varints are a table lookup (``_ZZ``), longer ones go through
    the general reader; every length is still checked against the record and batch bounds. The
    five varint reads are written out on purpose: a helper call per field would cost about as much
    as the whole record decode does now.
    """
    buf = data if type(data) is bytes else bytes(data)
    pos = 0
    end = len(buf)
    new = tuple.__new__
    rec_cls = Record
    no_headers = _NO_HEADERS
    zz = _ZZ
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                length = zz[b]
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                length = zz[b + (c << 7)]
                pos += 2
            else:
                length, pos = read_varint(buf, pos)
            rec_end = pos + length
            if length < 6 or rec_end > end:
                raise CorruptRecordError(f"Invalid record size {length}", where)
            # the attributes byte (pos) is unused
            b = buf[pos + 1]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 2
            elif (c := buf[pos + 2]) < 0x80:
                ts_delta = zz[b + (c << 7)]
                pos += 3
            else:
                ts_delta, pos = read_varlong(buf, pos + 1)
            b = buf[pos]
            if b < 0x80:
                off_delta = zz[b]
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                off_delta = zz[b + (c << 7)]
                pos += 2
            else:
                off_delta, pos = read_varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                n = zz[b + (c << 7)]
                pos += 2
            else:
                n, pos = read_varint(buf, pos)
            if n < 0:
                key = None
            else:
                if pos + n > rec_end:
                    raise CorruptRecordError(f"Invalid key size {n}", where)
                key = buf[pos:pos + n]
                pos += n
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            elif (c := buf[pos + 1]) < 0x80:
                n = zz[b + (c << 7)]
                pos += 2
            else:
                n, pos = read_varint(buf, pos)
            if n < 0:
                value = None
            else:
                if pos + n > rec_end:
                    raise CorruptRecordError(f"Invalid value size {n}", where)
                value = buf[pos:pos + n]
                pos += n
            if buf[pos] == 0:
                headers = no_headers
                pos += 1
            else:
                headers, pos = _decode_headers(buf, pos, rec_end, where)
            if pos != rec_end:
                raise CorruptRecordError(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {length + pos - rec_end}", where)
            yield new(rec_cls, (base_offset + off_delta, base_ts + ts_delta if lat is None else lat,
                                key, value, headers))
        if pos != end:
            raise CorruptRecordError("Incorrect declared batch size, records still remaining in file", where)
    except (IndexError, DecodeError) as e:
        raise CorruptRecordError(f"Malformed record: {e or 'truncated'}", where) from None


#: the v2 record decoder in use: the compiled twin when built (see :mod:`kraftwerk.native`)
_decode_v2: Callable[[Buffer, int, int, int, int | None, int], Iterator[Record]] = (
    _decode_v2_py if NATIVE is None else NATIVE.decode_v2)


def _decode_headers(buf: bytes, pos: int, rec_end: int, where: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(buf, pos)
    if count < 0 or count > (rec_end - pos) // 2:
        raise CorruptRecordError(f"Found invalid number of record headers {count}", where)
    out: list[Header] = []
    for _ in range(count):
        n, pos = read_varint(buf, pos)
        if n < 0 or pos + n > rec_end:
            raise CorruptRecordError(f"Invalid header key size {n}", where)
        try:
            hkey = buf[pos:pos + n].decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError("Header key is not valid UTF-8", where) from None
        pos += n
        n, pos = read_varint(buf, pos)
        if n < 0:
            hval = None
        else:
            if pos + n > rec_end:
                raise CorruptRecordError(f"Invalid header value size {n}", where)
            hval = buf[pos:pos + n]
            pos += n
        out.append((hkey, hval))
    return tuple(out), pos


# ---------------------------------------------------------------------- framing

def _as_view(data: Buffer) -> memoryview:
    mv = data if isinstance(data, memoryview) else memoryview(data)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _new_batch(mv: memoryview, pos: int, size: int, magic: int, max_decompressed: int) -> RecordBatch:
    """Build the view of the batch at ``pos`` (``size`` includes the log overhead)."""
    b = RecordBatch.__new__(RecordBatch)
    b._buf = mv
    b.position = pos
    b.size = size
    b.magic = magic
    b._legacy = None
    b.max_decompressed_size = max_decompressed
    if magic >= MAGIC_V2:
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {size} is smaller than the minimum allowed overhead "
                f"{RECORD_BATCH_OVERHEAD})", pos)
        (base_offset, _, ple, _, crc, attrs, last_delta, base_ts, max_ts, pid, epoch, base_seq,
         count) = V2_HEADER.unpack_from(mv, pos)
        codec = attrs & 0x07
        if codec > 4:
            raise CorruptRecordError(f"Unknown compression type id: {codec}", pos)
        if count < 0:
            raise CorruptRecordError(f"Found invalid record count {count}", pos)
        b._base_offset = base_offset
        b.last_offset = base_offset + last_delta
        b.crc = crc
        b.attributes = attrs
        b.compression = _CODECS[codec]
        b.timestamp_type = TimestampType.LOG_APPEND_TIME if attrs & 0x08 else TimestampType.CREATE_TIME
        b.is_transactional = bool(attrs & 0x10)
        b.is_control = bool(attrs & 0x20)
        b.delete_horizon_ms = base_ts if attrs & 0x40 else None
        b.base_timestamp = base_ts
        b.max_timestamp = max_ts
        b.producer_id = pid
        b.producer_epoch = epoch
        b.base_sequence = base_seq
        b.partition_leader_epoch = ple
        b._count = count
        return b
    offset, crc, attrs, ts, _, _, _, _ = legacy_layout(mv, pos, size, magic)
    codec = attrs & 0x07
    b.last_offset = offset
    b.crc = crc
    b.attributes = attrs
    b.compression = _CODECS[codec]
    if magic == MAGIC_V1:
        b.timestamp_type = TimestampType.LOG_APPEND_TIME if attrs & 0x08 else TimestampType.CREATE_TIME
    else:
        b.timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    b.base_timestamp = ts
    b.max_timestamp = ts
    b.is_transactional = False
    b.is_control = False
    b.delete_horizon_ms = None
    b.producer_id = NO_PRODUCER_ID
    b.producer_epoch = NO_PRODUCER_EPOCH
    b.base_sequence = NO_SEQUENCE
    b.partition_leader_epoch = NO_PARTITION_LEADER_EPOCH
    if codec:
        b._base_offset = None
        b._count = None
    else:
        b._base_offset = offset
        b._count = 1
    return b


class _Truncated(Exception):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


def _spans(mv: memoryview, pos: int, end: int) -> Iterator[tuple[int, int, int]]:
    """(position, size, magic) of each batch; ``_Truncated`` at a partial tail, ``CorruptRecordError``
    at bad framing (size below the minimum, unknown magic)."""
    unpack = _LOG_HEADER.unpack_from
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            raise _Truncated(f"{remaining} trailing bytes are shorter than a batch header", pos)
        _, size = unpack(mv, pos)
        if size < RECORD_OVERHEAD_V0:
            raise record_too_small(size, pos)
        if remaining < MAGIC_POS + 1:
            raise _Truncated(f"{remaining} trailing bytes are shorter than a batch header", pos)
        magic = mv[pos + MAGIC_POS]
        if magic > MAGIC_V2:
            raise bad_magic(magic, pos)
        total = size + LOG_OVERHEAD
        if total > remaining:
            raise _Truncated(f"batch of {total} bytes but only {remaining} bytes left", pos)
        yield pos, total, magic
        pos += total


def _frame(mv: memoryview, pos: int, end: int, max_decompressed: int) -> Iterator[RecordBatch]:
    """Yield batch views; raise ``_Truncated`` at a partial tail, ``CorruptRecordError`` at bad framing."""
    for p, total, magic in _spans(mv, pos, end):
        yield _new_batch(mv, p, total, magic, max_decompressed)


def iter_spans(data: Buffer, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int]]:
    """``(position, size, magic)`` of every batch of ``data[start:end]`` without building batch views.

    The same framing checks as :func:`iter_batches` (bad framing raises ``CorruptRecordError``, a
    partial batch at the end is skipped): for callers that walk millions of small batches and
    need only where they are (copying, up-conversion, index building).
    """
    mv = _as_view(data)
    stop = len(mv) if end is None else min(end, len(mv))
    try:
        yield from _spans(mv, start, stop)
    except _Truncated:
        log.debug("ignoring a partial batch at the end of the buffer")


def iter_batches(data: Buffer, start: int = 0, end: int | None = None, *, validate: bool = False,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[RecordBatch]:
    """Iterate batch views over ``data[start:end]`` without decompressing anything.

    A partial batch at the end is skipped silently, like Kafka's log input streams do (use
    ``BatchScanner`` to learn about it); bad framing raises ``CorruptRecordError`` with the
    position. With ``validate`` every batch's CRC is checked too.
    """
    mv = _as_view(data)
    stop = len(mv) if end is None else min(end, len(mv))
    it = _frame(mv, start, stop, max_decompressed_size)
    while True:
        try:
            batch = next(it)
        except StopIteration:
            return
        except _Truncated:
            log.debug("ignoring a partial batch at the end of the buffer")
            return
        if validate:
            batch.ensure_valid()
        yield batch


def iter_records(data: Buffer, start: int = 0, end: int | None = None, *,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> Iterator[Record]:
    """Every record of every batch (deep iteration), in log order."""
    for batch in iter_batches(data, start, end, max_decompressed_size=max_decompressed_size):
        yield from batch.records()
