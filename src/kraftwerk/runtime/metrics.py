"""A node's metrics endpoint in Prometheus' text format (``prometheus-client``): KIP-866's migration
gauges and the finalized features, read from the cores at each scrape.

Names keep Kafka's JMX names visible: ``kafka.controller:type=KafkaController,name=ZkMigrationState``
is ``kafka_controller_KafkaController_ZkMigrationState``. KIP-866 gauges that Kafka reports only on
the active controller are reported only there; the driver's state (memory only in Kafka, no metric)
is kraftwerk's ``kraftwerk_migration_driver_state``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kraftwerk.broker import BrokerNode
from kraftwerk.controller import QuorumController
from kraftwerk.image.model import MetadataImage, ZkMigrationState

log = logging.getLogger(__name__)

PREFIX = "kafka_controller_KafkaController_"
DRIVER_STATE = "kraftwerk_migration_driver_state"
UNREADY_BROKER = "kraftwerk_migration_unready_zk_broker"
METADATA_TYPE_DUAL = 2
METADATA_TYPE_KRAFT = 3
"""KIP-866's MetadataType: ZooKeeper (1), Dual (2), KRaft (3)."""


@dataclass(frozen=True, slots=True)
class Cores:
    controller: QuorumController | None
    broker: BrokerNode | None
    now_ms: int


def _gauge(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels or {}))
    family.add_metric(list((labels or {}).values()), value)
    return family


class NodeCollector(Collector):
    """Reads the cores at scrape time (on the scrape thread: it reads immutable images and plain
    attributes, never mutates the cores)."""

    def __init__(self, cores: Callable[[], Cores]) -> None:
        self._cores = cores

    def collect(self) -> Iterator[GaugeMetricFamily]:
        cores = self._cores()
        image = _image(cores)
        if image is None:
            return
        controller = cores.controller
        migrating = image.features.zk_migration_state is ZkMigrationState.MIGRATION
        yield _gauge(PREFIX + "MetadataType", "KIP-866: ZooKeeper (1), Dual (2), KRaft (3)",
                     METADATA_TYPE_DUAL if migrating else METADATA_TYPE_KRAFT)
        features = GaugeMetricFamily(PREFIX + "Features", "Finalized feature levels (KIP-866)",
                                     labels=["feature"])
        if image.metadata_version is not None:
            features.add_metric(["metadata.version"], image.metadata_version.feature_level)
        for name, level in sorted(image.features.finalized.items()):
            features.add_metric([name], level)
        yield features
        yield _gauge(PREFIX + "FinalizedFeaturesEpoch", "The offset of the last feature level change",
                     image.features_epoch)
        if controller is None or not controller.is_active:
            return
        yield _gauge(PREFIX + "ZkMigrationState", "KIP-866: NONE 0, MIGRATION 1, PRE_MIGRATION 2, "
                     "POST_MIGRATION 3", int(image.features.zk_migration_state))
        yield _gauge(PREFIX + "MigratingZkBrokerCount", "Registered brokers that are migrating ZK brokers",
                     sum(1 for b in image.cluster.brokers.values() if b.is_migrating_zk_broker))
        driver = controller.migration
        if driver is None:
            return
        yield _gauge(DRIVER_STATE, "The migration driver's state (Kafka's ordinal)",
                     driver.state.value, {"state": driver.state.name})
        unready = GaugeMetricFamily(UNREADY_BROKER, "ZooKeeper brokers the driver waits for, and why",
                                    labels=["broker", "reason"])
        for broker_id, reason in sorted(driver.unready_brokers.items()):
            unready.add_metric([str(broker_id), reason], 1)
        yield unready
        yield _gauge(PREFIX + "ZooKeeperWriteBehindLag",
                     "Committed metadata records not yet written to ZooKeeper", driver.zk_lag_records())
        yield _gauge(PREFIX + "ZooKeeperBlockingKRaftMillis",
                     "Milliseconds metadata writes were refused because ZooKeeper lagged",
                     driver.blocking_ms(cores.now_ms))
        yield _gauge(PREFIX + "ZkWriteSnapshotTimeMs", "The last full write of the image to ZooKeeper",
                     driver.last_snapshot_write_ms)
        yield _gauge(PREFIX + "ZkWriteDeltaTimeMs", "The last write of a metadata change to ZooKeeper",
                     driver.last_delta_write_ms)


def _image(cores: Cores) -> MetadataImage | None:
    if cores.controller is not None:
        return cores.controller.image
    return cores.broker.image if cores.broker is not None else None


class MetricsServer:
    """The HTTP endpoint (a daemon thread of prometheus-client's server)."""

    def __init__(self, cores: Callable[[], Cores], host: str, port: int) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(NodeCollector(cores))
        self._server: Any
        self._thread: threading.Thread
        self._server, self._thread = start_http_server(port, host, registry=self.registry)
        self.port: int = self._server.server_port
        log.info("Metrics in Prometheus' text format on http://%s:%d/metrics", host, self.port)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def scrape(host: str, port: int, timeout_s: float = 2.0) -> dict[str, float] | None:
    """A node's gauges by sample name (a labelled one as ``name{value}``, several label values joined
    by ``: ``), or None when unreachable."""
    import urllib.error
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=timeout_s) as response:
            text = response.read().decode()
    except (OSError, urllib.error.URLError):
        return None
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            label = ": ".join(sample.labels.values())
            out[f"{sample.name}{{{label}}}" if label else sample.name] = sample.value
    return out


def migration_summary(gauges: dict[str, float]) -> dict[str, str] | None:
    """KIP-866's state as an active controller reports it: ZkMigrationState and the driver's state."""
    code = gauges.get(PREFIX + "ZkMigrationState")
    if code is None:
        return None
    out = {"zkMigrationState": ZkMigrationState(int(code)).name}
    states = [k[len(DRIVER_STATE) + 1:-1] for k in gauges if k.startswith(DRIVER_STATE + "{")]
    if states:
        out["driverState"] = states[0]
    unready = [k[len(UNREADY_BROKER) + 1:-1] for k in gauges if k.startswith(UNREADY_BROKER + "{")]
    if unready:
        out["unreadyBrokers"] = "; ".join(sorted(unready))
    return out


__all__ = ["Cores", "MetricsServer", "NodeCollector", "migration_summary", "scrape"]
