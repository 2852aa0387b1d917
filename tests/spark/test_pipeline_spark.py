"""The kafka-log data source and the pipeline jobs on a local Spark session."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from kraftwerk.records import iter_batches
from kraftwerk.storage.scan import scan_segments
from kraftwerk.storage.scan_summary import summarize
from kraftwerk.storage.segment import Segment, write_indexes
from kraftwerk.storage.segment_splits import discover_segments
from kraftwerk.storage.upconvert import Status
from tests.conftest import golden_path
from tests.storage.fleet import PEERS, Fleet, build_fleet, read_partition_with_peer
from tests.storage.helpers import make_batches, write_segment

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kraftwerk.spark.jobs import ScanOutput

pytestmark = pytest.mark.spark

SEGMENT = "00000000000000000000.log"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    """The ~100-partition fleet (scanned once by the module's scan job)."""
    return build_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return build_fleet(tmp_path_factory.mktemp("small"), log_dirs=2, partitions_per_dir=4)


@pytest.fixture(scope="module")
def scanned(spark: SparkSession, fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> ScanOutput:
    from kraftwerk.spark.jobs import scan_job

    return scan_job(spark, _dirs(fleet), tmp_path_factory.mktemp("scan-out"))


def _dirs(fleet: Fleet) -> list[str]:
    return [str(d) for d in fleet.log_dirs]


def test_fleet_scans_to_the_right_counts(spark: SparkSession, fleet: Fleet, scanned: ScanOutput) -> None:
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(scanned.parquet_dir))
    rows = df.groupBy("log_dir", "topic", "partition").agg(
        F.count("*").alias("batches"), F.sum("record_count").alias("records"),
        F.sum(F.when(F.col("magic") < 2, 1).otherwise(0)).alias("legacy_batches"),
        F.sum(F.when(F.col("magic") < 2, F.col("batch_size")).otherwise(0)).alias("legacy_bytes"),
        F.sum(F.when(F.col("is_control"), 1).otherwise(0)).alias("control"),
        F.sum(F.when(F.col("crc_valid"), 0).otherwise(1)).alias("bad"),
        F.countDistinct("segment").alias("segments")).collect()
    assert len(rows) == len(fleet.partitions)
    for r in rows:
        books = fleet.books(r["log_dir"], r["topic"], r["partition"])
        expected = (books.batches, len(books.records), books.legacy_batches, books.legacy_bytes,
                    books.control_batches, 0, len(books.segments))
        assert (r["batches"], r["records"], r["legacy_batches"], r["legacy_bytes"], r["control"], r["bad"],
                r["segments"]) == expected


def test_scan_summary_matches_the_local_scan(fleet: Fleet, scanned: ScanOutput) -> None:
    local = summarize(scan_segments(discover_segments(fleet.log_dirs)))
    assert [s.to_json() for s in scanned.summaries] == [s.to_json() for s in local]


def test_segments_are_packed_into_input_partitions_and_direct_load(spark: SparkSession,
                                                                    small_fleet: Fleet) -> None:
    from kraftwerk.spark.source import read_log_dirs

    segments = sum(len(b.segments) for b in small_fleet.partitions)
    single = read_log_dirs(spark, _dirs(small_fleet), partitionBytes="1")
    assert single.rdd.getNumPartitions() == segments  # one per segment when packing is off
    df = read_log_dirs(spark, _dirs(small_fleet))
    # small segments are packed, but into at least one partition per core
    assert spark.sparkContext.defaultParallelism <= df.rdd.getNumPartitions() < segments
    assert sorted(single.collect()) == sorted(df.collect())
    # load(paths) directly (the source lists the directories itself) gives the same table
    direct = spark.read.format("kafka-log").load(_dirs(small_fleet))
    assert sorted(direct.collect()) == sorted(df.collect())
    assert len(df.collect()) == sum(b.batches for b in small_fleet.partitions)


def test_record_level_rows(spark: SparkSession, small_fleet: Fleet) -> None:
    from kraftwerk.spark.source import read_log_dirs

    df = read_log_dirs(spark, _dirs(small_fleet), level="record", arrowBatchRows="7")
    got: dict[tuple[str, str, int], list[tuple[object, ...]]] = {}
    for r in df.orderBy("log_dir", "topic", "partition", "offset").collect():
        headers = tuple((h["key"], h["value"]) for h in r["headers"])
        got.setdefault((r["log_dir"], r["topic"], r["partition"]), []).append(
            (r["offset"], r["timestamp"], r["key"], r["value"], headers))
    for books in small_fleet.partitions:
        assert got.get((str(books.log_dir), books.topic, books.partition), []) == books.records


def test_large_segment_is_split_at_index_entries(spark: SparkSession, tmp_path: Path) -> None:
    d = tmp_path / "logs" / "big-0"
    write_segment(d, 0, make_batches(80, value_size=500))
    write_indexes(Segment(d, 0), 1024)
    df = (spark.read.format("kafka-log").option("maxSplitBytes", str(16 * 1024))
          .option("partitionBytes", str(16 * 1024)).load(str(tmp_path / "logs")))
    assert df.rdd.getNumPartitions() > 3
    rows = df.orderBy("position").collect()
    local = scan_segments(discover_segments([tmp_path / "logs"]))
    assert [r["position"] for r in rows] == [r.position for r in local]
    assert sum(r["record_count"] for r in rows) == 240


def test_listing_many_partition_dirs_runs_no_spark_job(spark: SparkSession, tmp_path: Path) -> None:
    from kraftwerk.spark.source import list_segments_with_spark

    threshold = "spark.sql.sources.parallelPartitionDiscovery.threshold"
    dirs = int(spark.conf.get(threshold)) + 8  # past the count where Spark would list with a job
    for i in range(dirs):
        write_segment(tmp_path / "logs" / f"t-{i}", 0, make_batches(1))
    sc = spark.sparkContext
    sc.setJobGroup("kraftwerk-listing-test", "listing")
    try:
        listing = list_segments_with_spark(spark, [str(tmp_path / "logs")])
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert len(listing) == dirs
    assert list(sc.statusTracker().getJobIdsForGroup("kraftwerk-listing-test")) == []
    assert int(spark.conf.get(threshold)) == dirs - 8  # the session's setting is back


def test_kraft_metadata_log_at_batch_level(spark: SparkSession, tmp_path: Path) -> None:
    from kraftwerk.spark.source import list_segments_with_spark, read_log_dirs

    data = tmp_path / "data"
    shutil.copytree(golden_path("kafka-4.3-standalone"), data / "__cluster_metadata-0")
    # Spark's own recursive listing hides names starting with "_": the listing must still find them
    listed = {Path(p).parent.name for p, _ in list_segments_with_spark(spark, [str(data)])}
    assert listed == {"__cluster_metadata-0"}
    direct = spark.read.format("kafka-log").load(str(data))
    assert sorted(direct.collect()) == sorted(read_log_dirs(spark, [str(data)]).collect())
    stats = direct.where("topic = '__cluster_metadata'").groupBy("magic").count().collect()
    batches = sum(1 for _ in iter_batches((data / "__cluster_metadata-0" / SEGMENT).read_bytes()))
    assert [(r["magic"], r["count"]) for r in stats] == [(2, batches)]
    assert direct.where("not crc_valid or error is not null").count() == 0


def test_upconvert_job_in_place(spark: SparkSession, tmp_path: Path) -> None:
    from kraftwerk.spark.jobs import upconvert_job

    fleet = build_fleet(tmp_path, log_dirs=2, partitions_per_dir=5)
    calls: list[tuple[int, int]] = []
    outcomes = upconvert_job(spark, _dirs(fleet), in_place=True, out_dir=None, dry_run=False,
                             progress=lambda done, total: calls.append((done, total)), poll_seconds=0.05)
    assert calls and calls[-1] == (len(fleet.partitions), len(fleet.partitions))
    assert all(d <= t for d, t in calls)
    assert not [o for o in outcomes if o.status.is_problem]
    assert sum(o.legacy_batches for o in outcomes if o.status is Status.CONVERTED) == sum(
        b.legacy_batches for b in fleet.partitions)
    for books in fleet.partitions:
        for peer in PEERS:
            records, magics = read_partition_with_peer(peer, books.directory)
            assert magics == {2} and records == books.records
    again = upconvert_job(spark, _dirs(fleet), in_place=True, out_dir=None, dry_run=False)
    assert {o.status for o in again} == {Status.UNCHANGED}


def test_pack_splits_balances_whole_waves_of_partitions() -> None:
    from kraftwerk.spark.source import pack_splits
    from kraftwerk.storage.segment_splits import SegmentFile, SegmentSplit

    splits = [SegmentSplit(SegmentFile("d", "t", i, 0, f"/d/t-{i}/0.log", size), 0, size)
              for i, size in enumerate((10, 10, 30, 5, 100, 1))]
    runs = pack_splits(splits, 80)  # 156 bytes: two partitions, the 100-byte split alone
    assert sorted((s for run in runs for s in run), key=splits.index) == splits
    assert all(run == sorted(run, key=splits.index) for run in runs)
    assert sorted([s.segment.partition for s in run] for run in runs) == [[0, 1, 2, 3, 5], [4]]
    assert len(pack_splits(splits, 1000)) == 1
    assert len(pack_splits(splits, 1000, min_partitions=2)) == 2
    assert len(pack_splits(splits, 60, min_partitions=2)) == 4  # 3 by size, rounded up to whole waves
    assert pack_splits([], 10) == []


def test_pack_work_balances_by_size_and_keeps_order() -> None:
    from kraftwerk.spark.jobs import pack_work

    items = ["a", "b", "c", "d", "e"]
    groups = pack_work(items, [50, 10, 40, 10, 5], 2)
    assert sorted(x for g in groups for x in g) == items
    assert all(g == sorted(g) for g in groups)
    loads = [sum(dict(zip(items, [50, 10, 40, 10, 5], strict=True))[x] for x in g) for g in groups]
    assert max(loads) - min(loads) <= 10
    assert pack_work(items, [1] * 5, 99) == [[x] for x in items]
    assert pack_work(items, [0] * 5, 1) == [items]


def test_a_path_a_task_cannot_read_fails_the_job_in_one_line(spark: SparkSession, tmp_path: Path) -> None:
    import shutil
    import socket

    from kraftwerk.spark.errors import SparkJobError, job_failure, require_readable
    from kraftwerk.spark.source import list_segments_with_spark, read_log_dirs

    fleet = build_fleet(tmp_path / "fleet", log_dirs=1, partitions_per_dir=3)
    listing = list_segments_with_spark(spark, _dirs(fleet))
    # a segment deleted since the listing (retention) while its directory is there: an error row
    gone = Path(listing[0][0])
    gone.unlink()
    rows = read_log_dirs(spark, _dirs(fleet), listing=listing).collect()
    [row] = [r for r in rows if f"{r['topic']}-{r['partition']}" == gone.parent.name
             and r["segment"] == int(gone.stem)]
    assert "unreadable" in row["error"]
    # a partition directory the task's host does not see at all: the job fails, one line
    lost = Path(listing[-1][0]).parent
    shutil.rmtree(lost)
    with pytest.raises(Exception) as failed:
        read_log_dirs(spark, _dirs(fleet), listing=listing).collect()
    error = job_failure("the scan job", failed.value)
    expected = (f"executor on host {socket.gethostname()} cannot read {listing[-1][0]}: No such file or "
                "directory (the driver sees it; it must be at the same path on every executor)")
    assert str(error) == expected and "\n" not in str(error)
    with pytest.raises(SparkJobError, match=f"cannot read {lost}: No such file"):
        require_readable(str(lost), directory=True)
    require_readable(str(lost.parent), directory=True)
