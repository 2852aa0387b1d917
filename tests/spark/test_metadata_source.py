"""The ``kafka-metadata`` data source and the feature-level history on a local Spark session,
against a single-process replay of the same real Kafka 4.3 metadata log (``metadata show`` and a
walk of its batches)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kraftwerk.cli.main import main
from kraftwerk.image.snapshot import write_snapshot
from kraftwerk.image.source import load_log_dir
from kraftwerk.image.writer import ImageWriterOptions
from kraftwerk.storage.metadata_log import ControlRecord, MetadataLogDir
from kraftwerk.storage.metadata_scan import scan_metadata
from kraftwerk.storage.properties import read_meta_properties, write_meta_properties
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.conftest import golden_path

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

LOG = "00000000000000000000.log"


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    source = golden_path("kafka-4.3-standalone")
    partition = tmp_path / "data" / "__cluster_metadata-0"
    partition.mkdir(parents=True)
    for name in (LOG, "00000000000000000000-0000000000.checkpoint"):
        shutil.copy(source / name, partition / name)
    shutil.copy(source / "meta.properties", tmp_path / "data" / "meta.properties")
    return tmp_path / "data"


def replayed_history(directory: Path) -> list[tuple[int, str, int]]:
    """(offset, feature, level) of every FeatureLevel/KRaftVersion record, walked in one process."""
    out = []
    for batch in MetadataLogDir(directory).log_batches():
        for entry in batch.entries:
            record = entry.record
            if isinstance(record, ControlRecord):
                if record.value is not None and record.type.name == "KRAFT_VERSION":
                    out.append((entry.offset, "kraft.version", int(record.value["kRaftVersion"])))
            elif record.spec.name == "FeatureLevelRecord":
                out.append((entry.offset, str(record.value["name"]), int(record.value["featureLevel"])))
    return out


def test_one_row_per_record_across_input_partitions(spark: SparkSession, log_dir: Path) -> None:
    from kraftwerk.spark.metadata_source import read_metadata

    local = [r._asdict() for r in scan_metadata([log_dir])]
    split = read_metadata(spark, [str(log_dir)], maxSplitBytes="2048", partitionBytes="2048")
    assert split.rdd.getNumPartitions() > 3
    whole = spark.read.format("kafka-metadata").load(str(log_dir / "__cluster_metadata-0"))
    for df in (split, whole):
        rows = sorted((r.asDict() for r in df.collect()), key=lambda r: (r["file"], r["offset"]))
        assert len(rows) == len(local) == 154
        for ours, row in zip(rows, sorted(local, key=lambda r: (r["file"], r["offset"])), strict=True):
            theirs = dict(row)
            millis = ours.pop("append_time").timestamp() * 1000
            assert round(millis) == theirs.pop("append_time_ms")
            assert ours == theirs


def test_history_matches_a_single_process_replay(spark: SparkSession, log_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from kraftwerk.spark.metadata_source import feature_history, read_metadata

    rows = feature_history(read_metadata(spark, [str(log_dir)])).collect()
    partition = log_dir / "__cluster_metadata-0"
    expected = replayed_history(partition)
    assert [(r["offset"], r["feature"], r["to_level"]) for r in rows] == expected
    # each from_level is the previous level of that feature
    last: dict[str, int] = {}
    for r in rows:
        assert r["from_level"] == last.get(r["feature"])
        last[r["feature"]] = r["to_level"]
        assert (r["cluster_id"], r["node_id"]) == ("co8Lz5qWSCe6yEg4UfbcVw", 1)
    # the levels it ends at are the image's, and the image's features epoch is the last change
    assert main(["metadata", "show", "--log-dir", str(partition), "--output", "json"]) == 0
    image = json.loads(capsys.readouterr().out)
    finalized = {f["name"]: f["level"] for f in image["features"]}
    assert {k: v for k, v in last.items() if k != "kraft.version"} == finalized
    assert max(r["offset"] for r in rows if r["feature"] != "kraft.version") == image["featuresEpoch"] == 111


def test_a_log_cleaned_behind_a_snapshot_starts_from_it(spark: SparkSession, log_dir: Path,
                                                        tmp_path: Path) -> None:
    """A node whose log was cleaned behind a snapshot: the snapshot's levels open its history (at
    its end offset - 1); another node's full log is read beside it, unchanged."""
    from kraftwerk.spark.metadata_source import feature_history, read_metadata

    partition = log_dir / "__cluster_metadata-0"
    image = load_log_dir(partition)
    cleaned = tmp_path / "node-2" / "__cluster_metadata-0"
    cleaned.mkdir(parents=True)
    meta = read_meta_properties(log_dir / "meta.properties")
    write_meta_properties(cleaned.parent, dataclasses.replace(meta, node_id=2))
    assert write_snapshot(image, cleaned, ImageWriterOptions(MV.IBP_4_3_IV0)).snapshot_id.end_offset == 150
    (cleaned / "00000000000000000150.log").touch()  # the active segment Kafka keeps after cleaning
    rows = feature_history(read_metadata(spark, [str(cleaned.parent), str(log_dir)])).collect()
    node2 = [(r["offset"], r["feature"], r["from_level"], r["to_level"]) for r in rows if r["node_id"] == 2]
    finalized = {**dict(image.features.finalized), "metadata.version": 30}
    assert node2 == [(149, name, None, level) for name, level in sorted(finalized.items())]
    node1 = [(r["offset"], r["feature"], r["to_level"]) for r in rows if r["node_id"] == 1]
    assert node1 == replayed_history(partition)
