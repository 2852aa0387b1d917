"""Peak memory of scanning, decoding and dump-logging a 64 MiB and a ~1 GiB segment.

Usage: .venv/bin/python -m bench.bench_memory [--sizes-mib 64,1024] [--dir DIR]

The segments are written to a temporary directory batch by batch (a template v2 batch of 100
records with 1 KiB values whose base offset is patched per copy; the CRC does not cover it), never
held in memory. Each workload then runs in a fresh child process that reports its peak resident
set size (``getrusage``: includes touched pages of the file mapping) and, in a second child, the
peak of traced Python allocations (``tracemalloc``). Flat means: the 1 GiB numbers are those of
64 MiB, not 16 times them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from kraftwerk.records import CompressionType, build_records

MIB = 1024 * 1024
_BASE_OFFSET = struct.Struct(">q")
WORKLOADS = ("scan", "decode", "dump-log")


def write_synthetic_segment(path: Path, target_bytes: int, *, value_size: int = 1024, per_batch: int = 100,
                            compression: CompressionType = CompressionType.NONE) -> int:
    """Stream copies of one v2 batch into ``path`` until ``target_bytes``; returns the record count.

    Offsets are consecutive (each copy's base offset is patched), so the result is a valid segment
    for every reader and for dump-log's gap check.
    """
    value = (b"0123456789abcdef" * (value_size // 16 + 1))[:value_size]
    template = bytearray(build_records(
        [(i, 1_700_000_000_000 + i, b"key-%06d" % i, value, ()) for i in range(per_batch)],
        compression=compression))
    copies = max(1, target_bytes // len(template))
    with open(path, "wb") as f:
        for n in range(copies):
            _BASE_OFFSET.pack_into(template, 0, n * per_batch)
            f.write(template)
    return copies * per_batch


# ---------------------------------------------------------------------- child side

def _scan(path: Path) -> int:
    from kraftwerk.storage.segment import SegmentReader

    with SegmentReader(path) as reader:
        result = reader.scan(deep=True)  # CRCs checked and every record decoded
    if result.tail is not None:
        raise SystemExit(f"unexpected tail: {result.tail}")
    return result.batch_count


def _decode(path: Path) -> int:
    from kraftwerk.storage.segment import SegmentReader

    n = 0
    with SegmentReader(path) as reader:
        for batch in reader.batches(validate=True):
            for record in batch.records():
                n += (record.key is not None) + len(record.value or b"")
    return n


def _dump_log(path: Path) -> int:
    from kraftwerk.cli.main import main

    saved = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            return main(["dump-log", "--deep-iteration", "--print-data-log", "--files", str(path)])
        finally:
            sys.stdout = saved


_CHILD: dict[str, Callable[[Path], int]] = {"scan": _scan, "decode": _decode, "dump-log": _dump_log}


def _child(workload: str, path: Path, traced: bool) -> None:
    # imports are part of the baseline, not of the workload
    import kraftwerk.cli.main
    import kraftwerk.storage.segment  # noqa: F401

    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if traced:
        tracemalloc.start()
    start = time.perf_counter()
    _CHILD[workload](path)
    seconds = time.perf_counter() - start
    peak_traced = tracemalloc.get_traced_memory()[1] if traced else None
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"base_rss_kib": base_rss, "peak_rss_kib": peak_rss, "peak_traced": peak_traced,
                      "seconds": seconds}))


def _measure(workload: str, path: Path, traced: bool) -> dict[str, float]:
    cmd = [sys.executable, "-m", "bench.bench_memory", "--child", workload, str(path)]
    if traced:
        cmd.append("--traced")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result: dict[str, float] = json.loads(out.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mib", default="64,1024")
    parser.add_argument("--dir", default=None, help="where to write the segments (default: a temp dir)")
    parser.add_argument("--child", nargs=2, metavar=("WORKLOAD", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], Path(args.child[1]), args.traced)
        return
    sizes = [int(s) for s in args.sizes_mib.split(",")]
    print(f"Python {sys.version.split()[0]}, one child process per cell")
    print()
    print("| workload | segment | records | time s | peak RSS MiB (baseline) | RSS growth MiB "
          "| peak traced Python MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for size in sizes:
            path = Path(tmp) / "00000000000000000000.log"
            records = write_synthetic_segment(path, size * MIB)
            actual = path.stat().st_size / MIB
            for workload in WORKLOADS:
                rss = _measure(workload, path, traced=False)
                traced = _measure(workload, path, traced=True)
                print(f"| {workload} | {actual:,.0f} MiB | {records:,} | {rss['seconds']:.1f} "
                      f"| {rss['peak_rss_kib'] / 1024:.0f} ({rss['base_rss_kib'] / 1024:.0f}) "
                      f"| {(rss['peak_rss_kib'] - rss['base_rss_kib']) / 1024:.1f} "
                      f"| {traced['peak_traced'] / MIB:.2f} |", flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
