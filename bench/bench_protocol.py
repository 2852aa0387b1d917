"""Encode/decode throughput of kraftwerk's derived codec against kio, in one run.

Usage: .venv/bin/python -m bench.bench_protocol

Cases: a large ApiVersions v3 response (every api key plus supported/finalized features) and a
Fetch v13 response (50 topics x 20 partitions, 1 KiB of records each). kio values are built by
decoding our bytes with kio, so both sides work on the same message.
"""

from __future__ import annotations

import io
import platform
import uuid

from kio.serial import entity_reader, entity_writer

from bench.common import best_rate
from kraftwerk.protocol import codec, registry
from kraftwerk.protocol.schema import Kind


def _api_versions_value() -> dict[str, object]:
    return {
        "errorCode": 0,
        "apiKeys": [{"apiKey": k, "minVersion": 0, "maxVersion": k % 17} for k in range(90)],
        "throttleTimeMs": 0,
        "supportedFeatures": [
            {"name": f"feature.{i}.version", "minVersion": 0, "maxVersion": i} for i in range(7)
        ],
        "finalizedFeaturesEpoch": 1234,
        "finalizedFeatures": [
            {"name": f"feature.{i}.version", "maxVersionLevel": i, "minVersionLevel": i} for i in range(7)
        ],
    }


def _fetch_value() -> dict[str, object]:
    payload = bytes(range(256)) * 4
    return {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "sessionId": 7,
        "responses": [
            {
                "topicId": uuid.UUID(int=t + 1),
                "partitions": [
                    {"partitionIndex": p, "errorCode": 0, "highWatermark": 1000 + p,
                     "lastStableOffset": 1000 + p, "logStartOffset": 0, "abortedTransactions": [],
                     "preferredReadReplica": -1, "records": payload}
                    for p in range(20)
                ],
            }
            for t in range(50)
        ],
    }


def _kio_class(module: str, name: str) -> type:
    mod = __import__(f"kio.schema.{module}", fromlist=[name])
    cls: type = getattr(mod, name)
    return cls


def run() -> list[tuple[str, str, float, float]]:
    cases = [
        ("ApiVersions v3 response (90 keys)", "ApiVersions", 3, _api_versions_value(),
         _kio_class("api_versions.v3.response", "ApiVersionsResponse")),
        ("Fetch v13 response (1000 partitions)", "Fetch", 13, _fetch_value(),
         _kio_class("fetch.v13.response", "FetchResponse")),
    ]
    rows = []
    for label, api, version, value, kio_cls in cases:
        spec = registry.by_name(Kind.RESPONSE, api)
        data = codec.encode(spec, version, value)
        reader = entity_reader(kio_cls)
        writer = entity_writer(kio_cls)
        kio_value, _size = reader(data, 0)
        ours = codec.decode(spec, version, data)

        def kio_encode(v: object = kio_value, w: object = writer) -> bytes:
            buf = io.BytesIO()
            w(buf, v)  # type: ignore[operator]
            return buf.getvalue()

        assert kio_encode() == data, f"kio and kraftwerk disagree on {label}"
        rows.append((label, "decode", best_rate(lambda d=data, s=spec, v=version: codec.decode(s, v, d)),
                     best_rate(lambda d=data, r=reader: r(d, 0))))
        rows.append((label, "encode", best_rate(lambda o=ours, s=spec, v=version: codec.encode(s, v, o)),
                     best_rate(kio_encode)))
    return rows


def main() -> None:
    rows = run()
    print(f"Python {platform.python_version()} on {platform.machine()}, one process, same run")
    print()
    print("| message | op | kraftwerk ops/s | kio ops/s | kraftwerk / kio |")
    print("|---|---|---:|---:|---:|")
    for label, op, ours, theirs in rows:
        print(f"| {label} | {op} | {ours:,.0f} | {theirs:,.0f} | {ours / theirs:.2f}x |")


if __name__ == "__main__":
    main()
