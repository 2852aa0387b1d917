"""What the real-process cluster tests share: the ``kraftwerk`` CLI run in-process with its
output captured, and a cluster brought up for a module and always brought down again."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path

from kraftwerk.cli.main import main as cli_main
from kraftwerk.runtime.local_cluster import LocalCluster


def cli(*argv: str) -> tuple[int, str, str]:
    """Run ``kraftwerk argv...``; returns (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def cluster_up(root: Path, *up_args: str) -> Iterator[LocalCluster]:
    """``cluster up --dir root up_args...`` (asserted to succeed), then ``cluster down`` on exit."""
    code, _, err = cli("cluster", "up", "--dir", str(root), *up_args)
    assert code == 0, err
    try:
        yield LocalCluster.load(root)
    finally:
        cli("cluster", "down", "--dir", str(root))
