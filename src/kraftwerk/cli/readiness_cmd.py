"""``kraftwerk pipeline readiness``: what stands between each cluster of a fleet and a target
metadata.version, as Parquet tables, one JSON summary and one page people read.

The metadata dirs (node dirs, ``__cluster_metadata-0`` dirs, or a fleet's root above them) are read
on Spark (``--master``, default ``local[*]``; the same under ``spark-submit``) or, with
``--no-spark``, in this process by the same functions. ``--log-dirs`` adds the old-format scan of
broker log dirs (``pipeline scan``'s job). The exit code is 1 when a given directory is missing
(the rest is reported); blocked clusters are the report's content, not a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import dir_list, output_dir, release_version
from kraftwerk.cli.output import print_json
from kraftwerk.cli.pipeline_cmd import (
    absolute_path,
    dir_paths,
    log_dirs_option,
    print_spark_submit,
    scan_local,
    spark_log_file,
    spark_options,
    split_existing,
    tty,
)
from kraftwerk.readiness.fleet import Assessment, ReadinessError, assess_local, fleet_document, target_version
from kraftwerk.storage.fileio import atomic_write
from kraftwerk.storage.metadata_scan import discover_metadata_files
from kraftwerk.storage.scan_summary import PartitionSummary
from kraftwerk.versions.metadata_version import MetadataVersion

SUMMARY = "summary.json"
PAGE = "report.html"
TABLES = "tables"
SCAN = "scan"


def register(commands: Any) -> None:
    p = commands.add_parser(
        "readiness", help="a fleet's readiness for a target metadata.version (tables, JSON, HTML page)",
        description="Replay every cluster's metadata log into its final image and report, per cluster and "
                    "for the fleet, what blocks the target metadata.version: brokers and controllers whose "
                    "software cannot run it, fenced brokers, configs that break its rules (KIP-1294), "
                    "metadata a downgrade to it would lose, partitions still holding message format v0/v1 "
                    "(with --log-dirs); with the feature-level history of each cluster. Writes DIR/tables "
                    "(Parquet), DIR/summary.json and DIR/report.html.")
    p.add_argument("--metadata-dirs", required=True, nargs="+", type=dir_list, metavar="DIR",
                   help="metadata log dirs of the fleet's nodes (a node's log dir, its __cluster_metadata-0, "
                        "or a directory above many of them)")
    log_dirs_option(p, required=False, help_text="broker log dirs to scan for message format v0/v1 data")
    p.add_argument("--target", required=True, type=release_version, metavar="VERSION",
                   help="the metadata.version to assess, e.g. 4.3-IV0, or a release (4.3)")
    p.add_argument("--out", required=True, type=output_dir, metavar="DIR",
                   help="directory for tables/, summary.json and report.html")
    spark_options(p)
    p.set_defaults(func=run_readiness)


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar on stderr when it is a terminal: a spinner while the metadata copies are
    read, then clusters assessed out of all."""
    if not enabled:
        yield lambda _done, _total: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("clusters"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("Reading metadata", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, description="Assessing", completed=done, total=total, refresh=True)

        yield update


def _assess(args: argparse.Namespace, metadata_dirs: list[str], log_dirs: list[str] | None,
            target: MetadataVersion, out: Path) -> tuple[Assessment, list[PartitionSummary]]:
    with _progress(tty()) as progress:
        if args.no_spark:
            assessment = assess_local(metadata_dirs, target, progress)
            return assessment, scan_local(log_dirs, out / SCAN) if log_dirs else []
        from kraftwerk.spark.jobs import scan_job
        from kraftwerk.spark.metadata_source import read_metadata
        from kraftwerk.spark.quiet import quiet_session
        from kraftwerk.spark.readiness import assess_clusters

        with quiet_session(args.master, spark_log_file(args, out), dict(args.conf)) as spark:
            records = read_metadata(spark, metadata_dirs).cache()
            try:
                assessment = assess_clusters(records, target, progress)
            finally:
                records.unpersist()
            partitions = scan_job(spark, log_dirs, out / SCAN).summaries if log_dirs else []
        return assessment, partitions


def run_readiness(args: argparse.Namespace) -> int:
    target = target_version(args.target)
    metadata_dirs, missing = split_existing(dir_paths(args.metadata_dirs, "--metadata-dirs"))
    log_dirs = None
    if args.log_dirs is not None:
        log_dirs, missing_logs = split_existing(dir_paths(args.log_dirs))
        if not log_dirs:
            raise ReadinessError("none of the log directories exists: " + ", ".join(missing_logs))
        missing += missing_logs
    if not metadata_dirs:
        raise ReadinessError("none of the metadata directories exists: " + ", ".join(missing))
    out = absolute_path(args.out)
    if args.print_spark_submit:
        job = ["--metadata-dirs", *metadata_dirs] + (["--log-dirs", *log_dirs] if log_dirs else [])
        return print_spark_submit(args, [*job, "--target", str(target), "--out", str(out)])
    if not discover_metadata_files(metadata_dirs):
        raise ReadinessError("no metadata log segments or snapshots under " + ", ".join(metadata_dirs))
    for d in missing:
        print(f"Directory {d} does not exist or is not a directory; skipped", file=sys.stderr)
    start = time.monotonic()
    assessment, partitions = _assess(args, metadata_dirs, log_dirs, target, out)
    doc = fleet_document(assessment, target, metadata_dirs=metadata_dirs, log_dirs=log_dirs,
                         missing_dirs=missing, partitions=partitions)
    from kraftwerk.cli.readiness_page import render_page
    from kraftwerk.readiness.tables import write_tables

    write_tables(doc, out / TABLES)
    atomic_write(out / SUMMARY, json.dumps(doc, indent=1).encode())
    atomic_write(out / PAGE, render_page(doc).encode())
    if args.output == "json":
        print_json(doc)
    else:
        _print(doc, out, time.monotonic() - start)
    return 1 if missing else 0


def _print(doc: dict[str, Any], out: Path, elapsed: float) -> None:
    fleet = doc["fleet"]
    header = ("Cluster", "Status", "metadata.version", "Blockers", "Warnings", "First blocker")
    rows = [header]
    for c in doc["clusters"]:
        first = next((f["message"] for f in c["findings"] if f["severity"] == "blocker"), "")
        rows.append((c["clusterId"], c["status"], c["metadataVersion"] or "-", str(c["blockers"]),
                     str(c["warnings"]), first[:80]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    print()
    status = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in fleet["byStatus"].items())
    target = doc["target"]["metadataVersion"]
    print(f"Readiness for metadata.version {target} of {fleet['clusters']} clusters in {elapsed:.1f}s: "
          f"{status}")
    kinds = ", ".join(f"{k['findings']} {name}" for name, k in fleet["findingsByKind"].items()
                      if k["findings"])
    print(f"Findings: {fleet['blockers']} blockers, {fleet['warnings']} warnings"
          + (f": {kinds}" if kinds else ""))
    if doc["logDirs"] is not None:
        print(f"Message format v0/v1: {fleet['legacyPartitions']} partitions, {fleet['legacyBytes']} bytes")
    print(f"Report: {out / PAGE}; summary: {out / SUMMARY}; tables: {out / TABLES} (Parquet)")
