"""The ZooKeeper side of KIP-866's migration driver, over the small kazoo subset it needs, so that the
runtime (a real kazoo client) and the simulator (an in-memory ZooKeeper) run the same code.

Every write is a ZooKeeper multi-op that first checks ``/controller_epoch``'s version (the fencing
token the claim took), as Kafka's ``KafkaZkClient.retryMigrationRequestsUntilConnected`` does; a
failed check means another controller claimed ZooKeeper since, and the driver claims again.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from kazoo.exceptions import NoNodeError

from kraftwerk.controller.migration_driver import (
    MIGRATION_ENABLE_CONFIG,
    MigrateMetadata,
    WriteToZk,
    ZkMigrationLeadership,
)
from kraftwerk.errors import KraftwerkError
from kraftwerk.migration.dual_write import ZnodeOp, delta_plan, full_plan, zookeeper_view
from kraftwerk.migration.encode import encode_controller, encode_controller_epoch, encode_migration
from kraftwerk.migration.errors import MigrationError, ZnodeError, ZooKeeperError
from kraftwerk.migration.reader import read_tree, znode_stat
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import translate
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import (
    MigrationZnode,
    parse_broker,
    parse_controller,
    parse_controller_epoch,
    parse_migration,
    parse_topic,
)
from kraftwerk.versions.metadata_version import parse_version_string

log = logging.getLogger(__name__)

MIGRATION = "/migration"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
OPS_PER_MULTI = 500
"""Znode writes per multi-op (each also carries the epoch check)."""
RECORDS_PER_BATCH = 1000
"""Records per appended batch of the migration transaction."""


class ZkTransaction(Protocol):
    """kazoo's ``TransactionRequest`` as the migration uses it."""

    def check(self, path: str, version: int) -> None: ...
    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False) -> None: ...
    def set_data(self, path: str, value: bytes, version: int = -1) -> None: ...
    def delete(self, path: str, version: int = -1) -> None: ...
    def commit(self) -> list[Any]: ...


class ZkClient(Protocol):
    """The kazoo ``KazooClient`` subset the migration uses (``read_tree`` also uses the ``*_async``
    reads and ``command``)."""

    def exists(self, path: str) -> Any: ...
    def get(self, path: str) -> tuple[bytes, Any]: ...
    def get_children(self, path: str) -> list[str]: ...
    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str: ...
    def transaction(self) -> ZkTransaction: ...


class ControllerEpochMovedError(MigrationError):
    """``/controller_epoch`` (or ``/migration``) changed under us: another controller claimed ZooKeeper."""


def migration_znode(state: ZkMigrationLeadership) -> bytes:
    """``/migration`` for the driver's state (its zkVersion is the znode's own)."""
    return encode_migration(MigrationZnode(state.kraft_controller_id, state.kraft_controller_epoch,
                                           state.kraft_metadata_offset, state.kraft_metadata_epoch,
                                           state.migration_zk_version))


class MigrationZk(abc.ABC):
    """The driver's actions against one ZooKeeper session; :meth:`client` is that session (a subclass
    supplies it: the runtime opens a kazoo client, the simulator hands out its in-memory one)."""

    def __init__(self, *, node_id: int, cluster_id: str, now_ms: Callable[[], int]) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.now_ms = now_ms
        self.records_per_batch = RECORDS_PER_BATCH

    @abc.abstractmethod
    def client(self) -> Any:
        """The ZooKeeper session (kazoo's client or the simulator's)."""

    def recover(self) -> ZkMigrationLeadership:
        """``/migration`` as the driver's starting state (created empty when missing, as Kafka's
        ``getOrCreateMigrationState``)."""
        c = self.client()
        empty = ZkMigrationLeadership()
        if c.exists(MIGRATION) is None:
            c.create(MIGRATION, migration_znode(empty), makepath=True)
        data, stat = c.get(MIGRATION)
        m = parse_migration(MIGRATION, data, ZnodeStat(version=stat.version))
        return replace(empty, kraft_controller_id=m.kraft_controller_id,
                       kraft_controller_epoch=m.kraft_controller_epoch,
                       kraft_metadata_offset=m.kraft_metadata_offset,
                       kraft_metadata_epoch=m.kraft_metadata_epoch,
                       migration_zk_version=m.zk_version)

    def broker_ids(self) -> frozenset[int]:
        """Brokers registered in ZooKeeper and, when there are any, brokers named by topic assignments
        (Kafka reads both). An empty set keeps the driver in WAIT_FOR_BROKERS, as Kafka's does."""
        c = self.client()
        ids = {int(b) for b in c.get_children("/brokers/ids")} if c.exists("/brokers/ids") else set()
        if ids and c.exists("/brokers/topics"):
            for name in c.get_children("/brokers/topics"):
                path = f"/brokers/topics/{name}"
                data, _ = c.get(path)
                for replicas in parse_topic(path, data).partitions.values():
                    ids.update(replicas)
        return frozenset(ids)

    def unready_reasons(self, broker_ids: frozenset[int]) -> dict[int, str]:
        """Why a ZooKeeper broker cannot take part in the migration, from its ``/brokers/ids``
        registration (v6's ``kraftMigration``): not running, no migration flag, an IBP before 3.4."""
        c = self.client()
        out = {}
        for broker_id in broker_ids:
            path = f"/brokers/ids/{broker_id}"
            if c.exists(path) is None:
                out[broker_id] = "not registered in /brokers/ids (is it running?)"
                continue
            data, stat = c.get(path)
            try:
                migration = parse_broker(path, data, znode_stat(stat)).migration
            except ZnodeError as exc:
                out[broker_id] = str(exc)
                continue
            if migration is None or not migration.is_ready:
                out[broker_id] = f"has not enabled {MIGRATION_ENABLE_CONFIG}"
            elif migration.ibp is not None and not _migration_ibp(migration.ibp):
                out[broker_id] = (f"inter.broker.protocol.version {migration.ibp} does not support the "
                                  "migration (3.4 or newer needed)")
        return out

    def claim(self, leadership: ZkMigrationLeadership) -> ZkMigrationLeadership | None:
        """Kafka's ``tryRegisterKRaftControllerAsActiveController``: bump ``/controller_epoch`` and make
        ``/controller`` a persistent znode naming this KRaft controller, in one multi-op; None when a
        newer KRaft controller holds it or another claim won the race."""
        c = self.client()
        try:
            epoch_data, epoch_stat = c.get(CONTROLLER_EPOCH)
        except NoNodeError:
            raise ZooKeeperError(f"{CONTROLLER_EPOCH} does not exist: this is not a ZooKeeper-mode Kafka "
                                 "cluster's tree") from None
        zk_epoch = parse_controller_epoch(CONTROLLER_EPOCH, epoch_data)
        current = c.exists(CONTROLLER)
        tx = c.transaction()
        tx.set_data(CONTROLLER_EPOCH, encode_controller_epoch(zk_epoch + 1), version=epoch_stat.version)
        if current is not None:
            data, stat = c.get(CONTROLLER)
            holder = parse_controller(CONTROLLER, data)
            epoch = leadership.kraft_controller_epoch
            ours = holder.broker_id == self.node_id and holder.kraft_controller_epoch == epoch
            if holder.kraft_controller_epoch >= epoch and not ours:
                log.info("ZooKeeper's /controller is held by KRaft controller %d at epoch %d",
                         holder.broker_id, holder.kraft_controller_epoch)
                return None
            tx.delete(CONTROLLER, version=stat.version)
        ours_znode = encode_controller(self.node_id, self.now_ms(), leadership.kraft_controller_epoch)
        tx.create(CONTROLLER, ours_znode)
        if _failed(tx.commit()) is not None:
            return None
        log.info("Claimed ZooKeeper controller leadership: /controller_epoch %d -> %d", zk_epoch,
                 zk_epoch + 1)
        return replace(leadership, zk_controller_epoch=zk_epoch + 1,
                       zk_controller_epoch_zk_version=epoch_stat.version + 1)

    def translation_batches(self, action: MigrateMetadata) -> list[list[bytes]]:
        """The whole tree, translated, as the batches to append: inside a metadata transaction (from
        3.6-IV1) batches of up to ``records_per_batch`` as Kafka's migration, else one atomic
        batch (the only way to keep the copy all-or-nothing without transactions)."""
        tree = read_tree(self.client())
        state = parse_cluster(tree)
        if state.cluster_id is not None and state.cluster_id != self.cluster_id:
            raise ZooKeeperError(f"ZooKeeper holds cluster id {state.cluster_id}, but the KRaft controllers "
                                 f"were formatted with {self.cluster_id}")
        translation = translate(state, action.metadata_version)
        for loss in translation.losses:
            log.warning("The migration cannot carry over %s at metadata.version %s", loss,
                        action.metadata_version)
        for note in translation.notes:
            log.info("Migration: %s", note)
        log.info("Migrating %d records from ZK", len(translation.records))
        records = [r.encode() for r in translation.log_records()]
        if not translation.transactional:
            return [records]
        size = self.records_per_batch
        return [records[i:i + size] for i in range(0, len(records), size)]

    def write(self, action: WriteToZk) -> int:
        """Make ZooKeeper hold ``action.image``; returns ``/migration``'s new data version."""
        c = self.client()
        state = action.leadership
        if action.full or action.previous is None:
            ops = full_plan(zookeeper_view(read_tree(c)), action.image, state.zk_controller_epoch)
        else:
            ops = delta_plan(action.previous, action.image, state.zk_controller_epoch)
        for start in range(0, len(ops), OPS_PER_MULTI):
            self._multi(c, state, ops[start:start + OPS_PER_MULTI])
        done = replace(state, kraft_metadata_offset=action.offset, kraft_metadata_epoch=action.epoch)
        tx = c.transaction()
        tx.check(CONTROLLER_EPOCH, state.zk_controller_epoch_zk_version)
        tx.set_data(MIGRATION, migration_znode(done), version=state.migration_zk_version)
        failure = _failed(tx.commit())
        if failure is not None:
            raise ControllerEpochMovedError(f"{MIGRATION} or {CONTROLLER_EPOCH} moved ({failure})")
        if ops:
            log.debug("Made %d ZooKeeper writes for KRaft offset %d", len(ops), action.offset)
        return state.migration_zk_version + 1

    def _multi(self, c: Any, state: ZkMigrationLeadership, ops: Sequence[ZnodeOp]) -> None:
        tx = c.transaction()
        tx.check(CONTROLLER_EPOCH, state.zk_controller_epoch_zk_version)
        for op in ops:
            data = op.data or b""
            if op.kind == "create":
                tx.create(op.path, data)
            elif op.kind == "set":
                tx.set_data(op.path, data)
            elif op.kind == "delete":
                tx.delete(op.path)
            else:
                tx.create(op.path, data, sequence=True)
        results = tx.commit()
        failure = _failed(results)
        if failure is None:
            return
        if isinstance(results[0], Exception) and type(results[0]).__name__ != "RolledBackError":
            raise ControllerEpochMovedError(f"{CONTROLLER_EPOCH} moved ({failure})")
        raise ZooKeeperError(f"a ZooKeeper multi-op failed: {failure}")


def _failed(results: Sequence[Any]) -> str | None:
    """The first real failure of a multi-op's results (others are its roll-backs), or None."""
    errors = [r for r in results if isinstance(r, Exception)]
    real = [e for e in errors if type(e).__name__ != "RolledBackError"]
    if not errors:
        return None
    first = (real or errors)[0]
    return type(first).__name__


def _migration_ibp(text: str) -> bool:
    try:
        return parse_version_string(text).is_migration_supported()
    except KraftwerkError:
        return False
