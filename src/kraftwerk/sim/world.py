"""The deterministic world: a virtual clock with one event queue, a lossy network and fsync disks.

Everything random comes from one ``random.Random(seed)``, events at the same time run in the
order they were scheduled, so a seed and a config replay the exact same history.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.raft.log import MemoryQuorumStateStore, MemoryRaftLog, SnapshotId

Action = Callable[[], None]


class EventQueue:
    """A virtual clock: ``schedule(at, action)``; ``run_next`` advances time to the next event."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Action]] = []
        self._seq = 0
        self.executed = 0

    def schedule(self, at: int, action: Action) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (max(at, self.now), self._seq, action))

    def next_time(self) -> int | None:
        return self._heap[0][0] if self._heap else None

    def run_next(self) -> bool:
        if not self._heap:
            return False
        at, _, action = heapq.heappop(self._heap)
        self.now = at
        self.executed += 1
        action()
        return True


@dataclass(slots=True)
class LinkFaults:
    """Per-link behaviour; a link is directional (source -> destination)."""

    drop: float = 0.0
    duplicate: float = 0.0
    min_delay_ms: int = 1
    max_delay_ms: int = 5


@dataclass(slots=True)
class Network:
    """Delivers messages with per-link drop, delay (hence reordering) and duplication; a partition
    is a set of blocked directional links."""

    rng: random.Random
    default: LinkFaults = field(default_factory=LinkFaults)
    links: dict[tuple[int, int], LinkFaults] = field(default_factory=dict)
    blocked: set[tuple[int, int]] = field(default_factory=set)
    sent: int = 0
    dropped: int = 0
    duplicated: int = 0

    def faults(self, src: int, dst: int) -> LinkFaults:
        return self.links.get((src, dst), self.default)

    def deliveries(self, src: int, dst: int) -> list[int]:
        """Delays of the copies of one message that arrive (empty when it is lost)."""
        self.sent += 1
        if (src, dst) in self.blocked:
            self.dropped += 1
            return []
        f = self.faults(src, dst)
        if f.drop and self.rng.random() < f.drop:
            self.dropped += 1
            return []
        delays = [self.rng.randint(f.min_delay_ms, f.max_delay_ms)]
        if f.duplicate and self.rng.random() < f.duplicate:
            self.duplicated += 1
            delays.append(self.rng.randint(f.min_delay_ms, f.max_delay_ms * 2))
        return delays

    def isolate(self, node: int, others: list[int]) -> None:
        for o in others:
            if o != node:
                self.blocked.add((node, o))
                self.blocked.add((o, node))

    def split(self, side_a: list[int], side_b: list[int]) -> None:
        for a in side_a:
            for b in side_b:
                self.blocked.add((a, b))
                self.blocked.add((b, a))

    def heal(self) -> None:
        self.blocked.clear()
        self.links.clear()


class SimQuorumStore(MemoryQuorumStateStore):
    """``quorum-state``: written with write-temp + fsync + rename, so every write is durable."""


@dataclass(slots=True)
class Disk:
    """A node's metadata log dir across crashes: the durable log image and the quorum state.

    ``crash`` keeps only fsynced log bytes, plus (when ``torn`` is drawn) a random prefix of the
    first unflushed write: a torn write that recovery must cut off.
    """

    quorum: SimQuorumStore = field(default_factory=SimQuorumStore)
    image: tuple[int, bytes, dict[SnapshotId, bytes]] | None = None
    torn_writes: int = 0
    lost_bytes: int = 0

    def open_log(self) -> MemoryRaftLog:
        return MemoryRaftLog() if self.image is None else MemoryRaftLog.recover(self.image)

    def crash(self, log: MemoryRaftLog, rng: random.Random, torn: bool) -> None:
        unflushed = log.unflushed_bytes
        keep = rng.randint(1, unflushed - 1) if (torn and unflushed > 1) else 0
        if keep:
            self.torn_writes += 1
        self.lost_bytes += unflushed - keep
        self.image = log.durable_image(keep)

def describe(value: Any) -> str:
    return repr(value)
