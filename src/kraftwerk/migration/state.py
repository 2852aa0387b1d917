"""A ZooKeeper-mode cluster's state, parsed from its tree: what the readiness check and the
translation both read.

Parsing never stops at the first bad znode: every :class:`ZnodeError` is collected in
``ZkClusterState.invalid`` (with its path) and the znode is left out, so the check can list them
all and the translation can refuse them, or skip them when the user says ``--skip-invalid``. A topic
with a bad partition state is left out whole: a topic with a hole cannot be a KRaft topic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from kraftwerk.migration.errors import MissingPartitionStateError, ZnodeError
from kraftwerk.migration.tree import ZkTree, join
from kraftwerk.migration.znodes import (
    ACL_RESOURCE_TYPES,
    PATTERN_LITERAL,
    PATTERN_PREFIXED,
    AclEntry,
    BrokerZnode,
    ControllerZnode,
    DelegationTokenZnode,
    FeatureZnode,
    MigrationZnode,
    PartitionState,
    ProducerIdBlock,
    TopicZnode,
    parse_acls,
    parse_broker,
    parse_cluster_id,
    parse_controller,
    parse_controller_epoch,
    parse_delegation_token,
    parse_entity_config,
    parse_feature,
    parse_migration,
    parse_partition_state,
    parse_producer_id_block,
    parse_reassignments,
    parse_topic,
)

T = TypeVar("T")

#: ``/config`` entity types (ConfigType.ALL) other than the nested users/<u>/clients/<c>.
CONFIG_TYPES = ("topics", "brokers", "users", "clients", "ips")
ACL_STORES = (("/kafka-acl", PATTERN_LITERAL), ("/kafka-acl-extended/prefixed", PATTERN_PREFIXED))


@dataclass(frozen=True, slots=True)
class TopicState:
    znode: TopicZnode
    states: dict[int, PartitionState]

    @property
    def name(self) -> str:
        return self.znode.name


@dataclass(frozen=True, slots=True)
class AclResource:
    """The ACLs of one resource pattern (one ``/kafka-acl*`` znode)."""

    resource_type: int
    name: str
    pattern_type: int
    entries: tuple[AclEntry, ...]
    path: str


@dataclass
class ZkClusterState:
    """Everything the migration reads from ZooKeeper (entity names as they appear in the znodes)."""

    cluster_id: str | None = None
    controller: ControllerZnode | None = None
    controller_epoch: int | None = None
    brokers: dict[int, BrokerZnode] = field(default_factory=dict)
    topics: dict[str, TopicState] = field(default_factory=dict)
    pending_deletions: list[str] = field(default_factory=list)
    reassignments: list[tuple[str, int, tuple[int, ...]]] = field(default_factory=list)
    configs: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    """``configs[type][entity]`` for ``CONFIG_TYPES``; entity names stay sanitized."""
    user_client_configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    acls: list[AclResource] = field(default_factory=list)
    producer_id_block: ProducerIdBlock | None = None
    delegation_tokens: list[DelegationTokenZnode] = field(default_factory=list)
    feature: FeatureZnode | None = None
    migration: MigrationZnode | None = None
    seqid_version: int = 0
    znode_count: int = 0
    data_bytes: int = 0
    invalid: list[ZnodeError] = field(default_factory=list)

    def entity_configs(self, config_type: str) -> dict[str, dict[str, str]]:
        return self.configs.get(config_type, {})

    def encrypted_broker_configs(self) -> list[str]:
        """``<entity>/<key>`` of broker configs stored encrypted (password configs, PasswordEncoder)."""
        return [f"{e}/{k}" for e, conf in sorted(self.entity_configs("brokers").items())
                for k, v in conf.items() if v.startswith("keyFactoryAlgorithm:")]

    @property
    def partition_count(self) -> int:
        return sum(len(t.znode.partitions) for t in self.topics.values())


class _Parser:
    def __init__(self, tree: ZkTree) -> None:
        self.tree = tree
        self.state = ZkClusterState(znode_count=len(tree), data_bytes=tree.data_bytes)

    def attempt(self, fn: Callable[[], T]) -> T | None:
        try:
            return fn()
        except ZnodeError as exc:
            self.state.invalid.append(exc)
            return None

    def data(self, path: str) -> bytes | None:
        z = self.tree.get(path)
        return None if z is None else z.data

    def parse(self) -> ZkClusterState:
        s, tree = self.state, self.tree
        if "/cluster/id" in tree:
            s.cluster_id = self.attempt(lambda: parse_cluster_id("/cluster/id", self.data("/cluster/id")))
        if "/controller" in tree:
            s.controller = self.attempt(lambda: parse_controller("/controller", self.data("/controller")))
        if "/controller_epoch" in tree:
            s.controller_epoch = self.attempt(
                lambda: parse_controller_epoch("/controller_epoch", self.data("/controller_epoch")))
        for name in tree.children("/brokers/ids"):
            z = tree.get(join("/brokers/ids", name))
            assert z is not None
            broker = self.attempt(partial(parse_broker, z.path, z.data, z.stat))
            if broker is not None:
                s.brokers[broker.broker_id] = broker
        seqid = tree.get("/brokers/seqid")
        s.seqid_version = 0 if seqid is None else seqid.stat.version
        for name in tree.children("/brokers/topics"):
            self._topic(name)
        s.pending_deletions = tree.children("/admin/delete_topics")
        if "/admin/reassign_partitions" in tree:
            s.reassignments = list(self.attempt(lambda: parse_reassignments(
                "/admin/reassign_partitions", self.data("/admin/reassign_partitions"))) or ())
        self._configs()
        self._acls()
        if "/latest_producer_id_block" in tree:
            s.producer_id_block = self.attempt(lambda: parse_producer_id_block(
                "/latest_producer_id_block", self.data("/latest_producer_id_block")))
        for name in tree.children("/delegation_token/tokens"):
            path = join("/delegation_token/tokens", name)
            token = self.attempt(partial(parse_delegation_token, path, self.data(path)))
            if token is not None:
                s.delegation_tokens.append(token)
        if "/feature" in tree:
            s.feature = self.attempt(lambda: parse_feature("/feature", self.data("/feature")))
        migration = tree.get("/migration")
        if migration is not None:
            m = migration
            s.migration = self.attempt(partial(parse_migration, m.path, m.data, m.stat))
        return s

    def _topic(self, name: str) -> None:
        path = join("/brokers/topics", name)
        topic = self.attempt(lambda: parse_topic(path, self.data(path)))
        if topic is None:
            return
        states: dict[int, PartitionState] = {}
        ok = True
        for p in sorted(topic.partitions):
            state_path = f"{path}/partitions/{p}/state"
            z = self.tree.get(state_path)
            if z is None:
                self.state.invalid.append(MissingPartitionStateError(
                    state_path, f"partition {p} of topic {name} has no state znode"))
                ok = False
                continue
            state = self.attempt(partial(parse_partition_state, z.path, z.data, z.stat))
            if state is None:
                ok = False
            else:
                states[p] = state
        if ok:
            self.state.topics[name] = TopicState(topic, states)

    def _configs(self) -> None:
        for config_type in CONFIG_TYPES:
            parent = f"/config/{config_type}"
            entities: dict[str, dict[str, str]] = {}
            for entity in self.tree.children(parent):
                path = join(parent, entity)
                config = self.attempt(partial(parse_entity_config, path, self.data(path)))
                if config is not None:
                    entities[entity] = config
                if config_type == "users":
                    for client in self.tree.children(f"{path}/clients"):
                        cpath = f"{path}/clients/{client}"
                        cc = self.attempt(partial(parse_entity_config, cpath, self.data(cpath)))
                        if cc is not None:
                            self.state.user_client_configs[(entity, client)] = cc
            self.state.configs[config_type] = entities

    def _acls(self) -> None:
        for store, pattern in ACL_STORES:
            for type_name in self.tree.children(store):
                code = ACL_RESOURCE_TYPES.get(type_name)
                if code is None:
                    continue  # Kafka's stores hold only the six resource types; others are not ACLs
                for name in self.tree.children(join(store, type_name)):
                    path = f"{store}/{type_name}/{name}"
                    entries = self.attempt(partial(parse_acls, path, self.data(path)))
                    if entries:
                        self.state.acls.append(AclResource(code, name, pattern, entries, path))


def parse_cluster(tree: ZkTree) -> ZkClusterState:
    """The cluster state of ``tree``; invalid znodes are collected in ``.invalid``, never raised."""
    return _Parser(tree).parse()
