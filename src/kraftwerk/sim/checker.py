"""Safety invariants of the replicated log, checked after every simulated event.

The checker only sees what nodes expose (role, epoch, high watermark, their logs and snapshots,
what they hand to their state machines), so a bug in the raft core shows up as a violation here.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from kraftwerk.errors import KraftwerkError
from kraftwerk.raft.types import Committed, CommittedBatch, SnapshotLoad


class InvariantViolation(KraftwerkError):
    """A safety or liveness property failed; the message names the property and the evidence."""

    def __init__(self, invariant: str, detail: str) -> None:
        super().__init__(f"{invariant}: {detail}")
        self.invariant = invariant
        self.detail = detail


@dataclass(slots=True)
class Ack:
    """A write the leader acknowledged (its high watermark passed it while still leader)."""

    offset: int
    epoch: int
    value: bytes


@dataclass(slots=True)
class Checker:
    """Keeps the global committed history and per-node observations."""

    voters: tuple[int, ...]
    #: offset -> (batch base offset, epoch, record values, is_control) of every committed batch
    history: dict[int, tuple[int, int, tuple[bytes, ...], bool]] = field(default_factory=dict)
    bases: list[int] = field(default_factory=list)
    committed_end: int = 0
    leaders: dict[int, int] = field(default_factory=dict)
    epochs: dict[int, int] = field(default_factory=dict)
    node_hw: dict[int, int] = field(default_factory=dict)
    max_hw: int = 0
    digests: dict[int, str] = field(default_factory=dict)  # state machine digest at an end offset
    acks: list[Ack] = field(default_factory=list)
    checks: int = 0

    # ------------------------------------------------------------------ node state
    def observe_node(self, node_id: int, role_is_leader: bool, epoch: int, hw: int | None) -> None:
        """At most one leader per epoch; epochs never go down; a node's high watermark never goes
        down while it runs (``reset_node`` forgets it on a restart)."""
        self.checks += 1
        prev = self.epochs.get(node_id)
        if prev is not None and epoch < prev:
            raise InvariantViolation("monotonic epoch", f"node {node_id} went from epoch {prev} to {epoch}")
        self.epochs[node_id] = epoch
        if role_is_leader:
            other = self.leaders.setdefault(epoch, node_id)
            if other != node_id:
                raise InvariantViolation(
                    "one leader per epoch", f"nodes {other} and {node_id} both led epoch {epoch}"
                )
        if hw is not None:
            before = self.node_hw.get(node_id)
            if before is not None and hw < before:
                raise InvariantViolation(
                    "monotonic high watermark", f"node {node_id} high watermark went from {before} to {hw}"
                )
            self.node_hw[node_id] = hw
            if hw > self.max_hw:
                self.max_hw = hw

    def reset_node(self, node_id: int) -> None:
        self.node_hw.pop(node_id, None)

    # ------------------------------------------------------------------ committed output
    def observe_committed(self, node_id: int, items: list[Committed]) -> None:
        """Identical committed prefixes: every node hands out exactly the same batches."""
        for item in items:
            if isinstance(item, SnapshotLoad):
                continue
            self._check_batch(node_id, item)

    def _check_batch(self, node_id: int, batch: CommittedBatch) -> None:
        entry = (batch.base_offset, batch.epoch, batch.records, batch.is_control)
        known = self.history.get(batch.base_offset)
        if known is None:
            inside = self._batch_base_for(batch.base_offset)
            if inside >= 0:
                raise InvariantViolation(
                    "identical committed prefixes",
                    f"node {node_id} committed a batch at {batch.base_offset}, inside the history batch "
                    f"{_show(self.history[inside])}",
                )
            self.history[batch.base_offset] = entry
            bisect.insort(self.bases, batch.base_offset)
            self.committed_end = max(self.committed_end, batch.last_offset + 1)
        elif known != entry:
            raise InvariantViolation(
                "identical committed prefixes",
                f"node {node_id} committed {_show(entry)} at offset {batch.base_offset}, "
                f"the history has {_show(known)}",
            )

    def observe_digest(self, node_id: int, end_offset: int, digest: str, *, from_snapshot: bool) -> None:
        """The state machine's state at an end offset is the same on every node (and in snapshots)."""
        known = self.digests.setdefault(end_offset, digest)
        if known != digest:
            what = "snapshot" if from_snapshot else "state"
            raise InvariantViolation(
                "snapshot contents" if from_snapshot else "identical committed prefixes",
                f"node {node_id} {what} at offset {end_offset} has digest {digest}, expected {known}",
            )

    # ------------------------------------------------------------------ durability
    def check_majority(self, hw: int, durable_ends: dict[int, tuple[int, int | None, int]]) -> None:
        """The largest high watermark any node reported is durable on a majority of voters.

        ``durable_ends`` maps voter -> (durable log end, epoch of the batch holding hw - 1 or None,
        latest snapshot end offset).
        """
        if hw <= 0:
            return
        ref = self.history.get(self._batch_base_for(hw - 1))
        ref_epoch = ref[1] if ref is not None else None
        holders = []
        for voter, (end, epoch_at, snap_end) in durable_ends.items():
            if snap_end >= hw or (end >= hw and (ref_epoch is None or epoch_at == ref_epoch)):
                holders.append(voter)
        if len(holders) < len(self.voters) // 2 + 1:
            raise InvariantViolation(
                "committed data on a majority",
                f"high watermark {hw} is durable only on voters {holders} ({durable_ends})",
            )

    def _batch_base_for(self, offset: int) -> int:
        """The base offset of the history batch holding ``offset``, or -1."""
        idx = bisect.bisect_right(self.bases, offset) - 1
        if idx < 0:
            return -1
        base = self.bases[idx]
        return base if offset < base + max(1, len(self.history[base][2])) else -1

    def check_acks(self, final: bool = False) -> None:
        """No acknowledged write lost: each is in the committed history at its offset (at the end
        of a run every acknowledged write must have shown up)."""
        pending = []
        for ack in self.acks:
            base = self._batch_base_for(ack.offset)
            if base < 0:
                if final:
                    raise InvariantViolation(
                        "no acknowledged write lost",
                        f"write {ack.value!r} at offset {ack.offset} (epoch {ack.epoch}) "
                        f"never showed up in the committed history",
                    )
                pending.append(ack)
                continue
            _, epoch, values, _ = self.history[base]
            if epoch != ack.epoch or ack.value not in values:
                raise InvariantViolation(
                    "no acknowledged write lost",
                    f"write {ack.value!r} acknowledged at offset {ack.offset} in epoch "
                    f"{ack.epoch}, but the committed batch there is epoch {epoch} {values!r}",
                )
        self.acks = pending


def _show(entry: tuple[int, int, tuple[bytes, ...], bool]) -> str:
    base, epoch, values, control = entry
    kind = "control" if control else "data"
    return f"<{kind} batch base {base} epoch {epoch} records {list(values)[:3]}>"
