"""Configs end to end on ``cluster up`` (3 controllers, 2 brokers): kafka-python and confluent-kafka
describe and alter topic, broker and cluster-default configs through the brokers, which forward
the changes to the active controller; an invalid value is INVALID_CONFIG with Kafka's message, a
password describes as sensitive with no value, and dynamic configs survive a restart of every node
and a controller failover."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import LocalCluster
from tests.cluster.helpers import cli, cluster_up, kafka_python_error_codes, wait_topic_on_brokers

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(240)]

TOPIC = "cfg-topic"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("configs"), "--controllers", "3", "--brokers", "2") as up:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": up.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=30)
        wait_topic_on_brokers(up, TOPIC)
        yield up


def _describe(cluster: LocalCluster, rtype: str, name: str) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    future = next(iter(admin.describe_configs([ConfigResource(rtype, name)], request_timeout=20).values()))
    return dict(future.result(timeout=30))


def _incremental(cluster: LocalCluster, rtype: str, name: str, **sets: str) -> None:
    """IncrementalAlterConfigs SET through kraftwerk's admin client (kafka-python and confluent-kafka
    cannot name the cluster default ``""``)."""
    resource = {
        "resourceType": {"topic": 2, "broker": 4}[rtype],
        "resourceName": name,
        "configs": [{"name": k, "configOperation": 0, "value": v} for k, v in sets.items()],
    }
    with AdminClient(cluster.bootstrap_servers) as admin:
        [result] = admin.call(44, {"resources": [resource], "validateOnly": False})["responses"]
    assert result["errorCode"] == 0, result


def test_kafka_python_describe_and_alter(cluster: LocalCluster) -> None:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20000)
    try:
        resource = ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"retention.ms": "86400000"})
        result = admin.alter_configs([resource], incremental=False)
        assert kafka_python_error_codes(result) == {0}, result
        _wait_for(lambda: _check_value(cluster, "topic", TOPIC, "retention.ms", "86400000"))
        bad = ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={"segment.bytes": "1"})
        refused = admin.alter_configs([bad], incremental=False)
        assert "Invalid value 1 for configuration segment.bytes: Value must be at least 14" in str(refused)
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
        assert "86400000" in str(described) and "segment.bytes" not in str(described)  # modified only
    finally:
        admin.close()


def _check_in(text: str, part: str) -> None:
    assert part in text


def _check_value(cluster: LocalCluster, rtype: str, name: str, key: str, value: str) -> None:
    assert _describe(cluster, rtype, name)[key].value == value


def test_confluent_kafka_invalid_config_and_password(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    broker = str(cluster.brokers[0].node_id)
    bad = ConfigResource(
        "topic",
        TOPIC,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "lots", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException) as refused:
        next(iter(admin.incremental_alter_configs([bad]).values())).result(timeout=30)
    error = refused.value.args[0]
    assert error.name() == "INVALID_CONFIG"
    assert error.str() == ("Invalid value lots for configuration max.message.bytes: Not a number of type INT")
    _incremental(cluster, "broker", broker, **{"listener.name.plaintext.ssl.key.password": "s3cret"})

    def sensitive() -> None:
        entry = _describe(cluster, "broker", broker).get("listener.name.plaintext.ssl.key.password")
        assert entry is not None and entry.is_sensitive and entry.value is None

    _wait_for(sensitive)


def _wait_for(check: Any, timeout_s: float = 30.0) -> None:
    """Until ``check`` passes: a change reaches each broker when it replays it, and a restarted
    node takes a moment to be reachable again."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            check()
            return
        except (AssertionError, KafkaException):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_dynamic_configs_survive_restarts_and_failover(cluster: LocalCluster) -> None:
    _incremental(cluster, "broker", "", **{"log.retention.ms": "3600000"})
    _incremental(cluster, "topic", TOPIC, **{"cleanup.policy": "compact"})

    def check(retention: str) -> None:
        for b in cluster.brokers:
            entry = _describe(cluster, "broker", str(b.node_id))["log.retention.ms"]
            assert (entry.value, entry.source) == (retention, 3)  # DYNAMIC_DEFAULT_BROKER_CONFIG
        assert _describe(cluster, "topic", TOPIC)["cleanup.policy"].value == "compact"

    _wait_for(lambda: check("3600000"))
    cluster.roll(None)  # every node restarts, standbys first, then the active controller, then brokers
    _wait_for(lambda: check("3600000"))
    active = cluster.active_controller()
    assert active is not None
    cluster.stop([cluster.node(active)])
    _incremental(cluster, "broker", "", **{"log.retention.ms": "7200000"})  # the new active controller
    _wait_for(lambda: check("7200000"))
    cluster.start(cluster.node(active))
    cluster.wait_ready([cluster.node(active)])
    _wait_for(lambda: check("7200000"))


def test_kraftwerk_configs_matches_kafka_configs(cluster: LocalCluster, tmp_path: Path) -> None:
    bs = ("--bootstrap-server", cluster.bootstrap_servers)
    code, out, err = cli(
        "configs",
        *bs,
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        TOPIC,
        "--add-config",
        "retention.bytes=5000,cleanup.policy=[compact,delete]",
    )
    assert (code, out) == (0, f"Completed updating config for topic {TOPIC}.\n"), err

    def described() -> None:
        code, out, _ = cli("configs", *bs, "--describe", "--entity-type", "topics", "--entity-name", TOPIC)
        assert code == 0
        lines = out.splitlines()
        assert lines[0] == f"Dynamic configs for topic {TOPIC} are:"
        assert (
            "  retention.bytes=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.bytes=5000, "
            "DEFAULT_CONFIG:log.retention.bytes=-1}" in lines
        )
        assert any(line.startswith("  cleanup.policy=compact,delete sensitive=false") for line in lines)

    _wait_for(described)
    code, _, err = cli("configs", *bs, "--alter", "--topic", TOPIC, "--delete-config", "no.such.config")
    assert (code, err.strip()) == (1, "Invalid config(s): no.such.config")
    code, _, err = cli("configs", *bs, "--alter", "--topic", TOPIC, "--add-config", "segment.bytes=1")
    assert code == 1 and err.strip().endswith(
        "INVALID_CONFIG: Invalid value 1 for configuration segment.bytes: Value must be at least 14"
    )
    settings = tmp_path / "defaults.properties"
    settings.write_text("log.cleaner.threads=2\n")
    code, out, _ = cli(
        "configs",
        *bs,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config-file",
        str(settings),
    )
    assert (code, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    _wait_for(
        lambda: _check_in(cli("configs", *bs, "--describe", "--broker-defaults")[1], "log.cleaner.threads=2")
    )
    assert (
        cli("configs", *bs, "--alter", "--broker-defaults", "--delete-config", "log.cleaner.threads")[0] == 0
    )
    controllers = ("--bootstrap-controller", cluster.bootstrap_controllers)

    def default_without_cleaner_threads() -> None:
        out = cli("configs", *controllers, "--describe", "--broker-defaults", "--output", "json")[1]
        [default] = json.loads(out)
        assert default["entityName"] == ""
        assert "log.cleaner.threads" not in {c["name"] for c in default["configs"]}

    _wait_for(default_without_cleaner_threads)
    broker = str(cluster.brokers[0].node_id)
    code, out, _ = cli("configs", *bs, "--describe", "--broker", broker, "--all")
    assert out.splitlines()[0] == f"All configs for broker {broker} are:"
    assert (
        f"  node.id={broker} sensitive=false synonyms={{STATIC_BROKER_CONFIG:node.id={broker}, "
        "DEFAULT_CONFIG:node.id=-1}"
    ) in out.splitlines()
    code, out, _ = cli(
        "configs", *bs, "--alter", "--broker-logger", broker, "--add-config", "kraftwerk.controller=DEBUG"
    )
    assert (code, out) == (0, f"Completed updating config for broker-logger {broker}.\n")
    code, out, _ = cli("configs", *bs, "--describe", "--broker-logger", broker)
    assert "  kraftwerk.controller=DEBUG sensitive=false synonyms={}" in out.splitlines()
