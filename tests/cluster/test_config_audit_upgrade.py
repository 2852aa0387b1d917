"""KIP-1294's three scenarios on real processes, 3 controllers and 3 brokers on 4.4 software.

Format: every node's server.properties with ``log.segment.bytes=1048576`` formats at release 4.3
and is refused at 4.4 naming the config and value, its directory left empty (``cluster up`` too).
Upgrade: a 4.3-IV0 cluster, one broker with ``log.segment.bytes=2097152`` in its server.properties:
``configs audit`` and the dry run show the violation; the upgrade to 4.4-IV1 is refused naming the
broker, config and value; a cluster-default override of 4 MiB makes the retry succeed and every
node converges. AlterConfigs: at 4.4-IV1 a topic's ``segment.bytes=1048576`` is INVALID_CONFIG
from kafka-python and confluent-kafka and changes nothing; 4194304 succeeds. A
``ssl.keystore.password`` set in every server.properties appears nowhere else on disk."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.config import properties_values
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.local_cluster import LocalCluster, wait_finalized
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.cluster.helpers import cli, cluster_up, kafka_python_error_codes, wait_topic_on_brokers

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(240)]

IV1 = MetadataVersion.IBP_4_4_IV1
SECRET = "planted-keystore-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("audit"), "--controllers", "3", "--brokers", "3",
                    "--release-version", "4.3", "--software-version", "4.4",
                    "--config", f"ssl.keystore.password={SECRET}") as running:
        yield running


def test_the_upgrade_is_refused_until_an_override_fixes_the_broker(cluster: LocalCluster) -> None:
    root, broker = str(cluster.root), cluster.brokers[0]
    code, _, err = cli("cluster", "roll", "--dir", root, "--software-version", "4.4",
                       "--node", str(broker.node_id), "--config", "log.segment.bytes=2097152")
    assert code == 0, err
    server = cluster.brokers[1].address
    expected = f"broker {broker.node_id} log.segment.bytes=2097152"

    code, out, err = cli("configs", "audit", "--bootstrap-server", server, "--metadata", str(IV1),
                         "--output", "json")
    assert code == 1, err
    audit = json.loads(out)
    assert audit["refused"] and audit["unknownBrokers"] == []
    [violation] = audit["violations"]
    assert (violation["resourceName"], violation["config"], violation["value"], violation["source"]) == (
        str(broker.node_id), "log.segment.bytes", "2097152", "STATIC_BROKER_CONFIG")

    code, out, _ = cli("features", "--bootstrap-server", server, "upgrade", "--metadata", str(IV1),
                       "--dry-run")
    assert code == 1 and expected in out and "Config audit for metadata.version 4.4-IV1" in out
    code, out, _ = cli("features", "--bootstrap-server", server, "upgrade", "--metadata", str(IV1))
    assert code == 1 and expected in out and "INVALID_UPDATE_VERSION" not in out
    announced = "Upgrading metadata.version from 4.3-IV0 to 4.4-IV1."
    assert "The config audit for metadata.version 4.4-IV1 refused the change" in _controller_logs(cluster)
    assert announced not in _controller_logs(cluster)  # said only once the audit passes

    code, _, err = cli("configs", "--bootstrap-server", server, "--alter", "--broker-defaults",
                       "--add-config", "log.segment.bytes=4194304")
    assert code == 0, err
    code, out, err = cli("features", "--bootstrap-server", server, "upgrade", "--metadata", str(IV1))
    assert code == 0, out + err
    assert sorted(wait_finalized(cluster, {"metadata.version": IV1.feature_level})) == [
        n.node_id for n in cluster.nodes]
    assert announced in _controller_logs(cluster)


def _controller_logs(cluster: LocalCluster) -> str:
    return "".join(n.log_path(cluster.root).read_text() for n in cluster.controllers)


def test_format_refuses_each_node_s_1_mib_segments_at_4_4(cluster: LocalCluster, tmp_path: Path) -> None:
    """The storage format of each node's own server.properties (its log dirs moved to a fresh
    directory): release 4.3 formats, release 4.4 (4.4-IV1) is refused naming config and value."""
    for node in cluster.nodes:
        props = properties_values(node.config_path(cluster.root).read_text(encoding="latin-1"))
        for release in ("4.3", "4.4"):
            data = tmp_path / f"{node.node_id}-{release}"
            data.mkdir()
            config = tmp_path / f"{node.node_id}-{release}.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in {
                **props, "log.dirs": str(data), "metadata.log.dir": str(data),
                "log.segment.bytes": "1048576"}.items()))
            quorum = ["--no-initial-controllers"] if node.is_controller else []
            code, out, err = cli("storage", "format", "-c", str(config), "-t", cluster.cluster_id,
                                 "--release-version", release, *quorum)
            if release == "4.3":
                assert code == 0, err
                assert (data / "meta.properties").exists()
            else:
                assert code == 1 and out == ""
                assert err.strip() == ("Invalid value 1048576 for configuration log.segment.bytes: Value "
                                       "must be at least 3145728 (since metadata.version 4.4-IV1)")
                assert list(data.iterdir()) == []


def test_cluster_up_refuses_at_4_4_naming_each_node_before_writing(tmp_path: Path) -> None:
    root = tmp_path / "c"
    code, _, err = cli("cluster", "up", "--dir", str(root), "--release-version", "4.4", "--software-version",
                       "4.4", "--config", "log.segment.bytes=1048576")
    assert code == 1 and not root.exists()
    lines = [line for line in err.splitlines() if "log.segment.bytes" in line]
    assert [line.split(":")[0] for line in lines] == [f"node {i}" for i in range(1, 7)]
    assert all("Invalid value 1048576 for configuration log.segment.bytes" in line for line in lines)


def _at_iv1(cluster: LocalCluster) -> None:
    """The upgrade test leaves the cluster at 4.4-IV1; run alone, this test gets there itself."""
    server = cluster.brokers[0].address
    code, _, err = cli("configs", "--bootstrap-server", server, "--alter", "--broker-defaults",
                       "--add-config", "log.segment.bytes=4194304")
    assert code == 0, err
    code, out, err = cli("features", "--bootstrap-server", server, "upgrade", "--metadata", str(IV1))
    assert code == 0 or "already" in out + err, out + err
    wait_finalized(cluster, {"metadata.version": IV1.feature_level})


def test_alter_configs_at_4_4_iv1_refuses_1_mib_segments_from_both_clients(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
    from kafka.admin import ConfigResource as KpResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

    _at_iv1(cluster)
    topic = "kip1294-segments"
    confluent = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    created = NewTopic(topic, 1, 1, config={"segment.bytes": "8388608"})
    confluent.create_topics([created])[topic].result(timeout=30)
    wait_topic_on_brokers(cluster, topic)
    rule = "Value must be at least 3145728 (since metadata.version 4.4-IV1)"

    def segment_bytes() -> str:
        [future] = confluent.describe_configs([ConfigResource("topic", topic)], request_timeout=20).values()
        return str(future.result(timeout=30)["segment.bytes"].value)

    kafka_python = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20000)
    try:
        bad = KpResource(ConfigResourceType.TOPIC, topic, configs={"segment.bytes": "1048576"})
        refused = kafka_python.alter_configs([bad], incremental=False)
        assert kafka_python_error_codes(refused) == {Errors.INVALID_CONFIG.code}, refused
        assert rule in str(refused)
    finally:
        kafka_python.close()
    entry = ConfigEntry("segment.bytes", "1048576", incremental_operation=AlterConfigOpType.SET)
    with pytest.raises(KafkaException) as raised:
        next(iter(confluent.incremental_alter_configs(
            [ConfigResource("topic", topic, incremental_configs=[entry])]).values())).result(timeout=30)
    assert raised.value.args[0].name() == "INVALID_CONFIG" and rule in raised.value.args[0].str()
    assert segment_bytes() == "8388608"  # nothing changed

    entry = ConfigEntry("segment.bytes", "4194304", incremental_operation=AlterConfigOpType.SET)
    next(iter(confluent.incremental_alter_configs(
        [ConfigResource("topic", topic, incremental_configs=[entry])]).values())).result(timeout=30)
    deadline = time.monotonic() + 30
    while segment_bytes() != "4194304":
        assert time.monotonic() < deadline, "the accepted change never reached the brokers"
        time.sleep(0.2)


def test_the_keystore_password_is_nowhere_but_in_server_properties(cluster: LocalCluster) -> None:
    """After every scenario above ran on the cluster: only the operator's own input holds the
    secret, each node's server.properties -- never cluster.json, a metadata log segment, a
    snapshot or a node's log."""
    files = [p for p in Path(cluster.root).rglob("*") if p.is_file()]
    assert any(p.suffix == ".log" for p in files) and any(p.suffix == ".checkpoint" for p in files)
    assert sum(p.name == "server.properties" and SECRET.encode() in p.read_bytes() for p in files) == 6
    leaked = [p for p in files if SECRET.encode() in p.read_bytes() and p.name != "server.properties"]
    assert leaked == []


def test_configs_audit_and_actions_refuse_bad_flags_in_one_line() -> None:
    code, _, err = cli("configs", "audit", "--bootstrap-server", "localhost:1")
    assert code == 1 and err.strip().endswith("configs audit needs --metadata, e.g. --metadata 4.4-IV1")
    code, _, err = cli("configs", "audit", "--bootstrap-server", "localhost:1", "--metadata", "9.9-IV9")
    assert code == 1 and "Unknown metadata.version '9.9-IV9'" in err and "Traceback" not in err
    code, _, err = cli("configs", "--bootstrap-server", "localhost:1", "--broker", "1")
    assert code == 1 and "exactly one action" in err


def test_release_4_4_needs_software_4_4_and_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    root = tmp_path / "c"
    code, _, err = cli("cluster", "up", "--dir", str(root), "--release-version", "4.4")
    assert code == 1 and "Unknown metadata.version '4.4'" in err and not root.exists()
