"""Acceptance: real Kafka clients against `kraftwerk cluster up` (controllers + brokers on loopback)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.cli.main import main as cli_main

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    root = tmp_path_factory.mktemp("cluster")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_main(["cluster", "up", "--dir", str(root), "--controllers", "3", "--brokers", "2"]) == 0
    bootstrap = out.getvalue().strip().splitlines()[-1]
    try:
        yield root, bootstrap
    finally:
        cli_main(["cluster", "down", "--dir", str(root)])


def test_kafka_python_admin_client(cluster: tuple[Path, str]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    _, bootstrap = cluster
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000)
    try:
        # `cluster up` returns once every broker lists every broker
        brokers = sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"])
        assert brokers == [4, 5]
        versions = admin.api_versions()
        assert {3, 18, 32, 57, 60} <= {int(k) for k in versions}
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "4")],
                                         config_filter="all")["broker"]["4"]
        # the broker's own server.properties, reported as Kafka reports them
        assert configs["node.id"]["value"] == "4"
        assert configs["process.roles"]["value"] == "broker"
        assert configs["node.id"]["config_source"] == "STATIC_BROKER_CONFIG"
    finally:
        admin.close()


def test_confluent_kafka_describe_cluster(cluster: tuple[Path, str]) -> None:
    from confluent_kafka.admin import AdminClient

    _, bootstrap = cluster
    admin = AdminClient({"bootstrap.servers": bootstrap})
    result = admin.describe_cluster(request_timeout=10).result(timeout=20)
    assert sorted(n.id for n in result.nodes) == [4, 5]


def test_cluster_status_json(cluster: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    root, _ = cluster
    capsys.readouterr()
    assert cli_main(["cluster", "status", "--dir", str(root), "--output", "json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [n["state"] for n in status["nodes"]] == ["ready"] * 5
    assert all(n["finalizedFeatures"]["metadata.version"] > 0 for n in status["nodes"])


def test_describe_cluster_with_the_wrong_endpoint_type_is_refused(cluster: tuple[Path, str]) -> None:
    """KIP-919 (Kafka's ``AuthHelper.computeDescribeClusterResponse``): a controller asked for
    brokers, or a broker asked for controllers, answers MISMATCHED_ENDPOINT_TYPE (114)."""
    from kraftwerk.runtime.admin_client import AdminClient
    from kraftwerk.runtime.local_cluster import LocalCluster

    root, bootstrap = cluster
    controller = LocalCluster.load(root).controllers[0].address
    asked = {"includeClusterAuthorizedOperations": False, "endpointType": 1}
    with AdminClient(controller, controllers=True) as admin:
        refused = admin.call(60, asked)
        deadline = time.monotonic() + 30  # a standby registers itself a moment after it is ready
        while True:
            listed = admin.call(60, {**asked, "endpointType": 2})
            ids = sorted(n["brokerId"] for n in listed["brokers"])
            if ids == [1, 2, 3] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert (refused["errorCode"], refused["errorMessage"]) == (114, (
        "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"))
    assert listed["errorCode"] == 0 and ids == [1, 2, 3]
    with AdminClient(bootstrap) as admin:
        refused = admin.call(60, {**asked, "endpointType": 2})
    assert (refused["errorCode"], refused["errorMessage"]) == (114, (
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"))
