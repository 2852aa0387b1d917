"""The ZooKeeper launcher: Debian's server on a loopback port the OS picked; data survives a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kraftwerk.runtime.zookeeper import ZooKeeperServer, zookeeper_installed

pytestmark = pytest.mark.zookeeper


@pytest.mark.skipif(not zookeeper_installed(), reason="Debian's zookeeper package is not installed")
def test_data_survives_a_restart_and_ephemeral_nodes_do_not(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "zk").start()
    try:
        client = KazooClient(hosts=server.connect_string)
        client.start(10)
        client.create("/cluster/id", b'{"version":"1","id":"x"}', makepath=True)
        client.create("/brokers/ids/1", b"{}", ephemeral=True, makepath=True)
        client.stop()
        client.close()
        server.stop()
        assert server.process is None
        server.start()  # the same data dir, a new port
        client = KazooClient(hosts=server.connect_string)
        client.start(10)
        assert client.get("/cluster/id")[0] == b'{"version":"1","id":"x"}'
        assert client.exists("/brokers/ids/1") is None
        client.stop()
        client.close()
    finally:
        server.stop()
    assert "binding to port" in server.log_path.read_text()  # the server's own log is kept


@pytest.mark.skipif(not zookeeper_installed(), reason="Debian's zookeeper package is not installed")
def test_a_started_server_takes_a_session_at_once(tmp_path: Path) -> None:
    """``ruok`` answers before the server takes sessions; ``start`` waits for the latter (a client
    that does not retry, as the CLI's, must get in)."""
    from kraftwerk.migration.reader import connect

    with ZooKeeperServer(tmp_path / "zk") as server, connect(server.connect_string, timeout=5) as client:
        assert client.exists("/") is not None
