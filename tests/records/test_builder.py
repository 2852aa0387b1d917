"""RecordsBuilder: Kafka's MemoryRecordsBuilder rules and the v2 header fields."""

from __future__ import annotations

import struct

import pytest

from kraftwerk.records import (
    CompressionType,
    ControlRecordType,
    RecordsBuilder,
    RecordsBuildError,
    TimestampType,
    UnsupportedCompressionError,
    build_records,
    iter_batches,
    parse_control_key,
)


def _one(data: bytes):  # type: ignore[no-untyped-def]
    (batch,) = list(iter_batches(data, validate=True))
    return batch


def test_v2_header_fields() -> None:
    b = RecordsBuilder(2, CompressionType.LZ4, TimestampType.CREATE_TIME, 1000, producer_id=7,
                       producer_epoch=3, base_sequence=2_147_483_646, is_transactional=True,
                       partition_leader_epoch=9)
    b.append(50, b"k", b"v", [("a", b"1"), ("b", None)])
    b.append(40, None, None)
    b.append_with_offset(1005, 60, b"k2", b"")
    batch = _one(b.build())
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (1000, 1005, 3)
    assert (batch.base_timestamp, batch.max_timestamp) == (50, 60)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 3, 2_147_483_646)
    assert batch.last_sequence == 3  # wraps at Int.MAX_VALUE to 0 like Kafka
    assert batch.is_transactional and not batch.is_control and batch.partition_leader_epoch == 9
    assert batch.delete_horizon_ms is None
    assert [tuple(r) for r in batch.records()] == [
        (1000, 50, b"k", b"v", (("a", b"1"), ("b", None))), (1001, 40, None, None, ()),
        (1005, 60, b"k2", b"", ())]
    assert batch.sequence_of(1001) == 2_147_483_647


def test_log_append_time_v2_and_legacy() -> None:
    batch = _one(build_records([(0, 5, b"a", b"b", ())], timestamp_type=TimestampType.LOG_APPEND_TIME,
                               log_append_time=999))
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == 999
    assert [r.timestamp for r in batch.records()] == [999]
    for codec in (CompressionType.NONE, CompressionType.GZIP):
        data = build_records([(3, 5, b"a", b"b", ()), (4, 6, None, b"c", ())], magic=1, compression=codec,
                             timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=777)
        batches = list(iter_batches(data, validate=True))
        assert all(b.timestamp_type is TimestampType.LOG_APPEND_TIME for b in batches)
        assert [r.timestamp for b in batches for r in b.records()] == [777, 777]
        assert [r.offset for b in batches for r in b.records()] == [3, 4]


def test_legacy_compressed_wrapper_layout() -> None:
    data = build_records([(10, 100, b"a", b"1", ()), (11, 300, b"b", b"2", ()), (13, 200, None, b"3", ())],
                         magic=1, compression=CompressionType.GZIP)
    batch = _one(data)
    assert batch.last_offset == 13  # wrapper offset = last inner offset
    assert batch.max_timestamp == 300  # wrapper timestamp = max timestamp
    inner = batch.messages()
    assert [m.stored_offset for m in inner] == [0, 1, 3]  # relative to the base offset
    assert [m.offset for m in inner] == [10, 11, 13]
    assert batch.base_offset == 10 and batch.record_count == 3
    wrapper = batch.wrapper()
    assert wrapper.key is None and wrapper.crc_valid
    v0 = _one(build_records([(10, -1, b"a", b"1", ()), (12, -1, b"b", b"2", ())], magic=0,
                            compression=CompressionType.SNAPPY))
    assert [m.stored_offset for m in v0.messages()] == [10, 12]  # absolute for v0


def test_control_batch_and_txn_marker() -> None:
    b = RecordsBuilder(2, producer_id=5, producer_epoch=1, is_transactional=True, is_control=True,
                       base_offset=42)
    b.append_end_txn_marker(1234, commit=True, coordinator_epoch=17)
    batch = _one(b.build())
    assert batch.is_control and batch.is_transactional and batch.base_sequence == -1
    (rec,) = list(batch.records())
    assert parse_control_key(rec.key) == (0, ControlRecordType.COMMIT)
    assert rec.value == struct.pack(">hi", 0, 17)
    with pytest.raises(RecordsBuildError):
        b.append(1, b"k", b"v")
    with pytest.raises(RecordsBuildError):
        RecordsBuilder().append_control_record(1, ControlRecordType.ABORT, None)


def test_delete_horizon_sets_base_timestamp() -> None:
    b = RecordsBuilder(2, delete_horizon_ms=5000)
    b.append(100, b"k", None)
    batch = _one(b.build())
    assert batch.delete_horizon_ms == 5000 and batch.base_timestamp == 5000
    assert batch.attributes & 0x40
    assert [r.timestamp for r in batch.records()] == [100]


def test_override_last_offset() -> None:
    b = RecordsBuilder(2, base_offset=10)
    b.append(1, b"k", b"v")
    b.override_last_offset(20)
    batch = _one(b.build())
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (10, 20, 1)


@pytest.mark.parametrize("action", [
    lambda: RecordsBuilder(1, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE),
    lambda: RecordsBuilder(1, is_transactional=True),
    lambda: RecordsBuilder(0, is_control=True),
    lambda: RecordsBuilder(7),
])
def test_constructor_rules(action) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RecordsBuildError):
        action()


def test_append_rules() -> None:
    b = RecordsBuilder(2, base_offset=5)
    b.append(1, b"k", b"v")
    with pytest.raises(RecordsBuildError, match="monotonically"):
        b.append_with_offset(5, 1, None, None)
    with pytest.raises(RecordsBuildError, match="negative timestamp"):
        b.append(-5, None, None)
    with pytest.raises(RecordsBuildError, match="headers"):
        RecordsBuilder(1).append(1, None, None, [("h", b"")])
    with pytest.raises(UnsupportedCompressionError):
        RecordsBuilder(1, CompressionType.ZSTD)
    with pytest.raises(RecordsBuildError, match="producer ID"):
        RecordsBuilder(2, is_transactional=True).build()
    with pytest.raises(RecordsBuildError, match="sequence"):
        r = RecordsBuilder(2, producer_id=1, producer_epoch=0)
        r.append(1, None, None)
        r.build()
    assert RecordsBuilder(2).build() == b""
