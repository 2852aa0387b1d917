"""Metadata image at scale: cold load of a synthetic metadata log directory and a hot delta.

Usage: .venv/bin/python -m bench.bench_image [--topics 10000] [--partitions 1000000] [--json]
       .venv/bin/python -m bench.bench_image --topics 100000 --partitions 10000000 --load-only --no-pure
       .venv/bin/python -m bench.bench_image --rounds 5 --base-src ../main/src   # before/after a change

The synthetic log is what a controller writes for a cluster of that size: metadata.version,
broker registrations, then per topic a TopicRecord, a ConfigRecord and its PartitionRecords
(3 replicas, directories), in batches of ``--batch-records`` records, written as the
``00000000000000000000.log`` segment of a ``__cluster_metadata-0`` directory. Reported:

* generation time (encoding and writing the log; not part of the load figure);
* cold load (``kraftwerk.image.load_log_dir``: files -> batches -> records -> image) in a fresh
  child process, as a broker or controller does at start-up: seconds, records/s, the child's peak
  RSS (interpreter included) and the RSS the image holds per partition;
* the same load again in the child with ``KRAFTWERK_PURE=1`` (the pure-Python path);
* with ``--base-src``, the same load by another checkout's ``src`` (its compiled twins built in
  place), the two taking turns for ``--rounds`` rounds so that load from other processes hits both
  alike: the before/after of a change, in one run. Every load figure is the best round's.
* hot delta: time to apply a one-partition PartitionChangeRecord to the big image, next to the
  same on a 10-topic image (it should not grow with the image);
* writing the image back at its own version (records/s).

The peer is Kafka's own replay of the same log (``MetadataLoader``), which needs a Kafka
installation this machine does not have: its figure (~3 s for 1 M partitions on this machine
kind) comes from issue 26 and is not measured in this run.

Performance is reported, never asserted. Run it smaller with e.g. ``--topics 100 --partitions 10000``.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from bench.common import best_rate
from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.loader import MetadataBatch, replay_batches
from kraftwerk.image.model import MetadataImage
from kraftwerk.image.source import load_log_dir
from kraftwerk.image.writer import write_image
from kraftwerk.protocol import codec
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record, encode_metadata_record
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.records.batch import iter_batches
from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.versions.metadata_version import MetadataVersion

log = logging.getLogger("bench_image")
ROOT = Path(__file__).resolve().parents[1]
MV = MetadataVersion.IBP_4_3_IV0


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _frame(record_name: str, version: int, /, **fields: object) -> bytes:
    spec = lookup_record(record_name)
    value = codec.default_value(spec)
    value.update(fields)
    return encode_metadata_record(spec, version, value)


def _values(topics: int, partitions: int, brokers: int) -> Iterator[bytes]:
    """The framed records of the cluster, in log order."""
    dirs = [uuid.UUID(int=(b + 1) << 64 | 0x1234) for b in range(brokers)]
    yield _frame("FeatureLevelRecord", 0, name="metadata.version", featureLevel=MV.feature_level)
    for b in range(brokers):
        yield _frame(
            "RegisterBrokerRecord", MV.register_broker_record_version(), brokerId=b,
            incarnationId=uuid.UUID(int=b + 1), brokerEpoch=100 + b, fenced=False, logDirs=[dirs[b]],
            endPoints=[{"name": "PLAINTEXT", "host": f"broker-{b}", "port": 9092, "securityProtocol": 0}],
            features=[{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 30}])
    per_topic, extra = divmod(partitions, topics)
    pv = MV.partition_record_version()
    for t in range(topics):
        tid = uuid.UUID(int=(t + 1) << 64 | 0xBEEF)
        yield _frame("TopicRecord", 0, name=f"topic-{t:06d}", topicId=tid)
        yield _frame("ConfigRecord", 0, resourceType=2, resourceName=f"topic-{t:06d}",
                     name="retention.ms", value="604800000")
        for p in range(per_topic + (1 if t < extra else 0)):
            replicas = [(t + p + i) % brokers for i in range(min(3, brokers))]
            yield _frame("PartitionRecord", pv, partitionId=p, topicId=tid, replicas=replicas,
                         isr=replicas, leader=replicas[0], leaderEpoch=0, partitionEpoch=0,
                         directories=[dirs[r] for r in replicas])


def synthetic_batches(topics: int, partitions: int, brokers: int, batch_records: int) -> Iterator[bytes]:
    """The log's batches, one at a time (a 10 M-partition log is never held in memory)."""
    values = _values(topics, partitions, brokers)
    offset = 0
    while True:
        builder = RecordsBuilder(base_offset=offset, partition_leader_epoch=1)
        for v in itertools.islice(values, batch_records):
            builder.append(1_700_000_000_000, None, v)
        if builder.next_offset() == offset:
            return
        offset = builder.next_offset()
        yield builder.build()


def synthetic_log(topics: int, partitions: int, brokers: int, batch_records: int) -> tuple[bytes, int]:
    """The log bytes and the record count."""
    data = b"".join(synthetic_batches(topics, partitions, brokers, batch_records))
    return data, sum(b.record_count for b in iter_batches(data))


def batches_of(data: bytes) -> Iterator[MetadataBatch]:
    """Decoded batches, streamed (the whole log is never decoded at once)."""
    for b in iter_batches(data):
        recs = tuple((r.offset, decode_metadata_record(bytes(r.value or b""))) for r in b.records())
        yield MetadataBatch(b.base_offset, b.last_offset, b.partition_leader_epoch, b.max_timestamp, recs)


def _change_record(image: MetadataImage) -> MetadataRecord:
    topic = image.topics.by_name[min(image.topics.by_name)]
    part = topic.partitions[0]
    spec = lookup_record("PartitionChangeRecord")
    value = codec.default_value(spec)
    value.update(partitionId=0, topicId=topic.id, isr=list(part.replicas[:1]))
    return MetadataRecord(spec, MV.partition_record_version(), value)


def hot_delta_rate(image: MetadataImage) -> float:
    """One-partition deltas applied per second to ``image``."""
    change = _change_record(image)

    def one() -> None:
        delta = MetadataDelta(image)
        delta.replay(change)
        delta.apply(image.provenance)

    return best_rate(one)


def load_in_child(directory: Path, *, pure: bool, src: Path | None = None) -> dict[str, float]:
    """``--load-only`` in a fresh interpreter: what a node pays at start-up, RSS included; ``src``
    is another checkout's ``src`` to load with instead of this one's."""
    env = dict(os.environ)
    env.pop("KRAFTWERK_PURE", None)
    if pure:
        env["KRAFTWERK_PURE"] = "1"
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), str(ROOT)])
    out = subprocess.run([sys.executable, "-m", "bench.bench_image", "--child", str(directory)], env=env,
                         check=True, capture_output=True, text=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def load_only(directory: Path) -> dict[str, float]:
    gc.collect()
    rss_before = _rss_bytes()
    t0 = time.perf_counter()
    c0 = time.process_time()
    image = load_log_dir(directory)
    load_s = time.perf_counter() - t0
    load_cpu_s = time.process_time() - c0
    gc.collect()
    parts = image.topics.partition_count()
    return {"load_s": load_s, "load_cpu_s": load_cpu_s, "partitions": parts,
            "peak_rss_bytes": _peak_rss_bytes(), "image_rss_bytes": _rss_bytes() - rss_before}


def run(topics: int, partitions: int, brokers: int, batch_records: int, *, pure_too: bool, in_process: bool,
        rounds: int = 1, base_src: Path | None = None) -> dict[str, object]:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-image-") as tmp:
        directory = Path(tmp) / "__cluster_metadata-0"
        directory.mkdir()
        count = log_bytes = 0
        with open(directory / "00000000000000000000.log", "wb") as f:
            for batch in synthetic_batches(topics, partitions, brokers, batch_records):
                f.write(batch)
                log_bytes += len(batch)
                count += next(iter_batches(batch)).record_count
        gen_s = time.perf_counter() - t0
        loads: list[dict[str, float]] = []
        base_loads: list[dict[str, float]] = []
        for _ in range(rounds):
            loads.append(load_in_child(directory, pure=False))
            if base_src is not None:
                base_loads.append(load_in_child(directory, pure=False, src=base_src))
        child = min(loads, key=lambda r: r["load_s"])
        pure = load_in_child(directory, pure=True) if pure_too else None
    n_parts = int(child["partitions"])
    result: dict[str, object] = {
        "python": platform.python_version(),
        "topics": topics,
        "partitions": n_parts,
        "records": count,
        "log_bytes": log_bytes,
        "generate_s": round(gen_s, 2),
        "load_s": round(child["load_s"], 2),
        "load_cpu_s": round(min(r["load_cpu_s"] for r in loads), 2),
        "load_records_per_s": round(count / child["load_s"]),
        "load_peak_rss_mb": round(child["peak_rss_bytes"] / 2**20, 1),
        "image_rss_bytes_per_partition": round(child["image_rss_bytes"] / max(n_parts, 1)),
    }
    if base_loads:
        base = min(base_loads, key=lambda r: r["load_s"])
        result["base_load_s"] = round(base["load_s"], 2)
        base_cpu = min(r["load_cpu_s"] for r in base_loads)
        result["base_load_cpu_s"] = round(base_cpu, 2)
        result["base_load_peak_rss_mb"] = round(base["peak_rss_bytes"] / 2**20, 1)
        result["base_over_this_wall"] = round(base["load_s"] / child["load_s"], 2)
        result["base_over_this_cpu"] = round(base_cpu / min(r["load_cpu_s"] for r in loads), 2)
    if pure is not None:
        result["pure_load_s"] = round(pure["load_s"], 2)
        result["pure_load_cpu_s"] = round(pure["load_cpu_s"], 2)
        result["pure_load_peak_rss_mb"] = round(pure["peak_rss_bytes"] / 2**20, 1)
    if in_process:
        data, _ = synthetic_log(topics, partitions, brokers, batch_records)
        image = replay_batches(batches_of(data))
        small, _ = synthetic_log(10, 100, brokers, batch_records)
        hot_big = hot_delta_rate(image)
        hot_small = hot_delta_rate(replay_batches(batches_of(small)))
        t0 = time.perf_counter()
        written = write_image(image)
        write_s = time.perf_counter() - t0
        result.update({
            "hot_delta_us_big": round(1e6 / hot_big, 1),
            "hot_delta_us_10_topics": round(1e6 / hot_small, 1),
            "write_s": round(write_s, 2),
            "write_records_per_s": round(len(written.records) / write_s),
        })
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--partitions", type=int, default=1_000_000, help="total partitions")
    parser.add_argument("--brokers", type=int, default=12)
    parser.add_argument("--batch-records", type=int, default=1000)
    parser.add_argument("--no-pure", action="store_true", help="skip the pure-Python load")
    parser.add_argument("--load-only", dest="load_only_sizes", action="store_true",
                        help="only the child loads (no hot delta, no write-back: for 10 M partitions)")
    parser.add_argument("--rounds", type=int, default=1, help="compiled cold loads (best kept)")
    parser.add_argument("--base-src", type=Path,
                        help="another checkout's src (twins built) to load the same log, taking turns")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # the child's entry
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.child is not None:
        json.dump(load_only(args.child), sys.stdout)
        return 0
    result = run(args.topics, args.partitions, args.brokers, args.batch_records, pure_too=not args.no_pure,
                 in_process=not args.load_only_sizes, rounds=max(1, args.rounds), base_src=args.base_src)
    if args.json:
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
    else:
        for key, value in result.items():
            sys.stdout.write(f"{key:32} {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
