"""Up-conversion (Kafka 4.0 cleaner, KIP-724) and down-conversion (RecordsUtil.downConvert)."""

from __future__ import annotations

import pytest

from kraftwerk.records import (
    CompressionType,
    ConversionError,
    RecordsBuilder,
    TimestampType,
    build_records,
    downconvert,
    iter_batches,
    upconvert,
    upconvert_batch,
    upconvert_into,
)

ROWS = [(7, 100, b"a", b"1", ()), (8, 200, None, b"2", ()), (9, 150, b"c", None, ())]


def test_uncompressed_legacy_becomes_one_batch_per_message() -> None:
    data = build_records(ROWS, magic=1)
    out = list(iter_batches(upconvert(data), validate=True))
    assert [(b.base_offset, b.last_offset, b.record_count) for b in out] == [(7, 7, 1), (8, 8, 1), (9, 9, 1)]
    assert [tuple(r) for b in out for r in b.records()] == [tuple(r) for r in ROWS]
    assert all(b.compression is CompressionType.NONE and b.magic == 2 for b in out)


def test_compressed_wrapper_becomes_one_batch_same_codec() -> None:
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4):
        data = build_records(ROWS, magic=1, compression=codec)
        (batch,) = list(iter_batches(upconvert(data), validate=True))
        assert batch.compression is codec
        assert (batch.base_offset, batch.last_offset, batch.record_count) == (7, 9, 3)
        assert batch.max_timestamp == 200
        assert [tuple(r) for r in batch.records()] == [tuple(r) for r in ROWS]


def test_v0_gets_create_time_and_no_timestamp() -> None:
    data = build_records(ROWS, magic=0, compression=CompressionType.GZIP)
    (batch,) = list(iter_batches(upconvert(data)))
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.max_timestamp == -1
    assert [r.timestamp for r in batch.records()] == [-1, -1, -1]


def test_log_append_time_wrapper_keeps_its_time() -> None:
    data = build_records(ROWS, magic=1, compression=CompressionType.GZIP,
                         timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=5555)
    (batch,) = list(iter_batches(upconvert(data)))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == 5555
    assert [r.timestamp for r in batch.records()] == [5555] * 3


def test_v2_passes_through_upconvert() -> None:
    data = build_records(ROWS, compression=CompressionType.ZSTD)
    assert upconvert(data) == data


def test_downconvert_rules() -> None:
    v2 = build_records([(o, t, k, v, (("h", b"x"),)) for o, t, k, v, _ in ROWS])
    control = RecordsBuilder(2, producer_id=1, producer_epoch=0, is_transactional=True, is_control=True,
                             base_offset=10)
    control.append_end_txn_marker(1, commit=False, coordinator_epoch=0)
    data = v2 + control.build()
    v1 = list(iter_batches(downconvert(data, 1), validate=True))
    assert [b.magic for b in v1] == [1, 1, 1]  # uncompressed: one message each, control dropped
    assert [tuple(r) for b in v1 for r in b.records()] == [tuple(r) for r in ROWS]
    v0 = list(iter_batches(downconvert(data, 0, first_offset=8), validate=True))
    assert [r.offset for b in v0 for r in b.records()] == [8, 9]  # below firstOffset dropped
    gz = build_records(ROWS, compression=CompressionType.GZIP)
    (wrapper,) = list(iter_batches(downconvert(gz, 1, first_offset=9)))
    assert wrapper.compression is CompressionType.GZIP and wrapper.last_offset == 9
    assert [r.offset for r in wrapper.records()] == [7, 8, 9]  # compressed: all kept
    assert downconvert(data, 2) == data
    with pytest.raises(ConversionError, match="zstandard"):
        downconvert(build_records(ROWS, compression=CompressionType.ZSTD), 1)


def test_single_message_fast_path_equals_builder_path() -> None:
    from kraftwerk.records.convert import _upconvert_general, iter_upconverted

    for magic in (0, 1):
        for ts_type in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
            rows = [(7, 100, b"a", b"1", ()), (8, -1, None, None, ()),
                    (9, 2**41, b"k" * 9000, b"v" * 70000, ())]
            data = build_records(rows, magic=magic, timestamp_type=ts_type, log_append_time=4242)
            slow = [_upconvert_general(batch) for batch in iter_batches(data)]
            assert [upconvert_batch(batch) for batch in iter_batches(data)] == slow
            assert upconvert(data) == b"".join(slow)
            assert list(iter_upconverted(data)) == slow
            out = bytearray(b"prefix")
            assert upconvert_into(out, data + data[:20]) == 3  # the partial tail is skipped
            assert out == b"prefix" + b"".join(slow)


def _wrapper(magic: int, codec: CompressionType, inner: list[bytes], *, last_offset: int,
             attrs_extra: int = 0, timestamp: int = 5000) -> bytes:
    """A hand-made v0/v1 wrapper over already encoded inner log entries (offset, size, message)."""
    from kraftwerk.records import compress, encode_legacy_message

    payload = compress(codec, b"".join(inner), magic=magic)
    msg = encode_legacy_message(magic, int(codec) | attrs_extra, timestamp, None, payload)
    return last_offset.to_bytes(8, "big", signed=True) + len(msg).to_bytes(4, "big") + msg


def _entry(offset: int, magic: int, timestamp: int, key: bytes | None, value: bytes | None,
           attrs: int = 0) -> bytes:
    from kraftwerk.records import encode_legacy_message

    msg = encode_legacy_message(magic, attrs, timestamp, key, value)
    return offset.to_bytes(8, "big", signed=True) + len(msg).to_bytes(4, "big") + msg


@pytest.mark.parametrize("codec", [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4])
def test_wrapper_fast_path_equals_builder_path_and_digests_what_a_consumer_reads(
        codec: CompressionType) -> None:
    from kraftwerk.records.convert import _upconvert_general, upconvert_legacy
    from kraftwerk.records.digest import ContentDigest

    cases = []
    for magic in (0, 1):
        for ts_type in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
            rows = [(100 + i, 1_700_000_000_000 - i * 7, None if i == 3 else b"k%d" % i,
                     None if i == 5 else b"v" * i, ()) for i in range(12)]
            cases.append(build_records(rows, magic=magic, compression=codec, timestamp_type=ts_type,
                                       log_append_time=4242))
    inner_v1 = [_entry(i, 1, 10 + i, b"k", b"v%d" % i) for i in range(3)]
    cases += [
        _wrapper(1, codec, inner_v1, last_offset=0),  # librdkafka's wrapper offset 0
        _wrapper(1, codec, inner_v1, last_offset=50, attrs_extra=0x08),  # log-append time
        _wrapper(0, codec, [_entry(7, 0, -1, b"a", b"b"), _entry(9, 1, 33, None, b"c")], last_offset=9),
        _wrapper(1, codec, [*inner_v1, _entry(3, 1, 1, b"x", b"y")[:-2]], last_offset=40),  # partial tail
        _wrapper(1, codec, [_entry(0, 1, -1, b"k", b"v"), _entry(1, 1, 2**40, b"k", None)], last_offset=8),
    ]
    for data in cases:
        mv = memoryview(data)
        (batch,) = iter_batches(data, validate=True)
        digest, expected = ContentDigest(), ContentDigest()
        fast = upconvert_legacy(mv, 0, len(data), data[16], digest)
        assert fast == _upconvert_general(batch) == upconvert_batch(batch)
        expected.records(batch.records())
        assert digest.digest() == expected.digest() and digest.record_count == expected.record_count


@pytest.mark.parametrize("inner", [
    [_entry(5, 1, 1, b"k", b"v"), _entry(5, 1, 1, b"k", b"v")],  # offsets must increase
    [_entry(0, 1, -7, b"k", b"v")],  # invalid negative timestamp
    [_entry(0, 1, 1, b"k", b"v", attrs=1)],  # compressed inner message
    [_entry(0, 2, 1, b"k", b"v")],  # inner magic 2
    [],  # no inner message
])
def test_wrapper_fast_path_defers_unusual_wrappers_to_the_builder_path(inner: list[bytes]) -> None:
    from kraftwerk.records import RecordsError
    from kraftwerk.records.convert import _upconvert_general, upconvert_legacy

    data = _wrapper(1, CompressionType.GZIP, inner, last_offset=30)
    (batch,) = iter_batches(data, validate=True)
    with pytest.raises(RecordsError) as slow:
        _upconvert_general(batch)
    with pytest.raises(type(slow.value), match=str(slow.value).split(" (")[0][:30]):
        upconvert_legacy(memoryview(data), 0, len(data), 1)


def test_upconvert_legacy_checks_the_crc() -> None:
    from kraftwerk.records import CorruptRecordError
    from kraftwerk.records.convert import upconvert_legacy

    for codec in (CompressionType.NONE, CompressionType.GZIP):
        data = bytearray(build_records(ROWS, magic=1, compression=codec))
        size = int.from_bytes(data[8:12], "big") + 12
        data[size - 1] ^= 1  # the first batch's last byte
        with pytest.raises(CorruptRecordError, match="is corrupt"):
            upconvert_legacy(memoryview(data), 0, size, 1)
        if codec is CompressionType.NONE:
            upconvert_legacy(memoryview(data), 0, size, 1, check_crc=False)
