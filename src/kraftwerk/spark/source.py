"""The ``kafka-log`` data source: Kafka log directories as a DataFrame of batches (or records).

``spark.read.format("kafka-log").load(paths)`` cuts large segments at offset-index entries
(``maxSplitBytes``) and packs the splits into input partitions of about ``partitionBytes``, balanced by
size, in whole waves of ``minPartitions`` (:func:`read_log_dirs` passes the default parallelism). Each
task of a Python data source costs Spark a fixed ~0.03-0.07 s, as much as scanning 50-100 MB, so tasks
are large. Tasks stream Arrow batches built from the column chunks of
:func:`kraftwerk.storage.scan.iter_batch_columns` (no row objects at batch level); a task holds at most
one chunk and reads segments through memory maps. :func:`read_log_dirs` lists the segments through
Spark (a Hadoop FS listing of the log dirs, then the file index of the ``binaryFile`` source: no file
is read) and hands the listing to the source; called directly, the source walks the given local
directories itself.

Options: ``level`` (``batch`` or ``record``), ``maxSplitBytes``, ``partitionBytes``, ``minPartitions``,
``validateCrc``, ``arrowBatchRows``, ``arrowBatchBytes``. Log dirs must be visible at the same path on
the driver and every executor (local disks in ``local[*]``, a shared mount on a cluster): a task
that cannot open a segment of the listing fails the job, naming the path and its host.
"""

from __future__ import annotations

import heapq
import itertools
import json
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kraftwerk.errors import KraftwerkError
from kraftwerk.spark.errors import SparkJobError, require_readable
from kraftwerk.storage.fileio import local_path
from kraftwerk.storage.scan import (
    BATCH_COLUMNS,
    RECORD_COLUMNS,
    columns_to_arrow,
    iter_batch_columns,
    iter_record_rows,
)
from kraftwerk.storage.segment import parse_partition_dir_name
from kraftwerk.storage.segment_splits import (
    DEFAULT_MAX_SPLIT_BYTES,
    SegmentFile,
    SegmentSplit,
    discover_segments,
    is_segment_path,
    locate_segment,
    plan_splits,
)

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)
T = TypeVar("T")

FORMAT = "kafka-log"
#: rows per Arrow batch: batch rows are small (~150 bytes) and the JVM pays per batch it receives
#: (8192 -> 32768 rows cut the driver's CPU per GiB scanned by ~20 %); record rows carry values, so
#: their batches also stop at ``arrowBatchBytes``
DEFAULT_ARROW_BATCH_ROWS = 32768
#: segment bytes per input partition (small segments and splits are packed up to this): a task
#: of a Python data source costs Spark ~0.03-0.07 s, ~5 % of scanning 1 GiB
DEFAULT_PARTITION_BYTES = 1024 * 1024 * 1024
DEFAULT_ARROW_BATCH_BYTES = 16 * 1024 * 1024


def _ddl(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in columns)


BATCH_SCHEMA_DDL = _ddl(BATCH_COLUMNS)
RECORD_SCHEMA_DDL = _ddl(RECORD_COLUMNS)


class SplitPartition(InputPartition):
    """One input partition: byte ranges of segments, read one after the other (picklable, small)."""

    def __init__(self, splits: Sequence[SegmentSplit]) -> None:
        super().__init__(None)
        self.splits = tuple(splits)


def pack_work(items: Sequence[T], sizes: Sequence[int], tasks: int) -> list[list[T]]:
    """Spread ``items`` over at most ``tasks`` groups, largest first onto the least loaded group;
    each group keeps the items' given order. Spark's fixed cost per Python task (~0.03-0.07 s) made
    one task per segment or partition dir a large share of the work."""
    tasks = max(1, min(tasks, len(items)))
    loads = [(0, g) for g in range(tasks)]  # a heap: a fleet has ~10^5 segments and ~10^4 tasks
    members: list[list[int]] = [[] for _ in range(tasks)]
    for i in sorted(range(len(items)), key=lambda i: -sizes[i]):
        load, g = loads[0]
        heapq.heapreplace(loads, (load + sizes[i], g))
        members[g].append(i)
    return [[items[i] for i in sorted(m)] for m in members if m]


def pack_splits(splits: Sequence[SegmentSplit], partition_bytes: int, min_partitions: int = 1
                ) -> list[list[SegmentSplit]]:
    """Group splits into about ``partition_bytes`` each, balanced by size, in whole waves of
    ``min_partitions`` (the cores) so no core idles while another finishes a second task."""
    sizes = [s.end - s.start for s in splits]
    waves = max(1, min_partitions)
    count = -(-max(1, -(-sum(sizes) // max(1, partition_bytes))) // waves) * waves
    return pack_work(splits, sizes, count)


def _paths_option(options: Any) -> list[str]:
    paths: list[str] = []
    raw = options.get("paths")
    if raw:
        paths += json.loads(raw) if raw.lstrip().startswith("[") else [raw]
    if options.get("path"):
        paths.append(options["path"])
    return [local_path(p) for p in paths]


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: Any, schema: StructType) -> None:
        self.level = str(options.get("level", "batch")).lower()
        self.max_split_bytes = int(options.get("maxSplitBytes", DEFAULT_MAX_SPLIT_BYTES))
        self.partition_bytes = int(options.get("partitionBytes", DEFAULT_PARTITION_BYTES))
        self.min_partitions = int(options.get("minPartitions", 1))
        self.validate = str(options.get("validateCrc", "true")).lower() != "false"
        self.batch_rows = max(1, int(options.get("arrowBatchRows", DEFAULT_ARROW_BATCH_ROWS)))
        self.batch_bytes = max(1, int(options.get("arrowBatchBytes", DEFAULT_ARROW_BATCH_BYTES)))
        self.listing = options.get("listing")
        self.paths = _paths_option(options)
        self.schema = schema

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader into every task's command: the listing is only needed to plan
        state = dict(self.__dict__)
        state["listing"] = None
        state["paths"] = []
        return state

    def segments(self) -> list[SegmentFile]:
        if self.listing:
            return [locate_segment(p, size) for p, size in json.loads(self.listing)]
        return discover_segments(self.paths)

    def partitions(self) -> Sequence[InputPartition]:
        splits: list[SegmentSplit] = []
        for seg in self.segments():
            splits += plan_splits(seg, self.max_split_bytes)
        return [SplitPartition(run) for run in pack_splits(splits, self.partition_bytes, self.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, SplitPartition)
        schema = to_arrow_schema(self.schema, timezone="UTC")
        splits = partition.splits
        for path in dict.fromkeys(s.segment.path for s in splits):
            require_readable(path)
        if self.level == "record":
            records = itertools.chain.from_iterable(iter_record_rows(s) for s in splits)
            yield from _record_batches(schema, records, self.batch_rows, self.batch_bytes)
        else:
            for chunk in iter_batch_columns(splits, validate=self.validate, max_rows=self.batch_rows):
                yield chunk.to_arrow(schema)


def _record_batches(schema: pa.Schema, rows: Iterator[tuple[Any, ...]], max_rows: int, max_bytes: int
                    ) -> Iterator[pa.RecordBatch]:
    """Group record rows into Arrow batches of at most ``max_rows`` rows (and about ``max_bytes`` of
    keys and values)."""
    pending: list[tuple[Any, ...]] = []
    size = 0
    for row in rows:
        pending.append(row)
        size += len(row[8] or b"") + len(row[9] or b"") + 64
        if len(pending) >= max_rows or size >= max_bytes:
            yield columns_to_arrow(list(zip(*pending, strict=True)), schema)
            pending = []
            size = 0
    if pending:
        yield columns_to_arrow(list(zip(*pending, strict=True)), schema)


class KafkaLogDataSource(DataSource):
    """``spark.read.format("kafka-log")``: batches (default) or records (``level=record``) of log dirs."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        level = str(self.options.get("level", "batch")).lower()
        if level not in ("batch", "record"):
            raise SparkJobError(f"kafka-log: option level must be batch or record, not {level!r}")
        return RECORD_SCHEMA_DDL if level == "record" else BATCH_SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        reader = KafkaLogReader(self.options, schema)
        # the data source is pickled into every task too: keep a fleet-sized listing out of it
        for key in ("listing", "paths", "path"):
            if key in self.options:
                del self.options[key]
        return reader


# ---------------------------------------------------------------------- driver-side helpers

def partition_dirs_with_hadoop(spark: SparkSession, log_dirs: Sequence[str]) -> list[str] | None:
    """The topic-partition directories of ``log_dirs`` by a Hadoop FS listing of their top level
    (``None`` where the JVM is not reachable, e.g. under Spark Connect)."""
    jvm = getattr(spark.sparkContext, "_jvm", None)
    jsc = getattr(spark.sparkContext, "_jsc", None)
    if jvm is None or jsc is None:
        return None
    conf = jsc.hadoopConfiguration()
    out: list[str] = []
    for d in log_dirs:
        path = jvm.org.apache.hadoop.fs.Path(d)
        fs = path.getFileSystem(conf)
        if not fs.exists(path):
            raise SparkJobError(f"Log directory {d} does not exist")
        for status in fs.listStatus(path):
            child = status.getPath()
            name = child.getName()
            parsed = parse_partition_dir_name(name)
            if status.isDirectory() and parsed is not None and parsed.kind is None:
                out.append(local_path(child.toString()))
    return sorted(out)


#: Spark lists more root paths than this with a distributed job: ~0.2 s for 64 partition dirs, where
#: listing them on the driver takes ~0.02 s
_PARALLEL_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


#: Spark's logger that warns "All paths were ignored" for every root named ``_...`` it is given
#: (``__cluster_metadata-0``, ``__consumer_offsets-N``), although its file index lists them
_DATA_SOURCE_LOGGER = "org.apache.spark.sql.execution.datasources.DataSource"


@contextmanager
def _listing_on_the_driver(spark: SparkSession) -> Iterator[None]:
    """List any number of directories in the driver: only local or mounted paths are read, and the
    driver stats every listed segment anyway, so a listing job on the executors buys nothing.
    Spark's warning about roots whose names start with ``_`` is held back meanwhile: those roots
    are the point."""
    previous = spark.conf.get(_PARALLEL_LISTING_THRESHOLD, None)
    spark.conf.set(_PARALLEL_LISTING_THRESHOLD, str(2**31 - 1))
    restore = _set_jvm_log_level(spark, _DATA_SOURCE_LOGGER, "ERROR")
    try:
        yield
    finally:
        restore()
        if previous is None:
            spark.conf.unset(_PARALLEL_LISTING_THRESHOLD)
        else:
            spark.conf.set(_PARALLEL_LISTING_THRESHOLD, previous)


def _set_jvm_log_level(spark: SparkSession, logger: str, level: str) -> Callable[[], None]:
    """Set one log4j logger's level in the driver JVM; returns what restores it (a no-op without a
    JVM gateway, e.g. under Spark Connect)."""
    jvm = getattr(spark.sparkContext, "_jvm", None)
    if jvm is None:
        return lambda: None
    log4j = jvm.org.apache.logging.log4j
    previous = log4j.LogManager.getLogger(logger).getLevel()
    log4j.core.config.Configurator.setLevel(logger, log4j.Level.getLevel(level))
    return lambda: log4j.core.config.Configurator.setLevel(logger, previous)


def list_segments_with_spark(spark: SparkSession, log_dirs: Sequence[str]) -> list[tuple[str, int]]:
    """(local path, size) of every segment under ``log_dirs``, listed by Spark.

    The partition directories come from a Hadoop FS listing of each log dir, their ``.log`` files
    from the file index of the ``binaryFile`` source given those directories as roots (its recursive
    lookup would skip ``__consumer_offsets-*`` and ``__cluster_metadata-0``: Spark hides names starting
    with ``_``). Only the index's file list is read (``inputFiles``), built on the driver however many
    directories there are: no Spark job runs and no file is opened, which saves ~0.3 s per scan over
    collecting ``path`` and ``length``. Sizes are then read with ``stat`` on the driver, which already
    had to see the log dirs to list them.
    """
    if not log_dirs:
        return []
    try:
        roots = partition_dirs_with_hadoop(spark, log_dirs)
        reader = spark.read.format("binaryFile").option("pathGlobFilter", "*.log")
        if roots is None:
            log.warning("no JVM gateway: listing recursively with binaryFile, which skips directories "
                        "whose names start with '_' (__consumer_offsets, __cluster_metadata)")
            reader = reader.option("recursiveFileLookup", "true")
            roots = list(log_dirs)
        if not roots:
            return []
        with _listing_on_the_driver(spark):
            files = reader.load(roots).inputFiles()
    except SparkJobError:
        raise
    except Exception as exc:
        raise SparkJobError(f"cannot list {', '.join(log_dirs)}: {str(exc).splitlines()[0]}") from exc
    out = []
    for uri in files:
        path = local_path(uri)
        if is_segment_path(path):
            try:
                out.append((path, os.stat(path).st_size))
            except OSError as exc:  # removed since the listing (a segment deleted by retention)
                log.info("%s: not scanned: %s", path, exc.strerror)
    return sorted(out)


def read_log_dirs(spark: SparkSession, log_dirs: Sequence[str], *, level: str = "batch",
                  listing: list[tuple[str, int]] | None = None, **options: str) -> DataFrame:
    """The ``kafka-log`` DataFrame of ``log_dirs`` with the listing done by Spark (``binaryFile``)."""
    if listing is None:
        listing = list_segments_with_spark(spark, log_dirs)
    if not listing:  # a source without input partitions is not a valid plan
        return spark.createDataFrame([], RECORD_SCHEMA_DDL if level == "record" else BATCH_SCHEMA_DDL)
    reader = (spark.read.format(FORMAT).option("level", level).option("listing", json.dumps(listing))
              .option("minPartitions", str(spark.sparkContext.defaultParallelism)))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


__all__ = [
    "BATCH_SCHEMA_DDL",
    "FORMAT",
    "RECORD_SCHEMA_DDL",
    "KafkaLogDataSource",
    "KafkaLogReader",
    "KraftwerkError",
    "list_segments_with_spark",
    "read_log_dirs",
]
