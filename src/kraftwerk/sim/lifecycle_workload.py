"""The lifecycle simulation's workloads: the updates and faults a seed plays, by mix."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from kraftwerk.controller.features import feature_level_record
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.raft import RaftNode
from kraftwerk.sim.lifecycle_types import MV_LADDER, OLD_RELEASES, OTHER_FEATURES, Mix, Sabotage
from kraftwerk.sim.world import LinkFaults
from kraftwerk.versions.features import KRAFT_VERSION
from kraftwerk.versions.metadata_version import FEATURE_NAME
from kraftwerk.versions.software import LATEST_RELEASE

if TYPE_CHECKING:
    from kraftwerk.sim.lifecycle import LifecycleSim


def _levels_now(sim: LifecycleSim) -> dict[str, int]:
    levels = sim.committed_levels()
    levels.setdefault(FEATURE_NAME, sim.initial_level)
    return levels


def random_update(
    sim: LifecycleSim, rng: random.Random, kind: str | None = None
) -> tuple[list[tuple[str, int, int]], bool]:
    """A request drawn against the committed levels: (updates, validate_only)."""
    levels = _levels_now(sim)
    mv = levels[FEATURE_NAME]
    kind = kind or rng.choice(
        ("upgrade", "upgrade", "safe_downgrade", "unsafe_downgrade", "feature", "feature", "multi", "invalid")
    )
    validate_only = rng.random() < 0.3
    higher = [lv for lv in MV_LADDER if lv > mv]
    lower = sorted({lv for lv in (*MV_LADDER, mv - 1) if lv < mv and lv >= 7})
    if kind == "upgrade":
        return [(FEATURE_NAME, rng.choice(higher or [mv]), 1)], validate_only
    if kind == "safe_downgrade":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 2)], validate_only
    if kind == "unsafe_downgrade":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 3)], validate_only
    if kind in ("feature", "multi"):
        name, top = rng.choice(OTHER_FEATURES)
        cur = levels.get(name, 0)
        level = rng.randint(0, top)
        utype = 1 if level >= cur else rng.choice((2, 3))
        ups = [(name, level, utype)]
        if kind == "multi":
            ups.append((FEATURE_NAME, rng.choice(higher or [mv]), 1))
        return ups, validate_only
    bad = rng.choice(("negative", "type", "unknown", "direction", "kraft"))
    if bad == "negative":
        return [(FEATURE_NAME, -1, 1)], validate_only
    if bad == "type":
        return [(FEATURE_NAME, mv, rng.choice((0, 4)))], validate_only
    if bad == "unknown":
        return [("no.such.feature", 1, 1)], validate_only
    if bad == "direction":
        return [(FEATURE_NAME, rng.choice(lower or [mv]), 1)], validate_only
    return [(KRAFT_VERSION, 1, 1)], validate_only


def _fault(sim: LifecycleSim, rng: random.Random, kind: str) -> None:
    if sim.healed_at is not None:
        return
    c = sim.cluster
    c.note(f"fault {kind}")
    ups = [n for n in sim.all_ids if c.nodes[n].up]
    leader = sim.leader()
    if kind == "crash_leader" and leader is not None:
        sim.crash(leader, rng.randint(300, 5000))
    elif kind == "isolate_leader":
        sim.isolate_leader(rng.randint(1000, 6000))
    elif kind in ("crash", "crash_leader") and ups:
        sim.crash(rng.choice(ups), rng.randint(300, 5000))
    elif kind == "roll" and ups:
        nid = rng.choice(ups)
        release = LATEST_RELEASE if rng.random() < 0.6 else rng.choice(OLD_RELEASES)
        sim.roll(nid, release, rng.randint(200, 1500))
    elif kind == "join_old" and sim.broker_ids:
        nid = rng.choice(sim.broker_ids)
        sim.roll(nid, rng.choice(OLD_RELEASES), rng.randint(200, 1500))
    elif kind == "lossy":
        c.set_link_faults(LinkFaults(rng.uniform(0.0, 0.2), 0.0, 1, rng.randint(5, 40)))
        sim.at(sim.now + rng.randint(1000, 4000), lambda: c.set_link_faults(LinkFaults(0.0, 0.0, 1, 8)))


def schedule_mix(sim: LifecycleSim) -> None:
    """Schedule the workload and faults of ``sim.config.mix`` over the fault phase."""
    cfg = sim.config
    rng = random.Random(cfg.seed * 7_919 + 3)
    end = cfg.fault_ms
    mix = cfg.mix
    if cfg.sabotage is Sabotage.UNCHECKED_UPGRADE:
        sim.at(max(3000, end // 2), lambda: _unchecked_upgrade(sim))
    if mix is Mix.NONE:
        sim.at(end, sim.heal)
        return

    def times(count: int, lo: int = 2500) -> list[int]:
        return sorted(rng.randint(lo, max(lo + 1, end - 800)) for _ in range(count))

    def op(kind: str | None = None, dry: bool | None = None) -> Callable[[], None]:
        def go() -> None:
            if sim.healed_at is not None:
                return
            updates, validate_only = random_update(sim, rng, kind)
            if dry is not None:
                validate_only = dry
            sim.update_features(
                updates,
                validate_only=validate_only,
                version=rng.choice((0, 1, 1, 2)) if not validate_only else rng.choice((1, 2)),
            )

        return go

    def fault(kind: str) -> Callable[[], None]:
        return lambda: _fault(sim, rng, kind)

    if mix is Mix.RANDOM:
        for t in times(cfg.events + 2):
            sim.at(t, op())
        kinds = ("crash_leader", "isolate_leader", "crash", "roll", "join_old", "lossy")
        for t in times(cfg.events):
            sim.at(t, fault(rng.choice(kinds)))
    elif mix is Mix.ROLLING:
        order = list(sim.all_ids)
        rng.shuffle(order)
        step = max(600, (end - 3000) // (len(order) + 1))
        for i, nid in enumerate(order):
            keep_old = i == len(order) - 1 and rng.random() < 0.3  # one node may be left behind
            if not keep_old:
                sim.at(2000 + i * step, _roller(sim, nid, rng.randint(200, 800)))
        for t in times(cfg.events + 2):
            sim.at(t, op("upgrade"))
        sim.at(rng.randint(2500, end - 800), fault("crash_leader"))
    elif mix is Mix.DOWNGRADE:
        for t in times(cfg.events + 2):
            sim.at(
                t,
                op(
                    rng.choice(
                        ("safe_downgrade", "unsafe_downgrade", "unsafe_downgrade", "upgrade", "feature")
                    )
                ),
            )
        for t in times(max(1, cfg.events // 2)):
            sim.at(t, fault(rng.choice(("crash_leader", "isolate_leader", "roll", "join_old"))))
    elif mix is Mix.FAILOVER:
        for t in times(cfg.events + 2):
            sim.at(t, op())
        for t in times(cfg.events):
            sim.at(t, fault(rng.choice(("crash_leader", "crash_leader", "isolate_leader", "lossy"))))
    sim.at(end, sim.heal)


def _roller(sim: LifecycleSim, nid: int, down_ms: int) -> Callable[[], None]:
    return lambda: sim.roll(nid, LATEST_RELEASE, down_ms)


def _unchecked_upgrade(sim: LifecycleSim) -> None:
    """(Sabotage) append a metadata.version upgrade straight through raft, past every check."""
    leader = sim.leader()
    if leader is None:
        sim.at(sim.now + 200, lambda: _unchecked_upgrade(sim))
        return
    m = sim.machine(leader)
    if m is None:
        return
    rec = feature_level_record(FEATURE_NAME, 30)
    value = encode_metadata_record(rec.spec, rec.version, rec.value)

    def append(_raft: RaftNode) -> None:
        m.write([value])

    sim.cluster.run_on(leader, append)
