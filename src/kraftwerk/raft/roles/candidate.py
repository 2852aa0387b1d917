"""Prospective and Candidate: collecting votes for epoch + 1 (KIP-996 pre-vote, which bumps nothing)
and then for the epoch this node moved to and voted for itself in (KIP-595)."""

from __future__ import annotations

from typing import cast

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.messages.raft import VoteResponsePartitionData
from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.state import NONE, InFlight, QuorumState, first_partition
from kraftwerk.raft.types import Body, Role


class Candidate(RoleState):
    """An election in progress; ``pre_vote`` for the Prospective role (its votes bind no one)."""

    def __init__(
        self,
        q: QuorumState,
        moves: Transitions,
        now_ms: int,
        *,
        pre_vote: bool,
        delay_ms: int,
        abandoned_leader: int | None,
    ) -> None:
        super().__init__(q, moves)
        self.pre_vote = pre_vote
        self.role = Role.PROSPECTIVE if pre_vote else Role.CANDIDATE
        self.grants = {q.node_id}
        self.votes_sent = False
        self.send_at = now_ms + delay_ms
        self.election_deadline = self.send_at + q.randomized_election_timeout()
        # the leader we gave up on: pre-vote answers that still name it must not pull us back
        self.abandoned_leader = abandoned_leader

    def poll(self, now_ms: int) -> None:
        if not self.votes_sent and now_ms >= self.send_at:
            self.send_votes(now_ms)
        elif now_ms >= self.election_deadline:
            self.moves.become_prospective(now_ms, self.q.backoff())

    def deadlines(self) -> list[int]:
        return [self.election_deadline] if self.votes_sent else [self.election_deadline, self.send_at]

    def send_votes(self, now_ms: int) -> None:
        q = self.q
        self.votes_sent = True
        if q.has_majority(self.grants):
            self._elected(now_ms)
            return
        epoch = q.epoch + 1 if self.pre_vote else q.epoch
        for voter in q.voters:
            if voter == q.node_id:
                continue
            body = q.request_body(
                voter,
                replicaEpoch=epoch,
                replicaId=q.node_id,
                lastOffsetEpoch=q.log.last_fetched_epoch(),
                lastOffset=q.log.end_offset,
                preVote=self.pre_vote,
            )
            q.send(voter, ApiKey.VOTE, body, now_ms)

    def _elected(self, now_ms: int) -> None:
        """A majority granted: a prospective node stands for election, a candidate leads."""
        if self.pre_vote:
            self.moves.become_candidate(now_ms)
        else:
            self.moves.become_leader(now_ms, sorted(self.grants))

    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        found = first_partition(body)
        if body.get("errorCode", NONE) != NONE or found is None:
            return
        part = cast(VoteResponsePartitionData, found)
        leader_id, leader_epoch = int(part["leaderId"]), int(part["leaderEpoch"])
        granted = part["errorCode"] == NONE and bool(part["voteGranted"])
        # a voter that grants a pre-vote has lost its leader too: the leader it still names is the
        # one we gave up on, so it must not pull us back (a rejection means that leader is alive)
        stale = (
            granted and self.pre_vote and leader_epoch == self.q.epoch and leader_id == self.abandoned_leader
        )
        if not stale and self.moves.observe_epoch(leader_id, leader_epoch, now_ms):
            return
        if granted:
            self.grants.add(source)
            if self.q.has_majority(self.grants):
                self._elected(now_ms)
