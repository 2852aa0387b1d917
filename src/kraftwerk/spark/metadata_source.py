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
log order (offset, append time, feature, from, to); :func:`metadata_rows` gives a grouped Python
function its group's rows back, so such functions run the storage layer's row functions.
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
from kraftwerk.storage.metadata_rows import feature_changes
from kraftwerk.storage.metadata_scan import (
    DEFAULT_MAX_SPLIT_BYTES,
    METADATA_COLUMNS,
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


def metadata_rows(table: pa.Table) -> list[MetadataRow]:
    """The rows of an Arrow table of this source's columns (or some of them: the others are None),
    as the storage layer yields them -- what a grouped Python function hands the row functions."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    n = table.num_rows
    columns: list[list[Any]] = []
    for (column, _), name in zip(METADATA_COLUMNS, MetadataRow._fields, strict=True):
        if name == "append_time_ms" and column in table.column_names:
            micros = pc.cast(table.column(column), pa.int64()).to_pylist()
            columns.append([None if us is None else us // 1000 for us in micros])
        elif column in table.column_names:
            columns.append(table.column(column).to_pylist())
        else:
            columns.append([None] * n)
    return [MetadataRow(*values) for values in zip(*columns, strict=True)]


#: The columns of :func:`feature_history`.
HISTORY_COLUMNS = ("cluster_id", "node_id", "offset", "append_time", "feature", "from_level", "to_level")
HISTORY_SCHEMA_DDL = ("cluster_id string, node_id int, offset bigint, append_time timestamp, feature string, "
                      "from_level int, to_level int")


def _history_table(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    changes = feature_changes(metadata_rows(table))
    return pa.table({
        "cluster_id": pa.array([c.cluster_id for c in changes], pa.string()),
        "node_id": pa.array([c.node_id for c in changes], pa.int32()),
        "offset": pa.array([c.offset for c in changes], pa.int64()),
        "append_time": pa.array([None if c.append_time_ms is None else c.append_time_ms * 1000
                                 for c in changes], pa.timestamp("us", tz="UTC")),
        "feature": pa.array([c.feature for c in changes], pa.string()),
        "from_level": pa.array([c.from_level for c in changes], pa.int32()),
        "to_level": pa.array([c.to_level for c in changes], pa.int32()),
    })


def feature_history(records: DataFrame) -> DataFrame:
    """Every feature-level change each node's metadata files hold, in log order: the rows of each node
    go through :func:`kraftwerk.storage.metadata_rows.feature_changes` (what ``--no-spark`` runs too).
    ``from_level`` is the node's previous level of the feature (null for the first one its files
    record)."""
    needed = ["cluster_id", "node_id", "file_kind", "snapshot_end_offset", "batch_offset", "offset",
              "append_time", "record_type", "fields", "error"]
    return (records.select(*needed).groupBy("cluster_id", "node_id")
            .applyInArrow(_history_table, HISTORY_SCHEMA_DDL)
            .orderBy("cluster_id", "node_id", "offset", "feature"))


__all__ = ["FORMAT", "HISTORY_COLUMNS", "METADATA_SCHEMA_DDL", "KafkaMetadataDataSource", "feature_history",
           "metadata_rows", "read_metadata"]
