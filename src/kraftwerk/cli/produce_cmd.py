"""``kraftwerk produce``: send stdin lines to a topic, kcat ``-P`` style, for quick checks."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kraftwerk.cli.args import bootstrap_servers, delimiter, non_negative_int, positive_int, topic_name
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.records.types import CompressionType
from kraftwerk.runtime.data_client import DataClient, Message, default_partition

BATCH_SIZE = 500


def register(groups: Any) -> None:
    parser = groups.add_parser("produce", help="send lines from stdin to a topic (like kcat -P)")
    parser.add_argument("--bootstrap-server", required=True, type=bootstrap_servers,
                        help="broker HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--topic", "-t", required=True, type=topic_name)
    parser.add_argument("--partition", "-p", type=non_negative_int, default=None,
                        help="partition (default: Kafka's murmur2 of the key, round-robin for keyless lines)")
    parser.add_argument("--key-delimiter", "-K", default=None, type=delimiter,
                        help="split each line into key and value at the first occurrence of this string")
    parser.add_argument("--acks", choices=("all", "-1", "1"), default="all", help="default all")
    parser.add_argument("--compression", choices=("none", "gzip", "snappy", "lz4", "zstd"), default="none")
    parser.add_argument("--timeout", type=positive_int, default=30, help="seconds per request (default 30)")
    add_output_flag(parser)
    parser.set_defaults(func=_produce)


def _partition_of(key: bytes | None, count: int, line_no: int) -> int:
    """Kafka's default partitioner for a keyed line; keyless lines go round-robin."""
    return line_no % count if key is None else default_partition(key, count)


def _produce(args: argparse.Namespace) -> int:
    acks = -1 if args.acks in ("all", "-1") else 1
    compression = CompressionType.from_name(args.compression)
    by_partition: dict[int, list[Message]] = {}
    with DataClient(args.bootstrap_server, timeout_s=args.timeout) as client:
        count = len(client.leaders(args.topic))
        for n, raw in enumerate(sys.stdin.buffer):
            line = raw.rstrip(b"\r\n")
            key: bytes | None = None
            if args.key_delimiter is not None and args.key_delimiter.encode() in line:
                key, line = line.split(args.key_delimiter.encode(), 1)
            partition = args.partition if args.partition is not None else _partition_of(key, count, n)
            by_partition.setdefault(partition, []).append(Message(key, line))
        results = []
        for partition, messages in sorted(by_partition.items()):
            for i in range(0, len(messages), BATCH_SIZE):
                chunk = messages[i:i + BATCH_SIZE]
                base = client.produce(args.topic, partition, chunk, acks=acks, compression=compression)
                results.append({"partition": partition, "baseOffset": base, "count": len(chunk)})
    total = sum(r["count"] for r in results)
    if args.output == "json":
        print_json({"topic": args.topic, "messages": total, "batches": results})
    else:
        print(f"Produced {total} message(s) to {args.topic}")
        for r in results:
            last = r["baseOffset"] + r["count"] - 1
            print(f"  partition {r['partition']}: offsets {r['baseOffset']}-{last}")
    return 0
