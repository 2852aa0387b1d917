"""Spark settings that work on a 2-core laptop and on a cluster, and a session helper.

``local[*]`` is the embedded default: its Python workers run this very interpreter. On a cluster they
run the cluster's own Python (``spark.pyspark.python``, else ``PYSPARK_PYTHON``, else ``python3``, as
PySpark does) and get kraftwerk's code shipped with the job (:mod:`kraftwerk.spark.bundle`). Arrow
batches are capped so a task's memory stays at one batch of rows; the web UI is off unless asked for.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from kraftwerk.spark.errors import SparkJobError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
#: rows per Arrow batch moved between the JVM and Python workers
ARROW_BATCH_ROWS = 8192
#: the setting that names the executors' Python (spark-submit's, also honoured by build_session)
PYTHON_CONF = "spark.pyspark.python"


def spark_conf(master: str | None = DEFAULT_MASTER, *, ui: bool = False,
               app_name: str = "kraftwerk-pipeline") -> dict[str, str]:
    """The configuration the pipeline jobs run with, under ``spark-submit`` too.

    ``master`` None keeps the master of the surrounding launcher (``spark-submit``).
    """
    local = master is not None and master.startswith("local")
    conf = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        # Spark's own log would bury the one-line error of a failed job under Java stacks:
        # --conf spark.log.level=WARN brings it back
        "spark.log.level": "OFF",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH_ROWS),
        "spark.sql.execution.pythonUDF.arrow.enabled": "true",
        "spark.python.worker.reuse": "true",
        # JVM <-> Python worker over a Unix socket (Spark 4.1+): measured 29 ms instead of 67 ms of
        # fixed cost per Python task on loopback TCP, and half the cost of a one-task job
        "spark.python.unix.domain.socket.enabled": "true",
        # one segment per input partition: do not let Spark coalesce them into a few big tasks
        "spark.sql.files.openCostInBytes": str(4 * 1024 * 1024),
    }
    if master is not None:
        conf["spark.master"] = master
    if local:
        assert master is not None
        cores = _local_cores(master)
        conf.update({
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": str(max(2, 2 * cores)),
            "spark.default.parallelism": str(max(2, cores)),
            "spark.driver.memory": "1g",
            "spark.sql.adaptive.enabled": "false",
        })
    return conf


def _local_cores(master: str) -> int:
    inner = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    if inner.split(",")[0] == "*":
        return os.cpu_count() or 1
    try:
        return max(1, int(inner.split(",")[0]))
    except ValueError:
        return 1


def executor_python(master: str | None, conf: Mapping[str, str] | None = None) -> str:
    """The Python the executors run: ``spark.pyspark.python`` when given; else this interpreter for a
    local master (its executors share this machine) and, for a cluster, ``PYSPARK_PYTHON`` or
    ``python3`` -- a path on the cluster's hosts, never this driver's (PySpark's own rule)."""
    given = (conf or {}).get(PYTHON_CONF)
    if given:
        return given
    if master is not None and master.startswith("local"):
        return sys.executable
    return os.environ.get("PYSPARK_PYTHON") or "python3"


@contextlib.contextmanager
def _pyspark_python(path: str | None) -> Iterator[None]:
    """``PYSPARK_PYTHON`` while a SparkContext starts (PySpark reads the executors' Python from the
    environment then), restored after so a later session of this process chooses afresh."""
    if path is None:
        yield
        return
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = path
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYSPARK_PYTHON"]
        else:
            os.environ["PYSPARK_PYTHON"] = before


def build_session(master: str | None = DEFAULT_MASTER, *, ui: bool = False,
                  extra: Mapping[str, str] | None = None) -> SparkSession:
    """Get (or create) the session with the pipeline settings, kraftwerk's code shipped to the
    executors when they need it, and the data sources registered.

    ``master`` None: the master spark-submit chose (and its ``spark.pyspark.python``), or ``local[*]``
    when not under spark-submit. ``extra`` settings override the pipeline's.
    """
    under_submit = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not under_submit:
        master = DEFAULT_MASTER
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:  # pragma: no cover - the spark extra is missing
        raise SparkJobError("PySpark is not installed: install kraftwerk[spark]") from exc
    conf = {**spark_conf(master, ui=ui), **(extra or {})}
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    try:
        with _pyspark_python(None if under_submit else executor_python(master, conf)):
            spark = builder.getOrCreate()
    except Exception as exc:  # Py4J / JVM start-up failures carry Java traces
        where = master or "the spark-submit master"
        raise SparkJobError(f"cannot start Spark with {where}: {str(exc).splitlines()[0]}") from exc
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    """Ship kraftwerk's code to the session's executors (unless they run this interpreter), then
    register the data sources (``kafka-log``, ``kafka-metadata``): a Python data source carries the
    code paths of its registration."""
    from kraftwerk.spark.bundle import ship
    from kraftwerk.spark.metadata_source import KafkaMetadataDataSource
    from kraftwerk.spark.source import KafkaLogDataSource

    ship(spark)
    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaMetadataDataSource)

