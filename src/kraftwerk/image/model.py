"""The immutable metadata image: what a replayed metadata log says the cluster looks like.

Every value here is a frozen, slotted dataclass or a persistent map, so an image can be shared
between readers while a delta builds the next one. Collections that can be large (topics,
configs, quotas, ACLs, credentials, tokens) are persistent maps (``immutables.Map``, a HAMT); a topic's
partitions are a plain dict that is copied only when that topic changes.

Field meanings follow Kafka's ``org.apache.kafka.image`` and ``metadata`` classes
(``BrokerRegistration``, ``PartitionRegistration``, ...); names are Python-style.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from immutables import Map

from kraftwerk.config.types import ConfigResourceType as ConfigResourceType  # re-exported
from kraftwerk.versions.metadata_version import MetadataVersion

ZERO_UUID = uuid.UUID(int=0)
#: Kafka's DirectoryId.MIGRATING: a replica whose directory predates directory assignment.
DIR_MIGRATING = ZERO_UUID
#: DirectoryId.UNASSIGNED: a new replica not yet placed in a directory.
DIR_UNASSIGNED = uuid.UUID(int=1)
#: DirectoryId.LOST: an offline directory.
DIR_LOST = uuid.UUID(int=2)

NO_LEADER = -1
NO_LEADER_CHANGE = -2

EMPTY_INTS: tuple[int, ...] = ()


class ZkMigrationState(enum.IntEnum):
    """KIP-866 migration state as persisted in ZkMigrationStateRecord (values since 3.5)."""

    NONE = 0
    MIGRATION = 1
    PRE_MIGRATION = 2
    POST_MIGRATION = 3
    ZK = 4


class LeaderRecoveryState(enum.IntEnum):
    """KIP-704: RECOVERING after an unclean election until the leader has recovered."""

    RECOVERED = 0
    RECOVERING = 1


class ScramMechanism(enum.IntEnum):
    """The mechanism byte of UserScramCredentialRecord (Kafka's ScramMechanism type)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2


def java_uuid_key(u: uuid.UUID) -> tuple[int, int]:
    """Sort key equal to Java's ``Uuid.compareTo`` (signed most- then least-significant bits)."""
    n = u.int
    msb, lsb = n >> 64, n & 0xFFFFFFFFFFFFFFFF
    if msb >= 1 << 63:
        msb -= 1 << 64
    if lsb >= 1 << 63:
        lsb -= 1 << 64
    return msb, lsb


def sorted_dirs(dirs: tuple[uuid.UUID, ...] | list[uuid.UUID]) -> tuple[uuid.UUID, ...]:
    """Kafka keeps a broker's directories sorted (it binary-searches them)."""
    return tuple(sorted(dirs, key=java_uuid_key))


# --------------------------------------------------------------------------- provenance


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where an image came from: the last log offset/epoch it contains (Kafka's MetadataProvenance)."""

    last_offset: int = -1
    last_epoch: int = -1
    last_log_time_ms: int = -1
    is_offset_batch_aligned: bool = False


EMPTY_PROVENANCE = Provenance()


# --------------------------------------------------------------------------- features


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    """Finalized feature levels. ``metadata_version`` is kept apart, as in Kafka; level-0
    features are absent; ``kraft.version`` never appears (it lives in KRaft control records)."""

    metadata_version: MetadataVersion | None = None
    finalized: Mapping[str, int] = field(default_factory=dict)
    zk_migration_state: ZkMigrationState = ZkMigrationState.NONE

    def level(self, name: str) -> int:
        if name == "metadata.version":
            return self.metadata_version.feature_level if self.metadata_version else 0
        return self.finalized.get(name, 0)


# --------------------------------------------------------------------------- cluster


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener of a broker or controller."""

    name: str
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True, slots=True, order=True)
class SupportedRange:
    """A node's supported ``[min, max]`` levels for one feature."""

    min: int
    max: int


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A broker as its last RegisterBrokerRecord and later change records describe it."""

    id: int
    epoch: int
    incarnation_id: uuid.UUID
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[tuple[str, SupportedRange], ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[uuid.UUID, ...] = ()
    cordoned_directories: tuple[uuid.UUID, ...] = ()
    static_configs: tuple[tuple[str, str | None], ...] = ()
    """KIP-1294 companion: non-sensitive static configs the broker reported at registration."""

    def feature_range(self, name: str) -> SupportedRange | None:
        for fname, rng in self.supported_features:
            if fname == name:
                return rng
        return None


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """A controller as its RegisterControllerRecord describes it (KIP-919, from 3.7-IV0)."""

    id: int
    incarnation_id: uuid.UUID
    zk_migration_ready: bool = False
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[tuple[str, SupportedRange], ...] = ()

    def feature_range(self, name: str) -> SupportedRange | None:
        for fname, rng in self.supported_features:
            if fname == name:
                return rng
        return None


@dataclass(frozen=True, slots=True)
class ClusterImage:
    """Broker and controller registrations by node id."""

    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=dict)


# --------------------------------------------------------------------------- topics


class PartitionRegistration(NamedTuple):
    """One partition's replica assignment and leadership (Kafka's PartitionRegistration).

    A NamedTuple, not a dataclass like the other values: an image holds one per partition (millions
    for a large cluster), and a tuple is smaller and several times faster to build, as immutable.
    Replicas, ISR and directory tuples are shared between the partitions that have equal ones.
    """

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    removing_replicas: tuple[int, ...] = EMPTY_INTS
    adding_replicas: tuple[int, ...] = EMPTY_INTS
    leader: int = NO_LEADER
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = EMPTY_INTS
    last_known_elr: tuple[int, ...] = EMPTY_INTS


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: its name, id and partitions by index (a dict that is never mutated)."""

    name: str
    id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicsImage:
    """Topics by id and by name (both persistent maps sharing the TopicImage values)."""

    by_id: Map[uuid.UUID, TopicImage] = field(default_factory=Map)
    by_name: Map[str, TopicImage] = field(default_factory=Map)

    def __len__(self) -> int:
        return len(self.by_id)

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.by_id.values())


# --------------------------------------------------------------------------- configs, quotas, ...


@dataclass(frozen=True, slots=True, order=True)
class ConfigResource:
    """A config resource: Kafka's ConfigResource.Type byte and the resource name."""

    type: int
    name: str


#: (entity type, entity name or None for the default entity), sorted by entity type.
QuotaEntity = tuple[tuple[str, str | None], ...]


class AclResourceType(enum.IntEnum):
    """Kafka's ResourceType codes (AccessControlEntryRecord.ResourceType)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclPatternType(enum.IntEnum):
    """Kafka's PatternType codes."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    """Kafka's AclPermissionType codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """One ACL binding (AccessControlEntryRecord without its id)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """Salted SCRAM credential of one user for one mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """A delegation token as DelegationTokenRecord carries it."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """The whole metadata image. Equality compares content, not provenance."""

    features: FeaturesImage = field(default_factory=FeaturesImage)
    cluster: ClusterImage = field(default_factory=ClusterImage)
    topics: TopicsImage = field(default_factory=TopicsImage)
    configs: Map[ConfigResource, Mapping[str, str]] = field(default_factory=Map)
    client_quotas: Map[QuotaEntity, Mapping[str, float]] = field(default_factory=Map)
    producer_ids_next: int = -1
    acls: Map[uuid.UUID, StandardAcl] = field(default_factory=Map)
    scram: Map[tuple[int, str], ScramCredential] = field(default_factory=Map)
    delegation_tokens: Map[str, DelegationToken] = field(default_factory=Map)
    provenance: Provenance = field(default=EMPTY_PROVENANCE, compare=False)
    features_epoch: int = field(default=-1, compare=False)
    """Offset of the last batch that changed a feature level (Kafka's FinalizedFeaturesEpoch)."""

    @property
    def metadata_version(self) -> MetadataVersion | None:
        return self.features.metadata_version

    def is_empty(self) -> bool:
        return self == EMPTY_IMAGE

    def summary(self) -> dict[str, Any]:
        """Counts for logs and bench output."""
        return {
            "metadataVersion": str(self.metadata_version) if self.metadata_version else None,
            "brokers": len(self.cluster.brokers),
            "controllers": len(self.cluster.controllers),
            "topics": len(self.topics),
            "partitions": self.topics.partition_count(),
            "configResources": len(self.configs),
            "acls": len(self.acls),
        }


EMPTY_IMAGE = MetadataImage()
