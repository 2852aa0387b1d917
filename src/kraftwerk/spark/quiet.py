"""Spark's own output kept off the operator's terminal: the JVM, and the Python workers it forks,
write to a log file unless asked to be verbose.

PySpark starts the JVM with the driver's stdout and stderr, so everything the JVM prints (its
start-up banner, log4j warnings, a worker's traceback at shutdown) lands between the command's own
lines. :func:`quiet_session` points both descriptors at a log file while the JVM starts (the JVM
and its workers keep them), then gives Python its own back.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kraftwerk.spark.session import DEFAULT_MASTER, build_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@contextlib.contextmanager
def jvm_output_to(log_file: Path | None) -> Iterator[None]:
    """While inside, file descriptors 1 and 2 write to ``log_file`` (nothing changes when None):
    processes started here inherit it for good."""
    if log_file is None:
        yield
        return
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = (os.dup(1), os.dup(2))
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


@contextlib.contextmanager
def quiet_session(master: str | None = DEFAULT_MASTER, log_file: Path | None = None,
                  extra: dict[str, str] | None = None) -> Iterator[SparkSession]:
    """A session for one command run (``extra`` settings over the pipeline's), Spark's output in
    ``log_file`` (None: on the terminal); a session that was already active is reused and left
    running."""
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    with jvm_output_to(None if existing is not None else log_file):
        spark = build_session(master, extra=extra)
    try:
        yield spark
    finally:
        if existing is None:
            spark.stop()
