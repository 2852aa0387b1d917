"""Issue #7 rolling upgrade and issue #6 fenced brokers, on real processes.

A cluster formatted at 3.9 with every node on 3.9 software is rolled node by node to 4.3 software
(``kraftwerk cluster roll``: SIGTERM, wait, restart, wait until ready); while one broker is left
on 3.9 the online upgrade fails with Kafka's message naming it; once it is rolled too, the upgrade
to 4.3-IV0 succeeds and every controller and broker reports the new level and the same epoch.
A broker then restarted on 3.9 software stays fenced with Kafka's UnsupportedVersionException text
(in its log and in ``cluster status``) and registers once rolled to 4.3 again; ``cluster up``
reports such a broker instead of waiting for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, wait_finalized
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

REFUSAL_39 = ("Unable to register because the broker does not support finalized version 30 of "
              "metadata.version. The broker wants a version between 1 and 21, inclusive.")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # a static quorum: test_release_version_upgrade_raises_kraft_version takes it from kraft.version 0
    with cluster_up(tmp_path_factory.mktemp("rolling"), "--controllers", "1", "--brokers", "2",
                    "--release-version", "3.9", "--software-version", "3.9", "--static-quorum") as running:
        yield running


def test_rolling_upgrade_then_online_metadata_upgrade(cluster: LocalCluster) -> None:
    root = str(cluster.root)
    controller = cluster.bootstrap_controllers
    assert sorted(wait_finalized(cluster, {"metadata.version": 21})) == [1, 2, 3]
    # roll the controller and broker 2; broker 3 stays on 3.9 software
    code, out, err = cli("cluster", "roll", "--dir", root, "--software-version", "4.3",
                         "--node", "1", "--node", "2")
    assert code == 0, err
    assert out.splitlines() == [line for line in out.splitlines() if line.startswith("Restarted node ")]
    assert len(out.splitlines()) == 2
    code, out, err = cli("features", "--bootstrap-controller", controller, "upgrade", "--metadata", "4.3-IV0")
    assert code == 1
    assert out.splitlines() == [
        "Could not upgrade metadata.version to 30. The update failed for all features since the following "
        "feature had an error: Invalid update version 30 for feature metadata.version. Broker 3 only "
        "supports versions 1-21"]
    assert err.splitlines() == ["1 out of 1 operation(s) failed."]
    # roll the last node, then upgrade online (through a broker: Envelope to the controller)
    code, out, err = cli("cluster", "roll", "--dir", root, "--software-version", "4.3", "--node", "3",
                         "--output", "json")
    assert code == 0, err
    assert [r["nodeId"] for r in json.loads(out)["restarted"]] == [3]
    cluster = LocalCluster.load(cluster.root)
    code, out, err = cli("features", "--bootstrap-server", cluster.brokers[0].address, "upgrade",
                         "--metadata", "4.3-IV0")
    assert (code, out, err) == (0, "metadata.version was upgraded to 30.\n", "")
    reported = wait_finalized(cluster, {"metadata.version": 30})
    assert sorted(reported) == [1, 2, 3] and len({f.epoch for f in reported.values()}) == 1
    code, out, _ = cli("cluster", "status", "--dir", root, "--output", "json")
    status = json.loads(out)["nodes"]
    assert [n["softwareVersion"] for n in status] == ["4.3"] * 3
    assert [n["state"] for n in status] == ["ready"] * 3


def test_old_software_broker_stays_fenced_then_registers(cluster: LocalCluster) -> None:
    root = str(cluster.root)
    wait_finalized(cluster, {"metadata.version": 30})
    code, _, err = cli("cluster", "roll", "--dir", root, "--software-version", "3.9", "--node", "3")
    assert code == 1
    assert err.strip() == f"Broker 3 restarted on software 3.9 but stays fenced: {REFUSAL_39}"
    log_text = (cluster.root / "node-3" / "server.log").read_text()
    assert REFUSAL_39 in log_text
    code, out, _ = cli("cluster", "status", "--dir", root, "--output", "json")
    node3 = json.loads(out)["nodes"][2]
    assert (node3["state"], node3["reason"], node3["softwareVersion"]) == ("fenced", REFUSAL_39, "3.9")
    code, out, _ = cli("cluster", "status", "--dir", root)
    assert "State: fenced" in out and f"Reason: {REFUSAL_39}" in out
    # newer software: it registers and catches up
    code, _, err = cli("cluster", "roll", "--dir", root, "--software-version", "4.3", "--node", "3")
    assert code == 0, err
    reported = wait_finalized(LocalCluster.load(cluster.root), {"metadata.version": 30})
    assert sorted(reported) == [1, 2, 3]


def test_a_static_quorum_cannot_add_or_remove_controllers(cluster: LocalCluster) -> None:
    """`--static-quorum` names controller.quorum.voters: Kafka's leader refuses voter changes."""
    root = str(cluster.root)
    code, _, err = cli("cluster", "add-controller", "--dir", root)
    assert (code, err.strip()) == (1, "Cluster doesn't support adding voter because the kraft.version "
                                      "feature is 0")
    code, _, err = cli("cluster", "remove-controller", "--dir", root, "-i", "1")
    assert (code, err.strip()) == (1, "Cluster doesn't support removing voter because the kraft.version "
                                      "feature is 0")
    assert [n.node_id for n in LocalCluster.load(cluster.root).nodes] == [1, 2, 3]


def test_release_version_upgrade_raises_kraft_version(cluster: LocalCluster) -> None:
    """KAFKA-16538: a static quorum formatted at 3.9 (kraft.version 0) takes 4.3's kraft.version 1:
    raft writes the KRaftVersion + Voters control batch, every node then reports level 1."""
    cluster = LocalCluster.load(cluster.root)
    wait_finalized(cluster, {"metadata.version": 30, "kraft.version": 0})
    code, out, err = cli("features", "--bootstrap-server", cluster.brokers[0].address, "upgrade",
                         "--release-version", "4.3")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "eligible.leader.replicas.version was upgraded to 1.", "group.version was upgraded to 1.",
        "kraft.version was upgraded to 1.", "metadata.version was upgraded to 30.",
        "share.version was upgraded to 1.", "streams.version was upgraded to 1.",
        "transaction.version was upgraded to 2."]
    reported = wait_finalized(cluster, {"metadata.version": 30, "kraft.version": 1})
    assert sorted(reported) == [1, 2, 3]
    segments = sorted((cluster.root / "node-1").rglob("__cluster_metadata-0/*.log"))
    assert segments
    code, out, err = cli("dump-log", "--deep-iteration", "--files", ",".join(map(str, segments)))
    assert code == 0, err
    assert ' KRaftVersion {"version":0,"kRaftVersion":1}' in out
    voters = [line for line in out.splitlines() if " KRaftVoters " in line]
    assert len(voters) == 1 and '"voterId":1,' in voters[0] and '"name":"CONTROLLER"' in voters[0]


def test_cluster_up_reports_a_fenced_broker(tmp_path: Path) -> None:
    root = tmp_path / "fenced-up"
    try:
        code, _, err = cli("cluster", "up", "--dir", str(root), "--controllers", "1", "--brokers", "2",
                             "--node-software-version", "3=3.9")
        assert code == 1
        lines = err.splitlines()
        assert lines[0] == f"Broker 3 is fenced: {REFUSAL_39}"
        assert lines[1].startswith("Broker(s) 3 stay fenced because their software cannot support the "
                                   "finalized features; the other nodes are up in ")
        # the other nodes are up; rolling broker 3 to this software fixes it
        code, _, err = cli("cluster", "roll", "--dir", str(root), "--software-version", "latest",
                           "--node", "3")
        assert code == 0, err
        reported = wait_finalized(LocalCluster.load(root), {"metadata.version": 30})
        assert sorted(reported) == [1, 2, 3]
    finally:
        cli("cluster", "down", "--dir", str(root))

