"""The KRaft side: golden snapshots, bootstrap files and metadata logs; snapshot write/read."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kraftwerk.protocol.control_records import ControlRecordType
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.storage import (
    BatchFileBuilder,
    ControlRecord,
    CorruptFileError,
    CorruptSnapshotError,
    MetadataLogDir,
    SnapshotId,
    StorageError,
    iter_log_entries,
    iter_snapshot_batches,
    latest_snapshot,
    list_snapshots,
    read_bootstrap,
    read_snapshot,
    snapshot_file_batches,
    write_bootstrap,
    write_snapshot,
    write_snapshot_file,
)
from kraftwerk.storage.metadata_log import clean_snapshot_leftovers, delete_snapshot, list_snapshot_files
from tests.conftest import golden_path

SNAPSHOT = "00000000000000000000-0000000000.checkpoint"


def _feature(name: str, level: int) -> MetadataRecord:
    return MetadataRecord(lookup_record("FeatureLevelRecord"), 0, {"name": name, "featureLevel": level})


def test_golden_bootstrap_reads_and_rewrites(tmp_path: Path) -> None:
    check_bootstrap_round_trip(golden_path("kafka-4.3-standalone", "bootstrap.checkpoint"), tmp_path)


def check_bootstrap_round_trip(path: Path, tmp_path: Path) -> None:
    """A real bootstrap.checkpoint reads and writes back to Kafka's bytes."""
    boot = read_bootstrap(path.parent)
    assert boot.last_contained_log_timestamp == 0
    assert [r.spec.name for r in boot.records] == ["FeatureLevelRecord"] * len(boot.records)
    assert boot.records[0].value["name"] == "metadata.version"
    assert all(b.leader_epoch == 0 for b in boot.batches)
    times = iter([b.append_time for b in boot.batches])
    out = write_bootstrap(tmp_path, boot.records, clock=lambda: next(times))
    assert out.read_bytes() == path.read_bytes()
    assert not (tmp_path / "bootstrap.checkpoint.tmp").exists()


def test_golden_43_bootstrap_values() -> None:
    boot = read_bootstrap(golden_path("kafka-4.3-standalone", "bootstrap.checkpoint"))
    assert {r.value["name"]: r.value["featureLevel"] for r in boot.records} == {
        "metadata.version": 30, "eligible.leader.replicas.version": 1, "group.version": 1,
        "share.version": 1, "streams.version": 1, "transaction.version": 2}


def test_golden_snapshot_reads_and_rewrites(tmp_path: Path) -> None:
    path = golden_path("kafka-4.3-standalone", SNAPSHOT)
    snap = read_snapshot(path)
    assert snap.snapshot_id == SnapshotId(0, 0)
    assert snap.records == ()
    types = [c.type for c in snap.control_records]
    assert types == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.KRAFT_VERSION,
                     ControlRecordType.KRAFT_VOTERS, ControlRecordType.SNAPSHOT_FOOTER]
    kraft, voters = snap.control_records[1].value, snap.control_records[2].value
    assert kraft is not None and voters is not None and voters["voters"][0]["voterId"] == 1
    times = iter([b.append_time for b in snap.batches])
    out = write_snapshot(tmp_path, SnapshotId(0, 0), [],
                         last_contained_log_timestamp=snap.last_contained_log_timestamp,
                         kraft_version=kraft["kRaftVersion"], voters=voters, clock=lambda: next(times))
    assert out.name == SNAPSHOT and out.read_bytes() == path.read_bytes()


def test_golden_metadata_logs_stream() -> None:
    d43 = MetadataLogDir(golden_path("kafka-4.3-standalone"))
    assert [s.snapshot_id for s in d43.snapshots()] == [SnapshotId(0, 0)]
    qs = d43.quorum_state()
    assert qs is not None and qs.leader_epoch == 1
    entries = [e for b in d43.log_batches() for e in b.entries]
    assert [e.offset for e in entries] == list(range(150))
    first = entries[0].record
    assert isinstance(first, ControlRecord) and first.type is ControlRecordType.LEADER_CHANGE
    names = {e.record.spec.name for e in entries if isinstance(e.record, MetadataRecord)}
    assert {"FeatureLevelRecord", "RegisterBrokerRecord", "NoOpRecord"} <= names


def test_replay_batches_start_after_snapshot(tmp_path: Path) -> None:
    src = golden_path("kafka-4.3-standalone")
    for name in ("00000000000000000000.log", SNAPSHOT):
        shutil.copy(src / name, tmp_path / name)
    times = iter(range(1000, 2000))
    recs = [_feature("metadata.version", 30)]
    write_snapshot(tmp_path, SnapshotId(100, 1), recs, last_contained_log_timestamp=5,
                   clock=lambda: next(times))
    snap, batches = MetadataLogDir(tmp_path).replay_batches()
    assert snap is not None and snap.snapshot_id == SnapshotId(100, 1)
    got = list(batches)
    assert got[0].control_records[0].type is ControlRecordType.SNAPSHOT_HEADER
    log_entries = [e for b in got[3:] for e in b.entries]
    assert log_entries[0].offset == 100 and log_entries[-1].offset == 149


def test_snapshot_round_trip_many_batches(tmp_path: Path) -> None:
    recs = [_feature(f"feature.{i}", i % 30) for i in range(500)]
    groups: list[MetadataRecord | list[MetadataRecord]] = [*recs[:100], recs[100:140], *recs[140:]]
    path = write_snapshot(tmp_path, SnapshotId(501, 3), groups, last_contained_log_timestamp=77,
                          max_batch_bytes=2048)
    snap = read_snapshot(path)
    assert snap.records == tuple(recs)
    assert snap.last_contained_log_timestamp == 77
    assert len(snap.batches) > 5 and all(b.leader_epoch == 3 for b in snap.batches)
    offsets = [e.offset for b in snap.batches for e in b.entries]
    assert offsets == list(range(len(offsets)))
    # a group stays in one batch
    for b in snap.batches:
        names = [r.value["name"] for r in b.records]
        if "feature.100" in names:
            assert "feature.139" in names
    assert all(b.size <= 2048 for b in snap.batches)
    assert next(e.offset for e in iter_log_entries(path, min_offset=250)) == 250


def test_builder_refuses_oversized_group() -> None:
    b = BatchFileBuilder(max_batch_bytes=200)
    with pytest.raises(StorageError):
        b.append([_feature("x" * 300, 1)])


def test_snapshot_listing_and_leftovers(tmp_path: Path) -> None:
    for sid in (SnapshotId(10, 1), SnapshotId(30, 2), SnapshotId(20, 2)):
        write_snapshot(tmp_path, sid, [_feature("metadata.version", 20)], last_contained_log_timestamp=1)
    (tmp_path / "00000000000000000040-0000000002.checkpoint.part").write_bytes(b"junk")
    (tmp_path / "00000000000000000040-00000000021234567.checkpoint.part").write_bytes(b"junk")
    (tmp_path / "00000000000000000005-0000000001.checkpoint.deleted").write_bytes(b"junk")
    assert [s.snapshot_id.end_offset for s in list_snapshots(tmp_path)] == [10, 20, 30]
    latest = latest_snapshot(tmp_path)
    assert latest is not None and latest.snapshot_id == SnapshotId(30, 2)
    assert len(list_snapshot_files(tmp_path)) == 6
    assert len(clean_snapshot_leftovers(tmp_path)) == 3
    delete_snapshot(latest.path)
    assert [s.snapshot_id.end_offset for s in list_snapshots(tmp_path)] == [10, 20]
    with pytest.raises(StorageError):
        write_snapshot_file(tmp_path, SnapshotId(10, 1), [])


def _batches(records: list[MetadataRecord]) -> list[bytes]:
    return list(snapshot_file_batches(records, clock=lambda: 1))


def test_snapshot_structure_checked(tmp_path: Path) -> None:
    full = _batches([_feature("a", 1), _feature("b", 2)])
    cases = {"no-footer": full[:-1], "no-header": full[1:], "empty": [], "after-footer": [*full, full[1]]}
    for name, batches in cases.items():
        p = tmp_path / name
        p.write_bytes(b"".join(batches))
        with pytest.raises(CorruptSnapshotError):
            list(iter_snapshot_batches(p))


CRC_ERROR = re.compile(r"Record is corrupt \(stored crc = \d+, computed crc = \d+\)")


def _batch_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    assert pos == len(data)
    return starts


def test_every_flipped_bit_of_a_snapshot_is_caught_by_its_crc_or_changes_nothing(tmp_path: Path) -> None:
    """A v2 batch: base offset (0-7), length (8-11), partition leader epoch (12-15), magic (16), CRC
    (17-20), then the CRC-covered rest. A flip in the CRC or what it covers is a CRC error; in the
    length or magic, a corrupt-batch error; in the base offset or leader epoch (outside the CRC,
    as in Kafka) the same records are read."""
    path = golden_path("kafka-4.3-standalone", "bootstrap.checkpoint")
    data = path.read_bytes()
    original = [(r.spec.name, r.value) for r in read_bootstrap(path).records]
    starts = _batch_starts(data)
    seen: dict[str, int] = {}
    for pos in range(len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        p = tmp_path / "bootstrap.checkpoint"
        p.write_bytes(bytes(bad))
        at = pos - max(s for s in starts if s <= pos)
        region = ("offset" if at < 8 else "length" if at < 12 else "epoch" if at < 16 else "magic" if at == 16
                  else "crc")
        seen[region] = seen.get(region, 0) + 1
        if region in ("offset", "epoch"):
            assert [(r.spec.name, r.value) for r in read_bootstrap(p).records] == original, pos
            continue
        with pytest.raises(StorageError) as err:
            read_bootstrap(p)
        if region == "crc":
            assert CRC_ERROR.search(str(err.value)), pos
        elif region == "magic":
            assert "magic" in str(err.value).lower(), pos
    assert seen["crc"] > 300 and seen["magic"] == len(starts) == 3


def test_undecodable_metadata_record(tmp_path: Path) -> None:
    from kraftwerk.records.builder import RecordsBuilder

    b = RecordsBuilder(base_offset=0)
    b.append(1, None, b"\x01\xff\x7f\x00")  # frame v1, unknown api key
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(b.build())
    with pytest.raises(CorruptFileError, match="batch at offset 0"):
        list(iter_log_entries(p))


def test_a_metadata_record_without_a_value_is_named(tmp_path: Path) -> None:
    from kraftwerk.protocol.frame import encode_metadata_record
    from kraftwerk.records.builder import RecordsBuilder

    feature = _feature("a", 1)
    good = encode_metadata_record(feature.spec, feature.version, feature.value)
    b = RecordsBuilder(base_offset=40)
    b.append(1, None, good)
    b.append(1, None, None)
    p = tmp_path / "00000000000000000040.log"
    p.write_bytes(b.build())
    with pytest.raises(CorruptFileError, match="metadata record at offset 41 has no value"):
        list(iter_log_entries(p))
    with pytest.raises(CorruptFileError, match="metadata record at offset 41 has no value"):
        list(iter_log_entries(p, min_offset=41))  # a batch that straddles the start
    assert [e.offset for e in iter_log_entries(p, min_offset=42)] == []
