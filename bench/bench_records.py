"""Record-batch decode and v1->v2 up-conversion against kafka-python, aiokafka and kio, in one run.

Usage: .venv/bin/python -m bench.bench_records

Decode: 20,000 records in v2 batches of 200, values of 100 B and 1 KiB, codecs none/lz4/zstd;
every side touches each record's key and value; kio (``kio.records.readers.read_batch``, which
checks the CRC and reads uncompressed batches only) joins for codec none. kraftwerk runs its active
path (the compiled twin when built, see ``kraftwerk.native``) and, in a child process, with
``KRAFTWERK_PURE=1``. Up-conversion: 20,000 uncompressed v1 messages
(100 B and 1 KiB values) rewritten as v2 (Kafka's cleaner rule: one batch per message); the peers
read with their reader and write each message with their own v2 batch builder (aiokafka: its C
extension for both), summing the sizes of the batches; so does kraftwerk's "streamed" row
(``iter_upconverted``); the "one output buffer" row is ``upconvert``, which also assembles the
whole converted segment (extra work the peers do not do, and fresh memory for 20 MiB). MB/s counts
the bytes of the v1 input.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable

import aiokafka.record.memory_records as aio_records
import kafka.record as kp_records
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatchBuilder
from kio.records.readers import read_batch as kio_read_batch

from bench.common import best_rates
from kraftwerk.records import CompressionType, build_records, iter_batches, iter_upconverted, upconvert

RECORDS = 20_000
PER_BATCH = 200


def _segment(value_size: int, codec: CompressionType) -> bytes:
    value = bytes(range(256)) * (value_size // 256) + b"v" * (value_size % 256)
    return b"".join(
        build_records([(base + i, 1_700_000_000_000 + i, b"key-%d" % i, value, ())
                       for i in range(PER_BATCH)], compression=codec)
        for base in range(0, RECORDS, PER_BATCH))


def _ours(data: bytes, *, whole: bool = False) -> Callable[[], int]:
    """Decode every record, touching key and value (``whole``: offset and timestamp too)."""
    def run() -> int:
        n = 0
        for batch in iter_batches(data):
            for record in batch.records():
                n += (record.key is not None) + (record.value is not None)
                if whole:
                    n += record.offset + record.timestamp
        return n
    return run


def _peer(module: object, data: bytes, *, whole: bool = False) -> Callable[[], int]:
    def run() -> int:
        records = module.MemoryRecords(data)  # type: ignore[attr-defined]
        n = 0
        while records.has_next():
            for record in records.next_batch():
                n += (record.key is not None) + (record.value is not None)
                if whole:
                    n += record.offset + record.timestamp
        return n
    return run


def _kio(data: bytes) -> Callable[[], int]:
    def run() -> int:
        n = 0
        offset = 0
        while offset < len(data):
            batch, size = kio_read_batch(data, offset)
            offset += size
            for record in batch.records:
                n += (record.key is not None) + (record.value is not None)
        return n
    return run


def _ours_upconvert(legacy: bytes) -> Callable[[], int]:
    def run() -> int:
        return sum(len(batch) for batch in iter_upconverted(legacy))
    return run


def _peer_upconvert(module: object, builder_cls: type, legacy: bytes) -> Callable[[], int]:
    def run() -> int:
        records = module.MemoryRecords(legacy)  # type: ignore[attr-defined]
        written = 0
        while records.has_next():
            for r in records.next_batch():
                builder = builder_cls(2, 0, False, -1, -1, -1, 1 << 20)
                builder.append(r.offset, r.timestamp, r.key, r.value, [])
                written += len(builder.build())
        return written
    return run


def _cases() -> list[tuple[int, CompressionType]]:
    return [(size, codec) for size in (100, 1024)
            for codec in (CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD)]


def _legacy(size: int) -> bytes:
    return build_records([(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * size, ()) for i in range(RECORDS)],
                         magic=1)


def pure_rates() -> dict[str, float]:
    """The pure-Python path's rates, measured in a child process started with KRAFTWERK_PURE=1."""
    env = {**os.environ, "KRAFTWERK_PURE": "1"}
    out = subprocess.run([sys.executable, "-m", "bench.bench_records", "--pure-child"], env=env, check=True,
                         capture_output=True, text=True)
    rates: dict[str, float] = json.loads(out.stdout)
    return rates


def _pure_child() -> None:
    rates = {}
    for size, codec in _cases():
        rates[f"decode {size} {codec.kafka_name}"] = best_rates([_ours(_segment(size, codec))])[0] * RECORDS
    for size in (100, 1024):
        rates[f"upconvert {size}"] = best_rates([_ours_upconvert(_legacy(size))])[0] * RECORDS
    json.dump(rates, sys.stdout)


def main() -> None:
    if sys.argv[1:] == ["--pure-child"]:
        _pure_child()
        return
    pure = pure_rates()
    print(f"Python {platform.python_version()} on {platform.machine()}, one process, same run, "
          "best of 7 interleaved rounds (the pure-Python column: a child process right before)")
    print()
    print("| v2 decode, 20k records | kraftwerk rec/s | kraftwerk pure-Python rec/s | kafka-python rec/s "
          "| aiokafka (C) rec/s | kio rec/s | vs kafka-python | vs aiokafka | vs kio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, codec in _cases():
        data = _segment(size, codec)
        runs = [_ours(data), _peer(kp_records, data), _peer(aio_records, data)]
        if codec is CompressionType.NONE:
            runs.append(_kio(data))
        rates = [rate * RECORDS for rate in best_rates(runs)]
        ours, kp, aio = rates[:3]
        kio_rate, vs_kio = (f"{rates[3]:,.0f}", f"{ours / rates[3]:.2f}x") if len(rates) > 3 else ("", "")
        pure_rate = pure[f"decode {size} {codec.kafka_name}"]
        print(f"| {size} B values, {codec.kafka_name} | {ours:,.0f} | {pure_rate:,.0f} | {kp:,.0f} "
              f"| {aio:,.0f} | {kio_rate} | {ours / kp:.2f}x | {ours / aio:.2f}x | {vs_kio} |")
    for size in (100, 1024):  # a consumer reads the offset and timestamp too, which aiokafka makes lazily
        data = _segment(size, CompressionType.NONE)
        runs = [_ours(data, whole=True), _peer(kp_records, data, whole=True),
                _peer(aio_records, data, whole=True)]
        ours, kp, aio = (rate * RECORDS for rate in best_rates(runs))
        print(f"| {size} B values, none, offset and timestamp read too | {ours:,.0f} | | {kp:,.0f} "
              f"| {aio:,.0f} | | {ours / kp:.2f}x | {ours / aio:.2f}x | |")
    print()
    print("| v1 -> v2 up-conversion, 20k uncompressed messages | kraftwerk msg/s | kraftwerk MB/s "
          "| kraftwerk pure-Python msg/s | kafka-python msg/s | aiokafka (C) msg/s | vs kafka-python "
          "| vs aiokafka |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for size in (100, 1024):
        legacy = _legacy(size)
        ours_up, whole, kp_up, aio_up = (rate * RECORDS for rate in best_rates([
            _ours_upconvert(legacy),
            lambda: upconvert(legacy),  # noqa: B023
            _peer_upconvert(kp_records, DefaultRecordBatchBuilder, legacy),
            _peer_upconvert(aio_records, AioBuilder, legacy)]))
        mb = len(legacy) / RECORDS / 1e6
        pure_up = pure[f"upconvert {size}"]
        print(f"| {size} B values, streamed | {ours_up:,.0f} | {ours_up * mb:,.0f} | {pure_up:,.0f} "
              f"| {kp_up:,.0f} | {aio_up:,.0f} | {ours_up / kp_up:.2f}x | {ours_up / aio_up:.2f}x |")
        print(f"| {size} B values, one output buffer | {whole:,.0f} | {whole * mb:,.0f} | | | "
              f"| {whole / kp_up:.2f}x | {whole / aio_up:.2f}x |")


if __name__ == "__main__":
    main()
