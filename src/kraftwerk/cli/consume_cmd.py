"""``kraftwerk consume``: print a partition's records, kcat ``-C`` style, for quick checks."""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

from kraftwerk.cli.args import bootstrap_servers, non_negative_int, positive_int, start_offset, topic_name
from kraftwerk.cli.main import UsageError
from kraftwerk.cli.output import add_output_flag
from kraftwerk.runtime.data_client import EARLIEST, LATEST, Consumed, DataClient


def register(groups: Any) -> None:
    parser = groups.add_parser("consume", help="print a topic's records (like kcat -C)")
    parser.add_argument("--bootstrap-server", required=True, type=bootstrap_servers,
                        help="broker HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--topic", "-t", required=True, type=topic_name)
    parser.add_argument("--partition", "-p", type=non_negative_int, action="append", default=None,
                        help="partition to read (repeatable; default: all)")
    parser.add_argument("--offset", "-o", default="beginning", type=start_offset,
                        help="beginning, end, or an offset (default beginning)")
    parser.add_argument("--count", "-c", type=positive_int, default=None, help="stop after this many records")
    parser.add_argument("--follow", "-f", action="store_true",
                        help="keep waiting for new records instead of exiting at the end (one partition)")
    parser.add_argument("--print-key", action="store_true", help="text output: key<TAB>value")
    parser.add_argument("--timeout", type=positive_int, default=30, help="seconds per request (default 30)")
    add_output_flag(parser)
    parser.set_defaults(func=_consume)


def _start(text: str) -> int:
    return {"beginning": EARLIEST, "end": LATEST}.get(text) or int(text)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "backslashreplace")


def _json(topic: str, r: Consumed) -> dict[str, Any]:
    def enc(data: bytes | None) -> str | None:
        return None if data is None else base64.b64encode(data).decode()

    return {"topic": topic, "partition": r.partition, "offset": r.offset, "timestamp": r.timestamp,
            "key": enc(r.key), "value": enc(r.value), "headers": [{"key": k, "value": enc(v)} for k,
                                                                  v in r.headers]}


def _consume(args: argparse.Namespace) -> int:
    start = _start(args.offset)
    left = args.count
    with DataClient(args.bootstrap_server, timeout_s=args.timeout) as client:
        partitions = args.partition if args.partition else sorted(client.leaders(args.topic))
        if args.follow and len(partitions) != 1:
            raise UsageError("--follow reads one partition: name it with --partition")
        for partition in partitions:
            for r in client.consume(args.topic, partition, start, count=left, follow=args.follow):
                if args.output == "json":
                    sys.stdout.write(json.dumps(_json(args.topic, r), separators=(",", ":")) + "\n")
                elif args.print_key:
                    sys.stdout.write(f"{_text(r.key)}\t{_text(r.value)}\n")
                else:
                    sys.stdout.write(_text(r.value) + "\n")
                if left is not None:
                    left -= 1
            if left == 0:
                break
    sys.stdout.flush()
    return 0
