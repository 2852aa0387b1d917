"""Random and mutated frames against live node processes: the node keeps serving, logs no
unhandled exception, and its memory stays bounded (issue 25, robust input on every port).

The frames are mutations of real requests (Kafka's own encodings from ``message-vectors.tsv`` and
ours) and random bytes: bit flips, truncations, appended bytes, wrong size prefixes (negative,
above ``socket.request.max.bytes``, shorter or longer than the frame), other api keys and versions.
Each connection gets a run of frames the parser accepts followed by at most one it refuses (the
node closes the connection there, so nothing after it would be read): every frame sent is read.
A SASL_PLAINTEXT listener is fuzzed too, before authentication (where only ApiVersions,
SaslHandshake and SaslAuthenticate are served). CI sends 10 000 frames to the broker's PLAINTEXT
listener and 2 000 to its SASL listener and to the controller (about 800 frames a second on a
loaded 2-core machine); ``KRAFTWERK_WIRE_FUZZ_FRAMES=100000 pytest tests/runtime/test_wire_fuzz.py``
sends the issue's full count (100 000 to the broker, 20 000 to the controller).
"""

from __future__ import annotations

import asyncio
import os
import random
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kraftwerk.broker.node import BROKER_API_KEYS
from kraftwerk.controller.common import declared_api_ranges
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS
from kraftwerk.protocol import header
from kraftwerk.runtime import framing
from kraftwerk.runtime.local_cluster import (
    LocalCluster,
    LocalNode,
    api_versions,
    format_cluster,
    free_ports,
    plan_cluster,
)
from kraftwerk.runtime.server import SASL_APIS
from kraftwerk.storage.format import random_cluster_id
from tests.cluster.helpers import cli
from tests.conftest import golden_path

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]

FRAMES = int(os.environ.get("KRAFTWERK_WIRE_FUZZ_FRAMES", "10000"))
WORKERS = 4
RSS_GROWTH_LIMIT = 50 << 20
READ_ONLY_APIS = {"ApiVersions", "Metadata", "DescribeCluster", "DescribeConfigs"}


def _real_requests() -> list[bytes]:
    """Complete request frames: Kafka's own bodies of read-only APIs (with our header) and ours."""
    from kraftwerk.protocol.registry import all_specs
    from kraftwerk.protocol.schema import Kind

    specs = {s.api_name: s for s in all_specs() if s.kind is Kind.REQUEST}
    frames = []
    for line in golden_path("message-vectors.tsv").read_text().splitlines()[1:]:
        api, kind, version_text, hex_text, _ = line.split("\t")
        if kind != "request" or api not in READ_ONLY_APIS:
            continue
        spec, version = specs[api], int(version_text)
        head = header.encode_request_header({"requestApiKey": spec.api_key, "requestApiVersion": version,
                                             "correlationId": 1, "clientId": "fuzz"},
                                            header.request_header_version(spec, version))
        body = bytes.fromhex(hex_text)
        frames.append(struct.pack(">i", len(head) + len(body)) + head + body)
    frames.append(framing.encode_request(18, 3, 2, "fuzz", {"clientSoftwareName": "f",
                                                            "clientSoftwareVersion": "1"}))
    frames.append(framing.encode_request(60, 0, 3, None, {"includeClusterAuthorizedOperations": True}))
    return frames


def _mutate(rng: random.Random, real: list[bytes]) -> bytes:
    kind = rng.randrange(7)
    if kind == 0:  # random bytes behind a true size prefix
        body = rng.randbytes(rng.randrange(0, 300))
        return struct.pack(">i", len(body)) + body
    frame = bytearray(rng.choice(real))
    if kind == 1:  # bit flips after the size prefix
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(4, len(frame))
            frame[pos] ^= 1 << rng.randrange(8)
    elif kind == 2:  # truncated, the prefix still claiming the whole frame
        frame = frame[: rng.randrange(0, len(frame))]
    elif kind == 3:  # a wrong size prefix: negative, above the limit, or off by a little
        size = rng.choice([-1, -(2**31), 2**20, 2**31 - 1, len(frame) - 4 + rng.randint(-8, 8)])
        frame[:4] = struct.pack(">i", size)
    elif kind == 4:  # another api key or version
        struct.pack_into(">hh", frame, 4, rng.randrange(-2, 80), rng.randrange(-2, 20))
    elif kind == 5:  # bytes appended inside the frame
        frame += rng.randbytes(rng.randrange(1, 16))
        struct.pack_into(">i", frame, 0, len(frame) - 4)
    return bytes(frame)  # kind 6: the real request, unchanged


def _refused(frame: bytes, supported: dict[int, tuple[int, int]]) -> bool:
    """Whether the node may close the connection after this frame (our parser's verdict; a SASL
    step may fail and close it)."""
    if len(frame) < 4:
        return True
    size = struct.unpack_from(">i", frame)[0]
    if size != len(frame) - 4:
        return True
    try:
        parsed = framing.parse_request(frame[4:], supported)
    except framing.InvalidRequestError:
        return True
    return parsed.header.api_key in SASL_APIS


@dataclass
class FuzzStats:
    frames: int = 0
    connections: int = 0
    responses: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


async def _connection(port: int, batch: bytes, stats: FuzzStats) -> None:
    """Send one run of frames, half-close, and read the answers until the node closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(batch)
        writer.write_eof()
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 30)
    except ConnectionError:
        data = b""
    finally:
        writer.close()
    stats.connections += 1
    pos = 0
    while pos + 4 <= len(data):
        pos += 4 + struct.unpack_from(">i", data, pos)[0]
        stats.responses += 1


async def _fuzz(port: int, supported: dict[int, tuple[int, int]], count: int, seed: int,
                real: list[bytes]) -> FuzzStats:
    stats = FuzzStats()
    rng = random.Random(seed)
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(WORKERS * 4)

    async def worker() -> None:
        while (batch := await queue.get()) is not None:
            await _connection(port, batch, stats)

    workers = [asyncio.create_task(worker()) for _ in range(WORKERS)]
    while stats.frames < count:
        run: list[bytes] = []
        while len(run) < 200 and stats.frames < count:
            frame = _mutate(rng, real)
            run.append(frame)
            stats.frames += 1
            if _refused(frame, supported):
                break
        await queue.put(b"".join(run))
    for _ in workers:
        await queue.put(None)
    await asyncio.gather(*workers)
    return stats


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def _sasl_requests() -> list[bytes]:
    """What an unauthenticated SASL client sends, none of it with valid credentials (the fuzzing
    must stay before authentication, where the node serves only these three APIs)."""
    return [
        framing.encode_request(18, 3, 1, "fuzz", {"clientSoftwareName": "f", "clientSoftwareVersion": "1"}),
        framing.encode_request(17, 1, 2, "fuzz", {"mechanism": "PLAIN"}),
        framing.encode_request(17, 1, 3, "fuzz", {"mechanism": "SCRAM-SHA-256"}),
        framing.encode_request(36, 2, 4, "fuzz", {"authBytes": b"\0admin\0wrong-password"}),
        framing.encode_request(36, 0, 5, "fuzz", {"authBytes": b"n,,n=nobody,r=fuzznonce"}),
    ]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One controller and one broker whose client listeners are PLAINTEXT and SASL_PLAINTEXT."""
    root = tmp_path_factory.mktemp("fuzz")
    planned = plan_cluster(root, random_cluster_id(), 1, 1)
    broker = planned.brokers[0]
    listeners = f"PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{free_ports(1)[0]}"
    broker.extra.update({
        "listeners": listeners, "advertised.listeners": listeners,
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
                                          "SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
        "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                            'user_admin="pw";',
        "connection.failed.authentication.delay.ms": "0",
    })
    planned.save()
    format_cluster(planned, None)
    planned.start_all()
    try:
        yield planned
    finally:
        cli("cluster", "down", "--dir", str(root))


def _fuzz_node(cluster: LocalCluster, node: LocalNode, listener: str, supported: dict[int, tuple[int, int]],
               count: int, real: list[bytes]) -> None:
    info = cluster.ready_info(node)
    assert info is not None
    pid, port = info["pid"], info["listeners"][listener]
    asyncio.run(_fuzz(port, supported, 2000, 1, real))  # warm-up: codec caches, first connections
    before = _rss(pid)
    stats = asyncio.run(_fuzz(port, supported, count, 2, real))
    growth = _rss(pid) - before
    assert stats.frames == count and stats.responses > count // 20, stats
    assert growth < RSS_GROWTH_LIMIT, f"RSS grew by {growth >> 20} MiB over {count} frames"
    answer = api_versions(node.address if node.is_broker else f"127.0.0.1:{port}")
    assert answer is not None and answer["errorCode"] == 0, "the node stopped serving after the fuzzing"
    text = node.log_path(cluster.root).read_text(errors="replace")
    for bad in ("Traceback", "handler failed", " ERROR ", "CRITICAL"):
        assert bad not in text, f"{bad!r} in {node.log_path(cluster.root)}"


def test_broker_listener_survives_fuzzed_frames(cluster: LocalCluster) -> None:
    broker = cluster.brokers[0]
    supported = declared_api_ranges(BROKER_API_KEYS)
    _fuzz_node(cluster, broker, "PLAINTEXT", supported, FRAMES, _real_requests())


def test_controller_listener_survives_fuzzed_frames(cluster: LocalCluster) -> None:
    controller = cluster.controllers[0]
    info = cluster.ready_info(controller)
    assert info is not None
    listener = next(iter(info["listeners"]))
    _fuzz_node(cluster, controller, listener, declared_api_ranges(CONTROLLER_API_KEYS), FRAMES // 5,
               _real_requests())


def test_sasl_listener_survives_fuzzed_frames_before_authentication(cluster: LocalCluster) -> None:
    broker = cluster.brokers[0]
    supported = {18: declared_api_ranges(BROKER_API_KEYS)[18], **SASL_APIS}
    _fuzz_node(cluster, broker, "SASL_PLAINTEXT", supported, FRAMES // 5, _sasl_requests())
