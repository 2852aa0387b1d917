"""``kraftwerk pipeline zk-readiness``: the KIP-866 readiness of a fleet of ZooKeeper clusters, from
their dumps (``kraftwerk migration dump`` files), as Parquet and JSON.

On Spark (``--master``, default ``local[*]``; the ``zk-dump`` data source, :mod:`kraftwerk.spark.zk_source`)
or, with ``--no-spark``, in this process: both build each row with
:func:`kraftwerk.migration.fleet.readiness_row`. The exit code is 1 when a cluster is not ready.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import dir_list, output_dir
from kraftwerk.cli.output import print_json, status
from kraftwerk.cli.pipeline_cmd import (
    absolute_path,
    dir_paths,
    print_spark_submit,
    spark_log_file,
    spark_options,
    tty,
)
from kraftwerk.storage.fileio import atomic_write


def register(commands: Any) -> None:
    zk = commands.add_parser(
        "zk-readiness", help="KIP-866 readiness of a fleet of ZooKeeper clusters, from their dumps",
        description="Read the ZooKeeper dumps (`kraftwerk migration dump` files, *.jsonl) under the "
                    "directories and write one row per cluster: ready or not, the blockers, warnings, "
                    "sizes and the estimated number of migration records, as Parquet (readiness/) and "
                    "JSON (readiness.json).")
    zk.add_argument("--dumps", required=True, nargs="+", type=dir_list, metavar="DIR",
                    help="directories holding dump files (space or comma separated)")
    zk.add_argument("--out", required=True, type=output_dir, metavar="DIR",
                    help="directory for readiness/ (Parquet) and readiness.json")
    spark_options(zk)
    zk.set_defaults(func=run_zk_readiness)


def run_zk_readiness(args: argparse.Namespace) -> int:
    from kraftwerk.migration.errors import DumpError
    from kraftwerk.migration.fleet import discover_dumps, dump_file_row

    dirs = dir_paths(args.dumps, "--dumps")
    out = absolute_path(args.out)
    dumps = discover_dumps(dirs)
    if not dumps:
        raise DumpError("no migration dump files (*.jsonl) under " + ", ".join(dirs))
    if args.print_spark_submit:
        return print_spark_submit(args, ["--dumps", *dirs, "--out", str(out)])
    start = time.monotonic()
    with status(f"Checking {len(dumps)} ZooKeeper dumps", tty()):
        if args.no_spark:
            rows = [dump_file_row(d) for d in dumps]
            _write_readiness_parquet(rows, out)
        else:
            from kraftwerk.spark.quiet import quiet_session
            from kraftwerk.spark.zk_source import zk_readiness_job

            with quiet_session(args.master, spark_log_file(args, out), dict(args.conf)) as spark:
                rows = zk_readiness_job(spark, dirs, out)
    elapsed = time.monotonic() - start
    doc = {"dumps": dirs, "out": str(out), "seconds": round(elapsed, 3), "clusters": len(rows),
           "ready": sum(1 for r in rows if r["ready"]), "table": rows}
    atomic_write(out / "readiness.json", json.dumps(doc, indent=1).encode())
    if args.output == "json":
        print_json(doc)
    else:
        _print_readiness(rows, out, elapsed)
    return 0 if all(r["ready"] for r in rows) else 1


def _write_readiness_parquet(rows: list[dict[str, Any]], out: Path) -> None:
    """The no-Spark table: the same rows as Spark writes, in one Parquet file."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from kraftwerk.migration.fleet import FLEET_COLUMNS

    types = {"string": pa.string(), "boolean": pa.bool_(), "int": pa.int32(), "bigint": pa.int64(),
             "array<string>": pa.list_(pa.string())}
    schema = pa.schema([(n, types[t]) for n, t in FLEET_COLUMNS])
    target = out / "readiness"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.parquet"):
        old.unlink()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), str(target / "part-00000.parquet"))


def _print_readiness(rows: list[dict[str, Any]], out: Path, elapsed: float) -> None:
    for r in rows:
        state = "ready" if r["ready"] else f"NOT ready ({len(r['blockers'])} blockers)"
        print(f"{r['dump']}: cluster {r['cluster_id'] or '-'} {state}; {r['brokers']} brokers, {r['topics']} "
              f"topics, {r['partitions']} partitions, about {r['estimated_records']} migration records")
        for b in r["blockers"]:
            print(f"  {b}")
    ready = sum(1 for r in rows if r["ready"])
    print(f"Checked {len(rows)} clusters in {elapsed:.1f}s: {ready} ready, {len(rows) - ready} not ready")
    print(f"Readiness table: {out / 'readiness'} (Parquet); {out / 'readiness.json'}")
