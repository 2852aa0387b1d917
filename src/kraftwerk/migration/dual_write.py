"""KIP-866's dual write, the pure part: what ZooKeeper must hold for a KRaft image, in Kafka 3.x's
layout, and the znode writes that take ZooKeeper from what it holds to that.

One rule for both of Kafka's paths (``KRaftMigrationZkWriter.handleSnapshot`` and ``handleDelta``):
compare two views of the managed znodes and write the difference. For a committed delta the views
are those of the previous and the new image (only topics whose value changed are rendered again);
for the reconciliation after a failover or an error (SYNC_KRAFT_TO_ZK) the "before" view is what
ZooKeeper actually holds. Structural parents (``/brokers/topics``, ``/kafka-acl/Topic``...) are
created when missing and never deleted. Every config entity written or removed gets a change
notification, so ZooKeeper-mode brokers pick it up as they would from a ZooKeeper controller.

Managed: topics (assignment, topic id, partition states), topic and broker configs, client quotas
and SCRAM credentials (``/config/users|clients|ips``), the producer id block, ACLs. Delegation tokens
are not written yet (docs/compatibility.md).
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from kraftwerk.image.model import (
    AclPatternType,
    ConfigResource,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    StandardAcl,
    TopicImage,
)
from kraftwerk.migration.tree import ZkTree
from kraftwerk.migration.znodes import (
    ACL_OPERATIONS,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    DEFAULT_ENTITY,
    SCRAM_MECHANISMS,
)

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
DEFAULT_BROKER = "<default>"

TOPICS = "/brokers/topics"
TOPIC_CONFIGS = "/config/topics"
BROKER_CONFIGS = "/config/brokers"
USER_CONFIGS = "/config/users"
CLIENT_CONFIGS = "/config/clients"
IP_CONFIGS = "/config/ips"
ENTITY_CONFIGS = (TOPIC_CONFIGS, BROKER_CONFIGS, USER_CONFIGS, CLIENT_CONFIGS, IP_CONFIGS)
CONFIG_CHANGES = "/config/changes"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
LITERAL_ACLS = "/kafka-acl"
PREFIXED_ACLS = "/kafka-acl-extended/prefixed"
STRUCTURAL = (TOPICS, *ENTITY_CONFIGS, LITERAL_ACLS, "/kafka-acl-extended", PREFIXED_ACLS)
"""Parents that exist in every Kafka 3.x tree: created when missing, never deleted."""

PRODUCER_ID_BLOCK_SIZE = 1000


def _with_ancestors(paths: Iterable[str]) -> frozenset[str]:
    out = set()
    for path in paths:
        while path:
            out.add(path)
            path = path.rsplit("/", 1)[0]
    return frozenset(out)



_RESOURCE_NAMES = {code: name for name, code in ACL_RESOURCE_TYPES.items()}
_OPERATION_NAMES = {code: name for name, code in ACL_OPERATIONS.items()}
_PERMISSION_NAMES = {code: name for name, code in ACL_PERMISSIONS.items()}
_SCRAM_NAMES = {code: name for name, code in SCRAM_MECHANISMS.items()}

_DELTA_KNOWN = _with_ancestors([*STRUCTURAL, *(f"{LITERAL_ACLS}/{t}" for t in _RESOURCE_NAMES.values()),
                                 *(f"{PREFIXED_ACLS}/{t}" for t in _RESOURCE_NAMES.values())])
"""What a delta takes to exist (a 3.x broker's startup creates them; a missing one fails the write,
and the retry reconciles in full, which creates it)."""

View = Mapping[str, bytes | None]
"""Managed znode path → data (None: a znode created with null data)."""


@dataclass(frozen=True, slots=True)
class ZnodeOp:
    """One write: ``create`` (with parents first), ``set``, ``delete`` (children first), or
    ``notify`` (a sequential child of ``path`` carrying ``data``)."""

    kind: Literal["create", "set", "delete", "notify"]
    path: str
    data: bytes | None = None


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


# ---------------------------------------------------------------------------- encoders (Kafka 3.x JSON)


def topic_znode(topic: TopicImage) -> bytes:
    """``/brokers/topics/<t>`` version 3 (with the topic id)."""
    parts = sorted(topic.partitions.items())
    return _json({
        "partitions": {str(p): list(r.replicas) for p, r in parts},
        "topic_id": kafka_uuid(topic.id),
        "adding_replicas": {str(p): list(r.adding_replicas) for p, r in parts if r.adding_replicas},
        "removing_replicas": {str(p): list(r.removing_replicas) for p, r in parts if r.removing_replicas},
        "version": 3,
    })


def partition_state_znode(partition: PartitionRegistration, controller_epoch: int) -> bytes:
    """``/brokers/topics/<t>/partitions/<p>/state`` version 1, with the KRaft controller's ZooKeeper
    controller epoch (``leader_recovery_state`` only when recovering, as a 3.x controller writes it)."""
    obj: dict[str, Any] = {"controller_epoch": controller_epoch, "leader": partition.leader, "version": 1,
                           "leader_epoch": partition.leader_epoch, "isr": list(partition.isr)}
    if partition.leader_recovery_state is LeaderRecoveryState.RECOVERING:
        obj["leader_recovery_state"] = int(LeaderRecoveryState.RECOVERING)
    return _json(obj)


def config_znode(config: Mapping[str, str]) -> bytes:
    """``/config/<type>/<entity>``."""
    return _json({"version": 1, "config": dict(sorted(config.items()))})


def config_change_notification(entity_path: str) -> bytes:
    """``/config/changes/config_change_<seq>`` version 2."""
    return _json({"version": 2, "entity_path": entity_path})


def producer_id_block_znode(next_producer_id: int) -> bytes:
    """``/latest_producer_id_block`` as Kafka's dual write leaves it: the block starting at KRaft's
    next id, so a ZooKeeper broker after a rollback allocates after everything KRaft handed out."""
    return _json({"broker": -1, "block_start": str(next_producer_id),
                  "block_end": str(next_producer_id + PRODUCER_ID_BLOCK_SIZE - 1)})


def sanitize(name: str | None) -> str:
    """Kafka's ``Sanitizer.sanitize`` of a user or client id as a znode name (URL encoding, ``*`` and
    space as ``%2A`` and ``%20``); the default entity is ``<default>``."""
    if name is None:
        return DEFAULT_ENTITY
    return quote(name, safe="-_.")


def _quota_path(entity: Iterable[tuple[str, str | None]]) -> str | None:
    parts = dict(entity)
    if set(parts) == {"user"}:
        return f"{USER_CONFIGS}/{sanitize(parts['user'])}"
    if set(parts) == {"client-id"}:
        return f"{CLIENT_CONFIGS}/{sanitize(parts['client-id'])}"
    if set(parts) == {"user", "client-id"}:
        return f"{USER_CONFIGS}/{sanitize(parts['user'])}/clients/{sanitize(parts['client-id'])}"
    if set(parts) == {"ip"}:
        return f"{IP_CONFIGS}/{parts['ip'] or DEFAULT_ENTITY}"
    return None


def _scram_value(salt: bytes, stored_key: bytes, server_key: bytes, iterations: int) -> str:
    b64 = base64.b64encode
    return (f"salt={b64(salt).decode()},stored_key={b64(stored_key).decode()},"
            f"server_key={b64(server_key).decode()},iterations={iterations}")


def acls_znode(acls: Iterable[StandardAcl]) -> bytes:
    """``/kafka-acl[-extended/prefixed]/<Type>/<name>``: every ACE of one resource."""
    entries = sorted((a.principal, _PERMISSION_NAMES[a.permission_type], _OPERATION_NAMES[a.operation],
                      a.host) for a in acls)
    return _json({"version": 1, "acls": [
        {"principal": p, "permissionType": perm, "operation": op, "host": h} for p, perm, op, h in entries]})


# ---------------------------------------------------------------------------- views


def _topic_view(topic: TopicImage, controller_epoch: int) -> Iterator[tuple[str, bytes | None]]:
    base = f"{TOPICS}/{topic.name}"
    yield base, topic_znode(topic)
    yield f"{base}/partitions", None
    for p, partition in topic.partitions.items():
        yield f"{base}/partitions/{p}", None
        yield f"{base}/partitions/{p}/state", partition_state_znode(partition, controller_epoch)


def _config_path(resource: ConfigResource) -> str | None:
    if resource.type == TOPIC_RESOURCE:
        return f"{TOPIC_CONFIGS}/{resource.name}"
    if resource.type == BROKER_RESOURCE:
        return f"{BROKER_CONFIGS}/{resource.name or DEFAULT_BROKER}"
    return None


def _acl_path(acl: StandardAcl) -> str | None:
    kind = _RESOURCE_NAMES.get(acl.resource_type)
    if kind is None or acl.operation not in _OPERATION_NAMES or acl.permission_type not in _PERMISSION_NAMES:
        return None
    if acl.pattern_type == AclPatternType.LITERAL:
        return f"{LITERAL_ACLS}/{kind}/{acl.resource_name}"
    if acl.pattern_type == AclPatternType.PREFIXED:
        return f"{PREFIXED_ACLS}/{kind}/{acl.resource_name}"
    return None


def image_view(
    image: MetadataImage, controller_epoch: int, *, topics: Iterable[TopicImage] | None = None
) -> dict[str, bytes | None]:
    """What ZooKeeper must hold for ``image`` (only ``topics``' znodes when given, for a delta)."""
    view: dict[str, bytes | None] = {}
    for topic in image.topics.by_id.values() if topics is None else topics:
        view.update(_topic_view(topic, controller_epoch))
    for resource, config in image.configs.items():
        path = _config_path(resource)
        if path is not None and (config or resource.type == TOPIC_RESOURCE):
            view[path] = config_znode(config)
    for topic in image.topics.by_id.values() if topics is None else topics:
        view.setdefault(f"{TOPIC_CONFIGS}/{topic.name}", config_znode({}))  # Kafka creates one per topic
    entity_configs: dict[str, dict[str, str]] = {}
    for entity, quotas in image.client_quotas.items():
        path = _quota_path(entity)
        if path is not None and quotas:
            entity_configs.setdefault(path, {}).update({k: str(float(v)) for k, v in quotas.items()})
    for (mechanism, user), cred in image.scram.items():
        if mechanism in _SCRAM_NAMES:
            entity_configs.setdefault(f"{USER_CONFIGS}/{sanitize(user)}", {})[_SCRAM_NAMES[mechanism]] = (
                _scram_value(cred.salt, cred.stored_key, cred.server_key, cred.iterations))
    for path, config in entity_configs.items():
        view[path] = config_znode(config)
    for path in [p for p in entity_configs if p.count("/") == 5]:
        user = path.rsplit("/", 2)[0]
        view.setdefault(user, config_znode({}))  # a user's own znode holds its clients
        view[user + "/clients"] = None
    if image.producer_ids_next >= 0:
        view[PRODUCER_ID_BLOCK] = producer_id_block_znode(image.producer_ids_next)
    by_resource: dict[str, list[StandardAcl]] = {}
    for acl in image.acls.values():
        path = _acl_path(acl)
        if path is not None:
            by_resource.setdefault(path, []).append(acl)
    for path, acls in by_resource.items():
        view[path] = acls_znode(acls)
    return view


def zookeeper_view(tree: ZkTree) -> dict[str, bytes | None]:
    """What ZooKeeper holds under the managed paths (from a consistent read of its tree)."""
    return {z.path: z.data for z in tree if _managed(z.path)}


def _managed(path: str) -> bool:
    return path == PRODUCER_ID_BLOCK or any(path == r or path.startswith(r + "/") for r in STRUCTURAL)


def _deletable(path: str) -> bool:
    """Entity znodes only: a topic and its subtree, a config entity, an ACL resource, never a parent."""
    parts = path.strip("/").split("/")
    if path.startswith(TOPICS + "/"):
        return len(parts) >= 3
    if path.startswith(USER_CONFIGS + "/"):
        return len(parts) in (3, 5)  # a user, a user's client (never the clients parent between)
    if path.startswith(tuple(root + "/" for root in ENTITY_CONFIGS)):
        return len(parts) == 3
    if path.startswith(PREFIXED_ACLS + "/"):
        return len(parts) == 4
    if path.startswith(LITERAL_ACLS + "/"):
        return len(parts) == 3
    return False


_NO_CONFIG = config_znode({})


def _same(a: bytes | None, b: bytes | None) -> bool:
    """Equal as JSON; null data and an empty config are the same (Kafka reads null as no config)."""
    a, b = a or _NO_CONFIG, b or _NO_CONFIG
    if a == b:
        return True
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False


def plan(before: View, after: View, *, scope: Iterable[str] | None = None,
         known: frozenset[str] = frozenset()) -> list[ZnodeOp]:
    """The writes that take ZooKeeper from ``before`` to ``after``: creates (parents first), sets,
    deletes (children first), then one change notification per config entity touched. ``scope``
    limits deletions to these subtrees and ``known`` are parents taken to exist (a delta renders
    only what changed)."""
    roots = None if scope is None else tuple(scope)

    def in_scope(path: str) -> bool:
        return roots is None or any(path == r or path.startswith(r + "/") for r in roots)

    wanted = dict(after)
    for path in list(wanted):
        parent = path.rsplit("/", 1)[0]
        while parent and parent not in wanted and parent not in before and parent not in known:
            wanted[parent] = None
            parent = parent.rsplit("/", 1)[0]
    creates = [ZnodeOp("create", p, wanted[p]) for p in sorted(wanted) if p not in before]
    sets = [ZnodeOp("set", p, wanted[p]) for p in sorted(wanted) if p in before and not _same(before[p],
                                                                                           wanted[p])]
    kept = _with_ancestors(wanted)
    deletes = [ZnodeOp("delete", p) for p in sorted(before, reverse=True)
               if p not in kept and _deletable(p) and in_scope(p)]
    notified = sorted({op.path for op in (*creates, *sets, *deletes) if _is_config_entity(op.path)})
    notes = [ZnodeOp("notify", CONFIG_CHANGES + "/config_change_",
                     config_change_notification(p.removeprefix("/config/"))) for p in notified]
    return [*creates, *sets, *deletes, *notes]


def _is_config_entity(path: str) -> bool:
    """A znode a config change notification names (not the ``clients`` parent of a user)."""
    depth = path.count("/")
    if path.startswith(USER_CONFIGS + "/"):
        return depth in (3, 5)
    return depth == 3 and path.startswith(tuple(root + "/" for root in ENTITY_CONFIGS))


def delta_plan(previous: MetadataImage, image: MetadataImage, controller_epoch: int) -> list[ZnodeOp]:
    """The writes for one committed change: topics whose value changed (or vanished) are rendered
    again; configs, the producer id block and ACLs are small and compared whole."""
    prev_topics, new_topics = previous.topics.by_name, image.topics.by_name
    changed = [t for name, t in new_topics.items() if prev_topics.get(name) is not t]
    gone = [t for name, t in prev_topics.items() if name not in new_topics]
    before = image_view(previous, controller_epoch, topics=[*(prev_topics[t.name] for t in changed
                                                              if t.name in prev_topics), *gone])
    after = image_view(image, controller_epoch, topics=changed)
    scope = [f"{TOPICS}/{t.name}" for t in (*changed, *gone)]
    scope += [*ENTITY_CONFIGS, LITERAL_ACLS, PREFIXED_ACLS]
    return plan(before, after, scope=scope, known=_DELTA_KNOWN)


def full_plan(zookeeper: View, image: MetadataImage, controller_epoch: int) -> list[ZnodeOp]:
    """Reconciliation: everything ZooKeeper lacks or holds differently, and what it holds that KRaft
    deleted."""
    return plan(zookeeper, image_view(image, controller_epoch))
