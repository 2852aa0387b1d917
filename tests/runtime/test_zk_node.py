"""The ZK-mode node's ZooKeeper writes on a real ZooKeeper: one transaction or nothing, guarded by a
znode version, parents made, gone znodes no error; the ZK controller's decisions, written, read back
as the tree the controller believes in (partition epochs are the state znodes' versions); and a
shutdown that closes the ZooKeeper session whatever step hangs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from kraftwerk.controller.zk_controller import ZkController, ZkCreate, ZkDelete, ZkSet
from kraftwerk.migration.reader import connect, read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.runtime import zk_node
from kraftwerk.runtime.errors import NodeError
from kraftwerk.runtime.zk_config import ZkServerConfig
from kraftwerk.runtime.zk_store import ZkWriteError, ZooKeeperStore
from kraftwerk.runtime.zookeeper import ZooKeeperServer
from tests.migration.layout import Layout

pytestmark = pytest.mark.zookeeper


@pytest.fixture
def store(zookeeper: ZooKeeperServer) -> Iterator[ZooKeeperStore]:
    client = KazooClient(hosts=zookeeper.connect_string)
    client.start(10)
    root = f"/t{uuid.uuid4().hex[:8]}"
    client.ensure_path(root)
    client.chroot = root
    try:
        yield ZooKeeperStore(client)
    finally:
        client.chroot = ""
        client.delete(root, recursive=True)
        client.stop()
        client.close()


def test_one_transaction_makes_parents_and_forgives_what_is_gone(store: ZooKeeperStore) -> None:
    store.apply([ZkCreate("/a/b/c/state", b"1"), ZkSet("/config/topics/t", b"{}", -1),
                 ZkCreate("/config/changes/config_change_", b"x", sequential=True), ZkDelete("/not/there")])
    assert store.get("/a/b/c/state") is not None and store.children("/a/b") == ["c"]
    assert store.get("/config/topics/t") is not None
    assert store.children("/config/changes") == ["config_change_0000000000"]
    store.apply([ZkDelete("/a", recursive=True)])
    assert store.get("/a") is None


def test_a_stale_version_or_guard_applies_nothing(store: ZooKeeperStore) -> None:
    store.apply([ZkCreate("/epoch", b"1"), ZkCreate("/s", b"a")])
    with pytest.raises(ZkWriteError, match="BadVersion"):
        store.apply([ZkCreate("/new", b""), ZkSet("/s", b"b", 3)])
    assert store.get("/new") is None
    with pytest.raises(ZkWriteError):
        store.apply([ZkSet("/s", b"b", 0)], check=("/epoch", 7))
    got = store.get("/s")
    assert got is not None and got[0] == b"a"
    store.apply([ZkSet("/s", b"b", 0)], check=("/epoch", 0))
    got = store.get("/s")
    assert got is not None and (got[0], got[1].version) == (b"b", 1)


def test_the_controllers_decisions_read_back_as_its_view(store: ZooKeeperStore) -> None:
    layout = Layout().cluster("MkU3OEVBNTcwNTJENDM2Qk", controller=1, controller_epoch=4)
    for b in (1, 2, 3):
        layout.broker(b)
    layout.topic("orders", {0: [1, 2, 3], 1: [3, 1, 2]}, topic_id=uuid.UUID(int=7), partition_epoch=2)
    layout.topic("legacy", {0: [2, 3]}, topic_id=None)
    layout.write(store.client)
    controller = ZkController(1, 5, parse_cluster(read_tree(store.client)))
    store.apply(controller.become_controller().writes)
    registered = store.brokers()
    store.apply(controller.brokers_changed({b: z for b, z in registered.items() if b != 1}).writes)
    tree = parse_cluster(read_tree(store.client))
    assert tree.invalid == [] and tree.topics["legacy"].znode.topic_id == controller.topics["legacy"].topic_id
    for name, topic in controller.topics.items():
        for p, believed in topic.states.items():
            stored = tree.topics[name].states[p]
            assert (stored.leader, stored.isr, stored.leader_epoch, stored.partition_epoch) == (
                believed.leader, believed.isr, believed.leader_epoch, believed.zk_version)
    assert tree.topics["orders"].states[0].leader == 2


class _StuckReplicas:
    """A data plane whose close never finishes (as a fetcher loop that lost its cancellation did)."""

    async def close(self) -> None:
        await asyncio.Event().wait()


def test_a_stuck_shutdown_step_still_closes_the_zookeeper_session(
        zookeeper: ZooKeeperServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(zk_node, "STOP_STEP_TIMEOUT_S", 0.1)
    node = zk_node.ZkNode(ZkServerConfig.from_properties(
        {"zookeeper.connect": zookeeper.connect_string, "broker.id": "7", "log.dirs": str(tmp_path)}))
    session = KazooClient(hosts=zookeeper.connect_string)
    session.start(10)
    session.create("/stuck-broker-7", b"", ephemeral=True)
    node._client = session
    node.data_plane = _StuckReplicas()  # type: ignore[assignment]
    asyncio.run(asyncio.wait_for(node.stop(), 10))
    with connect(zookeeper.connect_string) as observer:
        assert observer.exists("/stuck-broker-7") is None  # the session was closed, not left to expire


def test_a_taken_broker_id_is_refused_with_kafkas_text(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    """Another session holds /brokers/ids/7 (another broker, or this one's killed predecessor whose
    session has not expired yet): Kafka's CheckedEphemeral error, naming both sessions."""
    root = f"/t{uuid.uuid4().hex[:8]}"
    with connect(zookeeper.connect_string) as setup:
        setup.ensure_path(root)
    node = zk_node.ZkNode(ZkServerConfig.from_properties(
        {"zookeeper.connect": zookeeper.connect_string + root, "broker.id": "7", "log.dirs": str(tmp_path)}))
    holder, mine = (KazooClient(hosts=zookeeper.connect_string + root) for _ in range(2))
    try:
        for client in (holder, mine):
            client.start(10)
        holder.create("/brokers/ids/7", b"{}", ephemeral=True, makepath=True)
        node._client, node.zk = mine, ZooKeeperStore(mine)
        expected = (f"Error while creating ephemeral at /brokers/ids/7, node already exists and owner "
                    f"'0x{holder.client_id[0]:x}' does not match current session '0x{mine.client_id[0]:x}'")
        with pytest.raises(NodeError) as refused:
            node._register()
        assert str(refused.value) == expected
        holder.stop()  # the holder's session closes: the id is free
        assert node._register() > 0
    finally:
        for client in (holder, mine):
            client.stop()
            client.close()
