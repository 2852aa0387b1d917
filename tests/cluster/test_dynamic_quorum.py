"""Issue #17: ``cluster up`` gives a dynamic quorum (KIP-853) on real processes, as Kafka 4.x's
quick start does: kraft.version 1, controllers added and removed with AddRaftVoter /
RemoveRaftVoter, and a second ``cluster up`` on the same directory brings the same cluster back
with its data. (The static form, ``--static-quorum``, is exercised by the rolling-upgrade and
lossy-downgrade modules.)"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, wait_finalized
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("dynamic"), "--controllers", "3", "--brokers", "1") as running:
        yield running


def kraft_line(address: str, flag: str = "--bootstrap-server") -> str:
    code, out, err = cli("features", flag, address, "describe")
    assert code == 0, err
    return next(line for line in out.splitlines() if line.startswith("Feature: kraft.version "))


def test_the_quorum_is_dynamic(cluster: LocalCluster) -> None:
    assert "FinalizedVersionLevel: 1 " in kraft_line(cluster.brokers[0].address)
    assert "FinalizedVersionLevel: 1 " in kraft_line(cluster.bootstrap_controllers, "--bootstrap-controller")
    config = cluster.brokers[0].config_path(cluster.root).read_text()
    assert f"controller.quorum.bootstrap.servers={cluster.bootstrap_controllers}" in config
    assert "controller.quorum.voters" not in config
    segment = cluster.brokers[0].data_dir(cluster.root) / "__cluster_metadata-0" / "00000000000000000000.log"
    code, out, err = cli("dump-log", "--cluster-metadata-decoder", "--files", str(segment))
    assert code == 0, err
    voters = [line for line in out.splitlines() if " KRaftVoters " in line]
    assert len(voters) == 1 and all(f'"voterId":{i},' in voters[0] for i in (1, 2, 3))


def test_add_then_remove_a_controller(cluster: LocalCluster) -> None:
    code, out, err = cli("cluster", "add-controller", "--dir", str(cluster.root), "--output", "json")
    assert code == 0, err
    added = json.loads(out)
    assert added["added"] == 5 and added["endpoints"].startswith("CONTROLLER://127.0.0.1:")
    grown = LocalCluster.load(cluster.root)
    assert [n.node_id for n in grown.controllers] == [1, 2, 3, 5]
    code, out, err = cli("cluster", "add-controller", "--dir", str(cluster.root))
    assert code == 0 and out.startswith("Added controller 6 with directory id "), err
    # a controller that is not a voter cannot be removed; a voter can, the leader included
    code, _, err = cli("cluster", "remove-controller", "--dir", str(cluster.root), "-i", "4")
    assert (code, err.strip()) == (1, "Node 4 is not a controller")
    active = LocalCluster.load(cluster.root).active_controller()
    assert active is not None
    code, out, err = cli("cluster", "remove-controller", "--dir", str(cluster.root), "-i", str(active))
    assert code == 0, err
    assert out.startswith(f"Removed KRaft controller {active} with directory id ")
    code, _, err = cli("cluster", "remove-controller", "--dir", str(cluster.root), "-i", "6")
    assert code == 0, err
    shrunk = LocalCluster.load(cluster.root)
    assert [n.node_id for n in shrunk.controllers] == sorted({1, 2, 3, 5} - {active})
    # the remaining quorum elects a leader and takes updates; every node follows
    code, out, err = cli("features", "--bootstrap-server", shrunk.brokers[0].address, "downgrade",
                         "--feature", "group.version=0")
    assert (code, out, err) == (0, "group.version was downgraded to 0.\n", "")
    assert sorted(wait_finalized(shrunk, {"group.version": 0, "kraft.version": 1})) == sorted(
        n.node_id for n in shrunk.nodes)


def test_a_second_up_brings_the_same_cluster_back(cluster: LocalCluster) -> None:
    before = LocalCluster.load(cluster.root)
    wait_finalized(before, {"group.version": 0})
    code, _, err = cli("cluster", "down", "--dir", str(cluster.root))
    assert code == 0, err
    code, out, err = cli("cluster", "up", "--dir", str(cluster.root), "--output", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["restarted"] is True and doc["clusterId"] == before.cluster_id and doc["quorum"] == "dynamic"
    after = LocalCluster.load(cluster.root)
    assert [(n.node_id, n.port) for n in after.nodes] == [(n.node_id, n.port) for n in before.nodes]
    # the data came back: the downgrade made before the restart is still finalized
    reported = wait_finalized(after, {"group.version": 0, "kraft.version": 1, "metadata.version": 30})
    assert sorted(reported) == sorted(n.node_id for n in after.nodes)
    code, _, err = cli("cluster", "up", "--dir", str(cluster.root), "--brokers", "4")
    assert code == 1 and "cannot apply --brokers 4" in err
