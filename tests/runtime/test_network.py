"""The asyncio Kafka-protocol server and client, including kafka-python's raw client as a peer."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime import framing
from kraftwerk.runtime.client import Connection, ReconnectingClient
from kraftwerk.runtime.errors import ConnectionClosedError, FrameTooLargeError, NetworkError
from kraftwerk.runtime.ratelimit import RateLimitedLog
from kraftwerk.runtime.server import ConnectionLimits, KafkaServer, Request


class TinyHandler:
    """ApiVersions (up to ``max_version``) and a slow DescribeCluster to test ordering."""

    def __init__(self, max_version: int = 4) -> None:
        self.max_version = max_version
        self.seen: list[tuple[int, int, str | None]] = []

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return {18: (0, self.max_version), 60: (0, 1)}

    async def handle(self, request: Request) -> codec.Value | None:
        self.seen.append((request.api_key, request.api_version, request.client_id))
        if request.api_key == 60:
            await asyncio.sleep(0.2 if request.body.get("includeClusterAuthorizedOperations") else 0)
            return {"errorCode": 0, "clusterId": f"c{request.correlation_id}", "controllerId": 1,
                    "brokers": [], "clusterAuthorizedOperations": -2147483648}
        return {
            "errorCode": 0,
            "apiKeys": [{"apiKey": k, "minVersion": lo, "maxVersion": hi}
                        for k, (lo, hi) in self.supported_apis("").items()],
            "supportedFeatures": [{"name": "metadata.version", "minVersion": 7, "maxVersion": 27}],
            "finalizedFeaturesEpoch": 5,
            "finalizedFeatures": [{"name": "metadata.version", "maxVersionLevel": 21, "minVersionLevel": 21}],
        }


class ServerThread:
    """A server on its own event loop thread, so blocking clients can talk to it."""

    def __init__(self, handler: Any, max_frame_bytes: int = framing.DEFAULT_MAX_FRAME_BYTES) -> None:
        self.loop = asyncio.new_event_loop()
        self.server = KafkaServer(handler, "127.0.0.1", 0, max_frame_bytes=max_frame_bytes)
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(5)

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def tiny() -> Iterator[tuple[ServerThread, TinyHandler]]:
    handler = TinyHandler(max_version=2)
    server = ServerThread(handler, max_frame_bytes=4096)
    yield server, handler
    server.stop()


def _raw_exchange(port: int, frame: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(frame)
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
            if len(data) >= 4 and len(data) >= 4 + struct.unpack(">i", data[:4])[0]:
                return data


def test_kafka_python_raw_client_negotiates_api_versions(tiny: tuple[ServerThread, TinyHandler]) -> None:
    from kafka.net.manager import KafkaConnectionManager
    from kafka.net.selector import NetworkSelector
    from kafka.protocol.metadata.api_versions import ApiVersionsRequest

    server, handler = tiny
    manager = KafkaConnectionManager(NetworkSelector(), bootstrap_servers=f"127.0.0.1:{server.port}",
                                     request_timeout_ms=5000)
    try:
        conn = manager.get_connection("bootstrap-0")

        async def negotiate() -> Any:
            await conn
            return await conn.send_request(ApiVersionsRequest(version=1))

        response = manager.run(negotiate)
        # kafka-python opened at its newest version, got UNSUPPORTED_VERSION with our max (2), retried at 2.
        versions = [v for k, v, _ in handler.seen if k == 18]
        assert versions[0] == 2 and len(versions) == 2 and versions[1] == 1
        assert conn.broker_version_data.api_versions[18] == (0, 2)
        assert response.error_code == 0
        assert {a.api_key for a in response.api_keys} == {18, 60}
        assert handler.seen[0][2] == "kafka-python-" + __import__("kafka").__version__
    finally:
        manager.close()


def test_unknown_api_versions_version_gets_v0_unsupported(tiny: tuple[ServerThread, TinyHandler]) -> None:
    server, _ = tiny
    # ApiVersions v9, header v2 (flexible), with a body we must not try to decode.
    head = struct.pack(">hhi", 18, 9, 77) + struct.pack(">h", 3) + b"abc" + b"\x00"
    frame = head + b"\xff\xfe garbage"
    data = _raw_exchange(server.port, struct.pack(">i", len(frame)) + frame)
    size = struct.unpack(">i", data[:4])[0]
    assert size == len(data) - 4
    correlation_id = struct.unpack(">i", data[4:8])[0]
    assert correlation_id == 77
    body = codec.decode(framing.response_spec(18), 0, data[8:])
    assert body["errorCode"] == Errors.UNSUPPORTED_VERSION.code
    assert body["apiKeys"] == [{"apiKey": 18, "minVersion": 0, "maxVersion": 2}]


@pytest.mark.parametrize("frame", [
    struct.pack(">i", 1_000_000) + b"x" * 10,  # above max frame size
    struct.pack(">i", -5),  # negative size
    struct.pack(">i", 8) + struct.pack(">hhi", 999, 0, 1),  # unknown api key
    struct.pack(">i", 10) + struct.pack(">hhih", 60, 7, 1, -1),  # unsupported version
    struct.pack(">i", 9) + struct.pack(">hhih", 18, 0, 1, 40)[:9],  # truncated client id
])
def test_garbage_closes_the_connection(tiny: tuple[ServerThread, TinyHandler], frame: bytes,
                                       caplog: pytest.LogCaptureFixture) -> None:
    server, _ = tiny
    with caplog.at_level(logging.WARNING, logger="kraftwerk.runtime.server"):
        assert _raw_exchange(server.port, frame) == b""
        server.server.close_connections()
    # One WARN naming the peer, the listener, what was refused and why (as Kafka logs each).
    refusals = [r.getMessage() for r in caplog.records if "Closing connection" in r.getMessage()]
    assert len(refusals) == 1, refusals
    assert "from 127.0.0.1:" in refusals[0] and "on listener PLAINTEXT" in refusals[0]
    api_key, version = struct.unpack(">hh", frame[4:8]) if len(frame) >= 8 else (None, None)
    if api_key is not None and abs(struct.unpack(">i", frame[:4])[0]) < 4096:
        assert f"api key {api_key} v{version}" in refusals[0]
    else:
        assert "refused a frame: Invalid receive" in refusals[0]


def test_refusals_are_rate_limited() -> None:
    now = [0.0]
    logger = logging.getLogger("test.refusals")
    seen: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record.getMessage())

    handler = Collect()
    logger.addHandler(handler)
    try:
        limited = RateLimitedLog(logger, burst=3, interval_s=10, clock=lambda: now[0])
        assert [limited.warning("refused %d", i) for i in range(5)] == [True, True, True, False, False]
        now[0] = 10.0
        assert limited.warning("refused %d", 5)
    finally:
        logger.removeHandler(handler)
    assert seen == ["refused 0", "refused 1", "refused 2",
                    "(2 similar warning(s) suppressed in the last 10s)", "refused 5"]


#: MetadataRequest v13 exactly as librdkafka 2.16 (confluent-kafka's AdminClient.list_topics) sends
#: it: header v2 (client id "rdkafka"), then a body of null topics, two false booleans, no tagged
#: fields, and three bytes after the body that Kafka's reader never looks at.
LIBRDKAFKA_METADATA_V13 = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")


def test_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    parsed = framing.parse_request(LIBRDKAFKA_METADATA_V13, {3: (0, 13)})
    assert parsed.header.client_id == "rdkafka" and parsed.header.correlation_id == 3
    assert parsed.body["topics"] is None and parsed.body["allowAutoTopicCreation"] is False


def test_unknown_tagged_fields_are_skipped_in_header_and_body() -> None:
    spec = framing.request_spec(3)
    body = codec.encode(spec, 13, {"topics": [], codec.UNKNOWN_TAGGED: [(77, b"future")]})
    head = struct.pack(">hhi", 3, 13, 9) + struct.pack(">h", 1) + b"c" + b"\x01\x05\x03abc"  # tag 5
    parsed = framing.parse_request(head + body, {3: (0, 13)})
    assert parsed.body["topics"] == [] and parsed.header.correlation_id == 9
    assert parsed.body[codec.UNKNOWN_TAGGED] == [(77, b"future")]


def test_frame_size_check() -> None:
    framing.check_frame_size(100, 100)
    with pytest.raises(FrameTooLargeError, match="larger than 100"):
        framing.check_frame_size(101, 100)


def test_request_frames_round_trip_through_the_parser() -> None:
    for version in range(5):
        frame = framing.encode_request(18, version, 42, "me", {"clientSoftwareName": "x",
                                                               "clientSoftwareVersion": "1"})
        parsed = framing.parse_request(frame[4:], {18: (0, 4)})
        assert parsed.header.correlation_id == 42 and parsed.header.client_id == "me"
        assert parsed.header.header_version == (2 if version >= 3 else 1)
        assert not parsed.unsupported_api_versions


UNLIMITED = ConnectionLimits()


async def _with_server(handler: Any, body: Any, limits: ConnectionLimits = UNLIMITED) -> Any:
    server = KafkaServer(handler, "127.0.0.1", 0, limits=limits)
    await server.start()
    try:
        return await body(server)
    finally:
        await server.close()


def test_async_client_pipelines_and_responses_come_back_in_order() -> None:
    handler = TinyHandler()

    async def body(server: KafkaServer) -> None:
        conn = await Connection.open("127.0.0.1", server.port, client_id="t")
        slow_id, slow = conn.send(60, 0, {"includeClusterAuthorizedOperations": True})
        fast_id, fast = conn.send(18, 3, {"clientSoftwareName": "t", "clientSoftwareVersion": "1"})
        order: list[str] = []
        slow.add_done_callback(lambda _: order.append("slow"))
        fast.add_done_callback(lambda _: order.append("fast"))
        assert (await slow)["clusterId"] == f"c{slow_id}"
        resp = await fast
        await asyncio.sleep(0)
        assert order == ["slow", "fast"]
        assert resp["finalizedFeaturesEpoch"] == 5
        assert resp["supportedFeatures"][0]["maxVersion"] == 27
        assert fast_id == slow_id + 1
        await conn.close()
        with pytest.raises(ConnectionClosedError):
            conn.send(18, 0, {})

    asyncio.run(_with_server(handler, body))


def test_close_connections_fails_pending_requests() -> None:
    handler = TinyHandler()

    async def body(server: KafkaServer) -> None:
        conn = await Connection.open("127.0.0.1", server.port)
        _, slow = conn.send(60, 0, {"includeClusterAuthorizedOperations": True})
        await asyncio.sleep(0.05)
        assert server.close_connections() == 1
        with pytest.raises(NetworkError):
            await slow

    asyncio.run(_with_server(handler, body))


def test_reconnecting_client_backs_off_then_connects() -> None:
    async def body() -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        import random
        client = ReconnectingClient("127.0.0.1", port, backoff_ms=20, backoff_max_ms=80, rng=random.Random(1))
        for _ in range(3):
            with pytest.raises(NetworkError):
                await client.request(18, 0, {})
        assert 0.064 <= client.next_backoff_s() <= 0.096  # 20ms * 2^2 = 80ms capped, ±20%
        server = KafkaServer(TinyHandler(), "127.0.0.1", port)
        await server.start()
        try:
            resp = await client.request(18, 0, {})
            assert resp["errorCode"] == 0
            assert client.next_backoff_s() == 0.0
        finally:
            await client.close()
            await server.close()

    asyncio.run(body())


def _api_versions(conn: Connection) -> Any:
    return conn.send(18, 3, {"clientSoftwareName": "t", "clientSoftwareVersion": "1"})[1]


def test_connections_per_ip_and_in_total_are_bounded(caplog: pytest.LogCaptureFixture) -> None:
    """``max.connections.per.ip`` refuses the next connection from that address (and a freed slot
    is reused); an override raises the limit for one address; ``max.connections`` caps the total."""

    async def body(server: KafkaServer) -> None:
        first = await Connection.open("127.0.0.1", server.port)
        second = await Connection.open("127.0.0.1", server.port)
        assert (await _api_versions(first))["errorCode"] == 0
        with pytest.raises(NetworkError):
            await _api_versions(second)
        await first.close()
        await asyncio.sleep(0.05)
        third = await Connection.open("127.0.0.1", server.port)
        assert (await _api_versions(third))["errorCode"] == 0
        await third.close()

    with caplog.at_level(logging.WARNING, "kraftwerk.runtime.server"):
        asyncio.run(_with_server(TinyHandler(), body, ConnectionLimits(max_connections_per_ip=1)))
    assert "address already has the configured maximum of 1 connections" in caplog.text

    async def total(server: KafkaServer) -> None:
        conns = [await Connection.open("127.0.0.1", server.port) for _ in range(3)]
        assert [(await _api_versions(c))["errorCode"] for c in conns[:2]] == [0, 0]
        with pytest.raises(NetworkError):
            await _api_versions(conns[2])
        for conn in conns:
            await conn.close()

    overrides = {"127.0.0.1": 5}
    asyncio.run(_with_server(TinyHandler(), total, ConnectionLimits(2, 1, overrides)))


def test_idle_connections_are_closed_but_busy_ones_are_not() -> None:
    """``connections.max.idle.ms``: a connection with nothing to read and nothing in flight is
    closed; one waiting for a slow answer is kept."""

    async def body(server: KafkaServer) -> None:
        idle = await Connection.open("127.0.0.1", server.port)
        busy = await Connection.open("127.0.0.1", server.port)
        _, slow = busy.send(60, 0, {"includeClusterAuthorizedOperations": True})  # 0.2 s > idle
        assert (await slow)["errorCode"] == 0
        await asyncio.sleep(0.3)
        with pytest.raises(NetworkError):
            await _api_versions(idle)
        await busy.close()

    asyncio.run(_with_server(TinyHandler(), body, ConnectionLimits(idle_ms=100)))
