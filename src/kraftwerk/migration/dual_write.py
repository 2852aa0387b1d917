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
and SCRAM credentials (``/config/users|clients|ips``), the producer id block, ACLs, delegation tokens.
Topics pending deletion in ZooKeeper are left alone (docs/compatibility.md).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from kraftwerk.image.model import AclPatternType, ConfigResource, MetadataImage, StandardAcl, TopicImage
from kraftwerk.migration.encode import (
    CONFIG_CHANGE_PREFIX,
    PRODUCER_ID_BLOCK_SIZE,
    acl_path,
    config_entity_path,
    config_path,
    encode_acl_change,
    encode_acls,
    encode_config_change,
    encode_delegation_token,
    encode_entity_config,
    encode_partition_state,
    encode_producer_id_block,
    encode_topic,
    partition_state_path,
    user_client_config_path,
)
from kraftwerk.migration.tree import ZkTree
from kraftwerk.migration.znodes import (
    ACL_OPERATIONS,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    AclEntry,
    DelegationTokenZnode,
    ProducerIdBlock,
)

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

TOPICS = "/brokers/topics"
TOPIC_CONFIGS = "/config/topics"
BROKER_CONFIGS = "/config/brokers"
USER_CONFIGS = "/config/users"
CLIENT_CONFIGS = "/config/clients"
IP_CONFIGS = "/config/ips"
ENTITY_CONFIGS = (TOPIC_CONFIGS, BROKER_CONFIGS, USER_CONFIGS, CLIENT_CONFIGS, IP_CONFIGS)
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
LITERAL_ACLS = "/kafka-acl"
PREFIXED_ACLS = "/kafka-acl-extended/prefixed"
TOKENS = "/delegation_token/tokens"
STRUCTURAL = (TOPICS, *ENTITY_CONFIGS, LITERAL_ACLS, "/kafka-acl-extended", PREFIXED_ACLS, TOKENS)
"""Parents that exist in every Kafka 3.x tree: created when missing, never deleted."""
CHANGE_STORES = ("/config/changes", "/kafka-acl-changes", "/kafka-acl-extended-changes")
"""Where change notifications go (created when missing: a cluster without an authorizer lacks the ACL
ones); only the parents are managed, never the notifications in them."""

_RESOURCE_NAMES = {code: name for name, code in ACL_RESOURCE_TYPES.items()}
_OPERATIONS = frozenset(ACL_OPERATIONS.values())
_PERMISSIONS = frozenset(ACL_PERMISSIONS.values())
_SCRAM_NAMES = {code: name for name, code in SCRAM_MECHANISMS.items()}
_NO_CONFIG = encode_entity_config({})


def _with_ancestors(paths: Iterable[str]) -> frozenset[str]:
    out = set()
    for path in paths:
        while path:
            out.add(path)
            path = path.rsplit("/", 1)[0]
    return frozenset(out)



_MANAGED_EXACT = _with_ancestors([PRODUCER_ID_BLOCK, *CHANGE_STORES, *STRUCTURAL])
"""Managed znodes without their subtrees: the roots and their parents (``/config``, ``/brokers``)."""

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


# ---------------------------------------------------------------------------- an image's znodes


def _scram_value(salt: bytes, stored_key: bytes, server_key: bytes, iterations: int) -> str:
    """A SCRAM credential as a ``/config/users/<u>`` entry (the inverse of ``znodes.parse_scram``)."""
    b64 = base64.b64encode
    return (f"salt={b64(salt).decode()},stored_key={b64(stored_key).decode()},"
            f"server_key={b64(server_key).decode()},iterations={iterations}")


def _quota_path(entity: Iterable[tuple[str, str | None]]) -> str | None:
    parts = dict(entity)
    if set(parts) == {"user"}:
        return config_path("users", parts["user"])
    if set(parts) == {"client-id"}:
        return config_path("clients", parts["client-id"])
    if set(parts) == {"user", "client-id"}:
        return user_client_config_path(parts["user"], parts["client-id"])
    if set(parts) == {"ip"}:
        return config_path("ips", parts["ip"])
    return None


def _acl_path(acl: StandardAcl) -> str | None:
    storable = acl.operation in _OPERATIONS and acl.permission_type in _PERMISSIONS
    try:
        return acl_path(acl.pattern_type, acl.resource_type, acl.resource_name) if storable else None
    except ValueError:
        return None  # a pattern or resource type ZooKeeper has no store for


def _producer_id_block(next_producer_id: int) -> bytes:
    """The block starting at KRaft's next id, as Kafka's dual write leaves it: a ZooKeeper broker
    after a rollback allocates after everything KRaft handed out."""
    return encode_producer_id_block(
        ProducerIdBlock(-1, next_producer_id, next_producer_id + PRODUCER_ID_BLOCK_SIZE - 1))


# ---------------------------------------------------------------------------- views


def _topic_view(topic: TopicImage, controller_epoch: int) -> Iterator[tuple[str, bytes | None]]:
    base = f"{TOPICS}/{topic.name}"
    parts = topic.partitions
    yield base, encode_topic({p: r.replicas for p, r in parts.items()}, topic.id,
                             adding={p: r.adding_replicas for p, r in parts.items()},
                             removing={p: r.removing_replicas for p, r in parts.items()})
    yield f"{base}/partitions", None
    for p, r in parts.items():
        yield f"{base}/partitions/{p}", None
        yield partition_state_path(topic.name, p), encode_partition_state(
            r.leader, r.leader_epoch, r.isr, controller_epoch, int(r.leader_recovery_state))


def _config_path(resource: ConfigResource) -> str | None:
    if resource.type == TOPIC_RESOURCE:
        return config_path("topics", resource.name)
    if resource.type == BROKER_RESOURCE:
        return config_path("brokers", resource.name or None)
    return None


SECTIONS = frozenset({"configs", "quotas", "producer_ids", "acls", "tokens"})
"""The parts of an image besides topics; a delta renders only those whose map changed."""


def image_view(
    image: MetadataImage, controller_epoch: int, *, topics: Iterable[TopicImage] | None = None,
    sections: frozenset[str] = SECTIONS,
) -> dict[str, bytes | None]:
    """What ZooKeeper must hold for ``image`` (for a delta: only ``topics``' znodes and ``sections``)."""
    view: dict[str, bytes | None] = {}
    rendered = list(image.topics.by_id.values() if topics is None else topics)
    for topic in rendered:
        view.update(_topic_view(topic, controller_epoch))
    if "configs" in sections:
        for resource, config in image.configs.items():
            path = _config_path(resource)
            if path is not None and (config or resource.type == TOPIC_RESOURCE):
                view[path] = encode_entity_config(config)
    for topic in rendered:
        view.setdefault(config_path("topics", topic.name), _NO_CONFIG)  # Kafka creates one per topic
    if "quotas" in sections:
        view.update(_quota_view(image))
    if "producer_ids" in sections and image.producer_ids_next >= 0:
        view[PRODUCER_ID_BLOCK] = _producer_id_block(image.producer_ids_next)
    if "acls" in sections:
        view.update(_acl_view(image))
    if "tokens" in sections:
        for token in image.delegation_tokens.values():
            view[f"{TOKENS}/{token.token_id}"] = encode_delegation_token(DelegationTokenZnode(
                token.token_id, token.owner, token.requester, token.renewers, token.issue_timestamp,
                token.max_timestamp, token.expiration_timestamp))
    view.update(dict.fromkeys(CHANGE_STORES))
    return view


def _quota_view(image: MetadataImage) -> dict[str, bytes | None]:
    """Client quotas and SCRAM credentials, which share the ``/config/users`` znodes."""
    view: dict[str, bytes | None] = {}
    entity_configs: dict[str, dict[str, str]] = {}
    for entity, quotas in image.client_quotas.items():
        path = _quota_path(entity)
        if path is not None and quotas:
            entity_configs.setdefault(path, {}).update({k: str(float(v)) for k, v in quotas.items()})
    for (mechanism, user), cred in image.scram.items():
        if mechanism in _SCRAM_NAMES:
            entity_configs.setdefault(config_path("users", user), {})[_SCRAM_NAMES[mechanism]] = (
                _scram_value(cred.salt, cred.stored_key, cred.server_key, cred.iterations))
    for path, config in entity_configs.items():
        view[path] = encode_entity_config(config)
    for path in [p for p in entity_configs if p.count("/") == 5]:
        user = path.rsplit("/", 2)[0]
        view.setdefault(user, _NO_CONFIG)  # a user's own znode holds its clients
        view[user + "/clients"] = None
    return view


def _acl_view(image: MetadataImage) -> dict[str, bytes | None]:
    by_resource: dict[str, list[StandardAcl]] = {}
    for acl in image.acls.values():
        path = _acl_path(acl)
        if path is not None:
            by_resource.setdefault(path, []).append(acl)
    view: dict[str, bytes | None] = {}
    for path, acls in by_resource.items():
        ordered = sorted(acls, key=lambda a: (a.principal, a.permission_type, a.operation, a.host))
        view[path] = encode_acls(AclEntry(a.principal, a.permission_type, a.operation, a.host)
                                 for a in ordered)
    return view


def zookeeper_view(tree: ZkTree) -> dict[str, bytes | None]:
    """What ZooKeeper holds under the managed paths (from a consistent read of its tree)."""
    return {z.path: z.data for z in tree if _managed(z.path)}


def _managed(path: str) -> bool:
    return path in _MANAGED_EXACT or any(path.startswith(r + "/") for r in STRUCTURAL)


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
    if path.startswith(TOKENS + "/"):
        return len(parts) == 3
    if path.startswith(LITERAL_ACLS + "/"):
        return len(parts) == 3
    return False


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
    touched = [op.path for op in (*creates, *sets, *deletes)]
    notes = [ZnodeOp("notify", CONFIG_CHANGE_PREFIX, encode_config_change(config_entity_path(p)))
             for p in sorted({p for p in touched if _is_config_entity(p)})]
    notes += [ZnodeOp("notify", *_acl_change(p)) for p in sorted({p for p in touched if _is_acl_resource(p)})]
    return [*creates, *sets, *deletes, *notes]


def _is_acl_resource(path: str) -> bool:
    return (path.startswith(LITERAL_ACLS + "/") and path.count("/") == 3) or (
        path.startswith(PREFIXED_ACLS + "/") and path.count("/") == 4)


def _acl_change(path: str) -> tuple[str, bytes]:
    """The ACL change notification of a written ``/kafka-acl*`` resource znode (AclAuthorizer's)."""
    literal = path.startswith(LITERAL_ACLS + "/")
    kind, name = path.removeprefix(LITERAL_ACLS + "/" if literal else PREFIXED_ACLS + "/").split("/", 1)
    pattern = AclPatternType.LITERAL if literal else AclPatternType.PREFIXED
    return encode_acl_change(pattern, ACL_RESOURCE_TYPES[kind], name)


def _is_config_entity(path: str) -> bool:
    """A znode a config change notification names (not the ``clients`` parent of a user)."""
    depth = path.count("/")
    if path.startswith(USER_CONFIGS + "/"):
        return depth in (3, 5)
    return depth == 3 and path.startswith(tuple(root + "/" for root in ENTITY_CONFIGS))


def delta_plan(previous: MetadataImage, image: MetadataImage, controller_epoch: int) -> list[ZnodeOp]:
    """The writes for one committed change: only topics whose value changed (or vanished) and the
    sections whose map is a new one (the image's maps are persistent: an unchanged one is the same
    object) are rendered, so a change costs what it touches, not the size of the cluster."""
    prev_topics, new_topics = previous.topics.by_name, image.topics.by_name
    changed = [t for name, t in new_topics.items() if prev_topics.get(name) is not t]
    gone = [t for name, t in prev_topics.items() if name not in new_topics]
    moved = {"configs": previous.configs is not image.configs,
             "quotas": previous.client_quotas is not image.client_quotas or previous.scram is not image.scram,
             "producer_ids": previous.producer_ids_next != image.producer_ids_next,
             "acls": previous.acls is not image.acls,
             "tokens": previous.delegation_tokens is not image.delegation_tokens}
    sections = frozenset(name for name, differs in moved.items() if differs)
    before = image_view(previous, controller_epoch, topics=[*(prev_topics[t.name] for t in changed
                                                              if t.name in prev_topics), *gone],
                        sections=sections)
    after = image_view(image, controller_epoch, topics=changed, sections=sections)
    scope = [f"{TOPICS}/{t.name}" for t in (*changed, *gone)]
    scope += [*ENTITY_CONFIGS, LITERAL_ACLS, PREFIXED_ACLS, TOKENS]
    return plan(before, after, scope=scope, known=_DELTA_KNOWN)


def full_plan(zookeeper: View, image: MetadataImage, controller_epoch: int) -> list[ZnodeOp]:
    """Reconciliation: everything ZooKeeper lacks or holds differently, and what it holds that KRaft
    deleted."""
    return plan(zookeeper, image_view(image, controller_epoch))
