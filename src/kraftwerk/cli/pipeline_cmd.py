"""``kraftwerk pipeline scan|upconvert|readiness|zk-readiness``: find and rewrite message format v0/v1
data across a fleet; the fleet's upgrade-readiness report (:mod:`kraftwerk.cli.readiness_cmd`) and
its KIP-866 readiness (:mod:`kraftwerk.cli.zk_readiness_cmd`).

The commands run on Spark (``--master``, default ``local[*]``; ``--conf`` settings as spark-submit
takes them) or, with ``--no-spark``, in this process through the same storage-layer functions.
``--print-spark-submit`` prints the ``spark-submit`` command that runs the same job on a cluster's
own Spark. Missing or locked log dirs and corrupt segments are reported and skipped, never fatal to
the rest of the run; the exit code is 1 when anything was skipped so scripts notice.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import dir_list, key_value, output_dir, spark_master
from kraftwerk.cli.main import UsageError
from kraftwerk.cli.output import add_output_flag, print_json, status
from kraftwerk.storage.fileio import atomic_write, local_path
from kraftwerk.storage.scan import BatchRow, batch_arrow_schema, scan_segment_columns
from kraftwerk.storage.scan_summary import PartitionSummary, summarize, totals
from kraftwerk.storage.segment_splits import ScanError, discover_segments
from kraftwerk.storage.upconvert import SegmentOutcome, Status, upconvert_log_dirs

DEFAULT_MASTER = "local[*]"


def register(groups: Any) -> None:
    parser = groups.add_parser("pipeline", help="fleet-wide scans and up-conversion of old message formats")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)

    scan = commands.add_parser(
        "scan", help="find v0/v1 message format data in log dirs",
        description="Scan every segment of the log dirs, write the batch table as Parquet and print a "
                    "summary per topic-partition (v0/v1 bytes, batches, records, offsets, corrupt batches).")
    log_dirs_option(scan)
    spark_options(scan)
    scan.add_argument("--out", required=True, type=output_dir, metavar="DIR",
                      help="directory for batches/ (Parquet) and summary.json")
    scan.set_defaults(func=run_scan)

    up = commands.add_parser(
        "upconvert", help="rewrite segments holding v0/v1 batches as v2 (KIP-724)",
        description="Rewrite every segment that holds message format v0/v1 batches as v2, keeping offsets, "
                    "verifying the result before anything is replaced. Segments with only v2 data are not "
                    "touched; a second run changes nothing.")
    log_dirs_option(up)
    spark_options(up)
    where = up.add_mutually_exclusive_group()
    where.add_argument("--out", type=output_dir, metavar="DIR",
                       help="write converted segments under DIR/<log dir>/<partition>/")
    where.add_argument("--in-place", action="store_true",
                       help="replace segments in place (crash-safe swap; refused while a broker holds the "
                            "log dir's lock)")
    up.add_argument("--dry-run", action="store_true", help="report what would be converted, change nothing")
    up.set_defaults(func=run_upconvert)

    from kraftwerk.cli.readiness_cmd import register as register_readiness
    from kraftwerk.cli.zk_readiness_cmd import register as register_zk_readiness

    register_readiness(commands)
    register_zk_readiness(commands)


def log_dirs_option(p: argparse.ArgumentParser, *, required: bool = True,
                    help_text: str | None = None) -> None:
    p.add_argument("--log-dirs", required=required, nargs="+", type=dir_list, metavar="DIR",
                   help=help_text or "broker log directories (space or comma separated, like log.dirs)")


def spark_options(p: argparse.ArgumentParser) -> None:
    """Where the job runs (``--master``, ``--conf``, ``--no-spark``, ``--print-spark-submit``), Spark's
    own log, and ``--output``."""
    p.add_argument("--master", type=spark_master, default=None,
                   help=f"Spark master URL (default {DEFAULT_MASTER}; under spark-submit: its master)")
    p.add_argument("--conf", action="append", type=key_value, default=[], metavar="KEY=VALUE",
                   help="a Spark setting, as spark-submit takes it (repeatable), e.g. "
                        "spark.pyspark.python=/usr/bin/python3 for the executors' Python")
    p.add_argument("--no-spark", action="store_true", help="run in this process without Spark")
    p.add_argument("--print-spark-submit", action="store_true",
                   help="print the spark-submit command that runs this job on a cluster's own Spark, "
                        "run nothing")
    p.add_argument("--verbose", action="store_true",
                   help="let Spark print its own log on the terminal (default: into spark.log of --out, or "
                        "of the temporary directory)")
    add_output_flag(p)


def absolute_path(raw: str | Path) -> Path:
    """A local path or a file:// URL (both checked by the option's type), made absolute: executors
    get the same string."""
    return Path(local_path(str(raw))).absolute()


def dir_paths(raw: Sequence[str], option: str = "--log-dirs") -> list[str]:
    """The directories of a ``log.dirs``-like option, absolute."""
    dirs = [d for part in raw for d in part.split(",") if d]
    if not dirs:
        raise UsageError(f"{option} needs at least one directory")
    return [str(absolute_path(d)) for d in dirs]


def print_spark_submit(args: argparse.Namespace, job: list[str]) -> int:
    """Print the spark-submit command running ``kraftwerk pipeline <command> <job>`` in the submitted
    driver: the executors' Python as this run would choose it, this interpreter for the driver."""
    import kraftwerk.cli.spark_submit as entry
    from kraftwerk.spark.session import PYTHON_CONF, executor_python

    if args.no_spark:
        raise UsageError("--print-spark-submit runs the job on Spark: drop --no-spark")
    given = dict(args.conf)
    conf = {PYTHON_CONF: executor_python(args.master, given), "spark.pyspark.driver.python": sys.executable,
            **{k: v for k, v in given.items() if k != PYTHON_CONF}}
    argv = ["spark-submit"] + (["--master", args.master] if args.master else [])
    argv += [a for k, v in conf.items() for a in ("--conf", f"{k}={v}")]
    argv += [str(Path(str(entry.__file__)).resolve()), "pipeline", args.command, *job]
    if args.output == "json":
        print_json({"argv": [*argv, "--output", "json"]})
    else:
        print(shlex.join(argv))
    return 0


def split_existing(dirs: list[str]) -> tuple[list[str], list[str]]:
    present = [d for d in dirs if Path(d).is_dir()]
    return present, [d for d in dirs if d not in present]


def tty() -> bool:
    return sys.stderr.isatty()


def spark_log_file(args: argparse.Namespace, out: Path | None) -> Path | None:
    """Where Spark's own output goes: nowhere special with --verbose, else ``spark.log`` of the
    report directory ``out`` (or of the temporary directory: an up-conversion's ``--out`` is a
    log dir tree, which must hold the converted segments and nothing else)."""
    if args.verbose:
        return None
    import tempfile

    return (out if out is not None else Path(tempfile.gettempdir()) / "kraftwerk") / "spark.log"


# ---------------------------------------------------------------------- scan

def run_scan(args: argparse.Namespace) -> int:
    dirs = dir_paths(args.log_dirs)
    out = absolute_path(args.out)
    present, missing = split_existing(dirs)
    if not present:
        raise ScanError("none of the log directories exists: " + ", ".join(dirs))
    if args.print_spark_submit:
        return print_spark_submit(args, ["--log-dirs", *dirs, "--out", str(out)])
    for d in missing:
        print(f"Log directory {d} does not exist or is not a directory; skipped", file=sys.stderr)
    start = time.monotonic()
    with status(f"Scanning {len(present)} log dirs", tty()):
        if args.no_spark:
            summaries = scan_local(present, out)
        else:
            from kraftwerk.spark.jobs import scan_job
            from kraftwerk.spark.quiet import quiet_session

            with quiet_session(args.master, spark_log_file(args, out), dict(args.conf)) as spark:
                summaries = scan_job(spark, present, out).summaries
    elapsed = time.monotonic() - start
    tot = totals(summaries)
    doc = {"logDirs": present, "missingLogDirs": missing, "out": str(out), "seconds": round(elapsed, 3),
           "totals": tot, "partitions": [s.to_json() for s in summaries]}
    atomic_write(out / "summary.json", json.dumps(doc, indent=1).encode())
    if args.output == "json":
        print_json(doc)
    else:
        _print_scan(summaries, tot, present, out, elapsed)
    return 1 if missing else 0


def scan_local(log_dirs: list[str], out: Path) -> list[PartitionSummary]:
    """The no-Spark scan: the same rows, written with pyarrow, summarized in Python."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - the spark extra is missing
        raise ScanError("writing Parquet needs pyarrow: install kraftwerk[spark]") from exc
    schema = batch_arrow_schema()
    target = out / "batches"
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.parquet"):
        old.unlink()

    def rows() -> Iterator[BatchRow]:
        with pq.ParquetWriter(str(target / "part-00000.parquet"), schema) as writer:
            for chunk in scan_segment_columns(discover_segments(log_dirs)):
                writer.write_batch(chunk.to_arrow(schema))
                yield from chunk.rows()

    return summarize(rows())


def _offsets(a: int | None, b: int | None) -> str:
    return "-" if a is None else f"{a}..{b}"


def _print_scan(summaries: list[PartitionSummary], tot: dict[str, int], dirs: list[str], out: Path,
                elapsed: float) -> None:
    interesting = [s for s in summaries if s.legacy_batches or s.corrupt_batches]
    if interesting:
        header = ("Topic-partition", "Log dir", "v0 bytes", "v1 bytes", "Old batches", "Old records",
                  "Old offsets", "Corrupt")
        table = [header] + [(f"{s.topic}-{s.partition}", s.log_dir, str(s.v0_bytes), str(s.v1_bytes),
                             str(s.legacy_batches), str(s.legacy_records),
                             _offsets(s.legacy_first_offset, s.legacy_last_offset), str(s.corrupt_batches))
                            for s in interesting]
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for r in table:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        print()
    print(f"Scanned {len(dirs)} log dirs in {elapsed:.1f}s: {tot['partitions']} partitions, "
          f"{tot['segments']} segments, {tot['batches']} batches, {tot['records']} records, "
          f"{tot['bytes']} bytes")
    print(f"Message format v0/v1: {tot['partitionsWithLegacy']} partitions, {tot['legacyBatches']} batches, "
          f"{tot['legacyRecords']} records, {tot['legacyBytes']} bytes "
          f"(v0 {tot['v0Bytes']}, v1 {tot['v1Bytes']})")
    print(f"Corrupt batches: {tot['corruptBatches']}")
    print(f"Batch table: {out / 'batches'} (Parquet); summary: {out / 'summary.json'}")


# ---------------------------------------------------------------------- upconvert

def run_upconvert(args: argparse.Namespace) -> int:
    if not args.in_place and args.out is None and not args.dry_run:
        raise UsageError("upconvert needs --out DIR or --in-place (or --dry-run)")
    dirs = dir_paths(args.log_dirs)
    if not split_existing(dirs)[0]:  # before a Spark session is started for nothing
        raise ScanError("none of the log directories exists: " + ", ".join(dirs))
    out = None if args.out is None else absolute_path(args.out)
    if args.print_spark_submit:
        job = ["--log-dirs", *dirs] + (["--out", str(out)] if out else []) + (
            ["--in-place"] if args.in_place else []) + (["--dry-run"] if args.dry_run else [])
        return print_spark_submit(args, job)
    start = time.monotonic()
    with status("Up-converting", tty()) as update:

        def progress(done: int, total: int) -> None:
            update(f"Up-converting: {done} of {total} partitions done")

        if args.no_spark:
            outcomes = upconvert_log_dirs([Path(d) for d in dirs], in_place=args.in_place, out_dir=out,
                                          dry_run=args.dry_run, progress=progress)
        else:
            from kraftwerk.spark.jobs import upconvert_job
            from kraftwerk.spark.quiet import quiet_session

            with quiet_session(args.master, spark_log_file(args, None), dict(args.conf)) as spark:
                outcomes = upconvert_job(spark, dirs, in_place=args.in_place, out_dir=out,
                                         dry_run=args.dry_run, progress=progress)
    elapsed = time.monotonic() - start
    outcomes.sort(key=lambda o: (o.log_dir, o.topic, o.partition, o.base_offset))
    counts = {s.value: sum(1 for o in outcomes if o.status is s) for s in Status}
    problems = [o for o in outcomes if o.status.is_problem]
    if args.output == "json":
        print_json({"dryRun": args.dry_run, "inPlace": args.in_place,
                    "out": None if out is None else str(out),
                    "seconds": round(elapsed, 3), "counts": counts,
                    "inputBytes": sum(o.input_bytes for o in outcomes if o.status is Status.CONVERTED),
                    "outputBytes": sum(o.output_bytes for o in outcomes),
                    "segments": [o.to_json() for o in outcomes if o.status is not Status.UNCHANGED]})
    else:
        _print_upconvert(outcomes, counts, args.dry_run, elapsed)
    for o in problems:
        where = (o.log_dir if o.base_offset < 0
                 else f"{o.log_dir}/{o.topic}-{o.partition} segment {o.base_offset}")
        print(f"{o.status.value.upper()}: {where}: {o.message}", file=sys.stderr)
    return 1 if problems else 0


def _print_upconvert(outcomes: list[SegmentOutcome], counts: dict[str, int], dry_run: bool,
                     elapsed: float) -> None:
    verb = "Would convert" if dry_run else "Converted"
    for o in outcomes:
        if o.status in (Status.CONVERTED, Status.WOULD_CONVERT):
            extra = "" if dry_run else f" -> {o.output_bytes} bytes, {o.records} records verified"
            print(f"{verb} {o.log_dir}/{o.topic}-{o.partition} segment {o.base_offset}: "
                  f"{o.legacy_batches} of {o.batches} batches v0/v1, {o.input_bytes} bytes{extra}")
    converted = counts[Status.CONVERTED.value] + counts[Status.WOULD_CONVERT.value]
    print(f"{verb} {converted} segments in {elapsed:.1f}s; {counts[Status.UNCHANGED.value]} segments hold "
          f"only v2 data and were not touched; {counts[Status.CORRUPT.value]} corrupt, "
          f"{counts[Status.FAILED.value]} failed, {counts[Status.LOCKED.value]} log dirs locked, "
          f"{counts[Status.MISSING.value]} missing")
