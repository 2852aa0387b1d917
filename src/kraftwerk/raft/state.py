"""The state every raft role shares (Kafka's QuorumState plus the client's plumbing).

One explicit object: the election state written to ``quorum-state`` (epoch, leader, vote), the
high watermark, the log and its KIP-853 control state, the requests in flight and the effects
queued for the host, the randomness of timeouts. A role keeps only what lives and dies with it;
everything that outlives a role change is here.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.raft.control import KRaftControl
from kraftwerk.raft.log import ElectionState, QuorumStateStore, RaftLog
from kraftwerk.raft.types import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    METADATA_TOPIC_ID,
    REQUEST_VERSIONS,
    Body,
    Effect,
    RaftConfig,
    SendRequest,
    SendResponse,
)
from kraftwerk.raft.voters import VoterSet

NONE = Errors.NONE.value.code
FENCED = Errors.FENCED_LEADER_EPOCH.value.code
UNKNOWN_EPOCH = Errors.UNKNOWN_LEADER_EPOCH.value.code
NOT_LEADER = Errors.NOT_LEADER_OR_FOLLOWER.value.code
SNAPSHOT_NOT_FOUND = Errors.SNAPSHOT_NOT_FOUND.value.code
POSITION_OUT_OF_RANGE = Errors.POSITION_OUT_OF_RANGE.value.code
INVALID_REQUEST = Errors.INVALID_REQUEST.value.code
INCONSISTENT_CLUSTER = Errors.INCONSISTENT_CLUSTER_ID.value.code

#: A deadline that never comes.
NEVER = 1 << 62


@dataclass(slots=True)
class InFlight:
    """A request this node sent and waits for: to whom, which RPC, until when, what it asked."""

    destination: int
    api_key: int
    deadline_ms: int
    context: Any = None


def first_partition(body: Body, topics_key: str = "topics") -> Body | None:
    """The one partition of a one-topic raft request or response (None when it names none)."""
    topics = body.get(topics_key) or []
    if not topics:
        return None
    parts = topics[0].get("partitions") or []
    return parts[0] if parts else None


class QuorumState:
    """What the roles of one replica share; the roles read and write it, never each other."""

    def __init__(self, config: RaftConfig, log: RaftLog, store: QuorumStateStore, seed: int) -> None:
        self.config = config
        self.log = log
        self.store = store
        self.rng = random.Random(seed)
        stored = store.read() or ElectionState(0)
        self.epoch = stored.epoch
        self.leader_id: int | None = stored.leader_id
        self.voted_id: int | None = stored.voted_id
        self.hw: int | None = None
        #: when this node last had a good Fetch answer from its leader (pre-votes are refused
        #: while a follower hears from a live leader)
        self.last_fetch_ok_ms: int | None = None
        self.outbox: list[Effect] = []
        self.in_flight: dict[int, InFlight] = {}
        self._next_correlation = 1
        self.addresses: dict[int, tuple[str, int]] = dict(
            zip(config.bootstrap_ids, config.bootstrap_servers, strict=True)
        )
        self.control = KRaftControl(config, log, self._voters_changed)
        #: the node facade's: the current role hears of a new voter set (the leader tracks them)
        self.voters_changed_hook: Callable[[], None] | None = None

    def _voters_changed(self) -> None:
        if self.voters_changed_hook is not None:
            self.voters_changed_hook()

    # ------------------------------------------------------------------ who is who
    @property
    def node_id(self) -> int:
        return self.config.node_id

    @property
    def voter_set(self) -> VoterSet:
        return self.control.voter_set

    @property
    def voters(self) -> tuple[int, ...]:
        return self.control.voter_set.ids

    @property
    def is_voter(self) -> bool:
        return self.control.voter_set.is_voter(self.node_id, self.config.directory_id)

    def majority(self) -> int:
        return len(self.control.voter_set.voters) // 2 + 1

    def has_majority(self, ids: set[int]) -> bool:
        return len(ids & set(self.voters)) >= self.majority()

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        voter = self.control.voter_set.get(node_id)
        found = voter.address(self.config.listener_name) if voter is not None else None
        return found or self.addresses.get(node_id)

    def persist(self) -> None:
        """Write the election state before acting on it (Kafka's quorum-state file)."""
        self.store.write(ElectionState(self.epoch, self.leader_id, self.voted_id))

    # ------------------------------------------------------------------ randomness
    def randomized_election_timeout(self) -> int:
        t = self.config.election_timeout_ms
        return t + self.rng.randint(0, t)

    def backoff(self) -> int:
        """A random wait before a new election after a failed one."""
        cfg = self.config
        return self.rng.randint(cfg.retry_backoff_ms, max(cfg.retry_backoff_ms, cfg.election_backoff_max_ms))

    # ------------------------------------------------------------------ requests out
    def send(self, destination: int, api_key: int, body: Body, now_ms: int, context: Any = None) -> int:
        corr = self._next_correlation
        self._next_correlation += 1
        self.in_flight[corr] = InFlight(
            destination, api_key, now_ms + self.config.request_timeout_ms, context
        )
        self.outbox.append(SendRequest(destination, api_key, REQUEST_VERSIONS[api_key], body, corr))
        return corr

    def respond(self, destination: int, api_key: int, version: int, correlation_id: int, body: Body) -> None:
        self.outbox.append(SendResponse(destination, api_key, version, body, correlation_id))

    def has_in_flight(self, api_key: int, destination: int | None = None) -> bool:
        return any(
            f.api_key == api_key and (destination is None or f.destination == destination)
            for f in self.in_flight.values()
        )

    def send_fetch(self, destination: int, now_ms: int) -> None:
        """Fetch from the log end; the answer is checked against the offset it asked at."""
        self.send(destination, ApiKey.FETCH, self.fetch_request_body(), now_ms, context=self.log.end_offset)

    def cluster_ok(self, body: Body) -> bool:
        cid = body.get("clusterId")
        return cid is None or self.config.cluster_id is None or cid == self.config.cluster_id

    # ------------------------------------------------------------------ shared body shapes
    def request_body(self, voter: int | None, **fields: Any) -> Body:
        """The one-partition request shape Vote and Begin/EndQuorumEpoch share (``voter``: the
        VoterId field, None where the RPC has none)."""
        body: Body = {
            "clusterId": self.config.cluster_id,
            "topics": [
                {
                    "topicName": METADATA_TOPIC,
                    "partitions": [{"partitionIndex": METADATA_PARTITION, **fields}],
                }
            ],
        }
        if voter is not None:
            body["voterId"] = voter
        return body

    def partition_body(self, error: int, partition_error: int, **fields: Any) -> Body:
        """The one-partition response shape Vote, Begin/EndQuorumEpoch and DescribeQuorum share:
        this node's view of the leader plus the RPC's own ``fields``."""
        return {
            "errorCode": error,
            "topics": [
                {
                    "topicName": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partitionIndex": METADATA_PARTITION,
                            "errorCode": partition_error,
                            "leaderId": -1 if self.leader_id is None else self.leader_id,
                            "leaderEpoch": self.epoch,
                            **fields,
                        }
                    ],
                }
            ],
        }

    def leader_endpoints(self) -> list[Body]:
        """Fetch's NodeEndpoints: where the leader this node knows listens, so that an observer
        that found the quorum through a bootstrap server can fetch from the leader itself."""
        leader = self.leader_id
        address = None if leader is None else self.address_of(leader)
        if leader is None or address is None:
            return []
        return [{"nodeId": leader, "host": address[0], "port": address[1], "rack": None}]

    def fetch_error_body(self, error: int) -> Body:
        """A Fetch answer that carries no records: ``error`` and who this node thinks leads."""
        return {
            "errorCode": NONE,
            "responses": [
                {
                    "topicId": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partitionIndex": METADATA_PARTITION,
                            "errorCode": error,
                            "highWatermark": -1 if self.hw is None else self.hw,
                            "logStartOffset": self.log.start_offset,
                            "currentLeader": {
                                "leaderId": -1 if self.leader_id is None else self.leader_id,
                                "leaderEpoch": self.epoch,
                            },
                            "records": None,
                        }
                    ],
                }
            ],
            "nodeEndpoints": self.leader_endpoints(),
        }

    def fetch_snapshot_body(
        self, error: int, sid: Body | None = None, size: int = 0, position: int = 0, data: bytes = b""
    ) -> Body:
        """A FetchSnapshot answer: ``error``, the leader this node knows, and a chunk if any."""
        return {
            "errorCode": NONE,
            "topics": [
                {
                    "name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "index": METADATA_PARTITION,
                            "errorCode": error,
                            "snapshotId": sid or {"endOffset": -1, "epoch": -1},
                            "currentLeader": {
                                "leaderId": -1 if self.leader_id is None else self.leader_id,
                                "leaderEpoch": self.epoch,
                            },
                            "size": size,
                            "position": position,
                            "unalignedRecords": data,
                        }
                    ],
                }
            ],
        }

    def fetch_request_body(self) -> Body:
        """A follower's or observer's Fetch from its log end (Fetch v17: ReplicaState, topic ids)."""
        cfg = self.config
        return {
            "clusterId": cfg.cluster_id,
            "replicaState": {"replicaId": self.node_id, "replicaEpoch": -1},
            "maxWaitMs": cfg.fetch_max_wait_ms,
            "minBytes": 0,
            "maxBytes": cfg.fetch_max_bytes,
            "topics": [
                {
                    "topicId": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partition": METADATA_PARTITION,
                            "currentLeaderEpoch": self.epoch,
                            "fetchOffset": self.log.end_offset,
                            "lastFetchedEpoch": self.log.last_fetched_epoch(),
                            "logStartOffset": self.log.start_offset,
                            "partitionMaxBytes": cfg.fetch_max_bytes,
                        }
                    ],
                }
            ],
        }
