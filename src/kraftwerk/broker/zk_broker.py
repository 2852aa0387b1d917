"""A ZooKeeper-mode broker's core, sans-I/O: its metadata cache fed by the ZK controller's
LeaderAndIsr / UpdateMetadata / StopReplica, the client RPCs answered from it, and the admin RPCs
turned into znode writes (Kafka 3.x's ``ZkAdminManager``).

The cache is a :class:`~kraftwerk.image.model.MetadataImage`, so the KRaft broker's read path
(Metadata, DescribeCluster, DescribeConfigs, ApiVersions) and the data plane (which partitions
this broker leads or follows) serve ZK mode unchanged: the partition layer does not care who
elected the leader. Topic creation and config changes are judged by the same controller rules as
in KRaft (:class:`TopicControl`, :class:`ConfigControl`) at the metadata.version of the broker's
``inter.broker.protocol.version``; the records they would append become the znodes Kafka's
``AdminZkClient`` writes instead, and the ZK controller picks them up from there.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from immutables import Map

from kraftwerk.broker.node import BrokerNode
from kraftwerk.config import ConfigResourceType, parse_broker_config
from kraftwerk.config.resolve import BrokerConfigLayers
from kraftwerk.controller.configs import ConfigControl
from kraftwerk.controller.effects import Forward, Respond
from kraftwerk.controller.topics import TopicControl, TopicDefaults
from kraftwerk.controller.zk_controller import LEADER_DURING_DELETE, ZkCreate, ZkOp, ZkSet
from kraftwerk.image.model import (
    BrokerRegistration,
    ClusterImage,
    ConfigResource,
    Endpoint,
    FeaturesImage,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
    TopicsImage,
)
from kraftwerk.migration import encode
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.versions.metadata_version import MetadataVersion

#: What a ZK-mode broker answers itself (the data plane answers Produce, Fetch, ... ; the runtime
#: hands AlterPartition to the controller it runs, if any).
ZK_BROKER_API_KEYS = (ApiKey.METADATA, ApiKey.API_VERSIONS, ApiKey.DESCRIBE_CONFIGS,
                      ApiKey.DESCRIBE_CLUSTER, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
                      ApiKey.CREATE_PARTITIONS, ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS,
                      ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
                      ApiKey.ALTER_PARTITION)
#: ConfigResource types and their ``/config/<type>`` names.
ZNODE_CONFIG_TYPES = {ConfigResourceType.TOPIC: "topics", ConfigResourceType.BROKER: "brokers"}


class ZkBrokerCore(BrokerNode):
    """The KRaft broker's read path over a cache the ZK controller feeds (no registration RPCs or
    heartbeats: the broker's liveness is its ephemeral znode)."""

    def __init__(self, node_id: int, cluster_id: str, ibp: MetadataVersion, *, broker_epoch: int,
                 static_configs: Mapping[str, str], api_versions: Mapping[int, tuple[int, int]],
                 listeners: Sequence[Endpoint], software: Any, rng: random.Random | None = None) -> None:
        super().__init__(node_id, cluster_id, software, listeners, incarnation_id=uuid.uuid4(),
                         static_configs=static_configs, api_versions=api_versions)
        self.ibp = ibp
        self.broker_epoch = broker_epoch
        self.controller_epoch = -1
        self.controller_id: int | None = None
        self._rng = rng or random.Random()
        self._cache = MetadataImage()
        self.kraft_lifecycle: BrokerNode | None = None
        """Set in a KIP-866 migration: the registration with the KRaft quorum (its broker epoch)."""
        self.kraft_controller = False
        """Whether the controller is a KRaft one (KIP-866's ``isKRaftController`` requests)."""

    @property
    def image(self) -> MetadataImage:
        return self._cache

    def _client_controller_id(self) -> int:
        """ZK-mode brokers name the real controller to clients (a broker, unlike in KRaft); under a
        KRaft controller, which clients cannot reach, a random live broker as Kafka 3.9's."""
        if self.kraft_controller:
            alive = sorted(self._cache.cluster.brokers)
            return self._rng.choice(alive) if alive else -1
        return self.controller_id if self.controller_id is not None else -1

    # ------------------------------------------------------------------ the controller's requests

    def _stale(self, body: Mapping[str, Any]) -> Errors | None:
        """Kafka's checks: an older controller epoch is STALE_CONTROLLER_EPOCH; the broker epoch is
        the ZooKeeper one, or the KRaft registration's for a KRaft controller's request."""
        if body.get("controllerEpoch", -1) < self.controller_epoch:
            return Errors.STALE_CONTROLLER_EPOCH
        kraft = bool(body.get("isKRaftController", False))
        lifecycle = self.kraft_lifecycle
        if kraft and lifecycle is None:
            return Errors.STALE_BROKER_EPOCH  # not a broker in migration: no KRaft registration
        mine = lifecycle.broker_epoch if kraft and lifecycle is not None else self.broker_epoch
        if body.get("brokerEpoch", -1) not in (-1, mine):
            return Errors.STALE_BROKER_EPOCH
        self.controller_epoch = body["controllerEpoch"]
        self.controller_id = body.get("controllerId")
        self.kraft_controller = kraft
        return None

    def update_metadata(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The live brokers replace the cache's; each partition state sent replaces the cached one,
        and a partition sent with leader -2 (being deleted) leaves the cache."""
        error = self._stale(body)
        if error is not None:
            return {"errorCode": error.code}
        brokers = {b["id"]: BrokerRegistration(
            b["id"], -1, uuid.UUID(int=0), tuple(Endpoint(e["listener"], e["host"], e["port"],
                                                           e["securityProtocol"]) for e in b["endpoints"]),
            rack=b.get("rack"), fenced=False) for b in body.get("liveBrokers", ())}
        if self.node_id in brokers:
            brokers[self.node_id] = dataclasses.replace(brokers[self.node_id], epoch=self.broker_epoch)
        self._cache = dataclasses.replace(self._cache, cluster=ClusterImage(brokers=brokers))
        self._apply_states(body.get("topicStates", ()), "zkVersion")
        return {"errorCode": 0}

    def leader_and_isr(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """This broker's partitions: newer leader epochs replace the cached states (the data plane
        then becomes leader or follower)."""
        error = self._stale(body)
        topics = body.get("topicStates", ())
        if error is None:
            self._apply_states(topics, "partitionEpoch", only_newer=True)
        code = (error or Errors.NONE).code
        return {"errorCode": code, "topics": [
            {"topicId": t["topicId"], "partitionErrors": [
                {"partitionIndex": p["partitionIndex"], "errorCode": code} for p in t["partitionStates"]]}
            for t in topics]}

    def stop_replica(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """Partitions to delete leave the cache (the data plane deletes their logs)."""
        error = self._stale(body)
        out = [{"topicName": t["topicName"], "partitionIndex": p["partitionIndex"],
                "errorCode": (error or Errors.NONE).code}
               for t in body.get("topicStates", ()) for p in t["partitionStates"]]
        if error is None:
            gone = {(t["topicName"], p["partitionIndex"]) for t in body.get("topicStates", ())
                    for p in t["partitionStates"] if p["deletePartition"]}
            self._drop(gone)
        return {"errorCode": (error or Errors.NONE).code, "partitionErrors": out}

    def _apply_states(self, topic_states: Sequence[Mapping[str, Any]], epoch_key: str, *,
                      only_newer: bool = False) -> None:
        topics = dict(self._cache.topics.by_name)
        doomed = set()
        for t in topic_states:
            name = t["topicName"]
            old = topics.get(name)
            topic_id = t.get("topicId") or (old.id if old else uuid.UUID(int=0))
            partitions = dict(old.partitions) if old is not None and old.id == topic_id else {}
            for p in t["partitionStates"]:
                index = p["partitionIndex"]
                if p["leader"] == LEADER_DURING_DELETE:
                    doomed.add((name, index))
                    continue
                current = partitions.get(index)
                if only_newer and current is not None and current.leader_epoch > p["leaderEpoch"]:
                    continue
                partitions[index] = PartitionRegistration(
                    tuple(p["replicas"]), tuple(p["isr"]), (), leader=p["leader"],
                    leader_epoch=p["leaderEpoch"], partition_epoch=p[epoch_key])
            topics[name] = TopicImage(name, topic_id, partitions)
        self._set_topics(topics)
        self._drop(doomed)

    def _drop(self, partitions: set[tuple[str, int]]) -> None:
        if not partitions:
            return
        topics = dict(self._cache.topics.by_name)
        for name, index in partitions:
            old = topics.get(name)
            if old is None:
                continue
            left = {i: p for i, p in old.partitions.items() if i != index}
            if left:
                topics[name] = TopicImage(name, old.id, left)
            else:
                del topics[name]
        self._set_topics(topics)

    def _set_topics(self, by_name: Mapping[str, TopicImage]) -> None:
        self._cache = dataclasses.replace(self._cache, topics=TopicsImage(
            Map({t.id: t for t in by_name.values()}), Map(by_name)))

    def set_configs(self, configs: Mapping[ConfigResource, Mapping[str, str]]) -> None:
        """Topic and broker configs as read from ``/config/topics`` and ``/config/brokers``."""
        self._cache = dataclasses.replace(self._cache, configs=Map(configs))

    # ------------------------------------------------------------------ admin RPCs → znodes

    def _topic_control(self) -> TopicControl:
        parsed = parse_broker_config(self.static_configs)
        defaults = TopicDefaults(parsed.integer("num.partitions"),
                                 parsed.integer("default.replication.factor"))
        return TopicControl(self._with_ibp(), self._rng, self._layers(), defaults)

    def _with_ibp(self) -> MetadataImage:
        """The cache at the metadata.version of this broker's IBP, which the controller rules need."""
        return dataclasses.replace(self._cache, features=FeaturesImage(metadata_version=self.ibp))

    def _layers(self) -> BrokerConfigLayers:
        configs = self._cache.configs
        return BrokerConfigLayers(
            static=self.static_configs,
            cluster_default=configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {}),
            broker=configs.get(ConfigResource(ConfigResourceType.BROKER, str(self.node_id)), {}))

    def create_topics(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, list[ZkOp]]]:
        """Kafka's ``createTopicWithAssignment``: the topic's config znode, then its assignment
        (v3, with the new topic id); one transaction per topic, which fails if it exists."""
        records, response = self._topic_control().create_topics(body)
        topic_rec, partition_rec, config_rec = (lookup_record(n) for n in
                                                ("TopicRecord", "PartitionRecord", "ConfigRecord"))
        names = {r.value["topicId"]: r.value["name"] for r in records if r.spec is topic_rec}
        assignments: dict[str, dict[int, list[int]]] = {n: {} for n in names.values()}
        configs: dict[str, dict[str, str]] = {n: {} for n in names.values()}
        for r in records:
            if r.spec is partition_rec:
                assignments[names[r.value["topicId"]]][r.value["partitionId"]] = r.value["replicas"]
            elif r.spec is config_rec and r.value["value"] is not None:
                configs[r.value["resourceName"]][r.value["name"]] = r.value["value"]
        writes: dict[str, list[ZkOp]] = {
            name: [ZkSet(encode.config_path("topics", name), encode.encode_entity_config(configs[name]), -1),
                   ZkCreate(encode.topic_path(name), encode.encode_topic(assignments[name], topic_id))]
            for topic_id, name in names.items()}
        return dict(response), writes

    def create_partitions(self, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[ZkOp]]:
        """Kafka's ``addPartitions``: the topic's assignment rewritten with the new partitions; the
        controller brings them online."""
        records, response = self._topic_control().create_partitions(body)
        added: dict[uuid.UUID, dict[int, list[int]]] = {}
        for r in records:
            added.setdefault(r.value["topicId"], {})[r.value["partitionId"]] = r.value["replicas"]
        writes: list[ZkOp] = []
        for topic_id, partitions in added.items():
            topic = self._cache.topics.by_id[topic_id]
            assignment = {p: list(reg.replicas) for p, reg in topic.partitions.items()} | partitions
            writes.append(ZkSet(encode.topic_path(topic.name), encode.encode_topic(assignment, topic_id), -1))
        return dict(response), writes

    @staticmethod
    def topic_exists(response: dict[str, Any], name: str) -> None:
        """The topic's creation lost a race: Kafka's TopicExistsException."""
        for t in response["topics"]:
            if t["name"] == name:
                t.update(errorCode=Errors.TOPIC_ALREADY_EXISTS.code,
                         errorMessage=f"Topic '{name}' already exists.", topicId=uuid.UUID(int=0),
                         numPartitions=-1, replicationFactor=-1, configs=None)

    def delete_topics(self, version: int, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[ZkOp]]:
        """Marks each existing topic for deletion (``/admin/delete_topics/<t>``); the controller
        deletes."""
        results: list[dict[str, Any]] = []
        writes: list[ZkOp] = []
        by_id = self._cache.topics.by_id
        if version >= 6:
            wanted = [(t.get("name"), t.get("topicId")) for t in body.get("topics") or ()]
        else:
            wanted = [(n, None) for n in body.get("topicNames", ())]
        for name, topic_id in wanted:
            topic = self._cache.topics.by_name.get(name) if name else by_id.get(topic_id)
            error = Errors.NONE if topic is not None else (
                Errors.UNKNOWN_TOPIC_OR_PARTITION if name else Errors.UNKNOWN_TOPIC_ID)
            if topic is not None:
                writes.append(ZkCreate(encode.delete_topic_path(topic.name), b""))
            results.append({"name": topic.name if topic else name,
                            "topicId": topic.id if topic else topic_id, "errorCode": error.code,
                            "errorMessage": None if topic else error.describe()})
        return {"throttleTimeMs": 0, "responses": results}, writes

    def config_writes(self, body: Mapping[str, Any], *, incremental: bool
                      ) -> tuple[dict[str, Any], list[ZkOp]]:
        """The new whole config of each entity into ``/config/<type>/<entity>``, then a change
        notification (Kafka's ``changeEntityConfig``)."""
        control = ConfigControl(self._with_ibp(), self._layers(), ())
        alter = control.incremental_alter_configs if incremental else control.alter_configs
        records, response = alter(body)
        wanted: dict[tuple[int, str], dict[str, str | None]] = {}
        for r in records:
            key = (r.value["resourceType"], r.value["resourceName"])
            wanted.setdefault(key, {})[r.value["name"]] = r.value["value"]
        writes: list[ZkOp] = []
        for (rtype, rname), changes in wanted.items():
            current: dict[str, str | None] = dict(self._cache.configs.get(ConfigResource(rtype, rname), {}))
            current.update(changes)
            config = {k: v for k, v in current.items() if v is not None}
            path = encode.config_path(ZNODE_CONFIG_TYPES[ConfigResourceType(rtype)], rname or None)
            writes.append(ZkSet(path, encode.encode_entity_config(config), -1))
            change = encode.encode_config_change(encode.config_entity_path(path))
            writes.append(ZkCreate(encode.CONFIG_CHANGE_PREFIX, change, sequential=True))
        return dict(response), writes

    def handle_read(self, api_key: int, version: int, body: Mapping[str, Any], now_ms: int,
                    listener_name: str | None) -> Respond | Forward:
        """Metadata, ApiVersions, DescribeConfigs, DescribeCluster and BROKER_LOGGER changes, as a
        KRaft broker answers them from its image."""
        return self.handle_request(api_key, version, body, now_ms, listener_name=listener_name)


class MigratingZkBrokerLifecycle(BrokerNode):
    """KIP-866: a ZooKeeper-mode broker in migration registers with the KRaft quorum too, as a
    migrating ZK broker, and heartbeats (Kafka's ``BrokerLifecycleManager`` with ``isZkBroker``). It
    reads no metadata log; the registration only tells the KRaft controller the broker is ready (its
    KRaft broker epoch is separate from the ZooKeeper one, the ``/brokers/ids`` czxid)."""

    def registration_body(self) -> dict[str, Any]:
        return {**super().registration_body(), "isMigratingZkBroker": True}
