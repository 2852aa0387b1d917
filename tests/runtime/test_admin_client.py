"""``kraftwerk.runtime.admin_client`` against the production cores behind real frames on loopback."""

from __future__ import annotations

import pytest

from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import (
    AdminClient,
    AdminClientError,
    FeatureUpdate,
    UpgradeType,
    parse_bootstrap,
    update_features_body,
    update_features_results,
)
from tests.cli.inprocess_kafka import CLUSTER_ID, InProcessKafka


def test_bootstrap_failover_and_describe() -> None:
    with InProcessKafka() as dead:
        dead_port = dead.node(1).port
    with InProcessKafka() as kafka:
        node = kafka.node(1)
        with AdminClient(f"127.0.0.1:{dead_port},{node.address}") as client:
            meta = client.describe_features()
            assert meta.supported["metadata.version"] == (7, 30)
            assert meta.finalized["transaction.version"] == (2, 2)
            assert node.of(18)[0].version == 4
            cluster = client.describe_cluster()
    assert (cluster.cluster_id, cluster.controller_id, cluster.nodes[0].port) == (CLUSTER_ID, 1, node.port)


def test_api_versions_negotiation_down() -> None:
    with InProcessKafka(api_versions={18: (0, 3), 57: (0, 1), 60: (0, 1)}) as kafka, \
            AdminClient(kafka.node(1).address) as client:
        node = kafka.node(1)
        client.describe_features()
        assert [r.version for r in node.of(18)] == [3]
        results = client.update_features({"group.version": FeatureUpdate(1)}, validate_only=True)
        assert results["group.version"].ok and node.of(57)[0].version == 1


def test_not_controller_is_retried() -> None:
    calls: list[float] = []
    with InProcessKafka(leader=None) as kafka:

        def sleep(seconds: float) -> None:
            calls.append(seconds)
            kafka.elect(1)  # a controller was elected; the next attempt succeeds

        node = kafka.node(1)
        with AdminClient(node.address, sleep=sleep) as client:
            results = client.update_features({"group.version": FeatureUpdate(1)})
        assert results["group.version"].ok and len(node.of(57)) == 2 and calls == [0.1]


def test_not_controller_until_timeout() -> None:
    clock = iter(float(i) for i in range(100))
    with InProcessKafka(leader=None) as kafka:
        client = AdminClient(kafka.node(1).address, api_timeout_s=3, retry_backoff_s=1, sleep=lambda s: None,
                             monotonic=lambda: next(clock))
        with client, pytest.raises(AdminClientError, match="not the correct controller"):
            client.update_features({"group.version": FeatureUpdate(1)})


def test_results_mapping() -> None:
    updates = {"a": FeatureUpdate(1), "b": FeatureUpdate(0, UpgradeType.SAFE_DOWNGRADE)}
    top = update_features_results(updates, {"errorCode": 95, "errorMessage": "no"})
    assert {k: (v.error, v.describe()) for k, v in top.items()} == {
        "a": (Errors.INVALID_UPDATE_VERSION, "no"), "b": (Errors.INVALID_UPDATE_VERSION, "no")}
    v2 = update_features_results(updates, {"errorCode": 0, "errorMessage": None})
    assert all(r.ok for r in v2.values())
    v1 = update_features_results(updates, {"errorCode": 0, "results": [
        {"feature": "a", "errorCode": 0, "errorMessage": None}]})
    assert v1["a"].ok and not v1["b"].ok and "did not contain a result for feature b" in v1["b"].describe()
    assert update_features_results({"a": FeatureUpdate(1)}, {"errorCode": 41})["a"].describe() == \
        "This is not the correct controller for this cluster."


def test_request_bodies() -> None:
    updates = {"x": FeatureUpdate(2, UpgradeType.UNSAFE_DOWNGRADE)}
    body = update_features_body(updates, 2, validate_only=True, timeout_ms=5)
    assert body == {"timeoutMs": 5, "validateOnly": True,
                    "featureUpdates": [{"feature": "x", "maxVersionLevel": 2, "upgradeType": 3}]}
    with pytest.raises(AdminClientError):
        update_features_body(updates, 0, validate_only=False, timeout_ms=5)
    with pytest.raises(AdminClientError):
        update_features_body({"x": FeatureUpdate(1)}, 0, validate_only=True, timeout_ms=5)


def test_parse_bootstrap_and_client_checks() -> None:
    assert parse_bootstrap("a:1, [::1]:2") == (("a", 1), ("::1", 2))
    for bad in ("", "a", "a:b"):
        with pytest.raises(AdminClientError):
            parse_bootstrap(bad)
    client = AdminClient("127.0.0.1:1")
    with pytest.raises(AdminClientError, match="can not be null or empty"):
        client.update_features({})
    with pytest.raises(AdminClientError, match="negative"):
        client.update_features({"a": FeatureUpdate(-1, UpgradeType.SAFE_DOWNGRADE)})
