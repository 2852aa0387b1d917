"""The data plane on real processes: kafka-python, confluent-kafka and aiokafka produce to a
replicated topic on ``kraftwerk cluster up`` and read it back with ``assign()``; KIP-724's 4.x
refusal of old Produce/Fetch versions; every acknowledged message survives a kill -9 of the leader."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.records.builder import build_records
from kraftwerk.runtime import framing
from kraftwerk.runtime.local_cluster import LocalCluster, pid_alive
from tests.cluster.helpers import cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(300)]

Message = tuple[bytes, bytes, tuple[tuple[str, bytes], ...], int]
"""key, value, headers, timestamp"""
PER_CLIENT = 600
ACCEPTANCE_PER_CLIENT = 33_334
"""The issue's acceptance run: 100 002 messages over a 3-partition, replication-factor-3 topic."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("data"), "--controllers", "1", "--brokers", "3") as up:
        yield up


def _create_topic(cluster: LocalCluster, name: str, partitions: int, rf: int,
                  configs: dict[str, str] | None = None) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(name, partitions, rf, topic_configs=configs or {})])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # every broker has the leaders in its image
            topics = admin.describe_topics([name])
            if topics and all(p["leader_id"] >= 0 for p in topics[0]["partitions"]):
                break
            time.sleep(0.2)
    finally:
        admin.close()


def _messages(client: str, count: int) -> list[Message]:
    base = int(time.time() * 1000) - 60_000
    return [(f"{client}-k{i}".encode(), f"{client}-v{i}".encode() * 3,
             (("client", client.encode()), ("i", b"%d" % i)), base + i) for i in range(count)]


def _produce_kafka_python(bootstrap: str, topic: str, msgs: list[Message], partitions: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                             max_in_flight_requests_per_connection=1)
    futures = [producer.send(topic, key=k, value=v, headers=list(h), timestamp_ms=ts,
                             partition=i % partitions)
               for i, (k, v, h, ts) in enumerate(msgs)]
    producer.flush()
    for f in futures:
        f.get(timeout=30)
    producer.close()


def _produce_confluent(bootstrap: str, topic: str, msgs: list[Message], partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    errors: list[Any] = []
    for i, (k, v, h, ts) in enumerate(msgs):
        producer.produce(topic, key=k, value=v, headers=list(h), timestamp=ts, partition=i % partitions,
                         on_delivery=lambda err, _m: err is not None and errors.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []


def _produce_aiokafka(bootstrap: str, topic: str, msgs: list[Message], partitions: int) -> None:
    async def run() -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            futures = [await producer.send(topic, key=k, value=v, headers=list(h), timestamp_ms=ts,
                                           partition=i % partitions) for i, (k, v, h, ts) in enumerate(msgs)]
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    asyncio.run(run())


def _consume_kafka_python(bootstrap: str, topic: str, partitions: int, total: int) -> dict[int,
                                                                                           list[Message]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=10_000)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    ends = consumer.end_offsets(tps)
    out: dict[int, list[Message]] = {p: [] for p in range(partitions)}
    for m in consumer:
        out[m.partition].append((m.key, m.value, tuple(m.headers), m.timestamp))
        if sum(map(len, out.values())) >= total and all(consumer.position(tp) >= ends[tp] for tp in tps):
            break
    consumer.close()
    return out


def _consume_confluent(bootstrap: str, topic: str, partitions: int, total: int) -> dict[int, list[Message]]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: dict[int, list[Message]] = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + 60
    while sum(map(len, out.values())) < total and time.monotonic() < deadline:
        m = consumer.poll(1.0)
        if m is None or m.error() is not None:
            continue
        out[m.partition()].append((m.key(), m.value(), tuple(m.headers() or ()), m.timestamp()[1]))
    consumer.close()
    return out


def _consume_aiokafka(bootstrap: str, topic: str, partitions: int, total: int) -> dict[int, list[Message]]:
    async def run() -> dict[int, list[Message]]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        out: dict[int, list[Message]] = {p: [] for p in range(partitions)}
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + 60
            while sum(map(len, out.values())) < total and time.monotonic() < deadline:
                for tp, batch in (await consumer.getmany(timeout_ms=1000)).items():
                    out[tp.partition] += [(m.key, m.value, tuple(m.headers), m.timestamp) for m in batch]
        finally:
            await consumer.stop()
        return out

    return asyncio.run(run())


@pytest.mark.parametrize("per_client", [PER_CLIENT, pytest.param(ACCEPTANCE_PER_CLIENT,
                                                                 marks=pytest.mark.slow)])
def test_three_clients_produce_and_consume_a_replicated_topic(cluster: LocalCluster, per_client: int) -> None:
    topic, partitions = f"round-trip-{per_client}", 3
    _create_topic(cluster, topic, partitions, 3)
    expected: dict[int, list[Message]] = {p: [] for p in range(partitions)}
    for name, produce in (("kafka-python", _produce_kafka_python), ("confluent", _produce_confluent),
                          ("aiokafka", _produce_aiokafka)):
        msgs = _messages(name, per_client)
        produce(cluster.bootstrap_servers, topic, msgs, partitions)
        for i, m in enumerate(msgs):
            expected[i % partitions].append(m)
    total = 3 * per_client
    for consume in (_consume_kafka_python, _consume_confluent, _consume_aiokafka):
        got = consume(cluster.bootstrap_servers, topic, partitions, total)
        for p in range(partitions):
            assert got[p] == expected[p], f"{consume.__name__}: partition {p} differs"


# ------------------------------------------------------------------------------ KIP-724 on 4.x


def _raw(port: int, api_key: int, version: int, body: dict[str, Any]) -> bytes | None:
    """Send one request on a fresh connection; the response frame, or None when the broker closed
    the connection instead of answering."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(framing.encode_request(api_key, version, 7, "raw-test", body))
        head = b""
        while len(head) < 4:
            chunk = sock.recv(4 - len(head))
            if not chunk:
                return None
            head += chunk
        size = struct.unpack(">i", head)[0]
        data = b""
        while len(data) < size:
            chunk = sock.recv(size - len(data))
            if not chunk:
                return None
            data += chunk
        return data


def _api_range(port: int, api_key: int) -> tuple[int, int]:
    frame = _raw(port, 18, 3, {"clientSoftwareName": "raw", "clientSoftwareVersion": "1"})
    assert frame is not None
    body = codec.decode_from(by_api_key(Kind.RESPONSE, 18), 3, frame, 4)[0]  # header v0: correlation id
    entry = next(a for a in body["apiKeys"] if a["apiKey"] == api_key)
    return entry["minVersion"], entry["maxVersion"]


def _end_offset(cluster: LocalCluster, topic: str, partition: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap_servers)
    try:
        tp = TopicPartition(topic, partition)
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def test_4x_drops_old_produce_and_fetch_but_advertises_produce_from_v0(cluster: LocalCluster) -> None:
    topic = "kip724-4x"
    _create_topic(cluster, topic, 1, 1)
    port = cluster.brokers[0].port
    assert _api_range(port, 0)[0] == 0  # KAFKA-18659: librdkafka needs Produce v0 advertised
    assert _api_range(port, 1)[0] == 4
    legacy = build_records([(0, 1_700_000_000_000, b"k", b"v", ())], magic=1)
    for leader in cluster.brokers:
        produce = {"acks": 1, "timeoutMs": 5000,
                   "topicData": [{"name": topic, "partitionData": [{"index": 0, "records": legacy}]}]}
        assert _raw(leader.port, 0, 2, produce) is None
        fetch = {"replicaId": -1, "maxWaitMs": 0, "minBytes": 1, "maxBytes": 1 << 20,
                 "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetchOffset": 0,
                                                             "partitionMaxBytes": 1 << 20}]}]}
        assert _raw(leader.port, 1, 3, fetch) is None
    assert _end_offset(cluster, topic, 0) == 0


def test_kafka_python_at_0_10_gets_nothing_written_on_4x(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError

    topic = "kip724-old-client"
    _create_topic(cluster, topic, 1, 1)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, api_version=(0, 10, 0), acks=1,
                             retries=0, request_timeout_ms=3000, max_block_ms=5000)
    with pytest.raises(KafkaError):
        producer.send(topic, b"lost").get(timeout=15)
    producer.close(timeout=2)
    assert _end_offset(cluster, topic, 0) == 0


# ------------------------------------------------------------------------------ kill -9 of a leader


def _leader_of(cluster: LocalCluster, topic: str, partition: int) -> int:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        parts = admin.describe_topics([topic])[0]["partitions"]
        return int(next(p["leader_id"] for p in parts if p["partition_index"] == partition))
    finally:
        admin.close()


def test_acked_messages_survive_kill_9_of_the_leader(cluster: LocalCluster) -> None:
    from kafka import KafkaProducer

    topic = "acked-survive"
    _create_topic(cluster, topic, 1, 3, {"min.insync.replicas": "2", "segment.bytes": str(1 << 20)})
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap_servers, acks="all", retries=1_000_000,
                             max_in_flight_requests_per_connection=1, request_timeout_ms=5000,
                             retry_backoff_ms=100, linger_ms=2)
    acked: list[bytes] = []
    stop = threading.Event()

    def send_forever() -> None:
        i = 0
        while not stop.is_set():
            value = b"m%06d" % i + b"." * 400  # ~1 MiB segments roll during the run
            producer.send(topic, value=value).add_callback(lambda _md, v=value: acked.append(v))
            i += 1
            time.sleep(0.002)

    sender = threading.Thread(target=send_forever, daemon=True)
    sender.start()
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 300 and time.monotonic() < deadline:
            time.sleep(0.1)
        victim = cluster.node(_leader_of(cluster, topic, 0))
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        while pid_alive(victim.pid):
            time.sleep(0.01)
        before = len(acked)
        deadline = time.monotonic() + 60
        while len(acked) < before + 300 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(acked) >= before + 300, "no acks after the leader died"
        victim.pid = None
        cluster.start(victim)
        cluster.wait_ready([victim], 60)
    finally:
        stop.set()
        sender.join(10)
        producer.flush(30)
        producer.close(10)
    consumed = {m[1] for m in _consume_kafka_python(cluster.bootstrap_servers, topic, 1, len(acked))[0]}
    missing = [v for v in acked if v not in consumed]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages were lost"
    rolled = [b for b in cluster.brokers
              if len(list((b.data_dir(cluster.root) / f"{topic}-0").glob("*.log"))) > 1]
    assert rolled, "no segment rolled during the run"


# ------------------------------------------------------------------------------ kraftwerk produce|consume


def test_kraftwerk_produce_and_consume(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import json

    from tests.cluster.helpers import cli

    topic = "cli-check"
    _create_topic(cluster, topic, 2, 3)
    lines = "".join(f"key{i % 3}\tvalue {i}\n" for i in range(20)).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines)))
    code, out, err = cli("produce", "--bootstrap-server", cluster.bootstrap_servers, "-t", topic, "-K", "\t",
                         "--output", "json")
    assert code == 0, err
    assert json.loads(out)["messages"] == 20
    code, out, err = cli("consume", "--bootstrap-server", cluster.bootstrap_servers, "-t", topic,
                         "--output", "json")
    assert code == 0, err
    import base64

    rows = [json.loads(line) for line in out.splitlines()]
    got = sorted((base64.b64decode(r["key"]), base64.b64decode(r["value"])) for r in rows)
    assert got == sorted((b"key%d" % (i % 3), b"value %d" % i) for i in range(20))
    by_key = {r["key"]: r["partition"] for r in rows}
    assert all(by_key[r["key"]] == r["partition"] for r in rows)  # one key, one partition
    seen = {(m[0], m[1]) for p in _consume_kafka_python(cluster.bootstrap_servers, topic, 2,
                                                        20).values() for m in p}
    assert seen == set(got)
    code, out, err = cli("consume", "--bootstrap-server", cluster.bootstrap_servers, "-t", topic, "-p", "1",
                         "-o", "end")
    assert (code, out) == (0, "")  # nothing after the end
