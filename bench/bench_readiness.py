"""The readiness report's scaling: the job on Spark ``local[1]`` vs ``local[2]`` vs one process on the
same generated fleet, and the records/s of the ``kafka-metadata`` source vs the single-process replay.

Usage: .venv/bin/python -m bench.bench_readiness [--clusters 1000] [--repeats 3] [--warmup 2]

The fleet is ``tests/readiness/generator``'s (on /dev/shm where there is one): clusters of 1-3
controllers' full copies and sometimes a broker's lagging one, written by the project's writers.
Every side does the same work:

* readiness: every copy's reach, then each cluster's furthest copy replayed and assessed toward
  4.3-IV0 (``assess_local`` in one process; ``assess_clusters`` over the ``kafka-metadata``
  DataFrame on Spark, session start-up and JVM warm-up excluded);
* records: every record of every copy read as a row -- the ``kafka-metadata`` source into Spark's
  ``noop`` sink, ``scan_metadata`` in one process -- against the image layer replaying every copy
  from its files (``load_log_dir``: decode + replay, the single-process replay).

Each figure is the best of ``--repeats``; ratios are against a peer measured in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.readiness.generator import MetadataFleet, fleet_on_tmpfs

from kraftwerk.image.source import load_log_dir
from kraftwerk.readiness.fleet import assess_local
from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR
from kraftwerk.storage.metadata_scan import scan_metadata
from kraftwerk.versions.metadata_version import MetadataVersion

TARGET = MetadataVersion.IBP_4_3_IV0


def best(func: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def _copies(fleet: MetadataFleet) -> list[Path]:
    return sorted(p.parent for p in (fleet.root / "metadata").rglob(METADATA_PARTITION_DIR))


def replay_every_copy(fleet: MetadataFleet) -> int:
    replayed = 0
    for copy in _copies(fleet):
        # the seeded corrupt copies: read up to the damage, as the scan does
        with contextlib.suppress(Exception):
            load_log_dir(copy / METADATA_PARTITION_DIR)
        replayed += 1
    return replayed


def spark_figures(master: str, fleet: MetadataFleet, repeats: int, warmup: int) -> dict[str, float]:
    from kraftwerk.spark.metadata_source import read_metadata
    from kraftwerk.spark.readiness import assess_clusters
    from kraftwerk.spark.session import build_session

    spark = build_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    dirs = [str(fleet.root / "metadata")]

    def source() -> None:
        read_metadata(spark, dirs).write.format("noop").mode("overwrite").save()

    def readiness() -> None:
        assess_clusters(read_metadata(spark, dirs), TARGET)

    try:
        for _ in range(warmup):
            source()
            readiness()
        return {"source": best(source, repeats), "readiness": best(readiness, repeats)}
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with fleet_on_tmpfs(args.clusters) as fleet:
        dirs = [str(fleet.root / "metadata")]
        rows = sum(1 for _ in scan_metadata(dirs))
        copies = len(_copies(fleet))
        def count_rows() -> int:
            return sum(1 for _ in scan_metadata(dirs))

        results: dict[str, Any] = {
            "one process: readiness": best(lambda: assess_local(dirs, TARGET), args.repeats),
            "one process: rows (scan_metadata)": best(count_rows, args.repeats),
            "one process: replay (load_log_dir)": best(lambda: replay_every_copy(fleet), args.repeats),
        }
        for master in ("local[1]", "local[2]"):
            figures = spark_figures(master, fleet, args.repeats, args.warmup)
            results[f"{master}: readiness"] = figures["readiness"]
            results[f"{master}: rows (kafka-metadata source)"] = figures["source"]
    print(f"fleet: {args.clusters} clusters, {copies} metadata copies, {rows} records; load average "
          f"{load:.1f} at start, {os.getloadavg()[0]:.1f} at end")
    print()
    print("| readiness job | seconds | clusters/s | vs one process | vs local[1] |")
    print("|---|---:|---:|---:|---:|")
    one = results["one process: readiness"]
    for name in ("one process: readiness", "local[1]: readiness", "local[2]: readiness"):
        s = results[name]
        print(f"| {name.split(':')[0]} | {s:.2f} | {args.clusters / s:,.0f} | {one / s:.2f}x | "
              f"{results['local[1]: readiness'] / s:.2f}x |")
    print()
    print("| every record of every copy | seconds | records/s | vs single-process replay |")
    print("|---|---:|---:|---:|")
    replay = results["one process: replay (load_log_dir)"]
    for name in ("one process: replay (load_log_dir)", "one process: rows (scan_metadata)",
                 "local[1]: rows (kafka-metadata source)", "local[2]: rows (kafka-metadata source)"):
        s = results[name]
        print(f"| {name} | {s:.2f} | {rows / s:,.0f} | {replay / s:.2f}x |")


if __name__ == "__main__":
    main()
