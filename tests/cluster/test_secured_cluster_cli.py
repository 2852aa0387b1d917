"""The ``kraftwerk cluster`` commands on a cluster whose every listener is SASL_SSL, started with
``cluster up --config``: ``up`` waits for the brokers through their secured listener, ``status``
reads each node's ApiVersions with the node's own client settings (or ``--command-config``),
``remove-controller`` reaches the controllers as they are secured. Until then each spoke PLAINTEXT
and a secured cluster could not be started, inspected or changed with them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster
from tests.cluster.helpers import cli, cluster_up
from tests.cluster.test_security import KEY_PASSWORD, Pki, _make_pki

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

PASSWORD = "status-secret-6d1e"


def _plain_jaas(password: str) -> str:
    return ('org.apache.kafka.common.security.plain.PlainLoginModule required '
            f'username="admin" password="{password}" user_admin="{PASSWORD}";')


@dataclass(frozen=True)
class Secured:
    root: Path
    cluster: LocalCluster
    pki: Pki


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    pki = _make_pki(tmp_path_factory.mktemp("pki") / "certs")
    root = tmp_path_factory.mktemp("secured") / "cluster"
    # the local cluster's listeners are named CONTROLLER and PLAINTEXT: both are mapped to SASL_SSL
    configs = {
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:SASL_SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server),
        "ssl.key.password": KEY_PASSWORD,
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _plain_jaas(PASSWORD),
        "listener.name.plaintext.plain.sasl.jaas.config": _plain_jaas(PASSWORD),
    }
    flags = [arg for key, value in configs.items() for arg in ("--config", f"{key}={value}")]
    with cluster_up(root, "--controllers", "2", "--brokers", "1", "--timeout", "30", *flags) as cluster:
        yield Secured(root, cluster, pki)


def _status(secured: Secured, *extra: str) -> dict[int, dict[str, Any]]:
    code, out, err = cli("cluster", "status", "--dir", str(secured.root), "--output", "json", *extra)
    assert code == 0, err
    return {row["nodeId"]: row for row in json.loads(out)["nodes"]}


def _client_config(secured: Secured, name: str, password: str) -> Path:
    path = secured.root.parent / name
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                    f"sasl.jaas.config={_plain_jaas(password)}\n"
                    f"ssl.truststore.type=PEM\nssl.truststore.location={secured.pki.ca}\n")
    return path


def test_status_reads_every_secured_node_with_its_own_settings(secured: Secured) -> None:
    rows = _status(secured)
    assert sorted(rows) == [n.node_id for n in secured.cluster.nodes]
    for row in rows.values():
        assert row["state"] == "ready"
        assert "metadata.version" in row["finalizedFeatures"], row
        assert row["finalizedFeaturesEpoch"] is not None and row["finalizedFeaturesEpoch"] >= 0


def test_status_takes_the_client_settings_of_command_config(secured: Secured) -> None:
    rows = _status(secured, "--command-config", str(_client_config(secured, "admin.properties", PASSWORD)))
    assert all("metadata.version" in row["finalizedFeatures"] for row in rows.values())
    assert all(row["noAnswer"] is None for row in rows.values())
    wrong_config = str(_client_config(secured, "wrong.properties", "nope"))
    wrong = _status(secured, "--command-config", wrong_config)
    assert all(row["finalizedFeatures"] == {} and row["state"] == "ready" for row in wrong.values())
    for row in wrong.values():  # status says why the node shows no features
        assert row["noAnswer"] == (f"SASL authentication to {row['address']} failed: "
                                   "Authentication failed: Invalid username or password"), row
    code, out, err = cli("cluster", "status", "--dir", str(secured.root), "--command-config", wrong_config)
    assert code == 0, err
    assert out.count("\tNoAnswer: SASL authentication to ") == len(wrong), out


def test_remove_controller_reaches_the_secured_quorum(secured: Secured) -> None:
    standby = max(n.node_id for n in secured.cluster.controllers)
    code, out, err = cli("cluster", "remove-controller", "--dir", str(secured.root), "--controller-id",
                         str(standby), "--output", "json")
    assert code == 0, err
    assert json.loads(out)["removed"] == standby
