"""The readiness job on Spark: on 200 generated clusters it gives the JSON and the tables ``--no-spark``
gives, byte for byte, and finds every seeded blocker; on Kafka's own 4.3 metadata log the image of
each cluster (one Spark task replays it) and its feature-level history are what ``metadata show``
and a walk of the log say."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kraftwerk.cli.main import main
from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR
from tests.conftest import golden_path
from tests.readiness.generator import MetadataFleet, fleet_on_tmpfs
from tests.spark.test_metadata_source import replayed_history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def fleet() -> Iterator[MetadataFleet]:
    with fleet_on_tmpfs(200) as f:
        yield f


def _readiness(fleet: MetadataFleet, out: Path, *engine: str) -> int:
    return main(["pipeline", "readiness", "--metadata-dirs", str(fleet.root / "metadata"), "--log-dirs",
                 *map(str, fleet.log_dirs), "--target", "4.3-IV0", "--out", str(out), *engine])


def test_spark_and_one_process_give_the_same_report(spark: SparkSession, fleet: MetadataFleet,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    on_spark, local = fleet.root / "spark", fleet.root / "local"
    assert _readiness(fleet, on_spark, "--master", "local[2]") == 0  # reuses the active session
    assert _readiness(fleet, local, "--no-spark") == 0
    capsys.readouterr()
    assert (on_spark / "summary.json").read_bytes() == (local / "summary.json").read_bytes()
    for table in (local / "tables").iterdir():
        assert (on_spark / "tables" / table.name).read_bytes() == table.read_bytes(), table.name
    assert (on_spark / "report.html").read_bytes() == (local / "report.html").read_bytes()
    doc = json.loads((on_spark / "summary.json").read_text())
    for c in doc["clusters"]:
        books = fleet.books(c["clusterId"])
        assert {(f["kind"], f["subject"]) for f in c["findings"]} == books.seeded
        assert (c["status"], c["sourceNode"]) == (books.status, books.source_node)
    assert (on_spark / "scan" / "batches").is_dir()  # the old-format scan ran as pipeline scan's job


def test_kafkas_log_image_and_history(spark: SparkSession, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from kraftwerk.spark.metadata_source import read_metadata
    from kraftwerk.spark.readiness import cluster_images

    node = tmp_path / "node-1"
    source = golden_path("kafka-4.3-standalone")
    shutil.copytree(source, node / METADATA_PARTITION_DIR)
    shutil.copy(source / "meta.properties", node / "meta.properties")
    records = read_metadata(spark, [str(tmp_path)], maxSplitBytes="2048", partitionBytes="2048")
    [row] = cluster_images(records).collect()
    log_dir = str(node / METADATA_PARTITION_DIR)
    assert main(["metadata", "show", "--log-dir", log_dir, "--output", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (row["cluster_id"], row["node_id"], row["error"]) == ("co8Lz5qWSCe6yEg4UfbcVw", 1, None)
    assert json.loads(row["image"]) == shown
    assert main(["pipeline", "readiness", "--metadata-dirs", str(tmp_path), "--target", "4.3", "--out",
                 str(tmp_path / "out"), "--output", "json"]) == 0
    [report] = json.loads(capsys.readouterr().out)["clusters"]
    walked = replayed_history(node / METADATA_PARTITION_DIR)
    assert [(h["offset"], h["feature"], h["toLevel"]) for h in report["history"]] == walked
    assert report["features"] == {f["name"]: f["level"] for f in shown["features"]}
    assert report["featuresEpoch"] == shown["featuresEpoch"] == 111
    assert report["lastOffset"] == shown["provenance"]["lastContainedOffset"]
    assert (report["status"], report["findings"]) == ("at_target", [])
    assert [b["id"] for b in report["brokers"]] == [b["id"] for b in shown["brokers"]]
