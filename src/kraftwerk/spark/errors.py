"""Errors of the Spark layer (a missing extra, a failed job, a path an executor cannot read)."""

from __future__ import annotations

import os
import re
import socket

from kraftwerk.errors import KraftwerkError


class SparkJobError(KraftwerkError):
    """A Spark job that cannot start or did not finish; the message says why, without a trace."""


class ExecutorPathError(SparkJobError):
    """Raised in a task: an input path the driver listed cannot be read on this executor's host."""


def require_readable(path: str, *, directory: bool = False) -> None:
    """Fail the task with :class:`ExecutorPathError` when this host cannot open ``path``.

    A segment that vanished from a partition directory this host does see is not such a failure
    (retention deleted it since the driver listed it): the caller reports that one as before.
    """
    try:
        fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    except FileNotFoundError:
        if not directory and os.path.isdir(os.path.dirname(path)):
            return
        reason = "No such file or directory"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    else:
        os.close(fd)
        return
    host = socket.gethostname()
    raise ExecutorPathError(f"executor on host {host} cannot read {path}: {reason} (the driver sees it; "
                            "it must be at the same path on every executor)")


# an exception line of a Python traceback ("module.Class: message") or a Java stack (": java.x.Y: message")
_EXCEPTION = re.compile(r"^(?:: )?([A-Za-z_][\w.$]*(?:Error|Exception)): (.+)$", re.MULTILINE)
_JVM = ("java.", "javax.", "org.apache.", "py4j.", "scala.")


def job_failure(what: str, exc: BaseException) -> SparkJobError:
    """One line for a failed Spark job, however deep in a Java stack the cause is.

    A kraftwerk error raised in a task is given as it is; otherwise the last Python exception of a
    worker's traceback; otherwise the outermost Java exception; otherwise the first line.
    """
    if isinstance(exc, KraftwerkError):
        return exc if isinstance(exc, SparkJobError) else SparkJobError(str(exc))
    text = str(exc)
    found = _EXCEPTION.findall(text)
    ours = [msg for cls, msg in found if cls.startswith("kraftwerk.")]
    if ours:
        return SparkJobError(ours[-1])
    python = [f"{cls.rsplit('.', 1)[-1]}: {msg}" for cls, msg in found if not cls.startswith(_JVM)]
    if python:
        return SparkJobError(f"{what} failed: {python[-1]}")
    if found:
        return SparkJobError(f"{what} failed: {found[0][1]}")
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
    return SparkJobError(f"{what} failed: {first}")
