"""KRaft (KIP-595, with KIP-996 pre-vote) as a sans-I/O state machine.

A host (``kraftwerk.runtime`` over TCP, ``kraftwerk.sim`` under a virtual clock) drives a
:class:`RaftNode`:

- ``node = RaftNode(config, log, state_store, now_ms=..., seed=...)``
- requests from peers: ``node.handle_request(source_id, api_key, version, body, correlation_id, now_ms)``
- responses to the node's requests: ``node.handle_response(source_id, api_key, version, body,
  correlation_id, now_ms)``; a request that could not be sent: ``node.handle_send_failure(...)``
- timers: ``node.poll(now_ms)`` and ``node.next_deadline_ms()``
- writes (leader only): ``node.append(records, now_ms) -> last offset``; they commit once the high
  watermark passes it (``node.high_watermark``)
- committed output: ``node.drain_committed() -> list[CommittedBatch | SnapshotLoad]``
- snapshots of the state machine: ``node.create_snapshot(end_offset, records, now_ms)``
- kraft.version (KIP-853): ``node.kraft_version`` / ``node.kraft_version_at(offset)`` from the
  KRaftVersionRecords in the log and snapshot; ``node.upgrade_kraft_version(level, now_ms,
  validate_only)`` (leader) writes the 0 -> 1 control batch
- voters: ``node.voter_set`` (static ``RaftConfig.voters``, or the latest VotersRecord of a dynamic
  quorum), ``node.address_of(id)`` for the host's connections; AddRaftVoter / RemoveRaftVoter
  requests change the set (:mod:`kraftwerk.raft.reconfig`)

Every call returns (or accumulates, see :meth:`RaftNode.take_effects`) effects:
:class:`SendRequest` / :class:`SendResponse` with codec dict bodies (camelCase keys) to encode at
the given api key and version. Files go through :class:`RaftLog` / :class:`QuorumStateStore`.
"""

from kraftwerk.raft.log import (
    ElectionState,
    EpochCache,
    LogBatchInfo,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    OffsetAndEpoch,
    QuorumStateStore,
    RaftLog,
    SnapshotId,
)
from kraftwerk.raft.node import RaftNode
from kraftwerk.raft.types import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    REQUEST_VERSIONS,
    Body,
    Committed,
    CommittedBatch,
    Effect,
    InvalidSnapshotError,
    KRaftVersionError,
    NotLeaderError,
    QuorumInfo,
    RaftConfig,
    RaftError,
    RaftStateError,
    ReplicaProgress,
    Role,
    SendRequest,
    SendResponse,
    SnapshotLoad,
    VoterEndpoint,
)
from kraftwerk.raft.voters import Voter, VoterSet

__all__ = [
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "REQUEST_VERSIONS",
    "Body",
    "Committed",
    "CommittedBatch",
    "Effect",
    "ElectionState",
    "EpochCache",
    "InvalidSnapshotError",
    "KRaftVersionError",
    "LogBatchInfo",
    "MemoryQuorumStateStore",
    "MemoryRaftLog",
    "NotLeaderError",
    "OffsetAndEpoch",
    "QuorumInfo",
    "QuorumStateStore",
    "RaftConfig",
    "RaftError",
    "RaftLog",
    "RaftNode",
    "RaftStateError",
    "ReplicaProgress",
    "Role",
    "SendRequest",
    "SendResponse",
    "SnapshotId",
    "SnapshotLoad",
    "Voter",
    "VoterEndpoint",
    "VoterSet",
]
