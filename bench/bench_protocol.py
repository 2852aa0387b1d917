"""Encode/decode throughput of kraftwerk's derived codec against kio, in one run.

Usage: .venv/bin/python -m bench.bench_protocol

Cases: a large ApiVersions v3 response (every api key plus supported/finalized features) and a
Fetch v13 response (50 topics x 20 partitions, 1 KiB of records each). kio values are built by
decoding our bytes with kio, so both sides work on the same message. Decoding is measured on the
active path (the compiled twin when built, see ``kraftwerk.native``) and on the generated pure-Python
decoder; the sides take turns in every round (``best_rates``).
"""

from __future__ import annotations

import io
import platform
import uuid

from kio.serial import entity_reader, entity_writer

from bench.common import best_rates
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


def run() -> list[tuple[str, str, float, float | None, float]]:
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
        pure = codec._Gen(spec, version).compile()[0]
        ours_dec, pure_dec, kio_dec = best_rates([
            lambda d=data, s=spec, v=version: codec.decode(s, v, d),
            lambda d=data, f=pure: f(d, 0, len(d)),
            lambda d=data, r=reader: r(d, 0)])
        rows.append((label, "decode", ours_dec, pure_dec, kio_dec))
        ours_enc, kio_enc = best_rates([lambda o=ours, s=spec, v=version: codec.encode(s, v, o), kio_encode])
        rows.append((label, "encode", ours_enc, None, kio_enc))
    return rows


def main() -> None:
    rows = run()
    print(f"Python {platform.python_version()} on {platform.machine()}, one process, same run, "
          "best of 7 interleaved rounds")
    print()
    print("| message | op | kraftwerk ops/s | kraftwerk pure-Python ops/s | kio ops/s | kraftwerk / kio |")
    print("|---|---|---:|---:|---:|---:|")
    for label, op, ours, pure, theirs in rows:
        pure_text = "" if pure is None else f"{pure:,.0f}"
        print(f"| {label} | {op} | {ours:,.0f} | {pure_text} | {theirs:,.0f} | {ours / theirs:.2f}x |")


if __name__ == "__main__":
    main()
