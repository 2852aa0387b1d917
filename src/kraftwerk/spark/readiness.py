"""Each cluster's metadata replayed into its final image, in parallel across clusters; the readiness
report's metadata part on Spark.

The input is the ``kafka-metadata`` DataFrame of a fleet's metadata dirs. Two grouped passes run the
storage and image layers' row functions, as ``--no-spark`` does in one process:

1. rows grouped by node: how far each node's copy of its cluster's log reaches
   (:func:`kraftwerk.storage.metadata_rows.copy_stats`); the driver picks each cluster's furthest copy
   (:func:`~kraftwerk.storage.metadata_rows.choose_source`);
2. the chosen copies' rows grouped by cluster: the latest snapshot and the log after it replayed by
   the image layer (:func:`kraftwerk.image.source.load_rows`) into one image per cluster, described
   (:func:`cluster_images`) or assessed toward a target (:func:`assess_clusters`).

Spark parallelises across clusters, never within one log (a log replays in order).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kraftwerk.image.describe import describe_image
from kraftwerk.image.errors import ImageError
from kraftwerk.image.source import load_rows
from kraftwerk.readiness.assess import assess_cluster
from kraftwerk.readiness.fleet import Assessment, Progress
from kraftwerk.spark.errors import job_failure
from kraftwerk.spark.metadata_source import metadata_rows
from kraftwerk.storage.metadata_rows import MetadataCopy, choose_source, copy_stats
from kraftwerk.versions.metadata_version import MetadataVersion

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]
    from pyspark.sql import DataFrame

COPY_SCHEMA_DDL = ("cluster_id string, node_id int, files int, records bigint, errors bigint, "
                   "torn_tails int, log_start_offset bigint, last_offset bigint, snapshot_end_offset bigint")
IMAGE_SCHEMA_DDL = "cluster_id string, node_id int, image string, error string"
REPORT_SCHEMA_DDL = "cluster_id string, report string"
_COPY_INPUT = ("cluster_id", "node_id", "file", "file_kind", "snapshot_end_offset", "offset", "error")


def _copy_table(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    c = copy_stats(metadata_rows(table))
    types = {"cluster_id": pa.string(), "node_id": pa.int32(), "files": pa.int32(), "records": pa.int64(),
             "errors": pa.int64(), "torn_tails": pa.int32(), "log_start_offset": pa.int64(),
             "last_offset": pa.int64(), "snapshot_end_offset": pa.int64()}
    return pa.table({name: pa.array([getattr(c, name)], t) for name, t in types.items()})


def metadata_copies(records: DataFrame) -> list[MetadataCopy]:
    """Every node's copy of its cluster's metadata log: how far it reaches, what could not be read."""
    grouped = records.select(*_COPY_INPUT).groupBy("cluster_id", "node_id")
    rows = grouped.applyInArrow(_copy_table, COPY_SCHEMA_DDL).collect()
    return sorted((MetadataCopy(**r.asDict()) for r in rows),
                  key=lambda c: (c.cluster_id is None, c.cluster_id or "", c.node_id is None, c.node_id or 0))


def _chosen(records: DataFrame, copies: list[MetadataCopy]) -> DataFrame:
    """The rows of each cluster's chosen copy."""
    from pyspark.sql import functions as F

    by_cluster: dict[str, list[MetadataCopy]] = {}
    for c in copies:
        if c.cluster_id is not None:
            by_cluster.setdefault(c.cluster_id, []).append(c)
    chosen = [(cid, choose_source(group).node_id) for cid, group in sorted(by_cluster.items())]
    spark = records.sparkSession
    keys = spark.createDataFrame(chosen, "cluster_id string, node_id int")
    # a node id that is null (no node.id) cannot be joined on: such copies are matched on the cluster alone
    on = (records["cluster_id"] == keys["cluster_id"]) & records["node_id"].eqNullSafe(keys["node_id"])
    return records.join(F.broadcast(keys), on, "left_semi")


def _per_cluster(records: DataFrame, copies: list[MetadataCopy], func: Callable[[pa.Table], pa.Table],
                 schema: str) -> DataFrame:
    clusters = len({c.cluster_id for c in copies if c.cluster_id is not None})
    spark = records.sparkSession
    # about four clusters per task beyond one task per core: the progress bar moves as tasks end
    tasks = max(1, min(clusters, max(spark.sparkContext.defaultParallelism, -(-clusters // 4))))
    chosen = _chosen(records, copies).repartition(tasks, "cluster_id")
    return chosen.groupBy("cluster_id").applyInArrow(func, schema)


def _image_table(table: pa.Table) -> pa.Table:
    import pyarrow as pa

    rows = metadata_rows(table)
    try:
        image, error = json.dumps(describe_image(load_rows(rows)), separators=(",", ":")), None
    except ImageError as exc:
        image, error = None, str(exc)
    return pa.table({"cluster_id": pa.array([rows[0].cluster_id], pa.string()),
                     "node_id": pa.array([rows[0].node_id], pa.int32()),
                     "image": pa.array([image], pa.string()), "error": pa.array([error], pa.string())})


def cluster_images(records: DataFrame) -> DataFrame:
    """One row per cluster: the final image of its furthest copy of the metadata log, as ``metadata
    show --output json`` describes it (``image``), or why it cannot be replayed (``error``)."""
    return _per_cluster(records, metadata_copies(records), _image_table, IMAGE_SCHEMA_DDL)


def assess_clusters(records: DataFrame, target: MetadataVersion, progress: Progress | None = None,
                    poll_seconds: float = 0.5) -> Assessment:
    """Every cluster's readiness report toward ``target`` (:func:`kraftwerk.readiness.assess.assess_cluster`
    on the rows of its furthest copy), with ``progress(done, total)`` in clusters while the job runs."""
    from kraftwerk.spark.jobs import collect_with_progress  # driver-only: executors never load jobs

    try:
        copies = metadata_copies(records)
    except Exception as exc:
        raise job_failure("the metadata copies job", exc) from exc
    sc = records.sparkSession.sparkContext
    assessed = sc.accumulator(0)

    def assess(table: pa.Table) -> pa.Table:
        import pyarrow as pa

        rows = metadata_rows(table)
        report = assess_cluster(str(rows[0].cluster_id), rows, target)
        assessed.add(1)
        return pa.table({"cluster_id": pa.array([report["clusterId"]], pa.string()),
                         "report": pa.array([json.dumps(report, separators=(",", ":"))], pa.string())})

    reports_df = _per_cluster(records, copies, assess, REPORT_SCHEMA_DDL)
    total = len({c.cluster_id for c in copies if c.cluster_id is not None})
    rows: list[Any] = collect_with_progress(records.sparkSession, reports_df.collect, "the readiness job",
                                            total, progress, poll_seconds, lambda: int(assessed.value))
    return Assessment(copies, [json.loads(r["report"]) for r in rows])
