"""KIP-920 on real processes: a cluster formatted at 3.9 on 4.3 software, rolled with a static
``metadata.version=4.0-IV3`` and ``auto.upgrade.metadata.version=true``, reaches 4.0-IV3 on every
node by itself; a manual upgrade is refused naming the config until the cluster default turns it
off; rolling a lower static value never lowers the level."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, node_features, wait_finalized
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

MV = "metadata.version"
LEVEL_3_9 = MetadataVersion.from_version_string("3.9").feature_level
LEVEL_4_0 = MetadataVersion.from_version_string("4.0-IV3").feature_level
LEVEL_4_1 = MetadataVersion.from_version_string("4.1").feature_level
INTERVAL_MS = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(
        tmp_path_factory.mktemp("kip920"), "--controllers", "3", "--brokers", "2", "--release-version", "3.9"
    ) as up:
        yield up


def _roll(cluster: LocalCluster, *configs: str) -> None:
    args = [a for c in configs for a in ("--config", c)]
    code, _, err = cli("cluster", "roll", "--dir", str(cluster.root), *args)
    assert code == 0, err


def test_kip_920_scenario(cluster: LocalCluster) -> None:
    bs = ("--bootstrap-server", cluster.bootstrap_servers)
    wait_finalized(cluster, {MV: LEVEL_3_9})
    _roll(
        cluster,
        "metadata.version=4.0-IV3",
        "auto.upgrade.metadata.version=true",
        f"auto.upgrade.metadata.version.interval.ms={INTERVAL_MS}",
    )
    wait_finalized(cluster, {MV: LEVEL_4_0}, timeout_s=30)  # a few intervals after the roll

    code, out, _ = cli("features", "--bootstrap-controller", cluster.bootstrap_controllers, "describe")
    assert code == 0
    assert out.splitlines()[-1].startswith(
        "metadata.version is managed automatically: upgraded toward 4.0-IV3"
    )

    code, out, err = cli("features", *bs, "upgrade", "--metadata", "4.1")
    assert code == 1 and "auto.upgrade.metadata.version" in out
    assert err.strip() == "1 out of 1 operation(s) failed."
    assert {node_features(n).finalized[MV] for n in cluster.nodes} == {LEVEL_4_0}  # type: ignore[union-attr]

    code, _, err = cli(
        "configs",
        *bs,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "auto.upgrade.metadata.version=false",
    )
    assert code == 0, err
    deadline = time.monotonic() + 30
    while True:  # the controllers apply the new cluster default when they replay it
        code, out, _ = cli("features", *bs, "upgrade", "--metadata", "4.1")
        if code == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert code == 0, out
    wait_finalized(cluster, {MV: LEVEL_4_1})

    # automatic again, with a lower static value on every node: the level is never lowered
    assert (
        cli(
            "configs",
            *bs,
            "--alter",
            "--broker-defaults",
            "--add-config",
            "auto.upgrade.metadata.version=true",
        )[0]
        == 0
    )
    _roll(cluster, "metadata.version=3.9")
    time.sleep(3 * INTERVAL_MS / 1000)  # several checks on the new active controller
    assert {node_features(n).finalized[MV] for n in cluster.nodes} == {LEVEL_4_1}  # type: ignore[union-attr]
