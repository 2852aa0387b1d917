"""Produce and consume throughput of a ``kraftwerk cluster up`` broker, with real clients.

    python -m bench.bench_data_plane [--messages 50000] [--size 1024] [--clients confluent-kafka,kafka-python]

For each client: produce ``--messages`` values of ``--size`` bytes to a 1-partition and a
6-partition topic with acks=1 (one broker, replication factor 1) and with acks=all (three
brokers, replication factor 3), then consume them back with ``assign()``. The peer in the same run
is the machine's loopback: the same number of bytes pushed through one TCP connection to a reader
that discards them, so a figure reads as a share of what the wire itself allows here.

Numbers on a shared machine are indicative; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kraftwerk.cli.main import main as kraftwerk
from kraftwerk.runtime.local_cluster import LocalCluster


def loopback_mb_s(total: int, chunk: int = 64 * 1024) -> float:
    """MB/s of ``total`` bytes through one loopback TCP connection to a discarding reader."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def sink() -> None:
        conn, _ = server.accept()
        with conn:
            while conn.recv(1 << 20):
                pass

    reader = threading.Thread(target=sink)
    reader.start()
    data = b"x" * chunk
    start = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sent = 0
        while sent < total:
            sock.sendall(data)
            sent += chunk
    reader.join()
    server.close()
    return total / (time.perf_counter() - start) / 1e6


def _create(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, partitions, rf)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        described = admin.describe_topics([topic])
        if described and all(p["leader_id"] >= 0 for p in described[0]["partitions"]):
            break
        time.sleep(0.2)
    admin.close()


def produce_confluent(bootstrap: str, topic: str, n: int, value: bytes, acks: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                         "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    for i in range(n):
        while True:
            try:
                producer.produce(topic, value=value, key=b"%d" % i)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0


def consume_confluent(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 50 << 20})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    while got < n:
        for m in consumer.consume(10_000, 5.0):
            if m.error() is None:
                got += 1
    consumer.close()


def produce_kafka_python(bootstrap: str, topic: str, n: int, value: bytes, acks: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks if acks == "all" else int(acks),
                             linger_ms=5, batch_size=1 << 20)
    for i in range(n):
        producer.send(topic, value=value, key=b"%d" % i)
    producer.flush()
    producer.close()


def consume_kafka_python(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_bytes=50 << 20,
                             max_partition_fetch_bytes=10 << 20)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    got = 0
    while got < n:
        got += sum(len(v) for v in consumer.poll(1000, max_records=100_000).values())
    consumer.close()


CLIENTS: dict[str, tuple[Callable[..., None], Callable[..., None]]] = {
    "confluent-kafka": (produce_confluent, consume_confluent),
    "kafka-python": (produce_kafka_python, consume_kafka_python),
}


def _timed(func: Callable[[], None]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def run(brokers: int, rf: int, acks: str, args: argparse.Namespace, rows: list[str]) -> None:
    value = b"v" * args.size
    mb = args.messages * args.size / 1e6
    with tempfile.TemporaryDirectory(prefix="bench-data-") as root:
        code = kraftwerk(["cluster", "up", "--dir", root, "--controllers", "1", "--brokers", str(brokers)])
        assert code == 0
        try:
            bootstrap = LocalCluster.load(Path(root)).bootstrap_servers
            for client in args.clients.split(","):
                produce, consume = CLIENTS[client]
                for partitions in (1, 6):
                    topic = f"{client}-{partitions}-{acks}"
                    _create(bootstrap, topic, partitions, rf)
                    wire = loopback_mb_s(int(mb * 1e6))
                    p = mb / _timed(lambda f=produce, t=topic: f(bootstrap, t, args.messages, value, acks))
                    c = mb / _timed(lambda f=consume, t=topic, n=partitions: f(bootstrap, t, n,
                                                                                args.messages))
                    rows.append(f"| {client} | {partitions} | acks={acks}, RF={rf} | {p:.1f} | {c:.1f} | "
                                f"{wire:.0f} | {p / wire:.3f}x / {c / wire:.3f}x |")
                    print(rows[-1], flush=True)
        finally:
            kraftwerk(["cluster", "down", "--dir", root])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--clients", default="confluent-kafka,kafka-python")
    args = parser.parse_args()
    rows = ["| client | partitions | acks | produce MB/s | consume MB/s | loopback MB/s "
            "| vs loopback (p / c) |", "|---|---:|---|---:|---:|---:|---:|"]
    print("\n".join(rows), flush=True)
    run(1, 1, "1", args, rows)
    run(3, 3, "all", args, rows)


if __name__ == "__main__":
    main()
