"""PySpark adapters: the ``kafka-log`` data source and the scan / up-conversion jobs.

All format logic lives in :mod:`kraftwerk.storage.scan` and :mod:`kraftwerk.storage.upconvert`;
this layer only lists files, partitions the work and moves Arrow batches. Importing it needs
``pyspark`` and ``pyarrow`` (the ``spark`` extra).
"""

from __future__ import annotations

from kraftwerk.spark.errors import SparkJobError

__all__ = ["SparkJobError"]
