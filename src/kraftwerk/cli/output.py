"""Shared output helpers: the ``--output text|json`` flag and JSON printing."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="output format (default text)")


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")


@contextmanager
def status(message: str, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A rich spinner on stderr when it is a terminal (stdout stays clean for JSON); yields a
    function that updates its text."""
    if not enabled:
        yield lambda _msg: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status(message) as spinner:
        yield lambda msg: spinner.update(msg)
