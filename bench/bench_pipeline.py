"""Spark pipeline throughput: fleet scan (GB/s) and up-conversion (MB/s of input), same run as peers.

Usage: .venv/bin/python -m bench.bench_pipeline [--scan-mb 1024] [--upconvert-mb 48] [--large-scan-mb 4096]
       [--repeats 3]

Spark's fixed cost per job (listing, planning, Python workers, Arrow hand-over) is measured on its
own: the same jobs over a one-segment, one-batch log dir. The tables then also show each Spark
throughput with that fixed cost taken out ("marginal"), i.e. what a fleet large enough to amortise
it approaches.

Scan input: segments of 64 MiB, ~90 % v2 batches (100 records of ~150 B, none and lz4) and ~10 % v1 gzip
wrappers (50 messages). Every side produces the same batch-level facts (offsets, magic, codec, record
count, size, timestamps, CRC check): kraftwerk on Spark ``local[1]`` and ``local[2]`` (the ``kafka-log``
source into Spark's ``noop`` sink; listing included, session start-up and JIT warm-up excluded),
kraftwerk in one process without Spark, and one process each of kafka-python and aiokafka (C) reading
batches with their ``MemoryRecords``. The disk-read line is a plain sequential read of the same files
(from the page cache: they were just written). The "cold" lines first evict the files from the page
cache (``POSIX_FADV_DONTNEED``), so they read from the disk as a scan of a real fleet does: "close to
disk-read speed" compares each cold Spark scan with cold sequential reads taken right before and right
after it. A second, larger fleet (``--large-scan-mb``, 4 GiB) is scanned cold the same way, where
Spark's fixed cost per job (~0.1 s to plan and launch, before the first byte is read) amortises, as
in a fleet scan of terabytes. Next to each Spark scan runs its "page-touch floor": the same job with
the scan taken out (same listing, input partitions and number of rows; each task only faults in every
page of its segments), which tells Spark's own cost from the scan's. Spark rows are measured after
``--jvm-warmup`` scans: the driver JVM keeps compiling Spark's own code for about 20 queries, and the
bench reports the first scan's time separately.

Up-conversion input: v0/v1 segments of 8 MiB, half uncompressed messages (200 B values), half
gzip/snappy/lz4 wrappers of 20 messages. Each side does the same work per segment: convert every
batch to v2 (one v2 batch per v0/v1 batch, same codec, same offsets), write the new segment, read it
back and compare every record with the original. kraftwerk also builds the new segment's indexes.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import platform
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiokafka.record.memory_records as aio_records
import kafka.record as kp_records
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from pyspark.sql.datasource import DataSourceReader

from kraftwerk.records import CompressionType, RecordsBuilder, TimestampType
from kraftwerk.spark.source import KafkaLogDataSource, KafkaLogReader, list_segments_with_spark
from kraftwerk.storage.scan import iter_batch_columns, scan_segments
from kraftwerk.storage.segment import RELEASE_INTERVAL_BYTES, SegmentReader
from kraftwerk.storage.segment_splits import discover_segments
from kraftwerk.storage.upconvert import upconvert_log_dirs

MIB = 1024 * 1024
_OFFSET = struct.Struct(">q")


# ---------------------------------------------------------------------- data

def _v2_template(codec: CompressionType, seed: int) -> bytes:
    b = RecordsBuilder(2, codec, TimestampType.CREATE_TIME, 0)
    for i in range(100):
        value = (b"%08d-" % (seed * 1000 + i)) * 16 + bytes(range(i % 20))
        b.append(1_700_000_000_000 + i, b"key-%d" % i, value)
    return b.build()


def _v1_wrapper_template() -> bytes:
    b = RecordsBuilder(1, CompressionType.GZIP, TimestampType.CREATE_TIME, 0)
    for i in range(50):
        b.append(1_600_000_000_000 + i, b"old-%d" % i, (b"legacy-%05d|" % i) * 12)
    return b.build()


def make_scan_fleet(root: Path, total_mb: int, segment_mb: int = 64) -> int:
    """v2 + v1 segments built from templates with patched offsets (offsets are outside the CRCs)."""
    templates = [(_v2_template(CompressionType.NONE, 1), 100), (_v2_template(CompressionType.LZ4, 2), 100)]
    wrapper = _v1_wrapper_template()
    written = 0
    part = 0
    while written < total_mb * MIB:
        d = root / "data" / f"scan-{part}"
        d.mkdir(parents=True)
        offset = 0
        out = bytearray()
        i = 0
        while len(out) < segment_mb * MIB:
            if i % 10 == 9:
                chunk = bytearray(wrapper)
                _OFFSET.pack_into(chunk, 0, offset + 49)  # a wrapper carries its last offset
                offset += 50
            else:
                tpl, n = templates[i % 2]
                chunk = bytearray(tpl)
                _OFFSET.pack_into(chunk, 0, offset)
                offset += n
            out += chunk
            i += 1
        (d / "00000000000000000000.log").write_bytes(out)
        written += len(out)
        part += 1
    return written


def make_legacy_fleet(root: Path, total_mb: int, segment_mb: int = 8) -> int:
    codecs = (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4)
    written = 0
    part = 0
    while written < total_mb * MIB:
        d = root / "data" / f"legacy-{part}"
        d.mkdir(parents=True)
        offset = 0
        chunks: list[bytes] = []
        size = 0
        i = 0
        while size < segment_mb * MIB:
            magic = i % 2
            n = 20
            if i % 4 < 2:
                codec = CompressionType.NONE
            elif magic == 0:  # aiokafka cannot read lz4 at magic 0 (Kafka's broken lz4 framing)
                codec = codecs[(i // 4) % 2]
            else:
                codec = codecs[(i // 4) % 3]
            b = RecordsBuilder(magic, codec, TimestampType.CREATE_TIME, offset)
            for j in range(n):
                b.append(1_600_000_000_000 + offset + j, b"k%d" % (offset + j), (b"%06d" % j) * 33 + b"xy")
            data = b.build()
            chunks.append(data)
            size += len(data)
            offset += n
            i += 1
        (d / "00000000000000000000.log").write_bytes(b"".join(chunks))
        written += size
        part += 1
    return written


def _files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.log"))


# ---------------------------------------------------------------------- peers

def _split(data: bytes) -> list[memoryview]:
    mv = memoryview(data)
    out = []
    pos = 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big")
        out.append(mv[pos:pos + 12 + size])
        pos += 12 + size
    return out


def _runs(data: bytes) -> list[tuple[int, bytes]]:
    """Consecutive batches of one magic: aiokafka's MemoryRecords reads a whole buffer at the magic
    of its first batch, so a mixed-format segment must be fed to it run by run."""
    out: list[tuple[int, bytes]] = []
    start = 0
    magic = -1
    pos = 0
    for raw in _split(data):
        m = raw[16]
        if m != magic and pos > start:
            out.append((magic, data[start:pos]))
            start = pos
        magic = m
        pos += len(raw)
    if pos > start:
        out.append((magic, data[start:pos]))
    return out


def _peer_records(module: Any, data: bytes) -> list[tuple[Any, ...]]:
    out = []
    for _, run in _runs(data):
        mr = module.MemoryRecords(run)
        for batch in iter(mr.next_batch, None):
            out += [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value) for r in batch]
    return out


def peer_scan(module: Any, files: list[Path]) -> int:
    """Batch facts through a peer's MemoryRecords (its batch objects; count via inner messages)."""
    rows = 0
    for f in files:
        for magic, run in _runs(f.read_bytes()):
            records = module.MemoryRecords(run)
            for batch in iter(records.next_batch, None):
                ok = batch.validate_crc()
                if magic >= 2:
                    facts = (batch.base_offset, batch.last_offset_delta + 1, batch.compression_type,
                             batch.max_timestamp, batch.is_transactional, batch.is_control_batch, ok)
                else:
                    count = 0
                    first = last = None
                    for r in batch:
                        count += 1
                        if first is None:
                            first = r.offset
                        last = r.offset
                    facts = (first, count, run[17] & 7, last, ok)  # codec: attribute bits
                rows += facts is not None
    return rows


def peer_upconvert(module: Any, builder_cls: Any, files: list[Path], out: Path) -> int:
    """Convert, write, read back and compare, with a peer's reader and v2 builder."""
    total = 0
    for f in files:
        old = f.read_bytes()
        total += len(old)
        parts = []
        for raw in _split(old):
            batch = module.MemoryRecords(bytes(raw)).next_batch()
            recs = list(batch)
            base = recs[0].offset
            b = builder_cls(2, raw[17] & 7, False, -1, -1, -1, 1 << 24)  # codec: attribute bits
            for r in recs:
                b.append(r.offset - base, r.timestamp if r.timestamp is not None else -1, r.key, r.value, [])
            built = bytearray(b.build())
            _OFFSET.pack_into(built, 0, base)  # the builder writes base offset 0; it is not in the CRC
            parts.append(bytes(built))
        target = out / f.parent.name / f.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(parts))
        if _peer_records(module, old) != _peer_records(module, target.read_bytes()):
            raise SystemExit(f"{module.__name__}: conversion of {f} does not verify")
    return total


# ---------------------------------------------------------------------- spark

def spark_session(master: str) -> Any:
    from kraftwerk.spark.session import build_session

    spark = build_session(master)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def spark_scan(spark: Any, root: Path) -> int:
    from kraftwerk.spark.source import read_log_dirs

    read_log_dirs(spark, [str(root / "data")]).write.format("noop").mode("overwrite").save()
    return 0


def spark_upconvert(spark: Any, root: Path, out: Path) -> None:
    from kraftwerk.spark.jobs import upconvert_job

    res = upconvert_job(spark, [str(root / "data")], in_place=False, out_dir=out, dry_run=False)
    if any(o.status.is_problem for o in res):
        raise SystemExit(f"upconvert failed: {[o for o in res if o.status.is_problem][:3]}")


# ---------------------------------------------------------------------- Spark's own floor

class PageTouchReader(DataSourceReader):
    """The scan's Spark job with the scan taken out: the ``kafka-log`` source's input partitions, each
    task mapping its segments, touching every page and releasing it per window as the scan does, and
    handing Spark as many batch rows as the scan would (real rows, repeated). What is left is what
    any scanner pays on Spark: listing, planning, tasks, page faults and the JVM taking the rows."""

    def __init__(self, scan: KafkaLogReader, rows_per_byte: float) -> None:
        self.scan = scan
        self.rows_per_byte = rows_per_byte

    def partitions(self) -> Any:
        return self.scan.partitions()

    def read(self, partition: Any) -> Any:
        import numpy as np
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(self.scan.schema, timezone="UTC")
        some = next(iter_batch_columns(partition.splits[:1], max_rows=256)).to_arrow(schema)
        rows = pa.concat_batches([some] * -(-self.scan.batch_rows // some.num_rows))
        owed = 0.0
        for split in partition.splits:
            with SegmentReader(Path(split.segment.path)) as reader:
                data = np.frombuffer(reader.data, dtype=np.uint8)
                for start in range(split.start, split.end, RELEASE_INTERVAL_BYTES):
                    stop = min(split.end, start + RELEASE_INTERVAL_BYTES)
                    data[start:stop:mmap.PAGESIZE].max()
                    reader.release(start, stop)
                    owed += (stop - start) * self.rows_per_byte
                    while owed >= rows.num_rows:
                        yield rows
                        owed -= rows.num_rows
                del data
        if owed >= 1:
            yield rows.slice(0, round(owed))


class PageTouchSource(KafkaLogDataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-log-page-touch"

    def reader(self, schema: Any) -> DataSourceReader:
        scan = super().reader(schema)  # also keeps the listing out of what every task unpickles
        assert isinstance(scan, KafkaLogReader)
        return PageTouchReader(scan, float(self.options["rowsPerByte"]))


def spark_page_touch(spark: Any, root: Path, rows_per_byte: float) -> None:
    listing = list_segments_with_spark(spark, [str(root / "data")])
    (spark.read.format(PageTouchSource.name()).option("listing", json.dumps(listing))
     .option("minPartitions", str(spark.sparkContext.defaultParallelism))
     .option("rowsPerByte", str(rows_per_byte)).load().write.format("noop").mode("overwrite").save())


def timed(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def evict(files: list[Path]) -> None:
    """Drop the files' pages from the page cache (they were synced after writing), so the next read
    comes from the disk: a fleet scan reads terabytes, which no page cache holds."""
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _read_all(files: list[Path]) -> None:
    for f in files:
        with f.open("rb", buffering=0) as fh:
            while fh.read(8 * MIB):
                pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scan-mb", type=int, default=1024)
    ap.add_argument("--upconvert-mb", type=int, default=48)
    ap.add_argument("--large-scan-mb", type=int, default=4096,
                    help="a second, larger fleet scanned cold on Spark, where the job's fixed cost "
                         "amortises (0 skips it)")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jvm-warmup", type=int, default=20,
                    help="scans run before measuring each Spark configuration (the JIT's warm-up)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="kraftwerk-bench-"))
    scan_root, up_root, large_root = work / "scan", work / "legacy", work / "scan-large"
    for p in (scan_root, up_root, large_root):
        shutil.rmtree(p, ignore_errors=True)
    scan_bytes = make_scan_fleet(scan_root, args.scan_mb)
    large_bytes = make_scan_fleet(large_root, args.large_scan_mb) if args.large_scan_mb else 0
    up_bytes = make_legacy_fleet(up_root, args.upconvert_mb)
    tiny_root = work / "tiny"
    shutil.rmtree(tiny_root, ignore_errors=True)
    tiny = (("tiny-scan", _v2_template(CompressionType.NONE, 3)), ("tiny-legacy", _v1_wrapper_template()))
    for name, data in tiny:
        (tiny_root / "data" / f"{name}-0").mkdir(parents=True)
        (tiny_root / "data" / f"{name}-0" / "00000000000000000000.log").write_bytes(data)
    scan_files, up_files, large_files = _files(scan_root), _files(up_root), _files(large_root)
    # both scan fleets are cut from the same templates: the floor hands Spark this many rows per byte
    rows_per_byte = sum(1 for _ in scan_segments(discover_segments([scan_root / "data"]))) / scan_bytes
    os.sync()  # dirty pages cannot be evicted
    load = os.getloadavg()
    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load[0]:.1f} at start")
    print(f"scan input {scan_bytes / MIB:.0f} MiB in {len(scan_files)} segments; "
          f"up-conversion input {up_bytes / MIB:.0f} MiB in {len(up_files)} segments")
    r = args.repeats
    scan_dir, up_dir = scan_root / "data", up_root / "data"
    results: dict[str, float] = {}

    def record(name: str, func: Callable[[], object]) -> None:
        results[name] = min(results.get(name, float("inf")), timed(func))

    def record_cold(name: str, func: Callable[[], object], files: list[Path] = scan_files) -> float:
        evict(files)
        start = time.perf_counter()
        func()
        took = time.perf_counter() - start
        results[name] = min(results.get(name, float("inf")), took)
        return took

    # this machine's disk speed swings 2x from minute to minute: each cold Spark scan is compared
    # with the mean of cold sequential reads taken right before and right after it, and the median
    # of these per-scan ratios is reported
    cold_shares: dict[str, list[float]] = {}
    # each cold scan also against the cold page-touch floor run right after it (the same disk spell)
    floor_shares: dict[str, list[float]] = {}
    # the driver JVM keeps compiling Spark's own code for ~20 queries (~0.6 s of CPU per 1 GiB
    # scan on the 2nd query, ~0.25 s from the 20th): Spark rows are measured after that warm-up
    warmups: dict[str, tuple[float, float]] = {}

    def cold_share(name: str, suffix: str, label: str, job: Callable[[], object], files: list[Path]) -> float:
        """One cold Spark job against the mean of cold reads of the same files just before and after;
        returns the job's time."""
        before = record_cold(f"disk read, cold{suffix}", lambda: _read_all(files), files)
        took = record_cold(f"{name}, cold{suffix}", job, files)
        after = record_cold(f"disk read, cold{suffix}", lambda: _read_all(files), files)
        cold_shares.setdefault(label, []).append((before + after) / 2 / took)
        return took

    def cold_scan_and_floor(master: str, suffix: str, label: str, scan: Callable[[], object],
                            floor: Callable[[], object], files: list[Path]) -> None:
        took = cold_share(f"scan spark {master}", suffix, label, scan, files)
        floor_took = cold_share(f"page-touch floor {master}", suffix, f"{label} page-touch floor", floor,
                                files)
        floor_shares.setdefault(label, []).append(floor_took / took)

    def up_peer(module: Any, builder: Any) -> Callable[[], object]:
        def run() -> object:
            out = work / "peer-out"
            shutil.rmtree(out, ignore_errors=True)
            return peer_upconvert(module, builder, up_files, out)
        return run

    def up_ours() -> object:
        out = work / "ours-out"
        shutil.rmtree(out, ignore_errors=True)
        return upconvert_log_dirs([up_dir], out_dir=out)

    baselines: dict[str, Callable[[], object]] = {
        "scan kafka-python": lambda: peer_scan(kp_records, scan_files),
        "upconvert kafka-python": up_peer(kp_records, KpBuilder),
    }
    single: dict[str, Callable[[], object]] = {
        "disk read": lambda: _read_all(scan_files),
        "scan aiokafka": lambda: peer_scan(aio_records, scan_files),
        "scan kraftwerk 1 process": lambda: sum(1 for _ in scan_segments(discover_segments([scan_dir]))),
        "upconvert aiokafka": up_peer(aio_records, AioBuilder),
        "upconvert kraftwerk 1 process": up_ours,
        "legacy scan kafka-python": lambda: peer_scan(kp_records, up_files),
        "legacy scan aiokafka": lambda: peer_scan(aio_records, up_files),
        "legacy scan kraftwerk 1 process": lambda: sum(1 for _ in scan_segments(discover_segments([up_dir]))),
    }
    # round robin (best of r each), so a busy spell of the shared machine hits every contender;
    # the kafka-python baseline is measured again next to each Spark configuration
    cold: dict[str, Callable[[], object]] = {
        "disk read, cold": lambda: _read_all(scan_files),
        "scan kraftwerk 1 process, cold": single["scan kraftwerk 1 process"],
    }
    for _ in range(r):
        for name, func in {**baselines, **single}.items():
            record(name, func)
        for name, func in cold.items():
            record_cold(name, func)
    for master in ("local[1]", "local[2]"):
        spark = spark_session(master)
        start = time.perf_counter()
        spark_scan(spark, scan_root)
        first = time.perf_counter() - start
        for _ in range(args.jvm_warmup - 1):
            spark_scan(spark, scan_root)
        warmups[master] = (first, time.perf_counter() - start)

        def up_spark(spark: Any = spark, root: Path = up_root) -> None:
            out = work / "spark-out"
            shutil.rmtree(out, ignore_errors=True)
            spark_upconvert(spark, root, out)

        for _ in range(max(1, args.jvm_warmup // 4)):
            up_spark(spark, tiny_root)
        spark.dataSource.register(PageTouchSource)
        for _ in range(max(1, args.jvm_warmup // 4)):
            spark_page_touch(spark, scan_root, rows_per_byte)

        def touch(spark: Any = spark, root: Path = scan_root) -> None:
            spark_page_touch(spark, root, rows_per_byte)

        for _ in range(r):
            record(f"scan spark {master}", lambda spark=spark: spark_scan(spark, scan_root))
            record(f"page-touch floor {master}", touch)
            cold_scan_and_floor(master, "", master, lambda spark=spark: spark_scan(spark, scan_root), touch,
                                scan_files)
            record(f"upconvert spark {master}", up_spark)
            record(f"scan job overhead {master}", lambda spark=spark: spark_scan(spark, tiny_root))
            record(f"upconvert job overhead {master}", lambda spark=spark: up_spark(spark, tiny_root))
            for name, func in baselines.items():
                record(name, func)
        for _ in range(r if large_files else 0):
            cold_scan_and_floor(master, ", large", f"{master}, {large_bytes / MIB:.0f} MiB",
                                lambda spark=spark: spark_scan(spark, large_root),
                                lambda spark=spark: touch(spark, large_root), large_files)
        spark.stop()
    print()
    print("| scan (batch rows) | seconds | GB/s | vs kafka-python | vs aiokafka |")
    print("|---|---:|---:|---:|---:|")
    for k in ("disk read", "scan kafka-python", "scan aiokafka", "scan kraftwerk 1 process",
              "scan spark local[1]", "scan spark local[2]", "page-touch floor local[1]",
              "page-touch floor local[2]", "disk read, cold", "scan kraftwerk 1 process, cold",
              "scan spark local[1], cold", "scan spark local[2], cold", "page-touch floor local[1], cold",
              "page-touch floor local[2], cold"):
        s = results[k]
        print(f"| {k} | {s:.2f} | {scan_bytes / s / 1e9:.2f} | {results['scan kafka-python'] / s:.2f}x "
              f"| {results['scan aiokafka'] / s:.2f}x |")
    print()
    print("| up-conversion (convert + write + verify) | seconds | MB/s of input | vs kafka-python "
          "| vs aiokafka |")
    print("|---|---:|---:|---:|---:|")
    for k in ("upconvert kafka-python", "upconvert aiokafka", "upconvert kraftwerk 1 process",
              "upconvert spark local[1]", "upconvert spark local[2]"):
        s = results[k]
        print(f"| {k} | {s:.2f} | {up_bytes / s / 1e6:.1f} | {results['upconvert kafka-python'] / s:.2f}x "
              f"| {results['upconvert aiokafka'] / s:.2f}x |")
    print()
    print("| scan of the up-conversion input (v0/v1 only), 1 process | seconds | MB/s | vs kafka-python |")
    print("|---|---:|---:|---:|")
    for k in ("legacy scan kafka-python", "legacy scan aiokafka", "legacy scan kraftwerk 1 process"):
        s = results[k]
        ratio = results["legacy scan kafka-python"] / s
        print(f"| {k} | {s:.2f} | {up_bytes / s / 1e6:.1f} | {ratio:.2f}x |")
    print()
    print("| Spark, fixed cost taken out | job overhead (s) | marginal seconds | marginal rate |")
    print("|---|---:|---:|---:|")
    for master in ("local[1]", "local[2]"):
        for kind, size, unit, scale in (("scan", scan_bytes, "GB/s", 1e9),
                                        ("upconvert", up_bytes, "MB/s", 1e6)):
            fixed = results[f"{kind} job overhead {master}"]
            marginal = results[f"{kind} spark {master}"] - fixed
            rate = f"{size / marginal / scale:.2f} {unit}" if marginal > 0.05 else "within noise"
            print(f"| {kind} `{master}` | {fixed:.2f} | {marginal:.2f} | {rate} |")
    print()
    scan_scaling = results["scan spark local[1]"] / results["scan spark local[2]"]
    up_scaling = results["upconvert spark local[1]"] / results["upconvert spark local[2]"]
    for master, (first, total) in warmups.items():
        print(f"JVM warm-up on {master}: first scan {first:.1f} s, {args.jvm_warmup} scans {total:.1f} s")
    for label, shares in cold_shares.items():
        shares.sort()
        print(f"cold Spark {label}: {statistics.median(shares):.0%} of the cold sequential read's "
              f"throughput (median of {len(shares)} jobs, each against the cold reads just before and "
              f"after it; range {shares[0]:.0%}-{shares[-1]:.0%})")
    for label, shares in floor_shares.items():
        shares.sort()
        print(f"cold scan on Spark {label}: {statistics.median(shares):.0%} of its page-touch floor's "
              f"throughput (median of {len(shares)} pairs, each scan against the floor run right after "
              f"it; range {shares[0]:.0%}-{shares[-1]:.0%})")
    print(f"scaling local[1] -> local[2]: scan {scan_scaling:.2f}x, upconvert {up_scaling:.2f}x; "
          f"load average at end {os.getloadavg()[0]:.1f}")
    print(json.dumps({k: round(v, 3) for k, v in results.items()}))
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
