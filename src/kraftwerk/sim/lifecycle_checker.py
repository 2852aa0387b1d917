"""Invariants of the metadata.version lifecycle (KIP-778), checked by the lifecycle simulator.

The checker keeps its own *reference* of the committed metadata log: every committed batch is
fed once (:meth:`LifecycleChecker.observe_batch`), and the finalized feature levels and broker
registrations at any committed offset are folded from it, independently of the controller and
broker cores. The cores' views are then compared with that reference:

(a) **levels only through committed records** — a node that has applied the log up to offset
    ``o`` (by replay or by loading a snapshot ending at ``o + 1``) reports exactly the finalized
    levels of the committed prefix ``[0, o]``; never a level the log does not hold yet, never an
    offset the log has not committed;
(b) **no level a live registered broker cannot run** — when a FeatureLevelRecord commits, every
    broker registered in the committed image before it whose registered range excludes the new
    level and whose process is alive owes a KIP-778 fail-stop; the debt is paid when that process
    fail-stops (or dies from an injected crash first); an unpaid debt at the end is a violation;
(c) **dry runs never change the log** — a ``validateOnly`` UpdateFeatures produces no records and
    the controller's log end is the same before and after it;
(d) **convergence** — once faults heal, every live node reports the same finalized levels and
    FinalizedFeaturesEpoch, equal to the reference, every live broker is registered and unfenced,
    within a bound;
(e) **no unexplained stall** — when faults heal, a live node has applied everything raft handed
    it, unless the seed explains the stall: a broker that never registered, handed a level its
    software cannot run, stays fenced (Kafka's refusal; every other node fail-stops instead);
(f) **no committed config breaks its level's rules** (KIP-1294, when the seed gives brokers static
    configs) — after every committed batch, at the committed metadata.version, each registered
    broker's effective config (its own dynamic configs over the cluster default over the
    ``server.properties`` the simulation gave it, not what it reported), the cluster default and
    every topic's dynamic configs pass the validators in force at that level
    (:func:`kraftwerk.config.violations_at`, the catalogue's rules).

The reference mirrors two documented kraftwerk behaviours: metadata transactions (records between
Begin/EndTransactionRecord count at the End, an Abort drops them) and the lossy rewrite of an
unsafe downgrade (a metadata.version downgrade across a metadata change drops the feature levels
whose metadata.version dependency the target lacks, as the image writer does). The Kafka facts it
folds with (which metadata.version levels changed the metadata, which feature levels depend on which
metadata.version) are :class:`ReferenceTables`, handed in, so that tests pin them to Kafka's values
instead of reusing the tables the cores run on.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.config import ConfigResourceType, violations_at
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.versions import features as feature_catalogue
from kraftwerk.versions.features import KRAFT_VERSION, VersionRange
from kraftwerk.versions.metadata_version import (
    FEATURE_NAME,
    MINIMUM_BOOTSTRAP_VERSION,
    MetadataVersion,
)

LEVELS_INVARIANT = "finalized levels change only through committed records"
BROKER_INVARIANT = "no committed level unsupported by a live registered broker"
DRY_RUN_INVARIANT = "dry runs never change the log"
CONVERGENCE_INVARIANT = "all nodes converge after faults heal"
STALL_INVARIANT = "a node stops applying the log only when its software cannot run it"
SNAPSHOT_INVARIANT = "every snapshot a core asks for is written"
CONFIG_INVARIANT = "no committed metadata.version has an effective config that breaks its rules"

Levels = dict[str, int]


def normalize_levels(levels: Mapping[str, int]) -> Levels:
    """metadata.version plus every other non-zero level (kraft.version lives in raft, left out)."""
    return {n: v for n, v in sorted(levels.items()) if n != KRAFT_VERSION and (v != 0 or n == FEATURE_NAME)}


def show_levels(levels: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{n}={v}" for n, v in sorted(levels.items())) + "}"


@dataclass(frozen=True, slots=True)
class Reference:
    """The committed state at one offset, as the checker folds it from the log."""

    levels: Mapping[str, int]
    brokers: Mapping[int, Mapping[str, VersionRange]]
    """Registered brokers (fenced or not) and the ranges their registration carries."""
    configs: Mapping[tuple[int, str], Mapping[str, str]] = field(default_factory=dict)
    """(resource type, resource name) → its dynamic configs (ConfigRecords)."""


@dataclass(slots=True)
class FailStopDebt:
    """A live registered broker that must fail-stop because a level it cannot run committed."""

    broker_id: int
    incarnation: int
    offset: int
    feature: str
    level: int
    registered: VersionRange


@dataclass(slots=True)
class NodeView:
    """What one live node reports: its applied offset, finalized levels and features epoch."""

    node_id: int
    applied_offset: int
    levels: Mapping[str, int]
    epoch: int
    is_broker: bool = False
    registered: bool = True
    fenced: bool = False
    stalled: bool = False


@dataclass(frozen=True, slots=True)
class ReferenceTables:
    """The Kafka facts the reference folds the log with."""

    metadata_changed: frozenset[int]
    """metadata.version levels whose ``didMetadataChange`` is true."""
    mv_dependencies: Mapping[tuple[str, int], int]
    """(feature, level) → the metadata.version level that feature level depends on."""

    @classmethod
    def of_this_software(cls) -> ReferenceTables:
        """The tables of :mod:`kraftwerk.versions` (what the cores run on)."""
        changed = frozenset(mv.feature_level for mv in MetadataVersion if mv.did_metadata_change)
        deps = {
            (feature.feature_name, fl.level): dep_level
            for feature in feature_catalogue.Feature
            for fl in feature.levels
            for dep, dep_level in fl.dependencies
            if dep == FEATURE_NAME
        }
        return cls(changed, deps)

    def metadata_changed_between(self, a: int, b: int) -> bool:
        """Kafka's ``checkIfMetadataChanged``: some level above the lower one, up to the higher one,
        changed the metadata."""
        low, high = min(a, b), max(a, b)
        return any(level in self.metadata_changed for level in range(low + 1, high + 1))

    def lost_in_rewrite(self, name: str, level: int, target: int) -> bool:
        """Whether writing ``name=level`` at metadata.version ``target`` drops it (the image
        writer's rule: no feature levels below 3.3-IV0, none above 0 below 3.3-IV3, and none whose
        metadata.version dependency the target lacks)."""
        if target < MINIMUM_BOOTSTRAP_VERSION.feature_level:
            return True
        if level >= 1 and target < MetadataVersion.IBP_3_3_IV3.feature_level:
            return True
        needed = self.mv_dependencies.get((name, level))
        return needed is not None and target < needed


@dataclass(slots=True)
class LifecycleChecker:
    """The reference log and the lifecycle invariants (see the module docstring)."""

    tables: ReferenceTables = field(default_factory=ReferenceTables.of_this_software)
    #: base offset -> last offset of every committed batch seen
    batches: dict[int, int] = field(default_factory=dict)
    committed_end: int = 0
    #: (offset, seq, kind, payload) of the records that matter to the reference, in log order
    events: list[tuple[int, int, str, Any]] = field(default_factory=list)
    debts: list[FailStopDebt] = field(default_factory=list)
    paid: list[tuple[FailStopDebt, str]] = field(default_factory=list)
    checks: int = 0
    flr_commits: int = 0
    static_configs: Mapping[int, Mapping[str, str]] | None = None
    """Each broker's ``server.properties`` as the simulation gave it: (f) is checked when set."""
    config_checks: int = 0
    _seq: int = 0
    _memo: dict[int, Reference] = field(default_factory=dict)
    _event_offsets: list[int] = field(default_factory=list)

    # ------------------------------------------------------------------ the reference log
    def observe_batch(
        self, base_offset: int, last_offset: int, records: Sequence[MetadataRecord]
    ) -> list[tuple[int, str, int]]:
        """Feed one committed data batch (every node hands out the same ones; the first wins).

        Returns the FeatureLevelRecords that took effect in it, as (offset, feature, level).
        """
        if base_offset in self.batches:
            return []
        self.batches[base_offset] = last_offset
        self.committed_end = max(self.committed_end, last_offset + 1)
        added = []
        for i, record in enumerate(records):
            event = self._event_of(record)
            if event is not None:
                added.append((base_offset + i, *event))
        if not added:
            return []
        self._insert(added)
        if self.static_configs is not None:
            self.check_configs(last_offset)
        return self._effective(added)

    def _insert(self, added: list[tuple[int, str, Any]]) -> None:
        for offset, kind, payload in added:
            self._seq += 1
            entry = (offset, self._seq, kind, payload)
            if self.events and offset < self.events[-1][0]:
                self._memo.clear()  # a batch seen out of order: folded prefixes are stale
            idx = bisect.bisect_right(self._event_offsets, offset)
            self.events.insert(idx, entry)
            self._event_offsets.insert(idx, offset)

    def _effective(self, added: list[tuple[int, str, Any]]) -> list[tuple[int, str, int]]:
        # FeatureLevelRecords that took effect here: outside a transaction, or at its End.
        effective: list[tuple[int, str, int]] = []
        txn: list[tuple[int, str, int]] | None = None
        for offset, kind, payload in added:
            if kind == "begin":
                txn = []
            elif kind == "abort":
                txn = None
            elif kind == "end":
                effective.extend((offset, n, lv) for _, n, lv in (txn or []))
                txn = None
            elif kind == "flr":
                (effective if txn is None else txn).append((offset, *payload))
        self.flr_commits += len(effective)
        return effective

    @staticmethod
    def _event_of(record: MetadataRecord) -> tuple[str, Any] | None:
        name = record.spec.name
        v = record.value
        if name == "FeatureLevelRecord":
            if v["name"] == KRAFT_VERSION:
                return None
            return "flr", (v["name"], v["featureLevel"])
        if name == "BeginTransactionRecord":
            return "begin", None
        if name == "EndTransactionRecord":
            return "end", None
        if name == "AbortTransactionRecord":
            return "abort", None
        if name == "RegisterBrokerRecord":
            ranges = {
                f["name"]: VersionRange(f["minSupportedVersion"], f["maxSupportedVersion"])
                for f in v.get("features") or ()
            }
            return "reg", (v["brokerId"], ranges)
        if name == "UnregisterBrokerRecord":
            return "unreg", v["brokerId"]
        if name == "ConfigRecord":
            return "cfg", (v["resourceType"], v["resourceName"], v["name"], v["value"])
        return None

    def reference(self, offset: int) -> Reference:
        """The committed state after every record up to ``offset`` (inclusive)."""
        count = bisect.bisect_right(self._event_offsets, offset)
        known = self._memo.get(count)
        if known is not None:
            return known
        levels: Levels = {}
        brokers: dict[int, Mapping[str, VersionRange]] = {}
        configs: dict[tuple[int, str], dict[str, str]] = {}
        txn: list[tuple[str, Any]] | None = None

        def apply(kind: str, payload: Any) -> None:
            if kind == "flr":
                name, level = payload
                if name == FEATURE_NAME:
                    old = levels.get(FEATURE_NAME)
                    if old is not None and level < old and self.tables.metadata_changed_between(old, level):
                        for other in [n for n in levels if n != FEATURE_NAME]:
                            if self.tables.lost_in_rewrite(other, levels[other], level):
                                del levels[other]
                    levels[FEATURE_NAME] = level
                elif level == 0:
                    levels.pop(name, None)
                else:
                    levels[name] = level
            elif kind == "reg":
                brokers[payload[0]] = payload[1]
            elif kind == "unreg":
                brokers.pop(payload, None)
            elif kind == "cfg":
                rtype, rname, name, value = payload
                resource = configs.setdefault((rtype, rname), {})
                if value is None:
                    resource.pop(name, None)
                else:
                    resource[name] = value

        for _, _, kind, payload in self.events[:count]:
            if kind == "begin":
                txn = []
            elif kind == "abort":
                txn = None
            elif kind == "end":
                for k, p in txn or []:
                    apply(k, p)
                txn = None
            elif txn is not None:
                txn.append((kind, payload))
            else:
                apply(kind, payload)
        ref = Reference(normalize_levels(levels), brokers, configs)
        self._memo[count] = ref
        return ref

    # ------------------------------------------------------------------ (a)
    def check_view(
        self, node_id: int, applied_offset: int, levels: Mapping[str, int], *, source: str
    ) -> None:
        """(a) a node that applied the log up to ``applied_offset`` reports the reference levels."""
        self.checks += 1
        if applied_offset >= self.committed_end:
            raise InvariantViolation(
                LEVELS_INVARIANT,
                f"node {node_id} applied offset {applied_offset} ({source}) but the log has committed "
                f"only up to {self.committed_end - 1}",
            )
        view = normalize_levels(levels)
        ref = self.reference(applied_offset).levels
        if view != dict(ref):
            raise InvariantViolation(
                LEVELS_INVARIANT,
                f"node {node_id} reports {show_levels(view)} after applying offset {applied_offset} "
                f"({source}), but the committed log up to there finalizes {show_levels(ref)}",
            )

    # ------------------------------------------------------------------ (f)
    def check_configs(self, offset: int) -> None:
        """(f) the committed state at ``offset``: every effective config passes the rules of the
        committed metadata.version."""
        self.config_checks += 1
        ref = self.reference(offset)
        level = ref.levels.get(FEATURE_NAME)
        if level is None:
            return
        broker, topic = int(ConfigResourceType.BROKER), int(ConfigResourceType.TOPIC)
        default = ref.configs.get((broker, ""), {})
        subjects: list[tuple[str, Mapping[str, str], int]] = [("the cluster default", default, broker)]
        for bid in sorted(ref.brokers):
            static = (self.static_configs or {}).get(bid, {})
            effective = {**static, **default, **ref.configs.get((broker, str(bid)), {})}
            subjects.append((f"broker {bid}", effective, broker))
        subjects += [(f"topic {name}", cfg, topic) for (rtype, name), cfg in sorted(ref.configs.items())
                     if rtype == topic]
        for subject, configs, rtype in subjects:
            for v in violations_at(level, configs, resource_type=rtype):
                raise InvariantViolation(
                    CONFIG_INVARIANT,
                    f"metadata.version {MetadataVersion.from_feature_level(level)} committed up to offset "
                    f"{offset} "
                    f"while {subject} has {v.config}={v.value}: {v.reason}"
                    + ("" if v.metadata_version is None else f" (since {v.metadata_version})"),
                )

    # ------------------------------------------------------------------ (b)
    def owe_fail_stops(
        self, offset: int, feature: str, level: int, live_brokers: Mapping[int, int]
    ) -> list[FailStopDebt]:
        """(b) a FeatureLevelRecord committed at ``offset``: every live registered broker (id →
        incarnation) whose registration excludes ``level`` now owes a fail-stop."""
        if feature == FEATURE_NAME or level != 0:
            registered = self.reference(offset - 1).brokers
            new = []
            for broker_id, ranges in sorted(registered.items()):
                incarnation = live_brokers.get(broker_id)
                if incarnation is None:
                    continue
                rng = ranges.get(feature, VersionRange(0, 0))
                if not rng.contains(level):
                    debt = FailStopDebt(broker_id, incarnation, offset, feature, level, rng)
                    self.debts.append(debt)
                    new.append(debt)
            return new
        return []

    def incarnation_ended(self, broker_id: int, incarnation: int, how: str) -> None:
        """A broker process stopped: a fail-stop pays its debts, so does a crash injected first."""
        keep = []
        for debt in self.debts:
            if debt.broker_id == broker_id and debt.incarnation == incarnation:
                self.paid.append((debt, how))
            else:
                keep.append(debt)
        self.debts = keep

    def check_debts(self) -> None:
        if self.debts:
            d = self.debts[0]
            raise InvariantViolation(
                BROKER_INVARIANT,
                f"{d.feature}={d.level} committed at offset {d.offset} while broker {d.broker_id} was alive "
                f"and registered with range {d.registered.min}-{d.registered.max}, and that broker "
                f"never fail-stopped ({len(self.debts)} unpaid fail-stop(s))",
            )

    # ------------------------------------------------------------------ (e)
    def check_stall(self, node_id: int, incarnation: int, detail: str, *, explained: bool) -> None:
        """(e) at heal time: a live node that stopped applying the log. A stalled broker that owes a
        fail-stop breaks (b) (it should have exited); any other unexplained stall breaks (e)."""
        if explained:
            return
        owed = [d for d in self.debts if (d.broker_id, d.incarnation) == (node_id, incarnation)]
        if owed:
            d = owed[0]
            raise InvariantViolation(
                BROKER_INVARIANT,
                f"{d.feature}={d.level} committed at offset {d.offset} while broker {node_id} was alive and "
                f"registered with range {d.registered.min}-{d.registered.max}; it stopped instead of "
                f"fail-stopping: {detail}",
            )
        raise InvariantViolation(STALL_INVARIANT, detail)

    # ------------------------------------------------------------------ (c)
    def check_dry_run(
        self, node_id: int, log_end_before: int, log_end_after: int, records: Sequence[Any], request: str
    ) -> None:
        """(c) a validateOnly UpdateFeatures produced no records and left the log end alone."""
        self.checks += 1
        if records or log_end_before != log_end_after:
            raise InvariantViolation(
                DRY_RUN_INVARIANT,
                f"validateOnly request {request} on controller {node_id} produced {len(records)} record(s) "
                f"and moved its log end from {log_end_before} to {log_end_after}",
            )

    # ------------------------------------------------------------------ (d)
    def convergence_problem(self, views: Sequence[NodeView]) -> str | None:
        """(d) None when every live node agrees with each other and with the reference."""
        if not views:
            return "no live node"
        ref = dict(self.reference(self.committed_end - 1).levels)
        first = views[0]
        for v in views:
            if v.stalled:
                return f"node {v.node_id} stopped applying the log at offset {v.applied_offset}"
            if v.is_broker and not v.registered:
                return f"broker {v.node_id} is not registered"
            if v.is_broker and v.fenced:
                return f"broker {v.node_id} is fenced"
            levels = normalize_levels(v.levels)
            if levels != ref:
                return f"node {v.node_id} reports {show_levels(levels)}, the committed log {show_levels(ref)}"
            if v.epoch != first.epoch:
                return (
                    f"node {v.node_id} reports FinalizedFeaturesEpoch {v.epoch}, node {first.node_id} "
                    f"{first.epoch}"
                )
        return None

    def check_converged(self, views: Sequence[NodeView], waited_ms: int, bound_ms: int) -> bool:
        """True once converged; raises when still not converged after ``bound_ms``."""
        problem = self.convergence_problem(views)
        if problem is None:
            return True
        if waited_ms > bound_ms:
            raise InvariantViolation(
                CONVERGENCE_INVARIANT, f"not converged {bound_ms} ms after the faults healed: {problem}"
            )
        return False
