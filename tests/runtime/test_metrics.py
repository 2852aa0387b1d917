"""The metrics endpoint: Prometheus' text format over HTTP, the KIP-866 gauges only where Kafka reports
them (the active controller)."""

from __future__ import annotations

from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.runtime.metrics import Cores, MetricsServer, migration_summary, scrape
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import Log, activate, broker, controller

K = "kafka_controller_KafkaController_"


def serve(cores: Cores) -> dict[str, float]:
    server = MetricsServer(lambda: cores, "127.0.0.1", 0)
    try:
        gauges = scrape("127.0.0.1", server.port)
    finally:
        server.close()
    assert gauges is not None
    return gauges


def test_an_active_kraft_controller_reports_kraft_and_no_driver() -> None:
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.IBP_3_9_IV0))
    log.controllers.append(ctl)
    activate(log, ctl)
    gauges = serve(Cores(ctl, None, 0))
    assert gauges[K + "MetadataType"] == 3 and gauges[K + "ZkMigrationState"] == 0
    assert gauges[K + "Features{metadata.version}"] == MetadataVersion.IBP_3_9_IV0.feature_level
    assert not [k for k in gauges if "ZooKeeper" in k or k.startswith("kraftwerk_migration")]
    assert migration_summary(gauges) == {"zkMigrationState": "NONE"}


def test_a_broker_reports_features_but_no_controller_gauges() -> None:
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.IBP_3_9_IV0))
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2)
    # not caught up yet: a KRaft node, no finalized feature
    assert serve(Cores(None, b, 0)) == {K + "MetadataType": 3, K + "FinalizedFeaturesEpoch": -1}
    log.join(b)
    gauges = serve(Cores(None, b, 0))
    assert gauges[K + "MetadataType"] == 3 and K + "Features{metadata.version}" in gauges
    assert K + "ZkMigrationState" not in gauges and migration_summary(gauges) is None


def test_an_unreachable_endpoint_is_none() -> None:
    server = MetricsServer(lambda: Cores(None, None, 0), "127.0.0.1", 0)
    port = server.port
    server.close()
    assert scrape("127.0.0.1", port, timeout_s=1) is None
