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
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import (
    AdminClient,
    Connection,
    FeatureUpdate,
    UpdateResult,
)
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


class _FaultingAdmin(AdminClient):
    """kraftwerk's admin client, with the fault injected right after the first UpdateFeatures
    request has left it: the fault then races the commit (before, during or after it)."""

    def __init__(self, bootstrap: str, fault: Callable[[], None], **kw: Any) -> None:
        super().__init__(bootstrap, request_timeout_s=5, **kw)
        self._fault: Callable[[], None] | None = fault

    def connection(self, host: str, port: int) -> Connection:
        conn = super().connection(host, port)
        send = conn._send_frame

        def send_then_fault(payload: bytes) -> None:
            send(payload)
            if self._fault is not None and int.from_bytes(payload[:2], "big") == ApiKey.UPDATE_FEATURES:
                fault, self._fault = self._fault, None
                fault()

        conn._send_frame = send_then_fault  # type: ignore[method-assign]
        return conn

    def upgrade(self, level: int) -> UpdateResult:
        """What the client was told: the per-feature result, or the error the tool would print."""
        try:
            return self.update_features({MV: FeatureUpdate(level)})[MV]
        except KraftwerkError as exc:
            return UpdateResult(Errors.REQUEST_TIMED_OUT, str(exc))


def _target(cluster: LocalCluster, role: str) -> LocalNode:
    """The active controller, or the broker the client sends the upgrade through (it forwards it)."""
    if role == "broker":
        return cluster.brokers[0]
    active = cluster.active_controller()
    assert active is not None
    return cluster.node(active)


@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP], ids=["kill-9", "sigstop"])
@pytest.mark.parametrize("role", ["controller", "broker"])
def test_a_fault_during_a_metadata_version_upgrade(cluster: LocalCluster, role: str,
                                                    fault: signal.Signals) -> None:
    start = _converged(cluster)
    node = _target(cluster, role)
    assert node.pid is not None
    pid = node.pid
    if role == "controller":  # the active one, found through DescribeCluster as Kafka's admin client does
        admin = _FaultingAdmin(cluster.bootstrap_controllers, lambda: os.kill(pid, fault), controllers=True,
                               api_timeout_s=60)
    else:
        admin = _FaultingAdmin(node.address, lambda: os.kill(pid, fault), api_timeout_s=20)
    log_start = node.log_path(cluster.root).stat().st_size
    try:
        with admin:
            told = admin.upgrade(start + 1)
    finally:
        if fault == signal.SIGSTOP:
            os.kill(pid, signal.SIGCONT)  # a broker stopped past its session is fenced, then rejoins
    if fault == signal.SIGKILL:
        os.waitpid(pid, 0)
        cluster.start(node)
        assert cluster.wait_ready([node], timeout_s=90) == {}
    level = _converged(cluster)
    if told.ok:
        assert level == start + 1, f"the client was told {MV}={start + 1}, the nodes agree on {level}"
    else:
        assert level in (start, start + 1)
    # a restarted former leader does not claim to be the active controller of an empty log
    assert "appears to be empty" not in node.log_path(cluster.root).read_text()[log_start:]


def test_a_controller_stopped_while_the_others_fetch_logs_no_traceback(cluster: LocalCluster) -> None:
    """SIGTERM the active controller a few times while the other controllers and the brokers fetch
    from it and then ask for its vote: what reaches it during the shutdown is dropped or answered
    (as Kafka's stopped socket server closes its connections), never a traceback in its log."""
    _converged(cluster)
    for _ in range(3):
        node = _target(cluster, "controller")
        log_start = node.log_path(cluster.root).stat().st_size
        assert cluster.stop([node]) == []  # it exited within the grace period
        stopped_log = node.log_path(cluster.root).read_text()[log_start:]
        assert "shut down completed" in stopped_log
        assert "Traceback" not in stopped_log and " ERROR " not in stopped_log, stopped_log
        cluster.start(node)
        assert cluster.wait_ready([node], timeout_s=90) == {}
        _converged(cluster)
