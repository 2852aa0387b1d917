"""One row of a fleet's readiness table per cluster dump: blockers, warnings and sizes.

``pipeline zk-readiness`` builds the table on Spark or in this process; both call
:func:`readiness_row` on the same tree, so the two tables are equal by construction of the row and
differ only in how dumps are read and grouped (which the Spark test checks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kraftwerk.migration.errors import DumpError
from kraftwerk.migration.readiness import Status, check_readiness
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.tree import Znode, read_dump_file, tree_of

DUMP_SUFFIX = ".jsonl"

#: The readiness table's columns (name, Spark SQL type), in order.
FLEET_COLUMNS: tuple[tuple[str, str], ...] = (
    ("dump", "string"), ("cluster_id", "string"), ("ready", "boolean"), ("blockers", "array<string>"),
    ("warnings", "array<string>"), ("brokers", "int"), ("topics", "int"), ("partitions", "int"),
    ("configs", "int"), ("acls", "int"), ("quotas", "int"), ("scram_credentials", "int"),
    ("delegation_tokens", "int"), ("znodes", "int"), ("data_bytes", "bigint"),
    ("estimated_records", "bigint"), ("error", "string"),
)
FLEET_SCHEMA_DDL = ", ".join(f"`{n}` {t}" for n, t in FLEET_COLUMNS)


def error_row(dump: str, error: str) -> dict[str, Any]:
    """A dump that cannot be read: not ready, its error the one blocker."""
    row: dict[str, Any] = dict.fromkeys((n for n, _ in FLEET_COLUMNS), 0)
    row.update(dump=dump, cluster_id=None, ready=False, blockers=[f"dump: {error}"], warnings=[], error=error)
    return row


def readiness_row(dump: str, znodes: Iterable[Znode]) -> dict[str, Any]:
    """The readiness of one cluster from its dump's znodes (in any order)."""
    try:
        tree = tree_of(znodes, dump)
    except DumpError as exc:
        return error_row(dump, str(exc))
    report = check_readiness(parse_cluster(tree))
    s = report.sizes
    return {
        "dump": dump, "cluster_id": report.cluster_id, "ready": report.ready,
        "blockers": [f"{c.name}: {c.reason}" for c in report.blockers],
        "warnings": [f"{c.name}: {c.reason}" for c in report.checks if c.status is Status.WARN],
        "brokers": s.brokers, "topics": s.topics, "partitions": s.partitions, "configs": s.configs,
        "acls": s.acls, "quotas": s.quotas, "scram_credentials": s.scram_credentials,
        "delegation_tokens": s.delegation_tokens, "znodes": s.znodes, "data_bytes": s.data_bytes,
        "estimated_records": s.estimated_records, "error": None,
    }


def discover_dumps(dirs: Iterable[str]) -> list[str]:
    """The ``*.jsonl`` dump files under each directory, sorted (DumpError for a missing directory)."""
    found: list[str] = []
    for d in dirs:
        if not os.path.isdir(d):
            raise DumpError(f"{d} is not a directory of migration dumps")
        found += sorted(str(f) for f in Path(d).rglob(f"*{DUMP_SUFFIX}") if f.is_file())
    return found


def dump_file_row(dump: str) -> dict[str, Any]:
    """The readiness row of one dump file, read in this process."""
    try:
        znodes = read_dump_file(dump)
    except DumpError as exc:
        return error_row(dump, str(exc))
    except OSError as exc:
        return error_row(dump, f"{dump}: {exc.strerror or exc}")
    return readiness_row(dump, znodes)
