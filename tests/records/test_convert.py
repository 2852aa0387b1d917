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
