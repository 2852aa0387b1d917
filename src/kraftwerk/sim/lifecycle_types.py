"""The lifecycle simulation's settings, mixes, deliberate bugs and results, and its timing constants."""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from kraftwerk.sim.seed_runs import SeedRun
from kraftwerk.versions.software import LATEST_RELEASE, known_releases

CLIENT_ID = 900
"""The admin client's address on the simulated network."""
TICK_MS = 100
RPC_TIMEOUT_MS = 3000
COMMIT_TIMEOUT_MS = 10_000
IDLE_NOOP_MS = 500
REGISTRATION_RETRY_MS = 1000
CLIENT_DEADLINE_MS = 30_000
"""How long the admin client retries NOT_CONTROLLER and timeouts (``default.api.timeout.ms`` is 60 s)."""
CLIENT_BACKOFF_MS = 200
SESSION_TIMEOUT_MS = 9000
HEARTBEAT_MS = 2000

#: metadata.version levels the workload moves between (3.6-IV2 ... 4.3-IV0) and their neighbours
MV_LADDER = (14, 19, 20, 21, 25, 27, 28, 29, 30)
#: the release whose latest production metadata.version each ladder level is
RELEASE_OF_LEVEL = {14: "3.6", 19: "3.7", 20: "3.8", 21: "3.9", 25: "4.0", 27: "4.1", 29: "4.2", 30: "4.3"}
OTHER_FEATURES = (
    ("group.version", 1),
    ("transaction.version", 2),
    ("eligible.leader.replicas.version", 1),
    ("share.version", 1),
    ("streams.version", 1),
)
AUTO_UPGRADE_INTERVAL_MS = 500
OLD_RELEASES = tuple(r for r in known_releases() if "3.6" <= r < LATEST_RELEASE)


class Mix(enum.Enum):
    """Which workload and faults a seed plays."""

    RANDOM = "random"
    """Everything: updates, dry runs, downgrades, invalid requests, failover, restarts, rolls."""
    ROLLING = "rolling"
    """A cluster on old software rolled node by node to this software while upgrades are tried."""
    DOWNGRADE = "downgrade"
    """A cluster at the latest level downgraded (safe, unsafe, dry runs), old software restarted."""
    FAILOVER = "failover"
    """Updates under repeated crashes and isolations of the active controller."""
    CONFIGS = "configs"
    """KIP-1294: brokers on 4.4 software with static configs, dynamic overrides set and cleared,
    upgrades and downgrades across the levels that bring config rules, controller failover."""
    NONE = "none"
    """No workload and no faults (scripted scenarios add their own)."""


class Sabotage(enum.Enum):
    """Deliberate bugs that prove each invariant check can fail (tests only)."""

    IGNORE_FEATURE_RECORD = "ignore-feature-record"
    """Node 2 drops FeatureLevelRecords from what it replays (breaks a)."""
    UNCHECKED_UPGRADE = "unchecked-upgrade"
    """The host appends a metadata.version upgrade past the checks; brokers do not fail-stop (b)."""
    DRY_RUN_APPENDS = "dry-run-appends"
    """The host appends the records of accepted dry runs (breaks c)."""
    FROZEN_NODE = "frozen-node"
    """The last broker stops applying the log once the faults heal (breaks d)."""
    STALLED_BROKER = "stalled-broker"
    """The last broker stops applying the log 4 s into the fault phase (breaks e: reported at heal,
    never rolled away)."""
    SKIP_CONFIG_AUDIT = "skip-config-audit"
    """Every metadata.version change of the configs mix is sent with ``--skip-config-audit`` (the
    real UpdateFeatures v3 flag), so the controller's audit never refuses (breaks f)."""


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    """Everything that determines a run; with the seed it replays exactly."""

    seed: int = 0
    voters: int = 3
    brokers: int = 2
    mix: Mix = Mix.RANDOM
    events: int = 6
    initial_level: int | None = None
    """metadata.version level the cluster is formatted at (None: drawn for the mix)."""
    software: tuple[str, ...] | None = None
    """Release of each node, voters first (None: drawn for the mix)."""
    fault_phase_ms: int | None = None
    convergence_bound_ms: int = 30_000
    wire: bool = True
    sabotage: Sabotage | None = None
    retain_log: bool = False
    """Keep the whole metadata log (``metadata.max.retention.ms=-1``): raft does not clean it
    behind snapshots, so every committed record can be read back."""
    auto_upgrade_targets: tuple[str | None, ...] | None = None
    """KIP-920: each voter's static metadata.version (None: none), with auto-upgrade on every
    AUTO_UPGRADE_INTERVAL_MS; None: off everywhere."""

    @property
    def fault_ms(self) -> int:
        return self.fault_phase_ms if self.fault_phase_ms is not None else 4000 + 1500 * self.events

    def replay_command(self) -> str:
        cmd = (
            f"kraftwerk sim lifecycle --seeds 1 --start {self.seed} --mix {self.mix.value} "
            f"--voters {self.voters} --brokers {self.brokers} --events {self.events}"
        )
        if not self.wire:
            cmd += " --no-wire"
        return cmd

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["mix"] = self.mix.value
        out["sabotage"] = None if self.sabotage is None else self.sabotage.value
        out["software"] = None if self.software is None else list(self.software)
        return out


@dataclass(slots=True)
class UpdateOutcome:
    """What the admin client finally got for one UpdateFeatures request."""

    request_id: int
    updates: tuple[tuple[str, int, int], ...]
    validate_only: bool
    version: int
    sent_ms: int
    done_ms: int = -1
    error: str = "PENDING"
    message: str | None = None
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return self.error == "NONE"

    def describe(self) -> str:
        ups = ", ".join(f"{n}={lv}/{t}" for n, lv, t in self.updates)
        dry = " dry-run" if self.validate_only else ""
        return f"#{self.request_id} v{self.version}{dry} [{ups}] -> {self.error}" + (
            f": {self.message}" if self.message else ""
        )


@dataclass(slots=True)
class LifecycleResult(SeedRun[LifecycleConfig]):
    converged_ms: int | None = None
    outcomes: list[UpdateOutcome] = field(default_factory=list)
    final_levels: dict[str, int] = field(default_factory=dict)

    def extra_json(self) -> dict[str, Any]:
        return {"converged_ms": self.converged_ms, "final_levels": self.final_levels,
                "updates": [o.describe() for o in self.outcomes]}

    def extra_report(self) -> list[str]:
        return ["updates:", *(f"  {o.describe()}" for o in self.outcomes[-10:])]


ALL_MIXES = (Mix.RANDOM, Mix.ROLLING, Mix.DOWNGRADE, Mix.FAILOVER)
"""The mixes ``--mix all`` rotates over the seeds."""
