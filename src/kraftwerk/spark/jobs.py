"""The pipeline's Spark jobs: fleet scan to Parquet + summary, and distributed up-conversion.

Both are thin: the scan is the ``kafka-log`` source written as Parquet and aggregated with Spark
SQL into :class:`~kraftwerk.storage.scan_summary.PartitionSummary` values; the up-conversion runs
:func:`kraftwerk.storage.upconvert.run_work_item` once per topic-partition directory in a
RDD task while the driver holds every log dir's ``.lock``.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftwerk.spark.errors import SparkJobError, job_failure, require_readable
from kraftwerk.spark.source import BATCH_SCHEMA_DDL, list_segments_with_spark, pack_work, read_log_dirs
from kraftwerk.storage.fileio import translate_os_errors
from kraftwerk.storage.scan_summary import PartitionSummary
from kraftwerk.storage.segment import Segment
from kraftwerk.storage.segment_splits import locate_segment
from kraftwerk.storage.upconvert import (
    LogDirLocks,
    SegmentOutcome,
    Status,
    WorkItem,
    plan_work,
    run_work_item,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

BATCHES_DIR = "batches"
#: segment bytes per Parquet file of the batch table
WRITE_BYTES = 4 * 1024**3
#: up-conversion: at most about this many segment bytes per task (beyond one task per core)
TASK_BYTES = 256 * 1024**2


def _dir_bytes(path: str) -> int:
    """Bytes of the ``.log`` files of a partition dir (0 when it cannot be listed: the task reports it)."""
    try:
        with os.scandir(path) as it:
            return sum(e.stat().st_size for e in it if e.name.endswith(".log") and e.is_file())
    except OSError:
        return 0


@dataclass(frozen=True, slots=True)
class ScanOutput:
    parquet_dir: Path
    summaries: list[PartitionSummary]


def scan_job(spark: SparkSession, log_dirs: Sequence[str], out_dir: Path) -> ScanOutput:
    """Write the batch table of ``log_dirs`` as Parquet under ``out_dir/batches`` and summarize it."""
    parquet_dir = Path(out_dir) / BATCHES_DIR
    listing = list_segments_with_spark(spark, list(log_dirs))
    try:
        summaries = _summarize(_write_batch_table(spark, log_dirs, listing, parquet_dir))
    except Exception as exc:
        raise job_failure("the scan job", exc) from exc
    _check_every_segment_landed(listing, summaries, parquet_dir)
    return ScanOutput(parquet_dir, summaries)


def _write_batch_table(spark: SparkSession, log_dirs: Sequence[str], listing: list[tuple[str, int]],
                       parquet_dir: Path) -> DataFrame:
    df = read_log_dirs(spark, list(log_dirs), listing=listing)
    # the batch table is ~1/300 of the log bytes: write one Parquet file per WRITE_BYTES of input
    # (at least one per core) instead of one per segment
    total = sum(size for _, size in listing)
    files = max(spark.sparkContext.defaultParallelism, -(-total // WRITE_BYTES))
    if df.rdd.getNumPartitions() > files:
        df = df.coalesce(files)
    df.write.mode("overwrite").parquet(str(parquet_dir))
    # with the schema given, a table the driver sees no file of reads as empty (then checked)
    return spark.read.schema(BATCH_SCHEMA_DDL).parquet(str(parquet_dir))


def _summarize(table: DataFrame) -> list[PartitionSummary]:
    """:class:`PartitionSummary` values of the batch table, aggregated by Spark SQL."""
    from pyspark.sql import functions as F

    legacy = F.col("magic") < 2
    first = F.coalesce(F.col("base_offset"), F.col("last_offset"))

    def when_sum(cond: Any, value: Any) -> Any:
        return F.coalesce(F.sum(F.when(cond, value)), F.lit(0))

    agg = table.groupBy("log_dir", "topic", "partition").agg(
        F.collect_set("segment").alias("segments"),
        F.count("magic").alias("batches"),
        when_sum(F.col("magic").isNotNull(), F.col("record_count")).alias("records"),
        F.sum("batch_size").alias("bytes"),
        when_sum(legacy, F.lit(1)).alias("legacy_batches"),
        when_sum(legacy, F.col("record_count")).alias("legacy_records"),
        when_sum(legacy, F.col("batch_size")).alias("legacy_bytes"),
        when_sum(F.col("magic") == 0, F.col("batch_size")).alias("v0_bytes"),
        when_sum(F.col("magic") == 1, F.col("batch_size")).alias("v1_bytes"),
        F.min(F.when(legacy, first)).alias("legacy_first_offset"),
        F.max(F.when(legacy, F.col("last_offset"))).alias("legacy_last_offset"),
        F.min(first).alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        when_sum(F.col("error").isNotNull() | ~F.col("crc_valid"), F.lit(1)).alias("corrupt_batches"),
    )
    summaries = []
    for r in agg.collect():
        d = r.asDict()
        d["segments"] = set(d["segments"])
        summaries.append(PartitionSummary(**d))
    summaries.sort(key=lambda s: (s.log_dir, s.topic, s.partition))
    return summaries


def _check_every_segment_landed(listing: Sequence[tuple[str, int]], summaries: Sequence[PartitionSummary],
                                parquet_dir: Path) -> None:
    """Every non-empty segment yields at least one row (a batch or an error row). One that has none
    was written where the driver cannot see it: an executor whose ``--out`` is another directory
    at the same path (its own local disk) would otherwise shrink the table without a word."""
    seen = {(s.log_dir, s.topic, s.partition, base) for s in summaries for base in s.segments}
    for path, size in listing:
        seg = locate_segment(path, size)
        if size and (seg.log_dir, seg.topic, seg.partition, seg.base_offset) not in seen:
            raise SparkJobError(f"the batch table under {parquet_dir} has no rows of {path}: the executors "
                                "wrote them where the driver does not see them (the output directory must "
                                "be at the same path on the driver and every executor)")


def upconvert_job(spark: SparkSession, log_dirs: Sequence[str], *, in_place: bool, out_dir: Path | None,
                  dry_run: bool, progress: Callable[[int, int], None] | None = None,
                  poll_seconds: float = 0.5) -> list[SegmentOutcome]:
    """Up-convert every topic-partition of ``log_dirs`` on Spark.

    Partition directories are spread over at least one task per core (more for a large fleet: about
    ``TASK_BYTES`` of segments per task), balanced by size. ``progress(done, total)`` is called with
    the partition dirs of finished tasks / all partition dirs while the job runs.
    """
    paths = [Path(d) for d in log_dirs]
    items, outcomes = plan_work(paths, out_dir)
    out_root = None
    if out_dir is not None and not dry_run:
        with translate_os_errors(out_dir, "create"):
            out_dir.mkdir(parents=True, exist_ok=True)  # executors check that they see it too
        out_root = str(out_dir)
    with LogDirLocks(paths if in_place else [], probe_only=dry_run) as locks:
        outcomes += locks.locked
        skip = locks.locked_dirs
        todo = [(i.partition_dir, i.out_dir) for i in items if str(Path(i.partition_dir).parent) not in skip]
        if not todo:
            return outcomes

        sc = spark.sparkContext
        finished = sc.accumulator(0)  # partition dirs done, as seen by the driver at each task's end

        def convert(groups: Iterable[list[tuple[str, str | None]]]) -> Iterator[tuple[Any, ...]]:
            if out_root is not None:
                require_readable(out_root, directory=True)
            for group in groups:
                for pdir, target in group:
                    require_readable(pdir, directory=True)
                    for o in run_work_item(WorkItem(pdir, target), in_place=in_place, dry_run=dry_run):
                        yield (o.log_dir, o.topic, o.partition, o.base_offset, o.status.value, o.batches,
                               o.legacy_batches, o.records, o.input_bytes, o.output_bytes, o.message)
                    finished.add(1)

        # each task carries only its own group of work items; plain RDD tasks need neither pandas
        # nor a schema; collect() runs all tasks at once
        sizes = [_dir_bytes(pdir) for pdir, _ in todo]
        tasks = max(sc.defaultParallelism, -(-sum(sizes) // TASK_BYTES))
        groups = pack_work(todo, sizes, tasks)
        rdd = sc.parallelize(groups, len(groups)).mapPartitions(convert)
        rows = collect_with_progress(spark, rdd.collect, "the up-conversion job", len(todo), progress,
                                     poll_seconds, lambda: finished.value)
        converted = [SegmentOutcome(t[0], t[1], t[2], t[3], Status(t[4]), *t[5:]) for t in rows]
    if out_dir is not None:
        _check_outputs_landed(converted, items)
    return outcomes + converted


def _check_outputs_landed(outcomes: Sequence[SegmentOutcome], items: Sequence[WorkItem]) -> None:
    """Each segment an executor reports converted is on this host's view of ``--out``, at its size."""
    targets = {str(Path(i.partition_dir).parent): i.out_dir for i in items}
    for o in outcomes:
        target = targets.get(o.log_dir)
        if o.status is not Status.CONVERTED or target is None:
            continue
        path = Segment(Path(target) / f"{o.topic}-{o.partition}", o.base_offset).log_path
        try:
            size = path.stat().st_size
        except OSError:
            size = -1
        if size != o.output_bytes:
            raise SparkJobError(f"{path}: an executor wrote {o.output_bytes} bytes there, the driver sees "
                                f"{'no file' if size < 0 else f'{size} bytes'} (the output directory must be "
                                "at the same path on the driver and every executor)")


def collect_with_progress(spark: SparkSession, collect: Callable[[], list[Any]], what: str, total: int,
                          progress: Callable[[int, int], None] | None, poll_seconds: float,
                          done: Callable[[], int]) -> list[Any]:
    """``collect()`` of a job in a helper thread, reporting ``done()`` out of ``total`` while it runs;
    a failure is one line naming ``what``."""
    sc = spark.sparkContext
    group = f"kraftwerk-{uuid.uuid4().hex}"
    result: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            sc.setJobGroup(group, f"kraftwerk: {what}")
            result.extend(collect())
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run, name=group, daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(poll_seconds)
        if progress is not None:
            progress(min(done(), total), total)
    if failure:
        raise job_failure(what, failure[0]) from failure[0]
    if progress is not None:
        progress(total, total)
    return result
