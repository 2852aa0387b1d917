"""JSON encoders for the znodes a Kafka 3.x ZooKeeper-mode cluster writes, so kraftwerk can be one.

The ZK-mode nodes and the migration driver's dual writes both write ZooKeeper exactly as Kafka 3.9
does (``ZkData.scala``, as ``reference/zookeeper-layout.md`` records it): the same keys, the same
JSON versions, longs written as strings where Kafka writes strings. Every encoder is the inverse of
its parser in :mod:`.znodes` (``parse(encode(x)) == x``), which the tests check with hypothesis.
Paths are built here too, so a znode's name and its data cannot drift apart.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from kraftwerk.image.model import AclPatternType, AclResourceType
from kraftwerk.migration.znodes import (
    ACL_OPERATIONS,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    DEFAULT_ENTITY,
    AclEntry,
    DelegationTokenZnode,
    KRaftMigrationInfo,
    MigrationZnode,
    ProducerIdBlock,
)

#: ``/controller_epoch`` starts here (KafkaController.InitialControllerEpoch); each election adds 1.
INITIAL_CONTROLLER_EPOCH = 0
#: Kafka's producer id block size (``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``).
PRODUCER_ID_BLOCK_SIZE = 1000
#: The ``/config/<type>`` children Kafka knows (ConfigType.ALL).
CONFIG_TYPES = ("topics", "clients", "users", "brokers", "ips")
#: Sequential-node prefixes (ZooKeeper appends a 10-digit counter).
CONFIG_CHANGE_PREFIX = "/config/changes/config_change_"
LITERAL_ACL_CHANGE_PREFIX = "/kafka-acl-changes/acl_changes_"
EXTENDED_ACL_CHANGE_PREFIX = "/kafka-acl-extended-changes/acl_changes_"
#: Paths every 3.x broker creates with null data at start-up (KafkaZkClient.createTopLevelPaths).
PERSISTENT_PATHS = ("/consumers", "/brokers/ids", "/brokers/topics", "/config/changes",
                    "/admin/delete_topics", "/brokers/seqid", "/isr_change_notification",
                    "/latest_producer_id_block",
                    "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users",
                    "/config/brokers", "/config/ips")

_RESOURCE_TYPE_NAMES = {code: name for name, code in ACL_RESOURCE_TYPES.items()}
_OPERATION_NAMES = {code: name for name, code in ACL_OPERATIONS.items()}
_PERMISSION_NAMES = {code: name for name, code in ACL_PERMISSIONS.items()}


def _json(obj: Mapping[str, Any]) -> bytes:
    """Jackson's compact output (Kafka's ``Json.encodeAsBytes``); key order carries no meaning."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding (22 characters)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize`` for user and client-id znode names: Java's ``URLEncoder`` (UTF-8,
    everything but ``A-Za-z0-9._-*`` escaped) with ``*`` → ``%2A`` and space → ``%20``."""
    return quote(name, safe="").replace("~", "%7E")


# ---------------------------------------------------------------------------- cluster and controller


def encode_cluster_id(cluster_id: str) -> bytes:
    """``/cluster/id``; Kafka writes the version as a JSON string."""
    return _json({"version": "1", "id": cluster_id})


def encode_controller(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1, *,
                      version: int = 2) -> bytes:
    """``/controller``: v2 since 3.4 (``kraftControllerEpoch`` -1 for a ZK controller, the raft epoch
    for a KRaft controller that claimed it); v1 (≤3.3) has no ``kraftControllerEpoch``."""
    if version not in (1, 2):
        raise ValueError(f"/controller version {version} does not exist (1 or 2)")
    obj: dict[str, Any] = {"version": version, "brokerid": broker_id, "timestamp": str(timestamp_ms)}
    if version == 2:
        obj["kraftControllerEpoch"] = kraft_controller_epoch
    return _json(obj)


def encode_controller_epoch(epoch: int) -> bytes:
    """``/controller_epoch``: the epoch as plain ASCII digits."""
    return str(epoch).encode("ascii")


# ---------------------------------------------------------------------------- brokers


@dataclass(frozen=True, slots=True)
class ZkEndpoint:
    """An advertised listener as a ZK broker registers it."""

    listener: str
    host: str | None
    port: int
    security_protocol: str

    @property
    def connection_string(self) -> str:
        """Kafka's ``EndPoint.connectionString``: IPv6 hosts in brackets, no host as ``L://:port``."""
        if self.host is None:
            return f"{self.listener}://:{self.port}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """What a ZK-mode broker writes to its ephemeral ``/brokers/ids/<id>`` (Kafka's ``BrokerInfo``)."""

    broker_id: int
    endpoints: tuple[ZkEndpoint, ...]
    timestamp_ms: int
    rack: str | None = None
    jmx_port: int = -1
    version: int = 5
    """5 from IBP 2.7-IV0, 4 from 0.10.0-IV1, else 2 (BrokerInfo.apply); 6 is KIP-866's extension."""
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Supported feature ranges; 3.x ZK brokers register none (BrokerFeatures.createEmpty)."""
    migration: KRaftMigrationInfo | None = None


def broker_registration_version(ibp_at_least_2_7: bool, migration: bool = False) -> int:
    """The registration JSON version Kafka writes for an IBP (v6 only for KIP-866's readiness flag)."""
    if migration:
        return 6
    return 5 if ibp_at_least_2_7 else 4


def encode_broker(info: BrokerInfo) -> bytes:
    """``/brokers/ids/<id>``; top-level host/port are the first PLAINTEXT endpoint, else null/-1."""
    if info.version not in (2, 4, 5, 6):
        raise ValueError(f"Kafka writes broker registration versions 2, 4 and 5 (6 per KIP-866), "
                         f"not {info.version}")
    if (info.version >= 6) != (info.migration is not None):
        raise ValueError("the kraftMigration object goes with version 6 and only with it")
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    obj: dict[str, Any] = {
        "version": info.version,
        "host": plaintext.host if plaintext else None,
        "port": plaintext.port if plaintext else -1,
        "endpoints": [e.connection_string for e in info.endpoints],
        "jmx_port": info.jmx_port,
        "timestamp": str(info.timestamp_ms),
    }
    if info.rack is not None and info.version >= 3:
        obj["rack"] = info.rack
    if info.version >= 4:
        obj["listener_security_protocol_map"] = {e.listener: e.security_protocol for e in info.endpoints}
    if info.version >= 5:
        obj["features"] = {name: {"min_version": lo, "max_version": hi}
                           for name, (lo, hi) in info.features.items()}
    if info.migration is not None:
        m = info.migration
        obj["kraftMigration"] = {"isReady": m.is_ready, "clusterId": m.cluster_id, "ibp": m.ibp}
    return _json(obj)


# ---------------------------------------------------------------------------- topics and partitions


def topic_path(topic: str) -> str:
    return f"/brokers/topics/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"/brokers/topics/{topic}/partitions/{partition}/state"


def _partition_json(assignment: Mapping[int, Sequence[int]]) -> dict[str, list[int]]:
    return {str(p): list(r) for p, r in sorted(assignment.items())}


def encode_topic(assignment: Mapping[int, Sequence[int]], topic_id: uuid.UUID | None, *,
                 adding: Mapping[int, Sequence[int]] | None = None,
                 removing: Mapping[int, Sequence[int]] | None = None) -> bytes:
    """``/brokers/topics/<t>`` v3 (v2 when the topic has no id yet, as Kafka does): only partitions with
    a non-empty adding/removing list appear there, ``{}`` when none do."""
    obj: dict[str, Any] = {
        "version": 3 if topic_id is not None else 2,
        "partitions": _partition_json(assignment),
        "adding_replicas": _partition_json({p: r for p, r in (adding or {}).items() if r}),
        "removing_replicas": _partition_json({p: r for p, r in (removing or {}).items() if r}),
    }
    if topic_id is not None:
        obj["topic_id"] = kafka_uuid(topic_id)
    return _json(obj)


def encode_partition_state(leader: int, leader_epoch: int, isr: Iterable[int], controller_epoch: int,
                           leader_recovery_state: int = 0) -> bytes:
    """``.../partitions/<p>/state`` version 1; ``leader_recovery_state`` only when RECOVERING (1)."""
    if leader_recovery_state not in (0, 1):
        raise ValueError(f"unknown leader recovery state {leader_recovery_state}")
    obj: dict[str, Any] = {"controller_epoch": controller_epoch, "leader": leader, "version": 1,
                           "leader_epoch": leader_epoch, "isr": list(isr)}
    if leader_recovery_state == 1:
        obj["leader_recovery_state"] = 1
    return _json(obj)


def delete_topic_path(topic: str) -> str:
    """``/admin/delete_topics/<t>``: a pending deletion, created with empty data."""
    return f"/admin/delete_topics/{topic}"


# ---------------------------------------------------------------------------- configs


def _entity_name(entity_type: str, name: str | None) -> str:
    if name is None:
        return DEFAULT_ENTITY
    return sanitize(name) if entity_type in ("users", "clients") else name


def config_path(entity_type: str, entity: str | None) -> str:
    """``/config/<type>/<entity>``: ``<default>`` for None, user and client-id names sanitized."""
    if entity_type not in CONFIG_TYPES:
        raise ValueError(f"unknown config type {entity_type!r} (one of {', '.join(CONFIG_TYPES)})")
    return f"/config/{entity_type}/{_entity_name(entity_type, entity)}"


def user_client_config_path(user: str | None, client: str | None) -> str:
    """``/config/users/<u>/clients/<c>``: a (user, client-id) quota; None is the default entity."""
    return f"{config_path('users', user)}/clients/{_entity_name('clients', client)}"


def encode_entity_config(config: Mapping[str, str]) -> bytes:
    """``/config/<type>/<entity>``: all values are strings."""
    return _json({"version": 1, "config": dict(config)})


def encode_config_change(entity_path: str) -> bytes:
    """``/config/changes/config_change_N`` v2, e.g. ``topics/foo`` or ``users/alice/clients/app``."""
    return _json({"version": 2, "entity_path": entity_path})


def config_entity_path(path: str) -> str:
    """The ``entity_path`` of a change notification for a ``/config/...`` znode path."""
    if not path.startswith("/config/"):
        raise ValueError(f"{path!r} is not under /config")
    return path[len("/config/"):]


# ---------------------------------------------------------------------------- ACLs


def acl_path(pattern_type: int, resource_type: int, name: str) -> str:
    """``/kafka-acl/<Type>/<name>`` for LITERAL, ``/kafka-acl-extended/prefixed/<Type>/<name>``."""
    store = {AclPatternType.LITERAL: "/kafka-acl",
             AclPatternType.PREFIXED: "/kafka-acl-extended/prefixed"}.get(AclPatternType(pattern_type))
    if store is None or resource_type not in _RESOURCE_TYPE_NAMES:
        raise ValueError(f"no ZooKeeper ACL store for pattern {pattern_type} / resource type {resource_type}")
    return f"{store}/{_RESOURCE_TYPE_NAMES[resource_type]}/{name}"


def encode_acls(entries: Iterable[AclEntry]) -> bytes:
    """``/kafka-acl.../<Type>/<name>``: operations and permission types by their PascalCase names."""
    acls = []
    for e in entries:
        if e.operation not in _OPERATION_NAMES or e.permission_type not in _PERMISSION_NAMES:
            raise ValueError(f"ACL operation {e.operation} / permission {e.permission_type} cannot be "
                             "stored in ZooKeeper")
        acls.append({"principal": e.principal, "permissionType": _PERMISSION_NAMES[e.permission_type],
                     "operation": _OPERATION_NAMES[e.operation], "host": e.host})
    return _json({"version": 1, "acls": acls})


def encode_acl_change(pattern_type: int, resource_type: int, name: str) -> tuple[str, bytes]:
    """The change notification an ACL write leaves: (sequential prefix, data). The literal store keeps
    the legacy ``TOPIC:foo`` string, the extended one a JSON event (ZkData ``*AclChangeStore``)."""
    type_name = AclResourceType(resource_type).name
    if pattern_type == AclPatternType.LITERAL:
        return LITERAL_ACL_CHANGE_PREFIX, f"{type_name}:{name}".encode()
    return EXTENDED_ACL_CHANGE_PREFIX, _json({"version": 1, "resourceType": type_name, "name": name,
                                              "patternType": AclPatternType(pattern_type).name})


# ---------------------------------------------------------------------------- producer ids, tokens, migration


def encode_producer_id_block(block: ProducerIdBlock) -> bytes:
    """``/latest_producer_id_block``; start and end are JSON strings."""
    return _json({"version": 1, "broker": block.broker, "block_start": str(block.block_start),
                  "block_end": str(block.block_end)})


def encode_delegation_token(token: DelegationTokenZnode) -> bytes:
    """``/delegation_token/tokens/<id>`` v3, principals sanitized (the HMAC is never stored)."""
    return _json({"version": 3, "owner": sanitize(token.owner), "tokenRequester": sanitize(token.requester),
                  "renewers": [sanitize(r) for r in token.renewers], "issueTimestamp": token.issue_timestamp,
                  "maxTimestamp": token.max_timestamp, "expiryTimestamp": token.expiry_timestamp,
                  "tokenId": token.token_id})


def encode_feature(features: Mapping[str, int] | None = None, *, enabled: bool = True) -> bytes:
    """``/feature`` v2 (IBP ≥ 3.3-IV0); a 3.x ZK controller finalizes none, so ``{}`` in practice."""
    return _json({"version": 2, "status": 1 if enabled else 0,
                  "features": {n: {"max_version_level": v} for n, v in (features or {}).items()}})


def encode_migration(state: MigrationZnode) -> bytes:
    """``/migration`` version 0 (its zkVersion is the znode's own, not part of the data)."""
    return _json({"version": 0, "kraft_controller_id": state.kraft_controller_id,
                  "kraft_controller_epoch": state.kraft_controller_epoch,
                  "kraft_metadata_offset": state.kraft_metadata_offset,
                  "kraft_metadata_epoch": state.kraft_metadata_epoch})

