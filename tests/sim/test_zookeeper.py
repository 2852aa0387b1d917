"""The simulator's in-memory ZooKeeper against what a real ZooKeeper does: one scenario of the kazoo
calls the migration relies on, played on both and compared outcome by outcome, plus the faults only
the simulator can inject."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, SessionExpiredError

from kraftwerk.runtime.zookeeper import ZooKeeperServer
from kraftwerk.sim.zookeeper import SimZooKeeper


def _shape(value: Any) -> Any:
    """An outcome as comparable across servers: exceptions by type, stats by their versions/counts."""
    if isinstance(value, Exception):
        return type(value).__name__
    if isinstance(value, tuple) and hasattr(value, "cversion"):
        return ("stat", value.version, value.numChildren, value.dataLength)
    if isinstance(value, tuple):
        return tuple(_shape(v) for v in value)
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def scenario(c: Any) -> list[Any]:
    out: list[Any] = []

    def do(fn: Any, *args: Any, **kwargs: Any) -> None:
        try:
            out.append(_shape(fn(*args, **kwargs)))
        except Exception as exc:  # the outcome under comparison
            out.append(_shape(exc))

    do(c.create, "/a", b"1")
    do(c.create, "/a", b"again")
    do(c.get, "/a")
    do(c.set, "/a", b"2", version=0)
    do(c.set, "/a", b"3", version=0)
    do(c.create, "/a/b/c", b"")
    do(c.create, "/a/b/c", b"x", makepath=True)
    do(c.delete, "/a")
    do(c.delete, "/a/b/c", version=3)
    do(c.exists, "/nope")
    do(c.create, "/s", b"")
    do(c.create, "/s/n-", b"", sequence=True)
    do(c.create, "/s/n-", b"", sequence=True)
    do(lambda p: sorted(c.get_children(p)), "/s")  # ZooKeeper lists children in no set order
    do(c.create, "/e", b"", ephemeral=True)
    do(c.create, "/e/child", b"")
    tx = c.transaction()
    tx.check("/a", 1)
    tx.set_data("/a", b"4")
    tx.create("/x", b"x")
    tx.create("/s/n-", b"", sequence=True)
    tx.delete("/x")
    do(tx.commit)
    do(c.get, "/a")
    tx = c.transaction()
    tx.create("/y", b"y")
    tx.check("/a", 0)
    tx.set_data("/a", b"5")
    do(tx.commit)
    do(c.exists, "/y")
    do(c.get, "/a")
    tx = c.transaction()
    tx.set_data("/a", b"6", version=2)
    tx.delete("/missing")
    do(tx.commit)
    do(c.get, "/a")
    do(lambda p: sorted(c.get_children(p)), "/s")  # ZooKeeper lists children in no set order
    return out


@pytest.fixture(scope="module")
def real(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(30)
    root = f"/compare-{uuid.uuid4().hex}"
    client.ensure_path(root)
    client.chroot = root
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.mark.zookeeper
def test_the_in_memory_zookeeper_answers_as_a_real_one(real: KazooClient) -> None:
    sim = SimZooKeeper(lambda: 0).connect(owner=1)
    expected = scenario(real)
    assert ["RolledBackError", "BadVersionError", "RuntimeInconsistency"] in expected  # a failed multi
    assert scenario(sim) == expected


def test_a_failed_multi_op_changes_nothing() -> None:
    zk = SimZooKeeper(lambda: 0)
    c = zk.connect(owner=1)
    c.create("/p", b"")
    before = {p: (n.data, n.version, n.cversion, sorted(n.children)) for p, n in zk.nodes.items()}
    tx = c.transaction()
    tx.create("/p/q", b"")
    tx.set_data("/p", b"changed")
    tx.create("/p/r", b"", sequence=True)
    tx.check("/p", 7)
    assert [type(r).__name__ for r in tx.commit()] == ["RolledBackError"] * 3 + ["BadVersionError"]
    assert {p: (n.data, n.version, n.cversion, sorted(n.children)) for p, n in zk.nodes.items()} == before


def test_faults_unreachable_expired_and_slow() -> None:
    zk = SimZooKeeper(lambda: 0)
    c = zk.connect(owner=1)
    c.create("/e", b"", ephemeral=True)
    zk.latency_ms = 40
    c.get("/e")
    c.exists("/e")
    assert c.spent_ms == 80
    pending = [c.get_async("/e") for _ in range(600)]  # pipelined: one round trip per 500
    assert c.spent_ms == 160 and all(r.get()[0] == b"" for r in pending)
    zk.reachable = False
    with pytest.raises(ConnectionLoss):
        c.get("/e")
    with pytest.raises(ConnectionLoss):
        zk.connect(owner=2)
    zk.reachable = True
    zk.expire_sessions()
    with pytest.raises(SessionExpiredError):
        c.get("/")
    fresh = zk.connect(owner=1)
    assert fresh.exists("/e") is None  # the expired session's ephemeral znode went with it
    assert fresh.command(b"srvr").splitlines()[1] == f"Zxid: 0x{zk.zxid:x}"
