"""The lifecycle simulation's workloads: the updates and faults a seed plays, by mix."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller.features import feature_level_record
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.raft import RaftNode
from kraftwerk.sim.lifecycle_types import (
    CLIENT_BACKOFF_MS,
    CLIENT_DEADLINE_MS,
    CLIENT_ID,
    MV_LADDER,
    OLD_RELEASES,
    OTHER_FEATURES,
    Mix,
    Sabotage,
    UpdateOutcome,
)
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
    elif mix is Mix.CONFIGS:
        _schedule_configs(sim, rng, times)
        for t in times(max(1, cfg.events // 2)):
            sim.at(t, fault(rng.choice(("crash_leader", "isolate_leader", "crash"))))
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


# ------------------------------------------------------------------------------- KIP-1294 (configs)

CONFIGS_RELEASE = "4.4"
"""Every node of the configs mix runs kraftwerk's 4.4, whose brokers report their static configs."""
CONFIGS_LADDER = (21, 22, 25, 30, 31, 32)
"""3.9-IV0, 4.0-IV0 (the 1 MiB minimum of KIP-1030's rules), 4.0-IV3, 4.3-IV0, 4.4-IV0, 4.4-IV1
(the 3 MiB minimum of KIP-1294's example)."""
SEGMENT_CONFIG = "log.segment.bytes"
TOPIC_SEGMENT_CONFIG = "segment.bytes"
SEGMENT_VALUES = ("4194304", "3145728", "2097152", "1048576", "524288")
"""4 MiB and 3 MiB pass every level; 2 MiB and 1 MiB break 4.4-IV1; 512 KiB breaks 4.0-IV0 too."""
FIX_VALUE = "4194304"
TOPICS = ("t0", "t1")
SET, DELETE = 0, 1


def draw_static_configs(sim: LifecycleSim) -> dict[int, dict[str, str]]:
    """Each broker's ``server.properties``: valid at the formatted level (``storage format``
    refuses the others), some breaking a later level's rule."""
    rng = random.Random(sim.config.seed * 31 + 5)
    out = {}
    for nid in sim.broker_ids:
        static = {"log.dirs": f"/sim/{nid}"}
        choices = [None, "4194304", "2097152", "2097152", "1048576"]
        if sim.initial_level < 22:
            choices.append("524288")
        value = rng.choice(choices)
        if value is not None:
            static[SEGMENT_CONFIG] = value
        out[nid] = static
    return out


def _schedule_configs(sim: LifecycleSim, rng: random.Random, times: Callable[[int], list[int]]) -> None:
    """An operator moving metadata.version up and down across the levels that bring config rules
    while setting and clearing dynamic overrides (cluster default, one broker, one topic); after
    an upgrade the audit refuses, the operator usually fixes it with a cluster default and retries."""
    skip = sim.config.sabotage is Sabotage.SKIP_CONFIG_AUDIT
    mv = FEATURE_NAME

    def level() -> int:
        return _levels_now(sim)[mv]

    def update(target: int, utype: int, validate_only: bool = False) -> None:
        def done(o: UpdateOutcome) -> None:
            if o.error == "INVALID_UPDATE_VERSION" and "config audit" in (o.message or ""):
                _count(sim, "audit_refusals")
                if not validate_only and rng.random() < 0.7 and sim.healed_at is None:
                    alter(ConfigResourceType.BROKER, "", SEGMENT_CONFIG, FIX_VALUE)
                    sim.at(sim.now + 1000, lambda: update(target, utype))

        sim.update_features([(mv, target, utype)], validate_only=validate_only, version=3,
                            skip_config_audit=skip, on_done=done)

    def alter(rtype: ConfigResourceType, rname: str, name: str, value: str | None) -> None:
        op = {"name": name, "configOperation": DELETE if value is None else SET, "value": value}
        body = {"resources": [{"resourceType": int(rtype), "resourceName": rname, "configs": [op]}],
                "validateOnly": False}
        admin_request(sim, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body, "responses")

    def step() -> None:
        if sim.healed_at is not None:
            return
        now = level()
        kind = rng.choice(("upgrade", "upgrade", "upgrade", "downgrade", "dry_run", "default", "default",
                           "clear_default", "broker", "clear_broker", "topic", "clear_topic"))
        targets = {
            "default": (ConfigResourceType.BROKER, "", SEGMENT_CONFIG),
            "broker": (ConfigResourceType.BROKER, str(rng.choice(sim.broker_ids)), SEGMENT_CONFIG),
            "topic": (ConfigResourceType.TOPIC, rng.choice(TOPICS), TOPIC_SEGMENT_CONFIG),
        }
        value = rng.choice(SEGMENT_VALUES)
        higher = [lv for lv in CONFIGS_LADDER if lv > now]
        lower = [lv for lv in CONFIGS_LADDER if lv < now]
        if kind in ("upgrade", "dry_run"):
            if higher:
                update(rng.choice(higher), 1, validate_only=kind == "dry_run")
        elif kind == "downgrade":
            if lower:
                update(rng.choice(lower), rng.choice((2, 3)))
        else:
            clear = kind.startswith("clear_")
            alter(*targets[kind.removeprefix("clear_")], None if clear else value)

    last_fix = -1000

    def let_refused_brokers_in() -> None:
        """A broker refused for its ``server.properties`` (INVALID_CONFIG) stays out until the
        operator sets a cluster default the rules allow (once a second at most)."""
        nonlocal last_fix
        refused = [
            nid for nid in sim.broker_ids
            if (m := sim.machine(nid)) is not None and m.broker is not None and m.broker.broker_epoch < 0
            and SEGMENT_CONFIG in (m.broker.last_refusal or "")
        ]
        if refused and sim.now >= last_fix + 1000:
            last_fix = sim.now
            _count(sim, "refused_registrations_fixed")
            alter(ConfigResourceType.BROKER, "", SEGMENT_CONFIG, FIX_VALUE)

    sim.operator_fixes.append(let_refused_brokers_in)
    topics = [{"name": t, "numPartitions": 1, "replicationFactor": 1, "assignments": [], "configs": []}
              for t in TOPICS]
    create = {"topics": topics, "timeoutMs": 30000, "validateOnly": False}
    sim.at(2000, lambda: admin_request(sim, ApiKey.CREATE_TOPICS, 7, create, "topics"))
    for t in times(sim.config.events + 6):
        sim.at(t, step)


def _count(sim: LifecycleSim, key: str) -> None:
    sim.stats[key] = sim.stats.get(key, 0) + 1


def admin_request(
    sim: LifecycleSim, api_key: int, version: int, body: dict[str, object], results: str, sent_ms: int = -1
) -> None:
    """An admin client's request to a controller, retried on NOT_CONTROLLER and timeouts until the
    client's deadline; counts the results (``results``: the response's per-resource list)."""
    sent_ms = sim.now if sent_ms < 0 else sent_ms

    def retry() -> None:
        if sim.now - sent_ms < CLIENT_DEADLINE_MS:
            sim.at(sim.now + CLIENT_BACKOFF_MS,
                   lambda: admin_request(sim, api_key, version, body, results, sent_ms))

    def answered(response: dict[str, object]) -> None:
        codes = [r.get("errorCode", 0) for r in response.get(results) or ()]  # type: ignore[attr-defined]
        if Errors.NOT_CONTROLLER.code in codes:
            retry()
            return
        for code in codes:
            outcome = {0: "ok", Errors.INVALID_CONFIG.code: "refused"}.get(code, "failed")
            _count(sim, f"config_requests_{outcome}")

    leader = sim.leader()
    target = leader if leader in sim.cluster_voters else sim.rng.choice(sim.cluster_voters)
    sim.send_rpc(CLIENT_ID, target, api_key, version, body, answered, retry)
