"""Resigned: a leader that gave up its epoch (lost its majority, left the voter set, or restarted
as the recorded leader) tells the other voters with EndQuorumEpoch until each has answered, then
stands for election again when its election timeout passes."""

from __future__ import annotations

from typing import cast

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.messages.raft import EndQuorumEpochResponsePartitionData
from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.state import InFlight, QuorumState, first_partition
from kraftwerk.raft.types import Body, Role


class Resigned(RoleState):
    role = Role.RESIGNED

    def __init__(self, q: QuorumState, moves: Transitions, now_ms: int, successors: list[int]) -> None:
        super().__init__(q, moves)
        # the preferred successors, most caught-up first (the leader's view as it resigned; none
        # after a restart, as Kafka: every voter may then stand at once)
        self.successors = successors
        self.election_deadline = now_ms + q.randomized_election_timeout()
        self.end_pending = {v: now_ms for v in q.voters if v != q.node_id}  # voter -> next send

    def poll(self, now_ms: int) -> None:
        self.send_end_quorum(now_ms)
        if now_ms >= self.election_deadline:
            self.moves.become_prospective(now_ms, 0)

    def deadlines(self) -> list[int]:
        return [self.election_deadline, *self.end_pending.values()]

    def send_end_quorum(self, now_ms: int) -> None:
        q = self.q
        for voter, at in list(self.end_pending.items()):
            if now_ms < at:  # (one in flight is due again only once it has expired)
                continue
            self.end_pending[voter] = now_ms + q.config.request_timeout_ms
            body = q.request_body(
                None,
                leaderId=q.node_id,
                leaderEpoch=q.epoch,
                preferredCandidates=[{"candidateId": s} for s in self.successors],
            )
            q.send(voter, ApiKey.END_QUORUM_EPOCH, body, now_ms)

    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        found = first_partition(body)
        if found is None:
            return
        part = cast(EndQuorumEpochResponsePartitionData, found)
        if self.moves.observe_epoch(int(part["leaderId"]), int(part["leaderEpoch"]), now_ms):
            return
        self.end_pending.pop(source, None)

    def request_failed(self, flight: InFlight, now_ms: int) -> None:
        if flight.destination in self.end_pending:
            self.end_pending[flight.destination] = now_ms + self.q.config.retry_backoff_ms
