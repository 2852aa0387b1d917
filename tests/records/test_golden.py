"""Golden segments written by real Kafka: read them, compare with kafka-dump-log, re-encode them."""

from __future__ import annotations

import pytest

from kraftwerk.records import (
    CompressionType,
    ControlRecordType,
    RecordsBuilder,
    TimestampType,
    iter_batches,
    parse_control_key,
    scan_batches,
    upconvert,
)
from tests.conftest import golden_path
from tests.records.helpers import parse_dump

LEGACY = ["v0-none", "v0-gzip", "v1-none", "v1-gzip"]
SEGMENTS = [
    ("mixed-formats", "00000000000000000000.log"),
    ("kafka-4.3-standalone", "00000000000000000000.log"),
] + [("legacy", name, "00000000000000000000.log") for name in LEGACY]


def _rebuild(batch_bytes: bytes) -> bytes:
    """Re-encode one batch with our builder from its decoded fields."""
    b = next(iter_batches(batch_bytes))
    ts_type = b.timestamp_type if b.magic else TimestampType.CREATE_TIME
    builder = RecordsBuilder(
        b.magic, b.compression, ts_type, b.base_offset,
        log_append_time=b.max_timestamp if ts_type is TimestampType.LOG_APPEND_TIME else -1,
        producer_id=b.producer_id, producer_epoch=b.producer_epoch, base_sequence=b.base_sequence,
        is_transactional=b.is_transactional, is_control=b.is_control,
        partition_leader_epoch=b.partition_leader_epoch,
        delete_horizon_ms=b.delete_horizon_ms if b.delete_horizon_ms is not None else -1)
    for r in b.records():
        if b.is_control:
            _, kind = parse_control_key(r.key)
            builder.append_control_record(r.timestamp, kind, r.value)
        else:
            builder.append_with_offset(r.offset, r.timestamp, r.key, r.value, r.headers)
    if b.magic == 2:
        builder.override_last_offset(b.last_offset)
    return builder.build()


@pytest.mark.parametrize("parts", SEGMENTS, ids=lambda p: "/".join(p[:-1]))
def test_every_golden_segment_scans_clean(parts: tuple[str, ...]) -> None:
    check_segment_scans_clean(golden_path(*parts).read_bytes())


def check_segment_scans_clean(data: bytes) -> None:
    """Every batch of a real Kafka segment is valid, in offset order, with nothing left over."""
    result = scan_batches(data, deep=True)
    assert result.tail is None
    assert result.valid_end == len(data)
    offsets = [r.offset for b in result.batches for r in b.records()]
    assert offsets == sorted(offsets)
    for b in result.batches:
        assert b.is_valid
        assert b.last_offset == offsets[offsets.index(b.base_offset) + b.record_count - 1]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_segments_reencode_byte_for_byte(name: str) -> None:
    data = golden_path("legacy", name, "00000000000000000000.log").read_bytes()
    batches = list(iter_batches(data))
    first = batches[0]
    ts_type = first.timestamp_type if first.magic else TimestampType.CREATE_TIME
    builder = RecordsBuilder(first.magic, first.compression, ts_type, first.base_offset)
    for b in batches:
        for r in b.records():
            builder.append_with_offset(r.offset, r.timestamp, r.key, r.value)
    assert builder.build() == data


def test_legacy_golden_contents() -> None:
    data = golden_path("legacy", "v1-gzip", "00000000000000000000.log").read_bytes()
    (batch,) = list(iter_batches(data))
    assert (batch.magic, batch.compression, batch.last_offset) == (1, CompressionType.GZIP, 2)
    assert batch.max_timestamp == 1700000000002
    inner = batch.messages()
    assert [m.stored_offset for m in inner] == [0, 1, 2]  # v1 inner offsets are relative
    assert [m.offset for m in inner] == [0, 1, 2]
    assert all(m.crc_valid for m in inner)
    assert [(r.key, r.value, r.timestamp) for r in batch.records()] == [
        (b"k0", b"v", 1700000000000), (b"k1", b"v", 1700000000001), (b"k2", b"v", 1700000000002)]


def test_mixed_formats_match_kafka_dump_log() -> None:
    data = golden_path("mixed-formats", "00000000000000000000.log").read_bytes()
    dump = parse_dump(golden_path("mixed-formats", "kafka-dump-log.txt"))
    batches = list(iter_batches(data))
    assert len(batches) == len(dump) == 120
    for b, d in zip(batches, dump, strict=True):
        f = d.fields
        assert int(f["position"]) == b.position
        assert int(f["size"]) == b.size
        assert int(f["magic"]) == b.magic
        assert f["compresscodec"] == b.compression.kafka_name
        assert int(f["crc"]) == b.crc
        assert f["isvalid"] == "true" and b.is_valid
        assert int(f[b.timestamp_type.kafka_name]) == b.max_timestamp
        if b.magic == 2:
            assert int(f["baseOffset"]) == b.base_offset
            assert int(f["lastOffset"]) == b.last_offset
            assert int(f["count"]) == b.record_count
            assert int(f["producerId"]) == b.producer_id
            assert int(f["baseSequence"]) == b.base_sequence
            assert int(f["lastSequence"]) == b.last_sequence
            assert int(f["partitionLeaderEpoch"]) == b.partition_leader_epoch
            assert f["isTransactional"] == str(b.is_transactional).lower()
            assert f["isControl"] == str(b.is_control).lower()
        else:
            assert int(f["offset"]) == b.last_offset
        records = list(b.records())
        assert len(records) == len(d.records)
        messages = b.messages() if b.magic < 2 else [None] * len(records)
        for r, m, dr in zip(records, messages, d.records, strict=True):
            assert int(dr["offset"]) == r.offset
            assert int(dr[b.timestamp_type.kafka_name]) == r.timestamp
            assert int(dr["keySize"]) == (-1 if r.key is None else len(r.key))
            assert int(dr["valueSize"]) == (-1 if r.value is None else len(r.value))
            if r.key is not None:
                assert dr["key"] == r.key.decode()
            assert dr["payload"] == (r.value or b"").decode()
            if m is not None:
                assert int(dr["crc"]) == m.crc and dr["isValid"] == "true" and m.crc_valid
            else:
                assert int(dr["sequence"]) == b.sequence_of(r.offset)
                keys = dr["headerKeys"].strip("[]")
                assert [k for k, _ in r.headers] == ([k.strip() for k in keys.split(",")] if keys else [])


# Kafka's Java snappy (C++ libsnappy) and zstd-jni pick different matches than the compressors
# available to Python (Rust snap via cramjam, libzstd one-shot): same format, different bytes.
NOT_BYTE_STABLE = {CompressionType.SNAPPY, CompressionType.ZSTD}


def test_mixed_formats_reencode() -> None:
    data = golden_path("mixed-formats", "00000000000000000000.log").read_bytes()
    identical = 0
    for b in iter_batches(data):
        out = _rebuild(bytes(b.raw))
        if b.compression in NOT_BYTE_STABLE:
            ours = next(iter_batches(out))
            assert ours.decompressed_payload() == b.decompressed_payload()
            assert list(ours.records()) == list(b.records())
        else:
            assert out == bytes(b.raw), f"batch at {b.position} ({b.magic}/{b.compression.kafka_name})"
            identical += 1
    assert identical >= 70  # none, gzip and lz4 of all three magics


def test_kraft_segments_reencode_byte_for_byte() -> None:
    data = golden_path("kafka-4.3-standalone", "00000000000000000000.log").read_bytes()
    check_reencodes_byte_for_byte(data)


def check_reencodes_byte_for_byte(data: bytes) -> None:
    """Our builder writes every batch of a real segment back to Kafka's bytes (byte-stable codecs)."""
    for b in iter_batches(data):
        if b.compression in NOT_BYTE_STABLE:
            continue
        assert _rebuild(bytes(b.raw)) == bytes(b.raw), b


def test_kraft_control_records() -> None:
    data = golden_path("kafka-4.3-standalone", "00000000000000000000.log").read_bytes()
    kinds = [parse_control_key(r.key)[1] for b in iter_batches(data) if b.is_control for r in b.records()]
    assert kinds == [ControlRecordType.LEADER_CHANGE, ControlRecordType.KRAFT_VERSION,
                     ControlRecordType.KRAFT_VOTERS]
    first = next(iter_batches(data))
    assert (first.partition_leader_epoch, first.is_control, first.record_count) == (1, True, 3)


@pytest.mark.parametrize("name", LEGACY)
def test_upconvert_golden_legacy(name: str) -> None:
    data = golden_path("legacy", name, "00000000000000000000.log").read_bytes()
    source = list(iter_batches(data))
    converted = list(iter_batches(upconvert(data)))
    assert len(converted) == len(source)  # Kafka keeps the batch boundaries
    for old, new in zip(source, converted, strict=True):
        assert new.magic == 2 and new.is_valid
        assert new.compression is old.compression
        assert (new.base_offset, new.last_offset) == (old.base_offset, old.last_offset)
        assert new.timestamp_type is (TimestampType.CREATE_TIME if old.magic == 0 else old.timestamp_type)
        assert list(new.records()) == list(old.records())
        assert new.producer_id == -1 and new.partition_leader_epoch == -1
    if name.startswith("v0"):
        assert all(r.timestamp == -1 for b in converted for r in b.records())


def test_upconvert_mixed_formats_preserves_content() -> None:
    data = golden_path("mixed-formats", "00000000000000000000.log").read_bytes()
    before = [r for b in iter_batches(data) for r in b.records()]
    out = upconvert(data)
    after_batches = list(iter_batches(out, validate=True))
    assert all(b.magic == 2 for b in after_batches)
    assert [r for b in after_batches for r in b.records()] == before
