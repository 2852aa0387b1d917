"""The ``kafka-metadata`` data source: KRaft metadata logs and snapshots as a DataFrame of records,
and the feature-level history derived from it.

``spark.read.format("kafka-metadata").load(paths)`` takes ``__cluster_metadata-0`` directories, log
dirs that hold one, or single segment/snapshot files, and yields one row per record (the schema
is :data:`kraftwerk.storage.metadata_scan.METADATA_COLUMNS`: cluster and node ids, file, offset,
leader epoch, append time, record type name and version, fields as Kafka's JSON, error). The
driver lists the files and cuts them into splits at batch boundaries (``maxSplitBytes``), packed
into input partitions of about ``partitionBytes``; tasks decode records through the storage layer
(:func:`kraftwerk.storage.metadata_scan.iter_metadata_rows`) and move Arrow batches.

:func:`feature_history` turns such a DataFrame into the feature-level changes of every node, in
log order (offset, append time, feature, from, to).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kraftwerk.spark.errors import SparkJobError
from kraftwerk.spark.source import pack_work
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.fileio import local_path
from kraftwerk.storage.metadata_scan import (
    DEFAULT_MAX_SPLIT_BYTES,
    METADATA_COLUMNS,
    SEGMENT,
    SNAPSHOT,
    MetadataRow,
    MetadataSplit,
    discover_metadata_files,
    iter_metadata_rows,
    plan_metadata_splits,
)

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "kafka-metadata"
METADATA_SCHEMA_DDL = ", ".join(f"`{n}` {t}" for n, t in METADATA_COLUMNS)
DEFAULT_PARTITION_BYTES = 256 * 1024 * 1024
DEFAULT_ARROW_BATCH_ROWS = 8192
_TIME = METADATA_COLUMNS.index(("append_time", "timestamp"))


class MetadataPartition(InputPartition):
    """One input partition: splits of metadata files, read in order."""

    def __init__(self, splits: Sequence[MetadataSplit]) -> None:
        super().__init__(None)
        self.splits = tuple(splits)


def _arrow(rows: list[MetadataRow], schema: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    columns: list[list[Any]] = [list(c) for c in zip(*rows, strict=True)]
    columns[_TIME] = [None if ms is None else ms * 1000 for ms in columns[_TIME]]  # Spark keeps microseconds
    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


class KafkaMetadataReader(DataSourceReader):
    def __init__(self, options: Any, schema: StructType) -> None:
        raw = options.get("paths")
        paths: list[str] = json.loads(raw) if raw and raw.lstrip().startswith("[") else ([raw] if raw else [])
        if options.get("path"):
            paths.append(options["path"])
        self.paths = [local_path(p) for p in paths]
        self.max_split_bytes = int(options.get("maxSplitBytes", DEFAULT_MAX_SPLIT_BYTES))
        self.partition_bytes = max(1, int(options.get("partitionBytes", DEFAULT_PARTITION_BYTES)))
        self.min_partitions = max(1, int(options.get("minPartitions", 1)))
        self.batch_rows = max(1, int(options.get("arrowBatchRows", DEFAULT_ARROW_BATCH_ROWS)))
        self.schema = schema

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["paths"] = []  # only the driver plans; tasks get their splits
        return state

    def partitions(self) -> Sequence[InputPartition]:
        try:
            splits = [s for f in discover_metadata_files(self.paths)
                      for s in plan_metadata_splits(f, self.max_split_bytes)]
        except (StorageError, OSError) as exc:
            raise SparkJobError(f"{FORMAT}: {exc}") from exc
        if not splits:
            raise SparkJobError(f"{FORMAT}: no metadata log segments or snapshots under "
                                f"{', '.join(self.paths) or 'the given paths'}")
        total = sum(s.end - s.start for s in splits)
        tasks = max(self.min_partitions, -(-total // self.partition_bytes))
        return [MetadataPartition(run) for run in pack_work(splits, [s.end - s.start for s in splits], tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        assert isinstance(partition, MetadataPartition)
        schema = to_arrow_schema(self.schema, timezone="UTC")
        pending: list[MetadataRow] = []
        for split in partition.splits:
            for row in iter_metadata_rows(split):
                pending.append(row)
                if len(pending) >= self.batch_rows:
                    yield _arrow(pending, schema)
                    pending = []
        if pending:
            yield _arrow(pending, schema)


class KafkaMetadataDataSource(DataSource):
    """``spark.read.format("kafka-metadata")``: one row per record of metadata logs and snapshots."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return METADATA_SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaMetadataReader(self.options, schema)


def read_metadata(spark: SparkSession, paths: Sequence[str], **options: str) -> DataFrame:
    """The ``kafka-metadata`` DataFrame of ``paths``, at least one input partition per core."""
    spark.dataSource.register(KafkaMetadataDataSource)
    reader = (spark.read.format(FORMAT).option("paths", json.dumps([str(p) for p in paths]))
              .option("minPartitions", str(spark.sparkContext.defaultParallelism)))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


#: The columns of :func:`feature_history`.
HISTORY_COLUMNS = ("cluster_id", "node_id", "offset", "append_time", "feature", "from_level", "to_level")


def feature_history(records: DataFrame) -> DataFrame:
    """Every feature-level change each node's metadata files hold, in log order.

    The changes are the FeatureLevelRecords (and KRaftVersionRecords: kraft.version lives in raft's
    control records) of the log segments. Where a node's log was cleaned behind a snapshot, the
    latest snapshot at or below the log's first offset gives the levels before the log (dated at
    its end offset - 1); the bootstrap snapshot (end offset 0) holds no history. ``from_level`` is
    the node's previous level of the feature (null for the first one its files record).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    node = ["cluster_id", "node_id"]
    segment = F.col("file_kind") == SEGMENT
    log_start = records.where(segment).groupBy(*node).agg(F.min("batch_offset").alias("log_start"))
    snapshot_end = F.col("snapshot_end_offset")
    start_snapshot = (records.where((F.col("file_kind") == SNAPSHOT) & (snapshot_end > 0))
                      .join(log_start, node, "left")
                      .where(F.col("log_start").isNull() | (snapshot_end <= F.col("log_start")))
                      .groupBy(*node).agg(F.max(snapshot_end).alias("start_snapshot")))
    kraft = F.col("record_type") == "KRaftVersionRecord"
    fields = F.col("fields")
    start = F.col("start_snapshot")
    from_start_snapshot = (F.col("file_kind") == SNAPSHOT) & (snapshot_end == start)
    events = (records.where(F.col("record_type").isin("FeatureLevelRecord", "KRaftVersionRecord")
                            & F.col("error").isNull())
              .join(start_snapshot, node, "left")
              .where((segment & (start.isNull() | (F.col("offset") >= start))) | from_start_snapshot)
              .select(*node,
                      F.when(segment, F.col("offset")).otherwise(snapshot_end - 1).alias("offset"),
                      "append_time",
                      F.when(kraft, F.lit("kraft.version"))
                      .otherwise(F.get_json_object(fields, "$.name")).alias("feature"),
                      F.when(kraft, F.get_json_object(fields, "$.kRaftVersion"))
                      .otherwise(F.get_json_object(fields, "$.featureLevel")).cast("int").alias("to_level")))
    order = Window.partitionBy(*node, "feature").orderBy("offset")
    return (events.withColumn("from_level", F.lag("to_level").over(order))
            .select(*HISTORY_COLUMNS)
            .orderBy(*node, "offset", "feature"))


__all__ = ["FORMAT", "HISTORY_COLUMNS", "METADATA_SCHEMA_DDL", "KafkaMetadataDataSource", "feature_history",
           "read_metadata"]
