"""KRaft snapshot files written from an image: layout, crash-safe write, read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftwerk.image.errors import UnwritableMetadataError
from kraftwerk.image.snapshot import SnapshotId, write_snapshot
from kraftwerk.image.source import load_log_dir, load_snapshot_file
from kraftwerk.image.writer import ImageWriterOptions, LossPolicy
from kraftwerk.protocol import codec
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.records.batch import iter_batches
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.conftest import golden_path


def test_snapshot_of_golden_log_reads_back(tmp_path: Path) -> None:
    check_snapshot_reads_back(golden_path("kafka-4.3-standalone"), tmp_path, MV.IBP_4_3_IV0,
                              SnapshotId(150, 1))


def check_snapshot_reads_back(log_dir: Path, tmp_path: Path, mv: MV, expected: SnapshotId) -> None:
    """A real log's image written as a snapshot at ``mv`` reads back to the same image."""
    image = load_log_dir(log_dir)
    result = write_snapshot(image, tmp_path, ImageWriterOptions(mv))
    assert result.path.name == expected.file_name
    assert result.snapshot_id == expected
    assert [p.name for p in tmp_path.iterdir()] == [result.path.name]  # no .part left behind
    back = load_snapshot_file(result.path)
    assert back == image
    assert back.provenance.last_offset == expected.end_offset - 1
    # the snapshot alone, as a metadata log dir, gives the same image
    assert load_log_dir(tmp_path) == image

    batches = list(iter_batches(result.path.read_bytes(), validate=True))
    assert batches[0].is_control and batches[-1].is_control
    assert all(b.partition_leader_epoch == expected.epoch for b in batches)
    header = next(batches[0].records())
    assert header.key == b"\x00\x00\x00\x03"  # control key: version 0, SNAPSHOT_HEADER
    assert codec.decode(lookup_record("SnapshotHeaderRecord"), 0, bytes(header.value or b""))["version"] == 0
    assert next(batches[-1].records()).key == b"\x00\x00\x00\x04"
    data_offsets = [r.offset for b in batches[1:-1] for r in b.records()]
    assert data_offsets == list(range(1, 1 + len(result.write.records)))


def test_refusing_write_leaves_nothing(tmp_path: Path) -> None:
    image = load_log_dir(golden_path("kafka-4.3-standalone"))
    with pytest.raises(UnwritableMetadataError):
        write_snapshot(image, tmp_path / "x.checkpoint", ImageWriterOptions(MV.IBP_3_6_IV2))
    assert list(tmp_path.iterdir()) == []
    done = write_snapshot(
        image, tmp_path / "x.checkpoint", ImageWriterOptions(MV.IBP_3_6_IV2, LossPolicy.DROP)
    )
    back = load_snapshot_file(done.path)
    assert back.metadata_version is MV.IBP_3_6_IV2 and not back.cluster.controllers
