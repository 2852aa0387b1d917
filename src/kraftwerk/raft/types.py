"""Values of the raft layer: configuration, roles, effects, committed output, errors.

The raft core is sans-I/O: it takes events (a request, a response, a timer poll, an append) and
returns :class:`SendRequest` / :class:`SendResponse` effects; every file write goes through the
:class:`~kraftwerk.raft.log.RaftLog` and :class:`~kraftwerk.raft.log.QuorumStateStore` objects the
host (runtime or simulator) provides.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.versions.features import Feature

#: The topic and partition KRaft replicates (``__cluster_metadata-0``).
METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
#: Kafka's ``Topic.CLUSTER_METADATA_TOPIC_ID`` (Uuid.METADATA_TOPIC_ID): 0...01.
METADATA_TOPIC_ID = uuid.UUID(int=1)

#: The request version the core builds for each api key (the runtime encodes at this version;
#: Vote v2 is the first with KIP-996 PreVote, Fetch v17 carries ReplicaState and topic ids).
REQUEST_VERSIONS: dict[int, int] = {
    ApiKey.FETCH: 17,
    ApiKey.VOTE: 2,
    ApiKey.BEGIN_QUORUM_EPOCH: 1,
    ApiKey.END_QUORUM_EPOCH: 1,
    ApiKey.FETCH_SNAPSHOT: 1,
    ApiKey.DESCRIBE_QUORUM: 2,
    ApiKey.API_VERSIONS: 4,
}

#: The production kraft.version levels (the default range a replica supports).
_KRAFT_LEVELS = Feature.KRAFT_VERSION.supported_version_range(unstable=False)

#: Codec dicts (camelCase keys), exactly what ``kraftwerk.protocol.codec`` encodes and decodes.
Body = dict[str, Any]


class RaftError(KraftwerkError):
    """Base class of raft-layer failures."""


class NotLeaderError(RaftError):
    """``append`` or ``create_snapshot`` on a node that cannot do it now; carries what it knows."""

    def __init__(self, message: str, leader_id: int | None, epoch: int) -> None:
        super().__init__(message)
        self.leader_id = leader_id
        self.epoch = epoch


class InvalidSnapshotError(RaftError):
    """A snapshot id that is not at a committed batch boundary, or not past the latest snapshot."""


class RaftStateError(RaftError):
    """A safety check failed (truncation below the high watermark, a corrupt log): fail-stop."""


class KRaftVersionError(RaftError):
    """``upgrade_kraft_version`` refused the level (Kafka's InvalidUpdateVersionException)."""


@dataclass(frozen=True, slots=True)
class VoterEndpoint:
    """One listener of a voter, as a VotersRecord names it (``controller.quorum.voters`` host/port
    under the first ``controller.listener.names``)."""

    voter_id: int
    name: str
    host: str
    port: int


class Role(enum.Enum):
    """Kafka's EpochState kinds (KIP-595 + KIP-996 Prospective)."""

    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


@dataclass(frozen=True, slots=True)
class RaftConfig:
    """Quorum configuration (``controller.quorum.*``).

    A static quorum names its ``voters`` (``controller.quorum.voters``); a dynamic one (KIP-853)
    leaves them empty and names ``bootstrap_servers`` (``controller.quorum.bootstrap.servers``):
    the voters then come from the VotersRecord of the log or snapshot (the bootstrap snapshot
    ``kafka-storage format --initial-controllers`` writes). A node that is not a voter is an
    observer. ``directory_id`` is the metadata log dir's ``directory.id`` (a voter's key is its id
    and directory id); ``listener_name`` is the controller listener whose endpoint a VotersRecord
    gives for each voter.

    Timeouts follow Kafka's defaults: ``controller.quorum.election.timeout.ms`` (1000),
    ``fetch.timeout.ms`` (2000), ``election.backoff.max.ms`` (1000), ``request.timeout.ms`` (2000),
    ``retry.backoff.ms`` (20). ``fetch_max_wait_ms`` is the long-poll time of a follower's Fetch
    (Kafka uses 500). ``fetch_snapshot_max_bytes`` bounds one FetchSnapshot chunk.
    """

    node_id: int
    voters: tuple[int, ...]
    cluster_id: str | None = None
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 8 * 1024 * 1024
    fetch_snapshot_max_bytes: int = 1024 * 1024
    #: ``controller.quorum.append.linger.ms``: how long the leader lets appends gather before it
    #: flushes (they count toward the high watermark only after the flush).
    append_linger_ms: int = 25
    #: Delete log batches below the latest snapshot once one exists (log cleaning); the runtime
    #: keeps them when the metadata log's retention is unlimited (``metadata.max.retention.*`` -1).
    clean_log_behind_snapshot: bool = True
    #: The voters' endpoints, written into the VotersRecord of a kraft.version 0 -> 1 upgrade.
    voter_endpoints: tuple[VoterEndpoint, ...] = ()
    #: The kraft.version levels this software supports (the VotersRecord's KRaftVersionFeature).
    kraft_version_range: tuple[int, int] = (_KRAFT_LEVELS.min, _KRAFT_LEVELS.max)
    #: ``controller.quorum.bootstrap.servers`` (host, port): where an observer of a dynamic quorum
    #: looks for the leader; the core names them with ids -2, -3, ... (Kafka's bootstrap node ids).
    bootstrap_servers: tuple[tuple[str, int], ...] = ()
    directory_id: uuid.UUID | None = None
    listener_name: str | None = None

    def __post_init__(self) -> None:
        if not self.voters and not self.bootstrap_servers:
            raise ValueError("either controller.quorum.voters or controller.quorum.bootstrap.servers must "
                             "name at least one controller")
        if len(set(self.voters)) != len(self.voters):
            raise ValueError(f"duplicate voter ids in {self.voters}")

    @property
    def bootstrap_ids(self) -> tuple[int, ...]:
        """The ids the core sends to for ``bootstrap_servers`` (Kafka's ``-(i + 2)``)."""
        return tuple(-(i + 2) for i in range(len(self.bootstrap_servers)))


@dataclass(frozen=True, slots=True)
class SendRequest:
    """Send ``body`` (a request of ``api_key`` at ``version``) to node ``destination``.

    The response must come back through ``RaftNode.handle_response`` with the same
    ``correlation_id``; a lost request needs no report (the core times it out itself).
    """

    destination: int
    api_key: int
    version: int
    body: Body
    correlation_id: int


@dataclass(frozen=True, slots=True)
class SendResponse:
    """Answer request ``correlation_id`` of node ``destination`` (possibly later: long-poll Fetch)."""

    destination: int
    api_key: int
    version: int
    body: Body
    correlation_id: int


Effect = SendRequest | SendResponse


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """One committed batch of ``__cluster_metadata-0`` for the state machine.

    ``records`` are the record values (metadata record frames for data batches, control record
    values for control batches, then ``control_types`` gives each record's ControlRecordType code).
    """

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    is_control: bool
    records: tuple[bytes, ...]
    control_types: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SnapshotLoad:
    """The state machine must reset to this snapshot: ``records`` are its metadata record frames
    (header/footer control records left out); committed batches continue at ``end_offset``."""

    end_offset: int
    epoch: int
    records: tuple[bytes, ...]
    last_contained_log_timestamp: int = 0


Committed = CommittedBatch | SnapshotLoad


@dataclass(frozen=True, slots=True)
class ReplicaProgress:
    """What the leader knows about one replica (DescribeQuorum's ReplicaState)."""

    replica_id: int
    log_end_offset: int
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """A snapshot of the node's view, for DescribeQuorum, status commands and the simulator."""

    node_id: int
    role: Role
    epoch: int
    leader_id: int | None
    voted_id: int | None
    high_watermark: int | None
    log_start_offset: int
    log_end_offset: int
    voters: tuple[ReplicaProgress, ...] = field(default=())
    observers: tuple[ReplicaProgress, ...] = field(default=())
