"""Unattached: an epoch without a known leader. A voter waits out its election timeout (a vote it
grants restarts it); an observer looks for the leader by fetching from a random voter."""

from __future__ import annotations

from typing import cast

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.messages.data import FetchResponse, FetchResponsePartitionData
from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.state import InFlight, QuorumState
from kraftwerk.raft.types import Body, Role


def fetched_partition(body: Body) -> FetchResponsePartitionData | None:
    """The partition of a Fetch answer, None when the answer failed as a whole."""
    fetched = cast(FetchResponse, body)
    responses = fetched.get("responses") or []
    part = responses[0]["partitions"][0] if responses and responses[0].get("partitions") else None
    return None if fetched.get("errorCode", 0) != 0 else part


def learn_leader(
    q: QuorumState, moves: Transitions, body: Body, part: FetchResponsePartitionData, now_ms: int
) -> bool:
    """Take in the endpoints and the leader a Fetch answer names; True if the node changed role."""
    for endpoint in cast(FetchResponse, body).get("nodeEndpoints") or ():
        q.addresses[int(endpoint["nodeId"])] = (str(endpoint["host"]), int(endpoint["port"]))
    leader = part.get("currentLeader") or {}
    return moves.observe_epoch(int(leader.get("leaderId", -1)), int(leader.get("leaderEpoch", -1)), now_ms)


class Unattached(RoleState):
    role = Role.UNATTACHED

    def __init__(self, q: QuorumState, moves: Transitions, *, voter: bool, deadline: int) -> None:
        super().__init__(q, moves)
        self.voter = voter
        #: a voter's election timeout; an observer's next fetch to find the leader
        self.deadline = deadline

    def poll(self, now_ms: int) -> None:
        q = self.q
        if now_ms < self.deadline:
            return
        if self.voter:
            self.moves.become_prospective(now_ms, 0)
        elif not q.has_in_flight(ApiKey.FETCH):
            # Kafka's bootstrap fetch: any voter (or bootstrap server) names the leader
            q.send_fetch(q.rng.choice(q.voters or q.config.bootstrap_ids), now_ms)

    def deadlines(self) -> list[int]:
        # an observer's fetch in flight has its own deadline (the node's)
        return [self.deadline] if self.voter or not self.q.has_in_flight(ApiKey.FETCH) else []

    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        part = fetched_partition(body)
        if part is not None and learn_leader(self.q, self.moves, body, part, now_ms):
            return
        self.deadline = now_ms + self.q.config.retry_backoff_ms

    def request_failed(self, flight: InFlight, now_ms: int) -> None:
        self.deadline = now_ms + self.q.config.retry_backoff_ms  # its one kind of request: Fetch
