"""The migration simulation's invariants, judged from outside the code under test: from the committed
log as raft hands it out, from what the in-memory ZooKeeper holds and who wrote it, and from the
controllers' answers to clients.

- **lag bound**: no client metadata write commits that its controller appended while ZooKeeper
  (its ``/migration`` offset then) lagged the committed log by more than ``max.lag.ms`` plus one
  tick, measured from when the oldest batch ZooKeeper lacked committed; none before the migration
  committed (a write a deposed leader appended never commits, so it is never judged);
- **copied once**: one committed ZkMigrationStateRecord(MIGRATION) in all, and no controller's image
  ever holds part of the ZooKeeper cluster's topics (a half copy);
- **forward only**: committed ZkMigrationStateRecords never move back (PRE_MIGRATION → MIGRATION →
  POST_MIGRATION);
- **fencing**: after a KRaft controller claimed ``/controller``, no other controller's write lands;
- **convergence** (:meth:`MigrationChecker.check_converged`): once faults heal, ZooKeeper's metadata,
  read back and translated by the migration's reader (not by the dual-write code), equals the
  committed image, and every topic the committed log holds is in ZooKeeper with its id.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.controller.activation import default_bootstrap_records
from kraftwerk.image.model import MetadataImage, ZkMigrationState
from kraftwerk.image.replay import ImageReplayer, as_record
from kraftwerk.migration.reader import read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import translate
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import parse_migration
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.raft import CommittedBatch
from kraftwerk.sim.checker import InvariantViolation
from kraftwerk.sim.zookeeper import SimZooKeeper
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

LAG_INVARIANT = "lag bound"
COPY_INVARIANT = "copied once"
FORWARD_INVARIANT = "migration state only moves forward"
FENCING_INVARIANT = "controller epoch fencing"
CONVERGENCE_INVARIANT = "ZooKeeper and KRaft converge"
MISSING_INVARIANT = "no committed change missing from ZooKeeper"
WRITES_RESUME_INVARIANT = "writes resume after ZooKeeper returns"

CLIENT_RECORDS = frozenset({"TopicRecord", "RemoveTopicRecord", "ConfigRecord", "AccessControlEntryRecord",
                            "RemoveAccessControlEntryRecord"})
"""What the workload's client writes append (outside the migration's transaction)."""

_ORDER = {ZkMigrationState.PRE_MIGRATION: 0, ZkMigrationState.MIGRATION: 1,
          ZkMigrationState.POST_MIGRATION: 2}


@dataclass
class MigrationChecker:
    """Fed every committed batch once (in offset order) and every accepted client write."""

    zk: SimZooKeeper
    max_lag_ms: int
    slack_ms: int
    initial_topics: frozenset[str]
    controllers: frozenset[int]
    """ZooKeeper session owners that are KRaft controllers (``owner // 1000`` is the node id)."""
    commits: list[tuple[int, int]] = field(default_factory=list)
    """(last offset, when it was first seen committed) of every committed batch."""
    migration_end: int | None = None
    migrations: int = 0
    states: list[ZkMigrationState] = field(default_factory=list)
    topics: dict[uuid.UUID, str] = field(default_factory=dict)
    """Topic id → name, as the committed log holds them (transactions applied when they end)."""
    writes_checked: int = 0
    max_lag_seen_ms: int = 0
    zk_history: list[tuple[int, int]] = field(default_factory=list)
    """(time, ``/migration`` offset) at every change ZooKeeper's offset made."""
    _txn: list[MetadataRecord] | None = None
    _claimant: int | None = None
    _zk_commits_seen: int = 0

    # ------------------------------------------------------------------ the committed log
    def observe_batch(self, item: CommittedBatch, now_ms: int) -> None:
        if item.is_control:
            self.commits.append((item.last_offset, now_ms))
            return
        records = [as_record(r) for r in item.records]
        names = {r.spec.name for r in records}
        transactional = {"BeginTransactionRecord", "EndTransactionRecord", "ZkMigrationStateRecord"}
        if self._txn is None and names & CLIENT_RECORDS and not names & transactional:
            self._check_write(item)
        self.commits.append((item.last_offset, now_ms))
        for record in records:
            name = record.spec.name
            if name == "BeginTransactionRecord":
                self._txn = []
            elif name == "EndTransactionRecord":
                pending, self._txn = self._txn or [], None
                self._apply(pending, item.last_offset)
            elif name == "AbortTransactionRecord":
                self._txn = None
            elif self._txn is not None:
                self._txn.append(record)
            else:
                self._apply([record], item.last_offset)

    def _apply(self, records: Iterable[MetadataRecord], offset: int) -> None:
        for record in records:
            name, value = record.spec.name, record.value
            if name == "TopicRecord":
                self.topics[value["topicId"]] = value["name"]
            elif name == "RemoveTopicRecord":
                self.topics.pop(value["topicId"], None)
            elif name == "ZkMigrationStateRecord":
                state = ZkMigrationState(value.get("zkMigrationState", 0))
                if self.states and _ORDER.get(state, -1) < _ORDER.get(self.states[-1], -1):
                    raise InvariantViolation(FORWARD_INVARIANT, f"committed ZkMigrationState {state.name} at "
                                             f"offset {offset} after {self.states[-1].name}")
                self.states.append(state)
                if state is ZkMigrationState.MIGRATION and (len(self.states) < 2 or
                                                             self.states[-2] is not state):
                    self.migrations += 1
                    self.migration_end = offset
                    if self.migrations > 1:
                        raise InvariantViolation(COPY_INVARIANT, f"a second migration committed at {offset}")

    @property
    def committed_end(self) -> int:
        return self.commits[-1][0] if self.commits else -1

    # ------------------------------------------------------------------ ZooKeeper's progress
    def zk_offset(self) -> int:
        """The last KRaft offset ZooKeeper holds, by ``/migration`` (-1: none)."""
        data = self.zk.data("/migration")
        if data is None:
            return -1
        return parse_migration("/migration", data, ZnodeStat()).kraft_metadata_offset

    def note_zk(self, now_ms: int) -> None:
        """Called after ZooKeeper may have changed: remember when its offset moved."""
        offset = self.zk_offset()
        if not self.zk_history or self.zk_history[-1][1] != offset:
            self.zk_history.append((now_ms, offset))

    def lag_ms(self, at_ms: int, before_offset: int | None = None) -> int:
        """How long, at ``at_ms``, the oldest batch committed by then that ZooKeeper lacked had been
        committed (0: none). The batches up to the migration's own came from ZooKeeper."""
        if self.migration_end is None:
            return 0
        zk = -1
        for t, offset in self.zk_history:
            if t > at_ms:
                break
            zk = offset
        holds = max(zk, self.migration_end)
        for offset, seen in self.commits:  # a few thousand at most
            if before_offset is not None and offset >= before_offset:
                break
            if offset > holds and seen <= at_ms:
                return at_ms - seen
        return 0

    def _check_write(self, item: CommittedBatch) -> None:
        """A client's metadata write committed: judge ZooKeeper's lag when its controller appended it."""
        self.writes_checked += 1
        at = item.append_time_ms
        if self.migration_end is None:
            raise InvariantViolation(LAG_INVARIANT, f"a client write committed at offset {item.base_offset} "
                                     "before the migration (PRE_MIGRATION must refuse metadata writes)")
        lag = self.lag_ms(at, item.base_offset)
        self.max_lag_seen_ms = max(self.max_lag_seen_ms, lag)
        if lag > self.max_lag_ms + self.slack_ms:
            raise InvariantViolation(LAG_INVARIANT, f"a client write appended at t={at} (offset "
                                     f"{item.base_offset}, epoch {item.epoch}) committed although ZooKeeper "
                                     f"lagged the committed log by {lag} ms then, bound {self.max_lag_ms} ms")

    def check_fencing(self) -> None:
        """Every ZooKeeper write since the last call: none by a controller other than the last claimant."""
        for zxid, owner, paths in self.zk.commits[self._zk_commits_seen:]:
            if owner // 1000 not in self.controllers:
                continue
            if "/controller" in paths:
                self._claimant = owner
            elif self._claimant is not None and owner != self._claimant:
                raise InvariantViolation(FENCING_INVARIANT, f"controller {owner // 1000} (incarnation "
                                         f"{owner % 1000}) wrote {list(paths)[:3]} at zxid {zxid} after "
                                         f"controller {self._claimant // 1000} (incarnation "
                                         f"{self._claimant % 1000}) claimed /controller")
        self._zk_commits_seen = len(self.zk.commits)

    def check_image(self, nid: int, image: MetadataImage) -> None:
        """A controller's image never holds part of the copied topics."""
        present = self.initial_topics & set(image.topics.by_name)
        if present and present != self.initial_topics:
            raise InvariantViolation(COPY_INVARIANT, f"controller {nid}'s image holds {len(present)} of the "
                                     f"{len(self.initial_topics)} migrated topics (a half copy)")

    # ------------------------------------------------------------------ once faults healed
    def check_converged(self, image: MetadataImage, reader: Any, mv: MetadataVersion) -> None:
        """ZooKeeper (read through ``reader``, a client of it) holds ``image``'s metadata."""
        zk_image = zookeeper_image(reader, mv)
        for what, kraft, zk in (("topics", _topics(image), _topics(zk_image)),
                                ("configs", _configs(image), _configs(zk_image)),
                                ("ACLs", _acls(image), _acls(zk_image))):
            if kraft != zk:
                raise InvariantViolation(CONVERGENCE_INVARIANT, f"{what} differ: only in KRaft "
                                         f"{_diff(kraft, zk)}; only in ZooKeeper {_diff(zk, kraft)}")
        in_zk = {t.id: t.name for t in zk_image.topics.by_name.values()}
        missing = {i: n for i, n in self.topics.items() if in_zk.get(i) != n}
        if missing:
            raise InvariantViolation(MISSING_INVARIANT, f"committed topics missing from ZooKeeper: "
                                     f"{sorted(missing.values())[:5]}")
        if self.migrations != 1:
            raise InvariantViolation(COPY_INVARIANT, f"{self.migrations} migrations committed")


def zookeeper_image(reader: Any, mv: MetadataVersion) -> MetadataImage:
    """ZooKeeper's tree as the migration's reader and translation turn it into KRaft metadata."""
    translation = translate(parse_cluster(read_tree(reader)), mv)
    replayer = ImageReplayer(0, "controller", SoftwareVersion.for_release("3.9"), snapshots=False)
    records: list[MetadataRecord | bytes] = [*default_bootstrap_records(mv)]
    records += [r.encode() for r in translation.log_records()]
    replayer.replay(0, records)
    return replayer.image


def _topics(image: MetadataImage) -> dict[str, Any]:
    return {name: (t.id, {p: (r.replicas, r.leader, r.isr) for p, r in t.partitions.items()})
            for name, t in image.topics.by_name.items()}


def _configs(image: MetadataImage) -> dict[Any, Any]:
    return {(r.type, r.name): dict(c) for r, c in image.configs.items() if c}


def _acls(image: MetadataImage) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for a in image.acls.values():
        key = (a.resource_type, a.resource_name, a.pattern_type, a.principal, a.host, a.operation,
               a.permission_type)
        out[key] = out.get(key, 0) + 1
    return out


def _diff(a: dict[Any, Any], b: dict[Any, Any]) -> str:
    keys = [k for k in a if a[k] != b.get(k)]
    return ", ".join(f"{k}={a[k]}" for k in keys[:3]) or "nothing"
