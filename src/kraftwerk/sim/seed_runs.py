"""What every simulator reports of one seed, and the loop that plays a batch of seeds.

The raft, lifecycle and migration simulations each extend :class:`SeedRun` with their own fields, so a
failing seed reads the same way (invariant, violation, replay command, trace tail) whichever found it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar


class SeedConfig(Protocol):
    """A simulation's configuration of one seed: enough to replay it."""

    @property
    def seed(self) -> int: ...
    def to_json(self) -> dict[str, Any]: ...
    def replay_command(self) -> str: ...


Cfg = TypeVar("Cfg", bound=SeedConfig)


@dataclass(slots=True)
class SeedRun(Generic[Cfg]):
    """One seed's outcome; ``ok`` False names the invariant broken and how."""

    config: Cfg
    ok: bool
    invariant: str | None = None
    violation: str | None = None
    events: int = 0
    virtual_ms: int = 0
    wall_s: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)
    trace_tail: list[str] = field(default_factory=list)

    def extra_json(self) -> dict[str, Any]:
        """A simulation's own fields in :meth:`to_json`."""
        return {}

    def extra_report(self) -> list[str]:
        """A simulation's own lines in :meth:`report`, before the trace."""
        return []

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.config.seed,
            "ok": self.ok,
            "invariant": self.invariant,
            "violation": self.violation,
            "events": self.events,
            "virtual_ms": self.virtual_ms,
            "wall_s": round(self.wall_s, 4),
            "stats": self.stats,
            **self.extra_json(),
            "config": self.config.to_json(),
            "replay": self.config.replay_command(),
            "trace_tail": self.trace_tail,
        }

    def report(self) -> str:
        """Everything needed to replay a failing seed."""
        return "\n".join([
            f"seed {self.config.seed} violated {self.invariant}: {self.violation}",
            f"config: {self.config.to_json()}",
            f"replay: {self.config.replay_command()}",
            *self.extra_report(),
            f"trace (last {len(self.trace_tail)} events):",
            *(f"  {t}" for t in self.trace_tail),
        ])


R = TypeVar("R", bound=SeedRun[Any])
C = TypeVar("C")


@dataclass(slots=True)
class BatchSummary(Generic[R]):
    seeds: int = 0
    failures: list[R] = field(default_factory=list)
    events: int = 0
    seconds: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def seeds_per_second(self) -> float:
        return self.seeds / self.seconds if self.seconds else 0.0


def play_seeds(configs: Iterable[C], run: Callable[[C], R], *, keep_going: bool = False,
               progress: Callable[[R], None] | None = None) -> BatchSummary[R]:
    """Run every config (one seed each), adding up events and stats; stop at the first failure
    unless ``keep_going``."""
    summary: BatchSummary[R] = BatchSummary()
    began = time.perf_counter()
    for config in configs:
        result = run(config)
        summary.seeds += 1
        summary.events += result.events
        for k, v in result.stats.items():
            summary.stats[k] = summary.stats.get(k, 0) + v
        if progress is not None:
            progress(result)
        if not result.ok:
            summary.failures.append(result)
            if not keep_going:
                break
    summary.seconds = time.perf_counter() - began
    return summary
