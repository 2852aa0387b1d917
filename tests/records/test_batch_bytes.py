"""``records/batch.py`` byte by byte, against an independent encoder (kafka-python's record
builders) and Kafka's own error texts: every varint width the v2 decoder's fast path handles,
every header field, log-append time, every malformed-record branch, and the v0/v1 layout."""

from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kraftwerk.records import (
    CompressionType,
    CorruptRecordError,
    InvalidRecordError,
    TimestampType,
    iter_batches,
)
from kraftwerk.records.legacy import legacy_layout, wrapper_offsets_and_count

RECORDS_AT = 61  # the v2 batch header is 61 bytes; the records follow
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def kp_batch(rows: list[Row], codec: int = 0, *, transactional: bool = False, producer: tuple[int, int, int]
             = (-1, -1, -1)) -> bytes:
    """A v2 batch as kafka-python writes it."""
    builder = DefaultRecordBatchBuilder(2, codec, transactional, *producer, 1 << 24)
    for offset, ts, key, value, headers in rows:
        builder.append(offset, ts, key, value, list(headers))
    return bytes(builder.build())


def fix_crc(data: bytearray) -> bytes:
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def ours(data: bytes) -> list[Row]:
    return [tuple(r) for b in iter_batches(data, validate=True) for r in b.records()]  # type: ignore[misc]


# ---------------------------------------------------------------- v2: what kafka-python wrote

SIZES = [None, 0, 1, 63, 64, 8191, 8192, 70_000]
"""Lengths whose zig-zag varint takes 1 byte (< 64), 2 bytes (< 8192), 3 bytes."""


def _rows_of_every_width() -> list[Row]:
    base_ts = 1_700_000_000_000
    deltas = [0, 63, 64, 8191, 8192, -1, -64, -65, 2**35]  # timestamp deltas, negative ones too
    # offset deltas of every width; 8192 is varint 0x80 0x80 0x01 (a second byte of just the continuation bit)
    offsets = [0, 1, 63, 64, 8191, 8192, 200_000, 200_001, 300_000]
    rows: list[Row] = []
    for i, (ts, off) in enumerate(zip(deltas, offsets, strict=True)):
        key_size, value_size = SIZES[i % len(SIZES)], SIZES[(i * 3 + 1) % len(SIZES)]
        key = None if key_size is None else bytes([65 + i]) * key_size
        value = None if value_size is None else bytes([97 + i]) * value_size
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if i % 3 == 1:
            headers = (("h" * (i * 40), b"v" * i), ("", None))
        rows.append((off, base_ts + ts, key, value, headers))
    return rows


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4], ids=["none", "gzip", "snappy", "lz4", "zstd"])
def test_v2_records_of_every_varint_width_read_as_kafka_python_wrote_them(codec: int) -> None:
    rows = _rows_of_every_width()
    data = kp_batch(rows, codec)
    assert ours(data) == rows
    (batch,) = list(iter_batches(data))
    theirs = DefaultRecordBatch(data)
    # kafka-python leaves the base offset 0 for the broker to assign and writes offsets as deltas
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (0, 300_000, len(rows))
    assert (batch.base_offset, batch.last_offset) == (theirs.base_offset, theirs.last_offset_delta)
    assert (batch.crc, batch.attributes) == (theirs.crc, theirs.attributes)
    assert (batch.base_timestamp, batch.max_timestamp) == (rows[0][1], max(r[1] for r in rows))
    assert batch.compression is CompressionType(codec) and batch.timestamp_type is TimestampType.CREATE_TIME
    assert (batch.position, batch.size) == (0, len(data))


def test_v2_header_fields_as_kafka_python_wrote_them() -> None:
    data = kp_batch([(0, 5, b"k", b"v", ()), (1, 6, None, None, ())], transactional=True,
                    producer=(123_456_789_012, 17, 2**31 - 2))
    (batch,) = list(iter_batches(data))
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (123_456_789_012, 17, 2**31 - 2)
    assert batch.is_transactional and not batch.is_control and batch.has_producer_id
    assert batch.last_sequence == 2**31 - 1 and batch.sequence_of(1) == 2**31 - 1
    assert (batch.partition_leader_epoch, batch.delete_horizon_ms, batch.count_or_none) == (0, None, 2)
    # a sequence wraps at Int.MAX_VALUE to 0 (Kafka's DefaultRecordBatch.incrementSequence)
    wrapped = kp_batch([(0, 5, None, b"a", ()), (1, 5, None, b"b", ()), (2, 5, None, b"c", ())],
                       producer=(1, 0, 2**31 - 2))
    (batch,) = list(iter_batches(wrapped))
    assert [batch.sequence_of(o) for o in (0, 1, 2)] == [2**31 - 2, 2**31 - 1, 0] and batch.last_sequence == 0


def test_v2_partition_leader_epoch_delete_horizon_and_log_append_time() -> None:
    """Fields outside kafka-python's builder, set in the header bytes (CRC fixed as Kafka would)."""
    data = bytearray(kp_batch([(0, 1_000, b"k", b"v", ()), (1, 1_010, b"k", b"w", ())]))
    struct.pack_into(">i", data, 12, 42)  # partitionLeaderEpoch (outside the CRC)
    struct.pack_into(">h", data, 21, 0x08 | 0x40)  # attributes: LOG_APPEND_TIME, delete horizon set
    struct.pack_into(">q", data, 35, 777)  # maxTimestamp: the log append time
    (batch,) = list(iter_batches(fix_crc(data), validate=True))
    assert batch.partition_leader_epoch == 42 and batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.delete_horizon_ms == 1_000  # the base timestamp, once the flag is set
    assert [r.timestamp for r in batch.records()] == [777, 777]


# ---------------------------------------------------------------- v2: malformed records, Kafka's texts

def _one_record_batch(key: bytes | None = b"key", value: bytes | None = b"value",
                      headers: tuple[tuple[str, bytes | None], ...] = ()) -> bytearray:
    return bytearray(kp_batch([(0, 1, key, value, headers)]))


def _error(data: bytes) -> str:
    with pytest.raises(CorruptRecordError) as err:
        ours(data)
    assert err.value.position == 0
    return str(err.value)


def test_record_length_below_the_minimum_or_past_the_batch() -> None:
    data = _one_record_batch()
    data[RECORDS_AT] = 2 * 5  # record length 5: less than a record's fixed fields
    assert _error(fix_crc(data)) == "Invalid record size 5 (batch at position 0)"
    data[RECORDS_AT] = 2 * 60  # longer than the batch holds
    assert _error(fix_crc(data)) == "Invalid record size 60 (batch at position 0)"


def test_key_and_value_sizes_past_the_record() -> None:
    data = _one_record_batch()
    key_len_at = RECORDS_AT + 1 + 1 + 1 + 1  # length, attributes, timestamp delta, offset delta
    assert data[key_len_at] == 2 * 3
    data[key_len_at] = 2 * 40
    assert _error(fix_crc(data)) == "Invalid key size 40 (batch at position 0)"
    data = _one_record_batch()
    value_len_at = key_len_at + 1 + 3
    assert data[value_len_at] == 2 * 5
    data[value_len_at] = 2 * 40
    assert _error(fix_crc(data)) == "Invalid value size 40 (batch at position 0)"


def test_a_record_shorter_or_longer_than_its_length() -> None:
    data = _one_record_batch()
    length = data[RECORDS_AT] // 2
    data[RECORDS_AT] += 2  # one byte more than the fields take, past the end of the batch
    assert _error(fix_crc(data)) == f"Invalid record size {length + 1} (batch at position 0)"
    data.append(0)  # now the batch holds that byte: the record's fields end one byte early
    struct.pack_into(">i", data, 8, len(data) - 12)
    assert _error(fix_crc(data)) == (f"Invalid record size: expected to read {length + 1} bytes in record "
                                     f"payload, but instead read {length} (batch at position 0)")


def test_bytes_after_the_last_record() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ()), (1, 1, b"k", b"v", ())]))
    struct.pack_into(">i", data, 57, 1)  # claims one record; the second is left over
    assert _error(fix_crc(data)) == ("Incorrect declared batch size, records still remaining in file "
                                     "(batch at position 0)")


def test_more_records_claimed_than_bytes_could_hold() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    struct.pack_into(">i", data, 57, 1000)
    assert _error(fix_crc(data)).startswith("Record count 1000 cannot fit in ")


def test_malformed_headers() -> None:
    data = _one_record_batch(headers=(("hk", b"hv"),))
    count_at = RECORDS_AT + 4 + 1 + 3 + 1 + 5
    assert data[count_at] == 2 * 1
    data[count_at] = 2 * 20  # more headers than bytes left
    assert _error(fix_crc(data)) == "Found invalid number of record headers 20 (batch at position 0)"
    data = _one_record_batch(headers=(("hk", b"hv"),))
    data[count_at + 1] = 2 * 30  # header key size past the record
    assert _error(fix_crc(data)) == "Invalid header key size 30 (batch at position 0)"
    data = _one_record_batch(headers=(("hk", b"hv"),))
    data[count_at + 2] = 0xFF  # not UTF-8
    assert _error(fix_crc(data)) == "Header key is not valid UTF-8 (batch at position 0)"
    data = _one_record_batch(headers=(("hk", b"hv"),))
    data[count_at + 4] = 2 * 30  # header value size past the record
    assert _error(fix_crc(data)) == "Invalid header value size 30 (batch at position 0)"


def test_a_truncated_varint_is_a_malformed_record() -> None:
    data = _one_record_batch(key=None, value=None)
    data[-1] = 0x80  # the header count's varint now continues past the batch
    assert _error(fix_crc(data)).startswith("Malformed record")


# ---------------------------------------------------------------- v0/v1

def kp_legacy(magic: int, rows: list[tuple[int, int, bytes | None, bytes | None]], codec: int = 0) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 24)
    for offset, ts, key, value in rows:
        builder.append(offset, ts, key, value)
    return bytes(builder.build())


LEGACY_ROWS = [(0, 1_000, None, b"v0"), (1, 1_001, b"", b""), (2, 1_002, b"k" * 300, None),
               (3, 999, b"x", b"y")]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_messages_as_kafka_python_wrote_them(magic: int) -> None:
    data = kp_legacy(magic, LEGACY_ROWS)
    batches = list(iter_batches(data, validate=True))
    assert len(batches) == len(LEGACY_ROWS)
    pos = 0
    for batch, (offset, ts, key, value) in zip(batches, LEGACY_ROWS, strict=True):
        (message,) = batch.messages()
        size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        assert (message.offset, message.stored_offset) == (offset, offset)
        assert (message.position, message.size) == (pos, size)
        assert (message.key, message.value, message.magic, message.attributes) == (key, value, magic, 0)
        assert message.crc == int.from_bytes(data[pos + 12:pos + 16], "big") == message.computed_crc
        assert message.computed_crc == zlib.crc32(data[pos + 16:pos + size])
        if magic:
            assert (message.timestamp, message.timestamp_type) == (ts, TimestampType.CREATE_TIME)
        else:
            assert (message.timestamp, message.timestamp_type) == (-1, TimestampType.NO_TIMESTAMP_TYPE)
        assert batch.legacy_key_value() == (key, value) and batch.wrapper() == message
        assert (batch.base_offset, batch.last_offset, batch.count_or_none) == (offset, offset, 1)
        assert (batch.base_timestamp, batch.max_timestamp) == ((ts, ts) if magic else (-1, -1))
        assert bytes(batch.payload) == (value or b"")
        pos += size


@pytest.mark.parametrize(("magic", "codec"), [(0, 1), (1, 1), (1, 2)])
def test_legacy_wrappers_as_kafka_python_wrote_them(magic: int, codec: int) -> None:
    rows = [(5 + i, 2_000 + i, None if i % 2 else b"k%d" % i, b"v" * i) for i in range(6)]
    data = kp_legacy(magic, rows, codec)
    (batch,) = list(iter_batches(data, validate=True))
    assert batch.count_or_none is None and batch.compression is CompressionType(codec)
    assert batch.offsets_and_count() == (5, 6)
    messages = batch.messages()
    assert [(m.offset, m.key, m.value) for m in messages] == [(o, k, v) for o, _, k, v in rows]
    assert all(m.crc_valid and m.attributes == 0 for m in messages)
    if magic:
        assert [m.timestamp for m in messages] == [t for _, t, _, _ in rows]
    # kafka-python writes the inner offsets absolute and leaves the wrapper's 0 (read as old librdkafka)
    assert (batch.base_offset, batch.record_count, batch.last_offset) == (5, 6, 0)
    assert [tuple(r) for r in batch.records()] == [(o, t if magic else -1, k, v, ()) for o, t, k, v in rows]


def _legacy_message(magic: int, key: bytes | None, value: bytes | None, attrs: int = 0,
                    offset: int = 0, ts: int = 5) -> bytearray:
    body = bytes([magic, attrs]) + (struct.pack(">q", ts) if magic else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return bytearray(struct.pack(">qi", offset, len(message)) + message)


def test_legacy_layout_positions() -> None:
    for magic, key_at in ((0, 12 + 4 + 2), (1, 12 + 4 + 2 + 8)):
        data = _legacy_message(magic, b"key", b"value")
        assert legacy_layout(data, 0, len(data), magic) == (
            0, int.from_bytes(data[12:16], "big"), 0, 5 if magic else -1, key_at, 3, key_at + 4 + 3, 5)
        data = _legacy_message(magic, None, None)
        assert legacy_layout(data, 0, len(data), magic)[4:] == (key_at, -1, key_at + 4, -1)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_layout_errors(magic: int) -> None:
    overhead = 14 if magic == 0 else 22
    data = _legacy_message(magic, b"key", b"value")
    text = f"Record size {overhead - 1} is less than the minimum record overhead \\({overhead}\\)"
    with pytest.raises(CorruptRecordError, match=text) as err:
        legacy_layout(data, 0, 12 + overhead - 1, magic, 99)
    assert err.value.position == 99
    bad = _legacy_message(magic, b"key", b"value", attrs=5)
    with pytest.raises(CorruptRecordError, match=f"Invalid compression type id 5 for magic {magic}") as err:
        legacy_layout(bad, 0, len(bad), magic, 99)
    assert err.value.position == 99
    key_len_at = 12 + overhead - 8
    for key_len in (-2, len(data)):
        bad = bytearray(data)
        struct.pack_into(">i", bad, key_len_at, key_len)
        with pytest.raises(CorruptRecordError, match=f"Invalid key size {key_len} in legacy record"):
            legacy_layout(bad, 0, len(bad), magic)
    for value_len in (-2, 6):
        bad = bytearray(data)
        struct.pack_into(">i", bad, key_len_at + 4 + 3, value_len)
        text = f"Invalid value size {value_len} in legacy record"
        with pytest.raises(CorruptRecordError, match=text) as err:
            legacy_layout(bad, 0, len(bad), magic)
        assert err.value.position == 0


def _wrapper(magic: int, inner: bytes, offset: int, codec: int = 1, value_null: bool = False) -> bytes:
    value = None if value_null else zlib.compress(inner, wbits=31)
    return bytes(_legacy_message(magic, None, value, attrs=codec, offset=offset))


def _invalid(data: bytes) -> str:
    (batch,) = list(iter_batches(data))
    with pytest.raises((InvalidRecordError, CorruptRecordError)) as err:
        batch.messages()
    return str(err.value)


def test_legacy_wrapper_errors_use_kafkas_texts() -> None:
    inner = b"".join(bytes(_legacy_message(1, None, b"v", offset=i)) for i in range(3))
    assert "Found invalid compressed record set with null value (magic = 1)" in \
        _invalid(_wrapper(1, inner, 2, value_null=True))
    assert "Found invalid compressed record set with no inner records" in _invalid(_wrapper(1, b"", 2))
    assert ("Found invalid wrapper offset in compressed v1 message set, wrapper offset '1' is less than the "
            "last inner message offset '2' and it is not zero.") in _invalid(_wrapper(1, inner, 1))
    compressed_inner = bytes(_legacy_message(1, None, b"v", attrs=1))
    assert "Inner messages must not be compressed" in _invalid(_wrapper(1, compressed_inner, 0))
    bad_magic = bytearray(_legacy_message(1, None, b"v"))
    bad_magic[16] = 0xFE
    assert "Invalid magic found in legacy record: -2" in _invalid(_wrapper(1, bytes(bad_magic), 0))
    tiny = struct.pack(">qi", 0, 13) + bytes(13)
    assert "Record size is less than the minimum record overhead (14)" in _invalid(_wrapper(1, tiny, 0))


def test_legacy_wrapper_offsets() -> None:
    inner = b"".join(bytes(_legacy_message(1, None, b"v", offset=i)) for i in range(3))
    (batch,) = list(iter_batches(_wrapper(1, inner, 0)))  # wrapper offset 0 (old librdkafka): as stored
    assert [m.offset for m in batch.messages()] == [0, 1, 2]
    (batch,) = list(iter_batches(_wrapper(1, inner, 10)))  # relative to the wrapper's, the last one
    assert [m.offset for m in batch.messages()] == [8, 9, 10] and batch.offsets_and_count() == (8, 3)
    assert wrapper_offsets_and_count(inner, 1, 10) == (8, 3)
    assert wrapper_offsets_and_count(inner, 1, 1) is None and wrapper_offsets_and_count(inner, 1, 0) is None
    assert wrapper_offsets_and_count(inner, 0, 10) == (0, 3)  # v0 inner offsets are absolute
    assert wrapper_offsets_and_count(b"", 1, 10) is None
    partial = inner + struct.pack(">qi", 3, 40) + b"\0" * 10  # a partial inner message at the end
    (batch,) = list(iter_batches(_wrapper(1, partial, 10)))
    assert len(batch.messages()) == 3


def test_legacy_inner_messages_take_the_wrappers_timestamp_type() -> None:
    inner = b"".join(bytes(_legacy_message(1, None, b"v", offset=i, ts=100 + i)) for i in range(2))
    (created,) = list(iter_batches(_wrapper(1, inner, 1)))
    create = created.messages()
    assert [(m.timestamp, m.timestamp_type) for m in create] == [(100, TimestampType.CREATE_TIME),
                                                                (101, TimestampType.CREATE_TIME)]
    log_append = bytearray(_legacy_message(1, None, zlib.compress(inner, wbits=31), attrs=1 | 0x08, ts=555))
    (batch,) = list(iter_batches(bytes(log_append)))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [(m.timestamp, m.timestamp_type) for m in batch.messages()] == [
        (555, TimestampType.LOG_APPEND_TIME), (555, TimestampType.LOG_APPEND_TIME)]
    single = bytes(_legacy_message(1, None, b"v", attrs=0x08, ts=9))
    (batch,) = list(iter_batches(single))
    assert batch.messages()[0].timestamp_type is TimestampType.LOG_APPEND_TIME
