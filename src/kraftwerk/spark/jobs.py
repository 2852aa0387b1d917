"""The pipeline's Spark jobs: fleet scan to Parquet + summary, and distributed up-conversion.

Both are thin: the scan is the ``kafka-log`` source written as Parquet and aggregated with Spark
SQL into :class:`~kraftwerk.storage.scan.PartitionSummary` values; the up-conversion runs
:func:`kraftwerk.storage.upconvert.run_work_item` once per topic-partition directory in a
``mapInArrow`` task while the driver holds every log dir's ``.lock``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftwerk.spark.errors import SparkJobError
from kraftwerk.spark.source import read_log_dirs
from kraftwerk.storage.scan import PartitionSummary
from kraftwerk.storage.upconvert import (
    LogDirLocks,
    SegmentOutcome,
    Status,
    WorkItem,
    plan_work,
    run_work_item,
)

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

BATCHES_DIR = "batches"


@dataclass(frozen=True, slots=True)
class ScanOutput:
    parquet_dir: Path
    summaries: list[PartitionSummary]


def scan_job(spark: SparkSession, log_dirs: Sequence[str], out_dir: Path) -> ScanOutput:
    """Write the batch table of ``log_dirs`` as Parquet under ``out_dir/batches`` and summarize it."""
    from pyspark.sql import functions as F

    parquet_dir = Path(out_dir) / BATCHES_DIR
    df = read_log_dirs(spark, list(log_dirs))
    try:
        df.write.mode("overwrite").parquet(str(parquet_dir))
        table = spark.read.parquet(str(parquet_dir))
    except Exception as exc:
        raise SparkJobError(f"the scan job failed: {str(exc).splitlines()[0]}") from exc
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
    return ScanOutput(parquet_dir, summaries)


_OUTCOME_DDL = ("log_dir string, topic string, partition int, base_offset bigint, status string, "
                "batches int, legacy_batches int, records int, input_bytes bigint, output_bytes bigint, "
                "message string")


def _outcome_batch(outcomes: list[SegmentOutcome], pa: Any) -> pa.RecordBatch:
    schema = pa.schema([("log_dir", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                        ("base_offset", pa.int64()), ("status", pa.string()), ("batches", pa.int32()),
                        ("legacy_batches", pa.int32()), ("records", pa.int32()), ("input_bytes", pa.int64()),
                        ("output_bytes", pa.int64()), ("message", pa.string())])
    rows = [{"log_dir": o.log_dir, "topic": o.topic, "partition": o.partition, "base_offset": o.base_offset,
             "status": o.status.value, "batches": o.batches, "legacy_batches": o.legacy_batches,
             "records": o.records, "input_bytes": o.input_bytes, "output_bytes": o.output_bytes,
             "message": o.message} for o in outcomes]
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def upconvert_job(spark: SparkSession, log_dirs: Sequence[str], *, in_place: bool, out_dir: Path | None,
                  dry_run: bool, progress: Callable[[SegmentOutcome], None] | None = None
                  ) -> list[SegmentOutcome]:
    """Up-convert every topic-partition of ``log_dirs`` on Spark, one task per partition directory."""
    paths = [Path(d) for d in log_dirs]
    items, outcomes = plan_work(paths, out_dir)
    with LogDirLocks(paths if in_place else [], probe_only=dry_run) as locks:
        outcomes += locks.locked
        skip = locks.locked_dirs
        todo: list[WorkItem] = [i for i in items if str(Path(i.partition_dir).parent) not in skip]
        if not todo:
            return outcomes

        def convert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            import pyarrow

            for batch in batches:
                for item_id in batch.column(0).to_pylist():
                    done = run_work_item(todo[item_id], in_place=in_place, dry_run=dry_run)
                    yield _outcome_batch(done, pyarrow)

        df = spark.range(0, len(todo), 1, len(todo)).mapInArrow(convert, _OUTCOME_DDL)
        try:
            for r in df.toLocalIterator():
                o = SegmentOutcome(r["log_dir"], r["topic"], r["partition"], r["base_offset"],
                                   Status(r["status"]), r["batches"], r["legacy_batches"], r["records"],
                                   r["input_bytes"], r["output_bytes"], r["message"])
                outcomes.append(o)
                if progress is not None:
                    progress(o)
        except Exception as exc:
            raise SparkJobError(f"the up-conversion job failed: {str(exc).splitlines()[0]}") from exc
    return outcomes
