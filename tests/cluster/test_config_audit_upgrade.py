"""KIP-1294's upgrade scenario on real processes: a 4.3-IV0 cluster on 4.4 software, one broker
with ``log.segment.bytes=2097152`` in its server.properties. ``configs audit`` and the dry run
show the violation; the upgrade to 4.4-IV1 is refused naming the broker, config and value; a
cluster-default override of 4 MiB makes the retry succeed and every node converges; a
``ssl.keystore.password`` set in every server.properties appears nowhere on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, wait_finalized
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

IV1 = MetadataVersion.IBP_4_4_IV1
SECRET = "planted-keystore-secret"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("audit"), "--controllers", "1", "--brokers", "2",
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

    code, _, err = cli("configs", "--bootstrap-server", server, "--alter", "--broker-defaults",
                       "--add-config", "log.segment.bytes=4194304")
    assert code == 0, err
    code, out, err = cli("features", "--bootstrap-server", server, "upgrade", "--metadata", str(IV1))
    assert code == 0, out + err
    assert sorted(wait_finalized(cluster, {"metadata.version": IV1.feature_level})) == [
        n.node_id for n in cluster.nodes]

    # only the operator's own input holds it, each node's server.properties: never cluster.json,
    # a metadata log segment, a snapshot or a node's log
    files = [p for p in Path(root).rglob("*") if p.is_file()]
    assert any(p.suffix in (".log", ".checkpoint") for p in files)
    leaked = [p for p in files if SECRET.encode() in p.read_bytes()
              and p.name != "server.properties"]
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
