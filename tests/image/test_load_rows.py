"""The image of one node's record rows (``load_rows``, what the Spark job replays per cluster) is the
image of its files (``load_log_dir``, what ``metadata show`` prints): on real Kafka 4.3 files, on a
generated log cleaned behind a snapshot, and with a torn append; unreadable rows are refused."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kraftwerk.image.describe import describe_image
from kraftwerk.image.source import MetadataSourceError, load_log_dir, load_rows
from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR
from kraftwerk.storage.metadata_scan import SNAPSHOT, scan_metadata
from tests.conftest import golden_path
from tests.readiness.generator import _build_cluster, _write_copy


def _same(directory: Path) -> None:
    rows = list(scan_metadata([directory]))
    random.Random(1).shuffle(rows)  # Spark hands a group's rows in no particular order
    ours, files = load_rows(rows), load_log_dir(directory / METADATA_PARTITION_DIR)
    assert describe_image(ours) == describe_image(files)
    assert (ours.provenance, ours.features_epoch) == (files.provenance, files.features_epoch)


def test_kafkas_log_and_generated_copies(tmp_path: Path) -> None:
    kafka = tmp_path / "kafka"
    shutil.copytree(golden_path("kafka-4.3-standalone"), kafka / METADATA_PARTITION_DIR)
    _same(kafka)
    cluster = _build_cluster(random.Random(3), 0, "ahead", {"config_violation", "fenced_broker"})
    count = len(cluster.log.batches)
    _write_copy(cluster, tmp_path / "cleaned", 3000, count, snapshot_at=count // 2, torn=False)
    assert any(r.file_kind == SNAPSHOT for r in scan_metadata([tmp_path / "cleaned"]))
    _same(tmp_path / "cleaned")
    _write_copy(cluster, tmp_path / "torn", 1, count - 2, snapshot_at=None, torn=True)
    _same(tmp_path / "torn")


def test_unreadable_rows_are_refused(tmp_path: Path) -> None:
    source = golden_path("kafka-4.3-standalone")
    rows = list(scan_metadata([source]))
    bad = {"fields": None, "record_type": None, "error": "batch at 120: CRC mismatch"}
    broken = [r._replace(**bad) if r.offset == 40 else r for r in rows]
    with pytest.raises(MetadataSourceError, match=r"^00000000000000000000.log: batch at 120: CRC mismatch$"):
        load_rows(broken)
    no_footer = [r for r in rows if r.record_type != "SnapshotFooterRecord"]
    with pytest.raises(MetadataSourceError, match="ends without a SnapshotFooterRecord"):
        load_rows(no_footer)
    bad_json = [r._replace(fields='{"name": 5}') if r.record_type == "FeatureLevelRecord" else r
                for r in rows]
    with pytest.raises(MetadataSourceError, match="record at offset"):
        load_rows(bad_json)
    with pytest.raises(MetadataSourceError, match="no metadata log segment or snapshot records"):
        load_rows([])
