"""KIP-724 online on real processes: a 3.9-software broker takes an old client's Produce v2 and
stores v2 batches (and down-converts for its Fetch); legacy v0/v1 segments in a partition directory
are served to a v4+ fetch as they are, and ``log.record.version.force.upgrade=2`` rewrites them as
v2 at start-up with the same offsets, keys and values."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.records.builder import build_records
from kraftwerk.records.recovery import scan_batches
from kraftwerk.records.types import CompressionType
from kraftwerk.runtime.local_cluster import LocalCluster
from kraftwerk.storage.segment import list_segments
from tests.cluster.helpers import cluster_up
from tests.cluster.test_data_plane import _create_topic

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def cluster_39(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("kip724-39"), "--controllers", "1", "--brokers", "1",
                    "--software-version", "3.9", "--release-version", "3.9-IV0") as up:
        yield up


@pytest.fixture(scope="module")
def cluster_4x(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("kip724-4x"), "--controllers", "1", "--brokers", "1") as up:
        yield up


def _magics(partition_dir: Path) -> list[int]:
    out = []
    for seg in list_segments(partition_dir):
        out += [b.magic for b in scan_batches(seg.log_path.read_bytes()).batches]
    return out


def _consume(bootstrap: str, topic: str, **kwargs: object) -> list[tuple[int, bytes | None, bytes | None]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000,
                             **kwargs)
    consumer.assign([TopicPartition(topic, 0)])
    consumer.seek_to_beginning()
    out = [(m.offset, m.key, m.value) for m in consumer]
    consumer.close()
    return out


def test_3x_software_takes_an_old_client_and_stores_v2(cluster_39: LocalCluster) -> None:
    from kafka import KafkaProducer

    topic = "old-client"
    _create_topic(cluster_39, topic, 1, 1)
    producer = KafkaProducer(bootstrap_servers=cluster_39.bootstrap_servers, api_version=(0, 10, 0), acks=1)
    for i in range(20):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i).get(timeout=20)
    producer.close()
    broker = cluster_39.brokers[0]
    assert set(_magics(broker.data_dir(cluster_39.root) / f"{topic}-0")) == {2}
    expected = [(i, b"k%d" % i, b"v%d" % i) for i in range(20)]
    assert _consume(cluster_39.bootstrap_servers, topic, api_version=(0, 10, 0)) == expected  # Fetch v2
    assert _consume(cluster_39.bootstrap_servers, topic) == expected


def _legacy_segment() -> tuple[bytes, list[tuple[int, bytes | None, bytes | None]]]:
    """Offsets 0-9 as v0 messages, 10-19 as v1 messages and 20-29 as one gzip v1 wrapper."""
    ts = int(time.time() * 1000)
    rows = [(i, ts + i, b"key-%d" % i, b"value-%d" % i, ()) for i in range(30)]
    data = (build_records(rows[:10], magic=0) + build_records(rows[10:20], magic=1)
            + build_records(rows[20:], magic=1, compression=CompressionType.GZIP))
    return data, [(o, k, v) for o, _t, k, v, _h in rows]


def test_legacy_segments_are_served_as_they_are_then_force_upgraded(cluster_4x: LocalCluster) -> None:
    topic = "legacy"
    _create_topic(cluster_4x, topic, 1, 1)
    broker = cluster_4x.brokers[0]
    pdir = broker.data_dir(cluster_4x.root) / f"{topic}-0"
    cluster_4x.stop([broker])
    data, expected = _legacy_segment()
    for seg in list_segments(pdir):
        for path in seg.paths():
            path.unlink(missing_ok=True)
    (pdir / "00000000000000000000.log").write_bytes(data)
    cluster_4x.start(broker)
    cluster_4x.wait_ready([broker], 60)

    assert _consume(cluster_4x.bootstrap_servers, topic) == expected
    assert (pdir / "00000000000000000000.log").read_bytes() == data  # unchanged on disk
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster_4x.bootstrap_servers, acks=1)
    producer.send(topic, key=b"key-30", value=b"value-30").get(timeout=20)
    producer.close()
    expected.append((30, b"key-30", b"value-30"))
    assert _magics(pdir) == [0] * 10 + [1] * 11 + [2]

    cluster_4x.stop([broker])
    broker.extra["log.record.version.force.upgrade"] = "2"
    cluster_4x.start(broker)
    cluster_4x.wait_ready([broker], 60)
    assert set(_magics(pdir)) == {2}
    assert _consume(cluster_4x.bootstrap_servers, topic) == expected
