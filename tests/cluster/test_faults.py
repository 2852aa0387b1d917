"""Faults during a metadata.version change, on real processes: kill -9 and SIGSTOP of the active
controller and of the broker a client talks to, while the client upgrades metadata.version.

Whatever the fault hits (before, during or after the commit), every node converges on one level,
and when the client was told the upgrade succeeded, that level is the new one. A restarted former
leader does not claim to be the active controller of an empty log. Outcomes are asserted, never
how long anything took (the waits are failure bounds).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import AdminClient, FeatureUpdate, UpdateResult
from kraftwerk.runtime.local_cluster import LocalCluster, LocalNode, node_features
from tests.cluster.helpers import cluster_up

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

MV = "metadata.version"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(tmp_path_factory.mktemp("faults"), "--controllers", "3", "--brokers", "2",
                    "--release-version", "3.9") as up:
        yield up


def _converged(cluster: LocalCluster, timeout_s: float = 90) -> int:
    """The metadata.version every node reports once all report the same level and epoch."""
    deadline = time.monotonic() + timeout_s
    while True:
        seen = [node_features(n) for n in cluster.nodes]
        reported = {(f.finalized.get(MV), f.epoch) for f in seen if f is not None}
        if None not in seen and len(reported) == 1:
            level = next(iter(reported))[0]
            assert level is not None
            return level
        assert time.monotonic() < deadline, f"nodes never agreed: {reported}"
        time.sleep(0.1)


def _upgrade_during(fault: Callable[[], None], admin: AdminClient, level: int) -> UpdateResult:
    """Send the upgrade and, while it is in flight, inject the fault; what the client was told."""
    told: list[UpdateResult] = []

    def upgrade() -> None:
        try:
            told.append(admin.update_features({MV: FeatureUpdate(level)})[MV])
        except KraftwerkError as exc:
            told.append(UpdateResult(Errors.REQUEST_TIMED_OUT, str(exc)))  # as the tool reports it

    sender = threading.Thread(target=upgrade)
    sender.start()
    fault()
    sender.join(120)
    assert told, "the client never got an answer"
    return told[0]


def _restart(cluster: LocalCluster, node: LocalNode) -> int:
    """Start a killed node again; returns where its new log begins."""
    log_start = node.log_path(cluster.root).stat().st_size
    cluster.start(node)
    assert cluster.wait_ready([node], timeout_s=90) == {}
    return log_start


def _kill(node: LocalNode) -> Callable[[], None]:
    def fault() -> None:
        assert node.pid is not None
        os.kill(node.pid, signal.SIGKILL)
    return fault


def _stop(node: LocalNode) -> Callable[[], None]:
    def fault() -> None:
        assert node.pid is not None
        os.kill(node.pid, signal.SIGSTOP)
    return fault


def _active(cluster: LocalCluster) -> LocalNode:
    active = cluster.active_controller()
    assert active is not None
    return cluster.node(active)


def _controllers_admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient(cluster.bootstrap_controllers, controllers=True, request_timeout_s=5, api_timeout_s=60)


def _broker_admin(node: LocalNode) -> AdminClient:
    return AdminClient(node.address, request_timeout_s=5, api_timeout_s=20)


def _check(told: UpdateResult, level: int, target: int) -> None:
    if told.ok:
        assert level == target, f"the client was told {MV}={target}, the nodes agree on {level}"
    else:
        assert level in (target - 1, target), level


def test_kill_9_of_the_active_controller_during_an_upgrade(cluster: LocalCluster) -> None:
    start = _converged(cluster)
    leader = _active(cluster)
    with _controllers_admin(cluster) as admin:
        told = _upgrade_during(_kill(leader), admin, start + 1)
    os.waitpid(leader.pid or 0, 0)
    log_start = _restart(cluster, leader)
    _check(told, _converged(cluster), start + 1)
    restarted_log = leader.log_path(cluster.root).read_text()[log_start:]
    assert "appears to be empty" not in restarted_log


def test_sigstop_of_the_active_controller_during_an_upgrade(cluster: LocalCluster) -> None:
    start = _converged(cluster)
    leader = _active(cluster)
    try:
        with _controllers_admin(cluster) as admin:
            told = _upgrade_during(_stop(leader), admin, start + 1)
    finally:
        os.kill(leader.pid or 0, signal.SIGCONT)
    _check(told, _converged(cluster), start + 1)


def test_kill_9_of_the_broker_forwarding_an_upgrade(cluster: LocalCluster) -> None:
    start = _converged(cluster)
    broker = cluster.brokers[0]
    with _broker_admin(broker) as admin:
        told = _upgrade_during(_kill(broker), admin, start + 1)
    os.waitpid(broker.pid or 0, 0)
    _restart(cluster, broker)
    _check(told, _converged(cluster), start + 1)


def test_sigstop_of_the_broker_forwarding_an_upgrade(cluster: LocalCluster) -> None:
    start = _converged(cluster)
    broker = cluster.brokers[1]
    try:
        with _broker_admin(broker) as admin:
            told = _upgrade_during(_stop(broker), admin, start + 1)
    finally:
        os.kill(broker.pid or 0, signal.SIGCONT)
    # a broker stopped past its session is fenced; once resumed it registers again and catches up
    _check(told, _converged(cluster), start + 1)
