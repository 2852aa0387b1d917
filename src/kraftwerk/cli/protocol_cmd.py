"""``kraftwerk protocol decode|encode``: message bodies and framed metadata records as Kafka's JSON."""

from __future__ import annotations

import argparse
import binascii
from typing import Any

from kraftwerk.cli.args import api_name, hex_bytes, json_value, non_negative_int
from kraftwerk.cli.main import UsageError
from kraftwerk.cli.output import print_json
from kraftwerk.protocol import codec, frame, json_form, registry
from kraftwerk.protocol.schema import Kind, MessageSpec


def register(groups: Any) -> None:
    parser = groups.add_parser("protocol", help="encode and decode Kafka protocol messages")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for name, func, what in (("decode", _decode, "HEX bytes to JSON"), ("encode", _encode, "JSON to HEX")):
        sub = commands.add_parser(name, help=f"{what}")
        sub.add_argument("--api", required=True, type=api_name,
                         help="Kafka's message name: UpdateFeatures, FeatureLevelRecord, "
                              "FEATURE_LEVEL_RECORD")
        sub.add_argument("--kind", required=True, choices=("request", "response", "record"))
        sub.add_argument("--version", type=non_negative_int, required=True)
        sub.add_argument("input", metavar="HEX" if name == "decode" else "JSON",
                         type=hex_bytes if name == "decode" else json_value)
        sub.set_defaults(func=func)


def _spec(args: argparse.Namespace) -> MessageSpec:
    if args.kind == "record":
        return registry.lookup_record(args.api)
    return registry.by_name(Kind(args.kind), args.api)


def _decode(args: argparse.Namespace) -> int:
    spec = _spec(args)
    data: bytes = args.input
    if spec.kind is Kind.METADATA:
        rec = frame.decode_metadata_record(data)
        if rec.spec is not spec or rec.version != args.version:
            raise UsageError(
                f"the frame holds {rec.spec.record_type_name} v{rec.version}, "
                f"not {spec.record_type_name} v{args.version}"
            )
        value = rec.value
    else:
        value = codec.decode(spec, args.version, data)
    print_json(json_form.to_json(spec, args.version, value))
    return 0


def _encode(args: argparse.Namespace) -> int:
    spec = _spec(args)
    value = json_form.from_json(spec, args.version, args.input)
    if spec.kind is Kind.METADATA:
        data = frame.encode_metadata_record(spec, args.version, value)
    else:
        data = codec.encode(spec, args.version, value)
    print(binascii.hexlify(data).decode("ascii"))
    return 0
