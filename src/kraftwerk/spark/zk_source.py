"""The ``zk-dump`` data source (``migration dump`` files as a DataFrame of znodes) and the fleet
readiness job over it.

``spark.read.format("zk-dump").load(paths)`` takes directories holding ``*.jsonl`` dumps and yields
one row per znode (the dump's path, the znode's path, data and stat). A dump that cannot be read
(a line that is not a znode record, bytes that are not UTF-8) is one row whose ``error`` says why; the job
turns such a dump into a not-ready row instead of failing the fleet. The driver packs whole dump
files into input partitions balanced by size; :func:`zk_readiness_job` groups the znodes by dump
and runs :func:`kraftwerk.migration.fleet.readiness_row` on each, the same function the
single-process path runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kraftwerk.migration.errors import DumpError
from kraftwerk.migration.fleet import (
    DUMP_SUFFIX,
    FLEET_COLUMNS,
    FLEET_SCHEMA_DDL,
    discover_dumps,
    error_row,
    readiness_row,
)
from kraftwerk.migration.tree import Znode, ZnodeStat, read_dump_file
from kraftwerk.spark.errors import SparkJobError, require_readable
from kraftwerk.spark.source import pack_work
from kraftwerk.storage.fileio import local_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

FORMAT = "zk-dump"
_STAT = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeral_owner",
         "data_length", "num_children", "pzxid")
ZNODE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("dump", "string"), ("path", "string"), ("data", "binary"),
    *((name, "bigint") for name in _STAT), ("error", "string"))
ZNODE_SCHEMA_DDL = ", ".join(f"`{n}` {t}" for n, t in ZNODE_COLUMNS)
READINESS_DIR = "readiness"
READINESS_JSON = "readiness.json"


def iter_znode_rows(dump: str) -> Iterator[tuple[Any, ...]]:
    """The rows of one dump file; an unreadable dump is one row whose ``error`` says why."""
    try:
        znodes = read_dump_file(dump)
    except DumpError as exc:
        yield (dump, None, None, *(None,) * len(_STAT), str(exc))
        return
    for z in znodes:
        s = z.stat
        yield (dump, z.path, z.data, s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion,
               s.ephemeral_owner, s.data_length, s.num_children, s.pzxid, None)


class DumpPartition(InputPartition):
    def __init__(self, dumps: Sequence[str]) -> None:
        super().__init__(None)
        self.dumps = tuple(dumps)


class ZkDumpReader(DataSourceReader):
    def __init__(self, options: Any, schema: StructType) -> None:
        raw = options.get("paths") or "[]"
        self.paths = [local_path(p) for p in json.loads(raw)] + (
            [local_path(options["path"])] if options.get("path") else [])
        self.min_partitions = max(1, int(options.get("minPartitions", 1)))

    def partitions(self) -> Sequence[InputPartition]:
        try:
            dumps = discover_dumps(self.paths)
        except DumpError as exc:
            raise SparkJobError(f"{FORMAT}: {exc}") from None
        if not dumps:
            raise SparkJobError(f"{FORMAT}: no {DUMP_SUFFIX} dump files under {', '.join(self.paths)}")
        sizes = [os.path.getsize(d) for d in dumps]
        return [DumpPartition(group) for group in pack_work(dumps, sizes, self.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, DumpPartition)
        for dump in partition.dumps:
            require_readable(dump)
            yield from iter_znode_rows(dump)


class ZkDumpDataSource(DataSource):
    """``spark.read.format("zk-dump")``: one row per znode of ``migration dump`` files."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return ZNODE_SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return ZkDumpReader(self.options, schema)


def read_zk_dumps(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    spark.dataSource.register(ZkDumpDataSource)
    return (spark.read.format(FORMAT).option("paths", json.dumps([str(p) for p in paths]))
            .option("minPartitions", str(spark.sparkContext.defaultParallelism)).load())


def _row_of(dump: str, znodes: list[Any], errors: list[str]) -> tuple[Any, ...]:
    if errors:
        row = error_row(dump, errors[0])
    else:
        row = readiness_row(dump, (Znode(z["path"], None if z["data"] is None else bytes(z["data"]),
                                         ZnodeStat(*(z[name] for name in _STAT))) for z in znodes))
    return tuple(row[name] for name, _ in FLEET_COLUMNS)


def zk_readiness_job(spark: SparkSession, paths: Sequence[str], out_dir: Path) -> list[dict[str, Any]]:
    """The fleet's readiness table (one row per dump, sorted by dump), also written as Parquet under
    ``out_dir/readiness``. The table is small (a row per cluster): it is collected, then written."""
    from pyspark.sql import functions as F

    znodes = read_zk_dumps(spark, paths)
    fields = [c for c, _ in ZNODE_COLUMNS if c not in ("dump", "error")]
    grouped = znodes.groupBy("dump").agg(
        F.collect_list(F.when(F.col("error").isNull(), F.struct(*fields))).alias("znodes"),
        F.collect_list("error").alias("errors"))
    rows = sorted(grouped.rdd.map(lambda r: _row_of(r["dump"], r["znodes"], r["errors"])).collect(),
                  key=lambda row: str(row[0]))
    spark.createDataFrame(rows, FLEET_SCHEMA_DDL).coalesce(1).write.mode("overwrite").parquet(
        str(out_dir / READINESS_DIR))
    return [dict(zip((n for n, _ in FLEET_COLUMNS), row, strict=True)) for row in rows]
