"""The ``kafka-log`` data source: Kafka log directories as a DataFrame of batches (or records).

``spark.read.format("kafka-log").load(paths)`` cuts large segments at offset-index entries
(``maxSplitBytes``) and packs the splits, in listing order, into input partitions of up to
``partitionBytes`` (but at least ``minPartitions`` of them when there is enough input:
:func:`read_log_dirs` passes the default parallelism). Each task of a Python data source costs Spark
a fixed ~0.05-0.1 s (measured on 2 busy cores), as much as scanning 100 MB, so one task per 64 MiB
segment spent most of a fleet scan on task overhead. Tasks stream Arrow batches built from
:mod:`kraftwerk.storage.scan` rows; a task holds at most one Arrow batch of rows and reads the
segment through a memory map. :func:`read_log_dirs` lists the segments through Spark (a Hadoop FS
listing of the log dirs, then the ``binaryFile`` source with path and length only: the content column
is never selected, so no file is read) and hands the listing to the source; called directly, the
source walks the given local directories itself.

Options: ``level`` (``batch`` or ``record``), ``maxSplitBytes``, ``partitionBytes``, ``minPartitions``,
``validateCrc``,
``arrowBatchRows``, ``arrowBatchBytes``. Log dirs must be visible at the same path on every
executor (local disks in ``local[*]``, a shared mount on a cluster).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kraftwerk.errors import KraftwerkError
from kraftwerk.spark.errors import SparkJobError
from kraftwerk.storage.scan import (
    BATCH_COLUMNS,
    DEFAULT_MAX_SPLIT_BYTES,
    RECORD_COLUMNS,
    SegmentFile,
    SegmentSplit,
    discover_segments,
    is_segment_path,
    iter_batch_rows,
    iter_record_rows,
    locate_segment,
    plan_splits,
)
from kraftwerk.storage.segment import parse_partition_dir_name

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

FORMAT = "kafka-log"
DEFAULT_ARROW_BATCH_ROWS = 8192
#: segment bytes per input partition (small segments and splits are packed up to this)
DEFAULT_PARTITION_BYTES = 512 * 1024 * 1024
DEFAULT_ARROW_BATCH_BYTES = 16 * 1024 * 1024


def _ddl(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in columns)


BATCH_SCHEMA_DDL = _ddl(BATCH_COLUMNS)
RECORD_SCHEMA_DDL = _ddl(RECORD_COLUMNS)


def local_path(uri: str) -> str:
    """A ``file:`` URI (as Spark lists it) or a plain path as a local path."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else uri
    raise SparkJobError(f"{uri}: only local or mounted paths can be read (scheme {parsed.scheme!r})")


class SplitPartition(InputPartition):
    """One input partition: byte ranges of segments, read one after the other (picklable, small)."""

    def __init__(self, splits: Sequence[SegmentSplit]) -> None:
        super().__init__(None)
        self.splits = tuple(splits)


def pack_splits(splits: Sequence[SegmentSplit], partition_bytes: int, min_partitions: int = 1
                ) -> list[list[SegmentSplit]]:
    """Group consecutive splits into runs of at most ``partition_bytes`` (a larger split stays alone),
    lowering the target so that there are at least ``min_partitions`` runs when the input allows."""
    total = sum(s.end - s.start for s in splits)
    target = max(1, min(partition_bytes, -(-total // max(1, min_partitions))))
    out: list[list[SegmentSplit]] = []
    size = 0
    for s in splits:
        n = s.end - s.start
        if not out or size + n > target:
            out.append([])
            size = 0
        out[-1].append(s)
        size += n
    return out


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
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, SplitPartition)
        schema = to_arrow_schema(self.schema, timezone="UTC")
        splits = partition.splits
        if self.level == "record":
            records = itertools.chain.from_iterable(iter_record_rows(s) for s in splits)
            yield from _arrow_batches(schema, records, self.batch_rows, self.batch_bytes, pa,
                                      record_level=True)
        else:
            rows = itertools.chain.from_iterable(iter_batch_rows(s, validate=self.validate) for s in splits)
            yield from _arrow_batches(schema, rows, self.batch_rows, self.batch_bytes, pa, record_level=False)


def _arrow_batches(schema: pa.Schema, rows: Iterator[tuple[Any, ...]], max_rows: int, max_bytes: int,
                   pa: Any, *, record_level: bool) -> Iterator[pa.RecordBatch]:
    """Group rows into Arrow batches of at most ``max_rows`` rows (and about ``max_bytes`` of payload)."""
    types = [f.type for f in schema]
    pending: list[tuple[Any, ...]] = []
    size = 0

    def flush() -> pa.RecordBatch:
        cols = list(zip(*pending, strict=True))
        arrays = [pa.array(col, type=t) for col, t in zip(cols, types, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=schema)

    for row in rows:
        pending.append(row)
        if record_level:
            size += len(row[8] or b"") + len(row[9] or b"") + 64
        if len(pending) >= max_rows or size >= max_bytes:
            yield flush()
            pending = []
            size = 0
    if pending:
        yield flush()


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


def list_segments_with_spark(spark: SparkSession, log_dirs: Sequence[str]) -> list[tuple[str, int]]:
    """(local path, size) of every segment under ``log_dirs``, listed by Spark.

    The partition directories come from a Hadoop FS listing of each log dir, their ``.log`` files
    from the ``binaryFile`` source given those directories as roots (its recursive lookup would skip
    ``__consumer_offsets-*`` and ``__cluster_metadata-0``: Spark hides names starting with ``_``).
    Only ``path`` and ``length`` are selected, so Spark lists and stats files but never reads them.
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
        rows = reader.load(roots).select("path", "length").collect()
    except SparkJobError:
        raise
    except Exception as exc:
        raise SparkJobError(f"cannot list {', '.join(log_dirs)}: {str(exc).splitlines()[0]}") from exc
    out = []
    for r in rows:
        path = local_path(r["path"])
        if is_segment_path(path):
            out.append((path, int(r["length"])))
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
    "local_path",
    "read_log_dirs",
]
