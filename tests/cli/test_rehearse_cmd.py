"""``kraftwerk cluster rehearse`` (what ``scripts/run.sh`` runs) on one controller and one broker:
every step of the story, and the Spark history checked against a single-process walk of each
node's metadata log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster
from tests.cluster.helpers import cli
from tests.spark.test_metadata_source import replayed_history

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(240)]


def test_rehearsal_tells_the_whole_lifecycle(tmp_path: Path) -> None:
    from tests.spark.session import shared_spark

    shared_spark()  # the command reuses the active session (and leaves it running)
    root = tmp_path / "rehearsal"
    try:
        code, out, err = cli("cluster", "rehearse", "--dir", str(root), "--controllers", "1",
                             "--brokers", "1", "--master", "local[2]", "--output", "json")
        assert code == 0, err
    finally:
        if (root / "cluster.json").exists():
            cli("cluster", "down", "--dir", str(root))
    doc = json.loads(out)
    steps = {s["step"]: s for s in doc["steps"]}
    assert (doc["from"], doc["to"]) == ("3.9-IV0", "4.3-IV0") and len(steps) == 8
    assert [b["nodeId"] for b in steps[2]["blockers"]] == [1, 2] and not steps[2]["wouldSucceed"]
    assert [r["nodeId"] for r in steps[3]["restarted"]] == [1, 2]
    assert steps[4]["blockers"] == [] and steps[4]["wouldSucceed"] and steps[4]["lossesAtTarget"] == []
    assert "metadata.version was upgraded to 30." in steps[5]["result"]
    upgraded = steps[6]["nodes"]
    assert {n["metadataVersion"] for n in upgraded} == {"4.3-IV0"}
    assert len({n["epoch"] for n in upgraded}) == 1
    assert {n["softwareVersion"] for n in upgraded} == {"4.3"}
    assert steps[7]["refused"][0].startswith("Could not downgrade metadata.version to 29.")
    assert steps[7]["safe"] == ["transaction.version was downgraded to 1."]
    assert steps[7]["convergence"]["epoch"] > steps[6]["epoch"]
    # the cluster was stopped, its data kept; Spark's history is what each node's log holds
    cluster = LocalCluster.load(root)
    assert all(n.pid is None for n in cluster.nodes)
    history = steps[8]["history"]
    assert steps[8]["nodes"] == 2
    for node in cluster.nodes:
        walked = replayed_history(node.data_dir(root) / "__cluster_metadata-0")
        assert [(h["offset"], h["feature"], h["to"]) for h in history] == walked
    levels = {h["feature"]: h["to"] for h in history}
    assert levels["metadata.version"] == 30 and levels["transaction.version"] == 1
    first = {h["feature"]: h for h in reversed(history)}
    assert first["metadata.version"]["to"] == 21 and first["kraft.version"]["to"] == 1  # 3.9, dynamic


def test_a_directory_holding_a_cluster_is_refused(tmp_path: Path) -> None:
    (tmp_path / "cluster.json").write_text("{}")
    code, out, err = cli("cluster", "rehearse", "--dir", str(tmp_path))
    assert (code, out) == (1, "")
    assert err.strip() == (f"{tmp_path} already holds a cluster; rehearse formats a new one (remove it, or "
                           "choose another --dir)")
