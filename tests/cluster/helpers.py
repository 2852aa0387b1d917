"""What the real-process cluster tests share: the ``kraftwerk`` CLI run in-process with its
output captured, and a cluster brought up for a module and always brought down again."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kraftwerk.cli.main import main as cli_main
from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import LocalCluster


def cli(*argv: str) -> tuple[int, str, str]:
    """Run ``kraftwerk argv...``; returns (exit code, stdout, stderr). The CLI logs through the root
    logger, so the test process's own kafka-python clients (which kraftwerk never uses) are silenced
    meanwhile: a connection they lose is not the command's output."""
    out, err = io.StringIO(), io.StringIO()
    kafka_python = logging.getLogger("kafka")
    level = kafka_python.level
    kafka_python.setLevel(logging.CRITICAL + 1)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_main(list(argv))
    finally:
        kafka_python.setLevel(level)
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def cluster_up(root: Path, *up_args: str) -> Iterator[LocalCluster]:
    """``cluster up --dir root up_args...`` (asserted to succeed), then ``cluster down`` on exit."""
    code, _, err = cli("cluster", "up", "--dir", str(root), *up_args)
    assert code == 0, err
    try:
        yield LocalCluster.load(root)
    finally:
        cli("cluster", "down", "--dir", str(root))


def wait_topic_on_brokers(cluster: LocalCluster, topic: str, timeout_s: float = 30.0) -> None:
    """Until every broker's metadata has ``topic`` (a created topic reaches each broker when it
    replays the controller's records, a moment after CreateTopics answers, as in Kafka)."""
    deadline = time.monotonic() + timeout_s
    for broker in cluster.brokers:
        with AdminClient(broker.address) as admin:
            while True:
                body = {"topics": [{"name": topic, "topicId": uuid.UUID(int=0)}],
                        "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
                [found] = admin.call(3, body)["topics"]
                if found["errorCode"] == 0:
                    break
                assert time.monotonic() < deadline, f"broker {broker.node_id} does not know topic {topic}"
                time.sleep(0.1)


def kafka_python_error_codes(result: Any) -> set[int]:
    """The error codes in kafka-python's nested ``alter_configs`` result: 0 for a resource that
    succeeded; a failed one is an error object or its text (``[Error 40] InvalidConfigurationError: ...``)."""
    found: set[int] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, int):
            found.add(value)
        elif isinstance(value, str):
            code = re.match(r"\[Error (\d+)\]", value)
            found.add(int(code.group(1)) if code else 0)
        else:
            found.add(int(getattr(value, "errno", 0) or 0))

    walk(result)
    return found


def acked_missing(bootstrap: str, topic: str, acked: dict[tuple[int, int], bytes]) -> list[tuple[int, int]]:
    """The acknowledged (partition, offset)s not read back with their value: each partition is read
    by offset from its first acknowledged offset past its last (a fetch refused while metadata
    settles after a roll is retried until the deadline; a record that is not there stays missing)."""
    from kafka import KafkaConsumer, TopicPartition

    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for p, o in acked:
        first[p], last[p] = min(o, first.get(p, o)), max(o, last.get(p, o))
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tps = {p: TopicPartition(topic, p) for p in last}
    consumer.assign(list(tps.values()))
    for p, tp in tps.items():
        consumer.seek(tp, first[p])
    found: dict[tuple[int, int], bytes] = {}
    deadline = time.monotonic() + 90
    while any(consumer.position(tp) <= last[p] for p, tp in tps.items()) and time.monotonic() < deadline:
        for tp, records in consumer.poll(timeout_ms=1000).items():
            found.update({(tp.partition, r.offset): r.value for r in records})
    consumer.close()
    return sorted(k for k, v in acked.items() if found.get(k) != v)
