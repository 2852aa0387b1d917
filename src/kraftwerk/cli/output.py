"""Shared output helpers: the ``--output text|json`` flag and JSON printing."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="output format (default text)")


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
