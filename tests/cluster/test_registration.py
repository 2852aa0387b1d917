"""Registration and wrong peers as Kafka answers them, on real processes (3 controllers + 3 brokers).

A second process with a live broker's ``node.id`` is refused with DUPLICATE_BROKER_REGISTRATION and
the first keeps its registration; a broker restarted after kill -9 registers as a new incarnation
with a larger broker epoch (the offset of its RegisterBrokerRecord); a broker formatted for another
cluster is refused with INCONSISTENT_CLUSTER_ID and says so, naming both cluster ids;
``--bootstrap-controller`` naming a broker fails at once (KIP-919's MISMATCHED_ENDPOINT_TYPE);
disabling a feature that does not exist is refused and writes nothing; ``cluster down`` lets every
broker finish its controlled shutdown through its heartbeat.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from kraftwerk.image.model import BrokerRegistration
from kraftwerk.image.source import load_log_dir
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.local_cluster import (
    CONTROLLER_LISTENER,
    LocalCluster,
    LocalNode,
    free_ports,
    node_features,
)
from kraftwerk.storage.format import format_node, random_cluster_id
from kraftwerk.storage.metadata_log import iter_metadata_batches
from kraftwerk.storage.segment import list_segments
from tests.cluster.helpers import cli, cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("registration"), "--controllers", "3", "--brokers", "3") as up:
        yield up


def _metadata_dir(cluster: LocalCluster) -> Path:
    return cluster.controllers[0].data_dir(cluster.root) / "__cluster_metadata-0"


def _eventually(probe: Callable[[], T | None], what: str, timeout_s: float = 60) -> T:
    """Poll ``probe`` until it returns a value (a failure bound, not a performance target)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value is not None:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _registration(cluster: LocalCluster, broker_id: int) -> BrokerRegistration:
    return load_log_dir(_metadata_dir(cluster)).cluster.brokers[broker_id]


def _extra_broker(cluster: LocalCluster, node_id: int, cluster_id: str) -> LocalCluster:
    """A broker process beside the cluster's own: its own port, directory and cluster.json."""
    node = LocalNode(node_id, "broker", free_ports(1)[0],
                     extra={"controller.quorum.voters": cluster.quorum_voters})
    extra = LocalCluster(cluster.root / f"extra-{node_id}-{cluster_id}", cluster_id, [node])
    data = node.data_dir(extra.root)
    format_node(cluster_id=cluster_id, node_id=node_id, log_dirs=[data], metadata_log_dir=data,
                release_version=None, controller_listener_name=CONTROLLER_LISTENER)
    extra.start(node)
    return extra


def _kill(cluster: LocalCluster, node: LocalNode) -> str:
    """kill -9, then the node's log."""
    assert node.pid is not None
    os.kill(node.pid, signal.SIGKILL)
    os.waitpid(node.pid, 0)
    return node.log_path(cluster.root).read_text()


def test_bootstrap_controller_naming_a_broker_fails_at_once(cluster: LocalCluster, tmp_path: Path) -> None:
    broker = cluster.brokers[0].address
    mismatch = ("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                "CONTROLLER")
    code, _, err = cli("features", "--bootstrap-controller", broker, "describe")
    assert (code, err) == (1, mismatch + "\n")
    # not retried until the api timeout (10 minutes here: the test's own timeout would catch it)
    patient = tmp_path / "admin.properties"
    patient.write_text("default.api.timeout.ms=600000\n")
    code, out, err = cli("features", "--bootstrap-controller", broker, "--command-config", str(patient),
                         "upgrade", "--feature", "group.version=1")
    assert (code, out) == (1, f"Could not upgrade group.version to 1. {mismatch}\n")


def test_disabling_a_feature_that_does_not_exist_is_refused_and_writes_nothing(cluster: LocalCluster) -> None:
    code, out, err = cli("features", "--bootstrap-server", cluster.bootstrap_servers, "disable",
                         "--feature", "bogus.feature")
    assert (code, err) == (1, "1 out of 1 operation(s) failed.\n")
    assert out == ("Could not disable bogus.feature. The update failed for all features since the following "
                   "feature had an error: Invalid update version 0 for feature bogus.feature. Feature "
                   "bogus.feature not found.\n")
    written = [r.value["name"] for seg in list_segments(_metadata_dir(cluster))
               for batch in iter_metadata_batches(seg.log_path) for r in batch.records
               if r.spec.name == "FeatureLevelRecord"]
    assert written and "bogus.feature" not in written


def _active_controller_levels(cluster: LocalCluster) -> dict[str, int]:
    """``features describe`` against the active controller alone (DescribeCluster names it)."""
    with AdminClient(cluster.bootstrap_controllers, controllers=True) as admin:
        described = admin.describe_cluster()
    [active] = [n for n in described.nodes if n.node_id == described.controller_id]
    code, out, err = cli("features", "--bootstrap-controller", f"{active.host}:{active.port}",
                         "describe", "--output", "json")
    assert code == 0, err
    return {f["feature"]: f["finalized_level"] for f in json.loads(out)}


def test_features_upgrade_returns_once_the_active_controller_shows_the_level(cluster: LocalCluster) -> None:
    """Read-your-writes: right after ``features upgrade`` returns, the active controller reports
    the new level (it answers once its own replay has the record, not when a majority has it)."""
    for level in (1, 0, 1, 0):
        op = "upgrade" if level else "downgrade"
        code, out, err = cli("features", "--bootstrap-server", cluster.bootstrap_servers, op,
                             "--feature", f"group.version={level}")
        assert code == 0, err
        assert _active_controller_levels(cluster).get("group.version", 0) == level, out


def test_wait_converged_returns_once_every_broker_reports_the_level(cluster: LocalCluster) -> None:
    code, out, err = cli("features", "--bootstrap-server", cluster.bootstrap_servers, "upgrade",
                         "--feature", "group.version=1", "--wait-converged", "--output", "json")
    assert code == 0, err
    [result] = json.loads(out)
    convergence = result["convergence"]
    assert convergence["ok"] and convergence["laggards"] == {}
    assert convergence["converged"] == [b.node_id for b in cluster.brokers]
    for broker in cluster.brokers:  # no wait here: the command already waited
        features = node_features(broker)
        assert features is not None and features.finalized.get("group.version") == 1


def test_wait_converged_names_a_stalled_broker_and_fails(cluster: LocalCluster, tmp_path: Path) -> None:
    stalled = cluster.brokers[-1]
    assert stalled.pid is not None
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=1000\n")
    os.kill(stalled.pid, signal.SIGSTOP)  # registered and unfenced, but answers nothing
    try:
        code, out, err = cli("features", "--bootstrap-server", cluster.brokers[0].address,
                             "--command-config", str(config), "downgrade", "--feature", "group.version=0",
                             "--wait-converged=1")
    finally:
        os.kill(stalled.pid, signal.SIGCONT)
    assert code == 1 and out == "group.version was downgraded to 0.\n"
    assert err.startswith(f"1 of {len(cluster.brokers)} node(s) did not report group.version=0 within "), err
    assert f"node {stalled.node_id}: unreachable" in err and err.count("\n") == 1
    code, _, err = cli("features", "--bootstrap-server", cluster.bootstrap_servers, "upgrade",
                       "--feature", "group.version=1", "--wait-converged=1", "--dry-run")
    assert (code, err) == (1, "--wait-converged cannot be used with --dry-run: nothing is committed.\n")


def test_a_second_process_with_a_live_brokers_node_id_is_refused(cluster: LocalCluster) -> None:
    first = cluster.brokers[0]
    before = _registration(cluster, first.node_id)
    duplicate = _extra_broker(cluster, first.node_id, cluster.cluster_id)
    node = duplicate.nodes[0]
    try:
        _eventually(lambda: "returned error DUPLICATE_BROKER_REGISTRATION" in node.log_path(duplicate.root)
                    .read_text() or None, "the duplicate's refusal")
    finally:
        log = _kill(duplicate, node)
    assert "Successfully registered" not in log
    # the first one keeps its registration (same incarnation and epoch) and stays listed
    after = _registration(cluster, first.node_id)
    assert (after.incarnation_id, after.epoch, after.fenced) == (before.incarnation_id, before.epoch, False)
    with AdminClient(cluster.bootstrap_servers) as admin:
        listed = {n.node_id: n.port for n in admin.describe_cluster().nodes}
    assert listed[first.node_id] == first.port


def test_a_broker_restarted_after_kill_9_is_a_new_incarnation_with_a_larger_epoch(
        cluster: LocalCluster) -> None:
    broker = cluster.brokers[1]
    before = _registration(cluster, broker.node_id)
    _kill(cluster, broker)
    cluster.start(broker)
    # refused (DUPLICATE_BROKER_REGISTRATION) until the old incarnation's session expires, then registered
    assert cluster.wait_ready([broker], timeout_s=60) == {}
    after = _eventually(lambda: ((r := _registration(cluster, broker.node_id)).incarnation_id
                        != before.incarnation_id and r) or None, "the new registration")
    assert after.epoch > before.epoch
    offsets = [e.offset for seg in list_segments(_metadata_dir(cluster))
               for batch in iter_metadata_batches(seg.log_path) for e in batch.entries
               if isinstance(e.record, MetadataRecord) and e.record.spec.name == "RegisterBrokerRecord"
               and e.record.value["incarnationId"] == after.incarnation_id]
    assert offsets == [after.epoch]  # Kafka's broker epoch: the offset of the RegisterBrokerRecord


def test_a_broker_formatted_for_another_cluster_names_both_ids(cluster: LocalCluster) -> None:
    foreign_id = random_cluster_id()
    foreign = _extra_broker(cluster, 9, foreign_id)
    node = foreign.nodes[0]
    try:
        fenced = foreign.wait_ready([node], timeout_s=10)  # Kafka's quorum refuses it at once
        code, out, _ = cli("cluster", "status", "--dir", str(foreign.root))
    finally:
        log = _kill(foreign, node)
    assert set(fenced) == {9}
    for text in (fenced[9], log, out):
        assert cluster.cluster_id in text and foreign_id in text and "INCONSISTENT_CLUSTER_ID" in text
    assert code == 0 and "State: fenced" in out
    # and the quorum logged the refusal, naming the peer and both ids
    controller_logs = "".join(c.log_path(cluster.root).read_text() for c in cluster.controllers)
    refusal = f"its cluster id {foreign_id} is not this quorum's cluster id {cluster.cluster_id}"
    assert refusal in controller_logs


def test_cluster_down_waits_for_every_controlled_shutdown(cluster: LocalCluster) -> None:
    code, out, err = cli("cluster", "down", "--dir", str(cluster.root))
    assert (code, err) == (0, "") and "killed" not in out
    for broker in cluster.brokers:
        log = broker.log_path(cluster.root).read_text()
        assert log.rstrip().splitlines()[-1].endswith("shut down completed (kraftwerk.node)")
        assert "Controlled shutdown complete." in log and "Controlled shutdown timed out" not in log
