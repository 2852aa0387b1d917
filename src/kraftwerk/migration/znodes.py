"""Parsers for every znode Kafka 3.x writes that a migration reads, with Kafka's JSON versions.

Each parser takes the znode's path, data and stat and returns a typed value, or raises a
:class:`~kraftwerk.migration.errors.ZnodeError` naming the path: bad UTF-8 or JSON, a missing or
mistyped field, a ``version`` Kafka 3.9 does not write. Layouts and versions follow
``reference/zookeeper-layout.md`` (Kafka's ``ZkData.scala``). One extension: the broker registration
JSON version 6 with the ``kraftMigration`` object that KIP-866 specifies (Kafka never shipped it);
it is the only place a ZooKeeper tree can say whether a broker is ready to migrate.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

from kraftwerk.image.model import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from kraftwerk.migration.errors import MalformedZnodeError, UnknownZnodeVersionError
from kraftwerk.migration.tree import ZnodeStat

#: ``/config/<type>/<default>``: the default entity (ZooKeeperInternals.DEFAULT_STRING).
DEFAULT_ENTITY = "<default>"

#: Kafka's SCRAM mechanisms as ``/config/users`` keys → UserScramCredentialRecord mechanism byte.
SCRAM_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}



def _pascal(member: enum.IntEnum) -> str:
    """Kafka's ``SecurityUtils`` spelling in ZooKeeper: CLUSTER_ACTION → ClusterAction."""
    return "".join(part.capitalize() for part in member.name.split("_"))


def _zk_names(enum_type: type[enum.IntEnum], first: int, last: int) -> dict[str, int]:
    return {_pascal(m): int(m) for m in enum_type if first <= m <= last}


#: ACL resource type child names (SecurityUtils.resourceTypeName) → ResourceType code.
ACL_RESOURCE_TYPES = _zk_names(AclResourceType, AclResourceType.TOPIC, AclResourceType.USER)
#: The operations a 3.x AclAuthorizer stores (TWO_PHASE_COMMIT came with 4.x's KIP-939).
ACL_OPERATIONS = _zk_names(AclOperation, AclOperation.ALL, AclOperation.DESCRIBE_TOKENS)
ACL_PERMISSIONS = _zk_names(AclPermissionType, AclPermissionType.DENY, AclPermissionType.ALLOW)
PATTERN_LITERAL = int(AclPatternType.LITERAL)
_DECIMAL = re.compile(r"[0-9]+")
PATTERN_PREFIXED = int(AclPatternType.PREFIXED)


# ---------------------------------------------------------------------------- JSON helpers


def _json(path: str, data: bytes | None) -> dict[str, Any]:
    if data is None or not data:
        raise MalformedZnodeError(path, "no data (expected a JSON object)")
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise MalformedZnodeError(path, "data is not UTF-8") from None
    except (ValueError, RecursionError) as exc:
        raise MalformedZnodeError(path, f"malformed JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedZnodeError(path, f"expected a JSON object, got {type(obj).__name__}")
    return obj


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(path: str, obj: dict[str, Any], key: str, default: int | None = None) -> int:
    v = obj.get(key)
    if v is None and default is not None and key not in obj:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise MalformedZnodeError(path, f"field {key!r} must be an integer, got {v!r}")
    return v


def _str(path: str, obj: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
    v = obj.get(key)
    if v is None and nullable:
        return None
    if not isinstance(v, str):
        raise MalformedZnodeError(path, f"field {key!r} must be a string, got {v!r}")
    return v


def _req_str(path: str, obj: dict[str, Any], key: str) -> str:
    v = _str(path, obj, key)
    assert v is not None
    return v


def _long_string(path: str, obj: dict[str, Any], key: str) -> int:
    """Kafka writes some longs as JSON strings (timestamps, producer id blocks); accept numbers too."""
    v = obj.get(key)
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise MalformedZnodeError(path, f"field {key!r} must be an integer or a numeric string, got {v!r}")


def _int_list(path: str, v: Any, what: str) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(_is_int(x) for x in v):
        raise MalformedZnodeError(path, f"{what} must be a list of integers, got {v!r}")
    return tuple(v)


def _version(path: str, obj: dict[str, Any], supported: range) -> int:
    v = obj.get("version")
    if not isinstance(v, int) or isinstance(v, bool):
        raise MalformedZnodeError(path, f"field 'version' must be an integer, got {v!r}")
    if v not in supported:
        raise UnknownZnodeVersionError(
            path, f"unknown version {v} (supported: {supported.start} to {supported.stop - 1})")
    return v


def _int_text(path: str, data: bytes | None, what: str) -> int:
    try:
        return int((data or b"").decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise MalformedZnodeError(path, f"{what} must be a decimal integer, got {data!r}") from None


def base64_uuid(path: str, text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: 22 characters of URL-safe base64 without padding."""
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (binascii.Error, ValueError):
        raw = b""
    if len(text) != 22 or len(raw) != 16:
        raise MalformedZnodeError(path, f"{text!r} is not a base64 Kafka Uuid")
    return uuid.UUID(bytes=raw)


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (URL decoding) of a ``/config/users|clients`` child name."""
    return unquote_plus(name)


# ---------------------------------------------------------------------------- cluster and controller


def parse_cluster_id(path: str, data: bytes | None) -> str:
    """``/cluster/id``: ``{"version":"1","id":"..."}`` (only ``id`` is read, as Kafka does)."""
    obj = _json(path, data)
    return _req_str(path, obj, "id")


@dataclass(frozen=True, slots=True)
class ControllerZnode:
    version: int
    broker_id: int
    kraft_controller_epoch: int


def parse_controller(path: str, data: bytes | None) -> ControllerZnode:
    """``/controller`` v1 (≤3.3) or v2 (adds ``kraftControllerEpoch``, -1 for a ZK controller)."""
    obj = _json(path, data)
    version = _version(path, obj, range(1, 3))
    return ControllerZnode(version, _int(path, obj, "brokerid"), _int(path, obj, "kraftControllerEpoch", -1))


def parse_controller_epoch(path: str, data: bytes | None) -> int:
    return _int_text(path, data, "the controller epoch")


# ---------------------------------------------------------------------------- brokers


@dataclass(frozen=True, slots=True)
class KRaftMigrationInfo:
    """KIP-866's ``kraftMigration`` object of broker registration JSON v6."""

    is_ready: bool
    cluster_id: str | None
    ibp: str | None


@dataclass(frozen=True, slots=True)
class BrokerZnode:
    broker_id: int
    version: int
    host: str | None
    port: int
    endpoints: tuple[str, ...]
    rack: str | None
    epoch: int
    """The ZK broker epoch: the znode's czxid."""
    migration: KRaftMigrationInfo | None
    security_protocols: tuple[tuple[str, str], ...] = ()
    """``listener_security_protocol_map`` (v4+) as (listener, protocol) pairs; empty before v4."""


def parse_broker(path: str, data: bytes | None, stat: ZnodeStat) -> BrokerZnode:
    """``/brokers/ids/<id>`` v1-v5 (Kafka writes 5 from IBP 2.7-IV0), v6 per KIP-866."""
    name = path.rsplit("/", 1)[1]
    if not _DECIMAL.fullmatch(name):
        raise MalformedZnodeError(path, f"broker id {name!r} is not a non-negative integer")
    obj = _json(path, data)
    version = _version(path, obj, range(1, 7))
    _int(path, obj, "jmx_port")
    endpoints: tuple[str, ...] = ()
    if version >= 2:
        raw = obj.get("endpoints")
        if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
            raise MalformedZnodeError(path, f"field 'endpoints' must be a list of strings, got {raw!r}")
        endpoints = tuple(raw)
    migration = None
    if version >= 6:
        info = obj.get("kraftMigration")
        if not isinstance(info, dict) or not isinstance(info.get("isReady"), bool):
            raise MalformedZnodeError(path, "version 6 needs a 'kraftMigration' object with a boolean "
                                            "'isReady'")
        migration = KRaftMigrationInfo(info["isReady"], _str(path, info, "clusterId", nullable=True),
                                       _str(path, info, "ibp", nullable=True))
    protocols = obj.get("listener_security_protocol_map", {})
    if not isinstance(protocols, dict) or not all(isinstance(v, str) for v in protocols.values()):
        raise MalformedZnodeError(path, "field 'listener_security_protocol_map' must be an object of strings")
    return BrokerZnode(int(name), version, _str(path, obj, "host", nullable=True),
                       _int(path, obj, "port", -1), endpoints, _str(path, obj, "rack", nullable=True),
                       stat.czxid, migration, tuple(protocols.items()))


# ---------------------------------------------------------------------------- topics


@dataclass(frozen=True, slots=True)
class TopicZnode:
    name: str
    version: int
    partitions: dict[int, tuple[int, ...]]
    adding_replicas: dict[int, tuple[int, ...]]
    removing_replicas: dict[int, tuple[int, ...]]
    topic_id: uuid.UUID | None


def _partition_map(path: str, obj: dict[str, Any], key: str) -> dict[int, tuple[int, ...]]:
    raw = obj.get(key, {})
    if not isinstance(raw, dict):
        raise MalformedZnodeError(path, f"field {key!r} must be an object, got {raw!r}")
    out = {}
    for p, replicas in raw.items():
        if not _DECIMAL.fullmatch(p):
            raise MalformedZnodeError(path, f"partition {p!r} of {key!r} is not a non-negative integer")
        out[int(p)] = _int_list(path, replicas, f"{key}[{p}]")
    return out


def parse_topic(path: str, data: bytes | None) -> TopicZnode:
    """``/brokers/topics/<t>`` v1-v3 (v2 adds adding/removing replicas, v3 ``topic_id``)."""
    obj = _json(path, data)
    version = _version(path, obj, range(1, 4))
    if "partitions" not in obj:
        raise MalformedZnodeError(path, "field 'partitions' is missing")
    partitions = _partition_map(path, obj, "partitions")
    raw_id = obj.get("topic_id") if version >= 3 else None
    topic_id = None if raw_id is None else base64_uuid(path, _req_str(path, obj, "topic_id"))
    adding = _partition_map(path, obj, "adding_replicas")
    removing = _partition_map(path, obj, "removing_replicas")
    return TopicZnode(path.rsplit("/", 1)[1], version, partitions, adding, removing, topic_id)


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int
    partition_epoch: int
    """The state znode's dataVersion (ZD TopicPartitionStateZNode.decode)."""


def parse_partition_state(path: str, data: bytes | None, stat: ZnodeStat) -> PartitionState:
    """``/brokers/topics/<t>/partitions/<p>/state`` (version 1; ``leader_recovery_state`` since 3.2)."""
    obj = _json(path, data)
    _version(path, obj, range(1, 2))
    recovery = _int(path, obj, "leader_recovery_state", 0)
    if recovery not in (0, 1):
        raise MalformedZnodeError(path, f"unknown leader_recovery_state {recovery}")
    return PartitionState(_int(path, obj, "leader"), _int(path, obj, "leader_epoch"),
                          _int_list(path, obj.get("isr"), "field 'isr'"), _int(path, obj, "controller_epoch"),
                          recovery, stat.version)


def parse_reassignments(path: str, data: bytes | None) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    """``/admin/reassign_partitions`` (the pre-2.4 reassignment, still honoured by 3.x controllers)."""
    obj = _json(path, data)
    _version(path, obj, range(1, 2))
    raw = obj.get("partitions")
    if not isinstance(raw, list):
        raise MalformedZnodeError(path, "field 'partitions' must be a list")
    out = []
    for entry in raw:
        if not isinstance(entry, dict):
            raise MalformedZnodeError(path, f"partition entry {entry!r} is not an object")
        out.append((_req_str(path, entry, "topic"), _int(path, entry, "partition"),
                    _int_list(path, entry.get("replicas"), "field 'replicas'")))
    return tuple(out)


# ---------------------------------------------------------------------------- configs, quotas, SCRAM


def parse_entity_config(path: str, data: bytes | None) -> dict[str, str]:
    """``/config/<type>/<entity>``: ``{"version":1,"config":{...}}``; null data is no config."""
    if data is None or not data:
        return {}
    obj = _json(path, data)
    _version(path, obj, range(1, 2))
    raw = obj.get("config")
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise MalformedZnodeError(path, "field 'config' must be an object of string values")
    return dict(raw)


def parse_config_change(path: str, data: bytes | None) -> str:
    """``/config/changes/config_change_N``: the changed entity's path under ``/config`` (v2's
    ``entity_path``; v1's ``entity_type`` and ``entity_name`` joined the same way)."""
    obj = _json(path, data)
    if _version(path, obj, range(1, 3)) == 1:
        return f"{_req_str(path, obj, 'entity_type')}/{_req_str(path, obj, 'entity_name')}"
    return _req_str(path, obj, "entity_path")


@dataclass(frozen=True, slots=True)
class ScramCredentialValue:
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def parse_scram(path: str, key: str, value: str) -> ScramCredentialValue:
    """A ``SCRAM-SHA-*`` value: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``."""
    fields = dict(part.partition("=")[::2] for part in value.split(","))
    try:
        return ScramCredentialValue(
            SCRAM_MECHANISMS[key], base64.b64decode(fields["salt"], validate=True),
            base64.b64decode(fields["stored_key"], validate=True),
            base64.b64decode(fields["server_key"], validate=True), int(fields["iterations"]))
    except (KeyError, ValueError, binascii.Error):
        raise MalformedZnodeError(path, f"{key} is not a SCRAM credential (salt=,stored_key=,server_key=,"
                                        "iterations=)") from None


def parse_quota(path: str, key: str, value: str) -> float:
    """Quota values are doubles; Kafka's migration fails on anything else (IllegalStateException)."""
    try:
        return float(value)
    except ValueError:
        raise MalformedZnodeError(path, f"quota {key}={value!r} is not a number") from None


# ---------------------------------------------------------------------------- ACLs


@dataclass(frozen=True, slots=True)
class AclEntry:
    principal: str
    permission_type: int
    operation: int
    host: str


def _acl_code(path: str, table: dict[str, int], what: str, text: Any) -> int:
    if isinstance(text, str):
        if text in table:
            return table[text]
        folded = {k.upper(): v for k, v in table.items()}  # Kafka also takes ALLOW, CLUSTER_ACTION
        if text.replace("_", "").upper() in folded:
            return folded[text.replace("_", "").upper()]
    raise MalformedZnodeError(path, f"unknown ACL {what} {text!r}")


def parse_acls(path: str, data: bytes | None) -> tuple[AclEntry, ...]:
    """``/kafka-acl[-extended/prefixed]/<ResourceType>/<name>``: ``{"version":1,"acls":[...]}``."""
    obj = _json(path, data)
    _version(path, obj, range(1, 2))
    raw = obj.get("acls")
    if not isinstance(raw, list):
        raise MalformedZnodeError(path, "field 'acls' must be a list")
    out = []
    for entry in raw:
        if not isinstance(entry, dict):
            raise MalformedZnodeError(path, f"ACL entry {entry!r} is not an object")
        out.append(AclEntry(_req_str(path, entry, "principal"),
                            _acl_code(path, ACL_PERMISSIONS, "permission type", entry.get("permissionType")),
                            _acl_code(path, ACL_OPERATIONS, "operation", entry.get("operation")),
                            _req_str(path, entry, "host")))
    return tuple(out)


# ---------------------------------------------------------------------------- producer ids, tokens, state


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker: int
    block_start: int
    block_end: int


def parse_producer_id_block(path: str, data: bytes | None) -> ProducerIdBlock | None:
    """``/latest_producer_id_block`` (start and end are JSON strings); null data is no block."""
    if data is None or not data:
        return None
    obj = _json(path, data)
    if "version" in obj:  # the dual-write rewrite of a KRaft controller has none
        _version(path, obj, range(1, 2))
    block = ProducerIdBlock(_int(path, obj, "broker"), _long_string(path, obj, "block_start"),
                            _long_string(path, obj, "block_end"))
    if block.block_end < block.block_start:
        raise MalformedZnodeError(path, f"block_end {block.block_end} is below block_start "
                                        f"{block.block_start}")
    return block


@dataclass(frozen=True, slots=True)
class DelegationTokenZnode:
    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiry_timestamp: int


def parse_delegation_token(path: str, data: bytes | None) -> DelegationTokenZnode:
    """``/delegation_token/tokens/<id>`` v1-v3 (v3 adds ``tokenRequester``); principals are sanitized."""
    obj = _json(path, data)
    version = _version(path, obj, range(1, 4))
    renewers = obj.get("renewers", [])
    if not isinstance(renewers, list) or not all(isinstance(r, str) for r in renewers):
        raise MalformedZnodeError(path, "field 'renewers' must be a list of strings")
    owner = desanitize(_req_str(path, obj, "owner"))
    requester = desanitize(_req_str(path, obj, "tokenRequester")) if version >= 3 else owner
    return DelegationTokenZnode(_req_str(path, obj, "tokenId"), owner, requester,
                                tuple(desanitize(r) for r in renewers), _int(path, obj, "issueTimestamp"),
                                _int(path, obj, "maxTimestamp"), _int(path, obj, "expiryTimestamp"))


@dataclass(frozen=True, slots=True)
class MigrationZnode:
    kraft_controller_id: int
    kraft_controller_epoch: int
    kraft_metadata_offset: int
    kraft_metadata_epoch: int
    zk_version: int

    @property
    def initial_migration_done(self) -> bool:
        return self.kraft_metadata_offset > 0


def parse_migration(path: str, data: bytes | None, stat: ZnodeStat) -> MigrationZnode:
    """``/migration`` (written only by a KRaft controller; version 0 only)."""
    obj = _json(path, data)
    _version(path, obj, range(0, 1))
    return MigrationZnode(_int(path, obj, "kraft_controller_id"), _int(path, obj, "kraft_controller_epoch"),
                          _int(path, obj, "kraft_metadata_offset"), _int(path, obj, "kraft_metadata_epoch"),
                          stat.version)


@dataclass(frozen=True, slots=True)
class FeatureZnode:
    version: int
    enabled: bool
    features: dict[str, int]


def parse_feature(path: str, data: bytes | None) -> FeatureZnode:
    """``/feature`` v1 (min and max levels) or v2 (max only, IBP ≥ 3.3-IV0); not migrated."""
    obj = _json(path, data)
    version = _version(path, obj, range(1, 3))
    raw = obj.get("features", {})
    if not isinstance(raw, dict):
        raise MalformedZnodeError(path, "field 'features' must be an object")
    levels = {}
    for name, rng in raw.items():
        if not isinstance(rng, dict):
            raise MalformedZnodeError(path, f"feature {name!r} must be an object")
        levels[name] = _int(path, rng, "max_version_level")
    return FeatureZnode(version, _int(path, obj, "status", 1) == 1, levels)
