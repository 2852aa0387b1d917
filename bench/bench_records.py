"""Record-batch decode and v1->v2 up-conversion against kafka-python and aiokafka, in one run.

Usage: .venv/bin/python -m bench.bench_records

Decode: 20,000 records in v2 batches of 200, values of 100 B and 1 KiB, codecs none/lz4/zstd;
every side touches each record's key and value. Up-conversion: 20,000 uncompressed v1 messages
(100 B and 1 KiB values) rewritten as v2 (Kafka's cleaner rule: one batch per message); the peers
read with their reader and write each message with their own v2 batch builder (aiokafka: its C
extension for both), summing the sizes of the batches; so does kraftwerk's "streamed" row
(``iter_upconverted``); the "one output buffer" row is ``upconvert``, which also assembles the
whole converted segment (extra work the peers do not do, and fresh memory for 20 MiB).
"""

from __future__ import annotations

import platform
from collections.abc import Callable

import aiokafka.record.memory_records as aio_records
import kafka.record as kp_records
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatchBuilder

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


def _ours(data: bytes) -> Callable[[], int]:
    def run() -> int:
        n = 0
        for batch in iter_batches(data):
            for record in batch.records():
                n += (record.key is not None) + (record.value is not None)
        return n
    return run


def _peer(module: object, data: bytes) -> Callable[[], int]:
    def run() -> int:
        records = module.MemoryRecords(data)  # type: ignore[attr-defined]
        n = 0
        while records.has_next():
            for record in records.next_batch():
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


def main() -> None:
    print(f"Python {platform.python_version()} on {platform.machine()}, one process, same run, "
          "best of 7 interleaved rounds")
    print()
    print("| v2 decode, 20k records | kraftwerk rec/s | kafka-python rec/s | aiokafka (C) rec/s "
          "| vs kafka-python | vs aiokafka |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in (100, 1024):
        for codec in (CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD):
            data = _segment(size, codec)
            ours, kp, aio = (rate * RECORDS for rate in best_rates(
                [_ours(data), _peer(kp_records, data), _peer(aio_records, data)]))
            print(f"| {size} B values, {codec.kafka_name} | {ours:,.0f} | {kp:,.0f} | {aio:,.0f} "
                  f"| {ours / kp:.2f}x | {ours / aio:.2f}x |")
    print()
    print("| v1 -> v2 up-conversion, 20k uncompressed messages | kraftwerk msg/s | kafka-python msg/s "
          "| aiokafka (C) msg/s | vs kafka-python | vs aiokafka |")
    print("|---|---:|---:|---:|---:|---:|")
    for size in (100, 1024):
        legacy = build_records([(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * size, ())
                                for i in range(RECORDS)], magic=1)
        ours_up, whole, kp_up, aio_up = (rate * RECORDS for rate in best_rates([
            _ours_upconvert(legacy),
            lambda: upconvert(legacy),  # noqa: B023
            _peer_upconvert(kp_records, DefaultRecordBatchBuilder, legacy),
            _peer_upconvert(aio_records, AioBuilder, legacy)]))
        print(f"| {size} B values, streamed | {ours_up:,.0f} | {kp_up:,.0f} | {aio_up:,.0f} "
              f"| {ours_up / kp_up:.2f}x | {ours_up / aio_up:.2f}x |")
        print(f"| {size} B values, one output buffer | {whole:,.0f} | | "
              f"| {whole / kp_up:.2f}x | {whole / aio_up:.2f}x |")


if __name__ == "__main__":
    main()
