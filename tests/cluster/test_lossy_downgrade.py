"""Issue #7 lossy downgrade and issue #6 controller registration, on a real 3-controller, 2-broker
cluster at 4.3: standbys register with the active controller; ``downgrade --metadata 3.6-IV2``
is refused with Kafka's text; with ``--unsafe`` the result line lists the losses, every node
reports 3.6-IV2 with the same epoch and holds a snapshot at the new version in its
``__cluster_metadata-0``; a kafka-python client whose connection the brokers closed reconnects and
renegotiates; a standby controller and a broker restarted on 3.6 software load that snapshot and
catch up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, wait_finalized
from kraftwerk.storage.metadata_log import list_snapshots
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

LEVEL_36 = 14  # 3.6-IV2, the 3.6 release's metadata.version


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # a static quorum: 3.6 software predates KIP-853, so only a kraft.version 0 quorum can go back to it
    with cluster_up(tmp_path_factory.mktemp("lossy"), "--controllers", "3", "--brokers", "2",
                    "--static-quorum") as running:
        yield running


def image_of(directory: Path) -> dict[str, Any]:
    code, out, err = cli("metadata", "show", "--log-dir", str(directory), "--output", "json")
    assert code == 0, err
    image: dict[str, Any] = json.loads(out)
    return image


def snapshot_image(path: Path) -> dict[str, Any]:
    code, out, err = cli("metadata", "show", "--snapshot", str(path), "--output", "json")
    assert code == 0, err
    image: dict[str, Any] = json.loads(out)
    return image


def test_lossy_downgrade_reloads_every_node(cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient

    before = wait_finalized(cluster, {"metadata.version": 30})
    # every controller registered (the active one itself, the standbys through ControllerRegistration)
    registered: list[int] = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        image = image_of(cluster.brokers[0].data_dir(cluster.root) / "__cluster_metadata-0")
        registered = sorted(c["id"] for c in image["controllers"])
        if registered == [1, 2, 3]:
            break
        time.sleep(0.2)
    assert registered == [1, 2, 3]
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        assert admin.describe_features()["metadata.version"]["finalized"] == (30, 30)
        broker = cluster.brokers[0].address
        code, out, err = cli("features", "--bootstrap-server", broker, "downgrade", "--metadata", "3.6-IV2")
        assert code == 1
        assert out.splitlines() == [
            f"Could not downgrade metadata.version to {LEVEL_36}. The update failed for all features since "
            "the following feature had an error: Unsupported metadata.version downgrade from 30 to "
            f"{LEVEL_36}. Refusing to perform the requested downgrade because it might delete metadata "
            "information."]
        assert err.splitlines() == ["1 out of 1 operation(s) failed."]
        # the whole 3.6 release (features without a 3.6 level go to 0), accepting the losses
        code, out, err = cli("features", "--bootstrap-server", broker, "downgrade", "--release-version",
                             "3.6", "--unsafe")
        assert (code, err) == (0, "")
        lines = out.splitlines()
        mv_line = next(line for line in lines if line.startswith("metadata.version "))
        assert mv_line.startswith(f"metadata.version was downgraded to {LEVEL_36}. Metadata has been lost "
                                  "because the following could not be represented in metadata.version "
                                  "3.6-IV2: ")
        for loss in ("controller registration data", "the online log directories of one or more brokers"):
            assert loss in mv_line
        assert "group.version was downgraded to 0." in lines and len(lines) == 7
        after = wait_finalized(cluster, {"metadata.version": LEVEL_36, "group.version": 0,
                                         "transaction.version": 0, "eligible.leader.replicas.version": 0})
        epoch = {f.epoch for f in after.values()}.pop()
        assert epoch > before[1].epoch
        # each node wrote its image at the new version as a snapshot just past the change
        for node in cluster.nodes:
            directory = node.data_dir(cluster.root) / "__cluster_metadata-0"
            snaps = {s.snapshot_id.end_offset: s.path for s in list_snapshots(directory)}
            assert snaps and max(snaps) > epoch, (node.node_id, sorted(snaps))
            image = snapshot_image(snaps[max(snaps)])
            assert image["metadataVersion"] == "3.6-IV2"
            assert image["controllers"] == []  # lost: controller registration data
            assert all(b["logDirs"] == [] for b in image["brokers"])
        # the brokers closed client connections: the client reconnects and renegotiates
        assert admin.describe_features()["metadata.version"]["finalized"] == (LEVEL_36, LEVEL_36)
        assert admin.describe_cluster()["cluster_id"] == cluster.cluster_id
        closed = [line for node in cluster.brokers
                  for line in (node.log_path(cluster.root)).read_text().splitlines()
                  if "Closed" in line and "3.6-IV2" in line]
        assert closed and any(not line.split("Closed ", 1)[1].startswith("0 ") for line in closed)
    finally:
        admin.close()


def test_nodes_restarted_on_36_software_catch_up(cluster: LocalCluster) -> None:
    wait_finalized(cluster, {"metadata.version": LEVEL_36})
    active = cluster.active_controller()
    standby = next(n.node_id for n in cluster.controllers if n.node_id != active)
    broker = cluster.brokers[-1].node_id
    code, out, err = cli("cluster", "roll", "--dir", str(cluster.root), "--software-version", "3.6",
                         "--node", str(standby), "--node", str(broker))
    assert code == 0, err
    cluster = LocalCluster.load(cluster.root)
    for node_id in (standby, broker):
        log_text = cluster.node(node_id).log_path(cluster.root).read_text()
        assert "Loaded snapshot" in log_text.split("shut down completed")[-1]
    # the cluster still takes updates, and every node (3.6 software included) follows them
    code, out, err = cli("features", "--bootstrap-server", cluster.brokers[0].address, "upgrade",
                         "--metadata", "3.6-IV2")
    assert (code, err) == (0, ""), out
    reported = wait_finalized(cluster, {"metadata.version": LEVEL_36})
    assert sorted(reported) == [n.node_id for n in cluster.nodes]
    code, out, _ = cli("cluster", "status", "--dir", str(cluster.root), "--output", "json")
    by_id = {n["nodeId"]: n for n in json.loads(out)["nodes"]}
    assert by_id[standby]["softwareVersion"] == "3.6" and by_id[broker]["softwareVersion"] == "3.6"
    assert {n["state"] for n in by_id.values()} == {"ready"}
