"""The migration simulation's settings, deliberate bugs and results."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass
from typing import Any

from kraftwerk.sim.seed_runs import SeedRun


class MigrationSabotage(enum.Enum):
    """Deliberate bugs that prove the migration checks can fail (tests only)."""

    SKIP_EPOCH_CHECK = "skip-epoch-check"
    """Controllers' ZooKeeper multi-ops leave out the ``/controller_epoch`` version check (breaks fencing)."""
    IGNORE_LAG_BOUND = "ignore-lag-bound"
    """Controllers never refuse writes for ZooKeeper's lag (breaks the lag bound)."""


@dataclass(frozen=True, slots=True)
class MigrationConfig:
    """Everything that determines a run; with the seed it replays exactly."""

    seed: int = 0
    brokers: int = 2
    events: int = 8
    """Faults in the fault phase (client writes come about four times as often)."""
    max_lag_ms: int = 2000
    """``zookeeper.metadata.migration.max.lag.ms`` on every controller."""
    convergence_bound_ms: int = 60_000
    wire: bool = True
    sabotage: MigrationSabotage | None = None

    @property
    def fault_ms(self) -> int:
        return 6000 + 1500 * self.events

    def replay_command(self) -> str:
        cmd = (f"kraftwerk sim migration --seeds 1 --start {self.seed} --brokers {self.brokers} "
               f"--events {self.events} --max-lag-ms {self.max_lag_ms}")
        return cmd + (" --no-wire" if not self.wire else "")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["sabotage"] = None if self.sabotage is None else self.sabotage.value
        return out


@dataclass(slots=True)
class MigrationResult(SeedRun[MigrationConfig]):
    converged_ms: int | None = None

    def extra_json(self) -> dict[str, Any]:
        return {"converged_ms": self.converged_ms}
