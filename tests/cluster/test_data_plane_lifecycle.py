"""Acked ⊆ consumed through the lifecycle, on real processes: a producer with acks=all and retries
sends continuously while the cluster rolls from 3.9 to 4.3 software, metadata.version goes from
3.9-IV0 to 4.3-IV0 with a safe downgrade on the way (none is safe from 4.3-IV0) and an unsafe one at
the end, and the partition's leader is killed with SIGKILL. Afterwards every acknowledged message
is consumed."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, pid_alive, wait_finalized
from tests.cluster.helpers import cli, cluster_up
from tests.cluster.test_data_plane import _consume_kafka_python, _create_topic, _leader_of

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(420)]
log = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("lifecycle"), "--controllers", "1", "--brokers", "3",
                    "--release-version", "3.9", "--software-version", "3.9", "--static-quorum") as up:
        yield up


class Sender:
    """kafka-python, acks=all, endless retries, one request in flight: what it acks is recorded."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=1_000_000,
                                      max_in_flight_requests_per_connection=1, request_timeout_ms=5000,
                                      retry_backoff_ms=100, linger_ms=2, reconnect_backoff_max_ms=500)
        self.topic = topic
        self.acked: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            value = b"m%07d" % i
            self.producer.send(self.topic, value=value).add_callback(lambda _md,
                                                                     v=value: self.acked.append(v))
            i += 1
            time.sleep(0.003)

    def wait_for_more(self, count: int, timeout_s: float = 60) -> None:
        target = len(self.acked) + count
        deadline = time.monotonic() + timeout_s
        while len(self.acked) < target and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(self.acked) >= target, f"only {len(self.acked)} acks, wanted {target}"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.flush(60)
        self.producer.close(10)


def test_acked_messages_are_consumed_through_roll_upgrade_downgrade_and_kill(cluster: LocalCluster) -> None:
    topic = "lifecycle"
    _create_topic(cluster, topic, 1, 3, {"min.insync.replicas": "2"})
    sender = Sender(cluster.bootstrap_servers, topic)
    try:
        sender.wait_for_more(200)
        code, _, err = cli("cluster", "roll", "--dir", str(cluster.root), "--software-version", "4.3")
        assert code == 0, err
        cluster = LocalCluster.load(cluster.root)
        sender.wait_for_more(200)
        # no downgrade from 4.3-IV0 is safe: the safe one goes 4.2-IV1 -> 4.2-IV0 on the way up
        for command, level, extra in (("upgrade", "4.2-IV1", ()), ("downgrade", "4.2-IV0", ()),
                                      ("upgrade", "4.3-IV0", ()), ("downgrade", "4.2-IV1", ("--unsafe",))):
            code, out, err = cli("features", "--bootstrap-server", cluster.brokers[0].address, command,
                                 "--metadata", level, *extra)
            assert code == 0, (command, level, out, err)
            wait_finalized(cluster, {"metadata.version": {"4.2-IV0": 28, "4.2-IV1": 29,
                                                          "4.3-IV0": 30}[level]})
            sender.wait_for_more(200)
        victim = cluster.node(_leader_of(cluster, topic, 0))
        assert victim.pid is not None
        os.kill(victim.pid, signal.SIGKILL)
        while pid_alive(victim.pid):
            time.sleep(0.01)
        sender.wait_for_more(200)
        victim.pid = None
        cluster.start(victim)
        cluster.wait_ready([victim], 60)
        sender.wait_for_more(100)
    finally:
        sender.stop()
    consumed = {m[1] for m in _consume_kafka_python(cluster.bootstrap_servers, topic, 1,
                                                    len(sender.acked))[0]}
    missing = [v for v in sender.acked if v not in consumed]
    log.warning("acked %d, consumed %d distinct, missing %d", len(sender.acked), len(consumed), len(missing))
    assert not missing, f"{len(missing)} of {len(sender.acked)} acknowledged messages were lost"
