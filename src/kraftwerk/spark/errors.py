"""Errors of the Spark layer (a missing extra, a failed job, a path Spark cannot list)."""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError


class SparkJobError(KraftwerkError):
    """A Spark job that cannot start or did not finish; the message says why, without a trace."""
