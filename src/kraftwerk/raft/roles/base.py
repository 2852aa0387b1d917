"""What the node asks of every role, and what a role may ask of the node (its moves)."""

from __future__ import annotations

from typing import Protocol

from kraftwerk.raft.state import InFlight, QuorumState
from kraftwerk.raft.types import Body, Role


class Transitions(Protocol):
    """The node's role changes (Kafka's QuorumState ``transitionTo*``), as a role sees them."""

    def become_unattached(self, epoch: int, now_ms: int, *, persist: bool = True) -> None: ...

    def become_follower(self, leader_id: int, epoch: int, now_ms: int) -> None: ...

    def become_prospective(self, now_ms: int, delay_ms: int) -> None: ...

    def become_candidate(self, now_ms: int) -> None: ...

    def become_leader(self, now_ms: int, granting: list[int]) -> None: ...

    def become_resigned(self, now_ms: int) -> None: ...

    def observe_epoch(self, leader_id: int, epoch: int, now_ms: int) -> bool:
        """React to (leader, epoch) a message names; True if the node changed role."""
        ...


class RoleState:
    """One role of the node: its timers, its answers to its own requests, its cleanup.

    The defaults are what a role without the matter does: nothing to time, nothing to retry.
    """

    role: Role

    def __init__(self, q: QuorumState, moves: Transitions) -> None:
        self.q = q
        self.moves = moves

    def poll(self, now_ms: int) -> None:
        """Run this role's timers."""

    def deadlines(self) -> list[int]:
        """When ``poll`` has something to do next."""
        return []

    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        """The answer to a request this role sent."""

    def request_failed(self, flight: InFlight, now_ms: int) -> None:
        """A request this role sent timed out or could not be delivered."""

    def voters_changed(self) -> None:
        """The latest voter set changed."""

    def leave(self) -> None:
        """The node is leaving this role: answer what waits on it."""
