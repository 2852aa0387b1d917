"""The one Spark session every Spark-marked test shares (created on first use, stopped at exit)."""

from __future__ import annotations

import atexit
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_SESSION: list[SparkSession] = []


def shared_spark() -> SparkSession:
    """``local[2]`` with the pipeline's settings, the UI off; skip when PySpark or Java is missing."""
    if _SESSION:
        return _SESSION[0]
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    from kraftwerk.spark.errors import SparkJobError
    from kraftwerk.spark.session import build_session

    try:
        spark = build_session("local[2]", ui=False, extra={"spark.sql.shuffle.partitions": "2"})
    except SparkJobError as exc:  # no Java on this machine
        pytest.skip(str(exc))
    spark.sparkContext.setLogLevel("ERROR")
    _SESSION.append(spark)
    atexit.register(spark.stop)
    return spark
