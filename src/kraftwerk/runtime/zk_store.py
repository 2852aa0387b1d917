"""The blocking ZooKeeper calls of a ZooKeeper-mode broker process (kazoo, run in worker threads):
one transaction per controller decision, and the reads of brokers, topics and configs."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller.zk_controller import ZkCreate, ZkDelete, ZkOp, ZkSet
from kraftwerk.image.model import ConfigResource
from kraftwerk.migration import encode
from kraftwerk.migration.errors import ZnodeError
from kraftwerk.migration.reader import znode_stat
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import DEFAULT_ENTITY, parse_broker, parse_entity_config, parse_topic
from kraftwerk.runtime.errors import NodeError

log = logging.getLogger("kraftwerk.zk_node")


class ZkWriteError(NodeError):
    """A znode transaction failed (a version moved, a znode exists or is missing)."""


@contextlib.contextmanager
def _skipping_invalid() -> Iterator[None]:
    """A znode Kafka could not read either is logged and left out, never fatal to the broker."""
    try:
        yield
    except ZnodeError as exc:
        log.warning("skipping %s", exc)


class ZooKeeperStore:
    """The blocking kazoo calls this process makes (run in worker threads)."""

    def __init__(self, client: Any) -> None:
        from kazoo.exceptions import NodeExistsError, NoNodeError

        self.client = client
        self.no_node, self.node_exists = NoNodeError, NodeExistsError

    def apply(self, ops: Sequence[ZkOp], check: tuple[str, int] | None = None) -> None:
        """``ops`` in one transaction (after ``check``: a znode that must be at a version); missing
        parents are created, a delete of a missing znode is dropped, an unconditional set of a
        missing znode becomes a create."""
        txn = self.client.transaction()
        if check is not None:
            txn.check(*check)
        created: set[str] = set()
        for op in ops:
            if isinstance(op, ZkDelete):
                for path in self._subtree(op.path) if op.recursive else [op.path]:
                    if self.client.exists(path) is not None:
                        txn.delete(path)
                continue
            exists = op.path in created or self.client.exists(op.path) is not None
            if isinstance(op, ZkSet) and (op.version >= 0 or exists):
                txn.set_data(op.path, op.data, version=op.version)
                continue
            parent = op.path.rsplit("/", 1)[0]
            missing = []
            while parent and parent not in created and self.client.exists(parent) is None:
                missing.append(parent)
                parent = parent.rsplit("/", 1)[0]
            for path in reversed(missing):
                txn.create(path, b"")
                created.add(path)
            sequential = isinstance(op, ZkCreate) and op.sequential
            txn.create(op.path, op.data, sequence=sequential)
            created.add(op.path)
        results = txn.commit()
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise ZkWriteError(f"ZooKeeper transaction failed: {', '.join(type(r).__name__ for r in failed)}")

    def _subtree(self, path: str) -> list[str]:
        """``path`` and its descendants, deepest first (ZooKeeper deletes only leaves)."""
        try:
            children = self.client.get_children(path)
        except self.no_node:
            return []
        out: list[str] = []
        for child in children:
            out += self._subtree(f"{path}/{child}")
        return [*out, path]

    def children(self, path: str) -> list[str]:
        try:
            return sorted(self.client.get_children(path))
        except self.no_node:
            return []

    def get(self, path: str) -> tuple[bytes, ZnodeStat] | None:
        try:
            data, stat = self.client.get(path)
        except self.no_node:
            return None
        return data, znode_stat(stat)

    def brokers(self) -> dict[int, Any]:
        out = {}
        for name in self.children("/brokers/ids"):
            got = self.get(f"/brokers/ids/{name}")
            with _skipping_invalid():
                if got is not None:
                    out[int(name)] = parse_broker(f"/brokers/ids/{name}", got[0], got[1])
        return out

    def topics(self) -> dict[str, Any]:
        out = {}
        for name in self.children("/brokers/topics"):
            got = self.get(encode.topic_path(name))
            with _skipping_invalid():
                if got is not None:
                    out[name] = parse_topic(encode.topic_path(name), got[0])
        return out

    def configs(self) -> dict[ConfigResource, dict[str, str]]:
        out = {}
        for rtype, ztype in ((ConfigResourceType.TOPIC, "topics"), (ConfigResourceType.BROKER, "brokers")):
            for name in self.children(f"/config/{ztype}"):
                got = self.get(f"/config/{ztype}/{name}")
                with _skipping_invalid():
                    if got is not None:
                        config = parse_entity_config(f"/config/{ztype}/{name}", got[0])
                        out[ConfigResource(rtype, "" if name == DEFAULT_ENTITY else name)] = config
        return out
