"""KIP-866 readiness: every precondition of a ZooKeeper → KRaft migration as a pass/fail line with
its reason, plus the cluster's sizes.

The checks are Kafka 3.9's (``KafkaConfig`` for ZK brokers, ``KRaftMigrationDriver`` for brokers and
data, ``ZkTopicMigrationClient`` for topics). Two facts live outside ZooKeeper in Kafka: a broker's
``inter.broker.protocol.version`` and ``zookeeper.metadata.migration.enable``. They come from the
broker's registration when it is KIP-866's version 6 (``kraftMigration``), or from the broker's
``server.properties``; a broker with neither is UNKNOWN, never a silent pass.
"""

from __future__ import annotations

import contextlib
import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kraftwerk.config.properties import properties_values
from kraftwerk.migration.errors import MigrationError
from kraftwerk.migration.state import ZkClusterState
from kraftwerk.migration.translate import translate
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import MetadataVersion, parse_version_string

MIGRATION_FLAG = "zookeeper.metadata.migration.enable"
IBP = "inter.broker.protocol.version"
#: The lowest IBP (and metadata.version) a migrating ZK broker may run (``isMigrationSupported``).
MINIMUM_IBP = MetadataVersion.IBP_3_4_IV0
#: JBOD brokers may migrate from this IBP on (KafkaConfig@3.9).
MINIMUM_JBOD_IBP = MetadataVersion.IBP_3_7_IV2
#: The metadata.version the size estimate translates at (3.9's default).
ESTIMATE_VERSION = MetadataVersion.IBP_3_9_IV0
#: Kafka's default ``reserved.broker.max.id``: generated broker ids start above it.
RESERVED_BROKER_MAX_ID = 1000


class Status(enum.Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    WARN = "WARN"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.name, "status": self.status.value, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class BrokerConfigFacts:
    """What a ZK broker's ``server.properties`` says about its migration readiness."""

    broker_id: int
    migration_enabled: bool
    ibp: str | None
    log_dir_count: int
    has_controller_quorum: bool
    has_controller_listener: bool


def broker_facts_from_properties(text: str, source: str) -> BrokerConfigFacts:
    """Read a broker's ``server.properties``; its ``broker.id`` must be set (migration forbids
    generated ids)."""
    props = properties_values(text, source)
    raw_id = props.get("broker.id", props.get("node.id", "")).strip()
    if not re.fullmatch(r"[0-9]+", raw_id):
        raise MigrationError(f"{source}: broker.id is not a non-negative integer (a migrating broker needs a "
                             "fixed id)")
    dirs = props.get("log.dirs", props.get("log.dir", "/tmp/kafka-logs"))
    return BrokerConfigFacts(
        int(raw_id), props.get(MIGRATION_FLAG, "false").strip().lower() == "true",
        props.get(IBP, "").strip() or None, len([d for d in dirs.split(",") if d.strip()]),
        bool(props.get("controller.quorum.voters", "").strip()
             or props.get("controller.quorum.bootstrap.servers", "").strip()),
        bool(props.get("controller.listener.names", "").strip()))


def ibp_version(text: str) -> MetadataVersion | None:
    """The IBP as a MetadataVersion; None for a release before 3.0 (older than every MetadataVersion).
    Raises VersionError for text that is no IBP at all."""
    match = re.match(r"^(\d+)\.(\d+)", text)
    if match and (int(match[1]), int(match[2])) < (3, 0):
        return None
    return parse_version_string(text, unstable=True, minimum=MetadataVersion.IBP_3_0_IV1)


@dataclass(frozen=True, slots=True)
class Sizes:
    brokers: int
    topics: int
    partitions: int
    configs: int
    acls: int
    quotas: int
    scram_credentials: int
    delegation_tokens: int
    znodes: int
    data_bytes: int
    estimated_records: int
    """Records the migration would write at 3.9-IV0 (data, state record, transaction markers)."""

    def to_json(self) -> dict[str, int]:
        return {"brokers": self.brokers, "topics": self.topics, "partitions": self.partitions,
                "configs": self.configs, "acls": self.acls, "quotas": self.quotas,
                "scramCredentials": self.scram_credentials, "delegationTokens": self.delegation_tokens,
                "znodes": self.znodes, "dataBytes": self.data_bytes,
                "estimatedRecords": self.estimated_records}


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    cluster_id: str | None
    checks: tuple[Check, ...]
    sizes: Sizes

    @property
    def ready(self) -> bool:
        return all(c.status in (Status.PASS, Status.WARN) for c in self.checks)

    @property
    def blockers(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status in (Status.FAIL, Status.UNKNOWN))

    def to_json(self) -> dict[str, object]:
        return {"clusterId": self.cluster_id, "ready": self.ready,
                "checks": [c.to_json() for c in self.checks], "sizes": self.sizes.to_json()}


def _ids(ids: Sequence[int] | set[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids))


def _few(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


class _Checker:
    def __init__(self, state: ZkClusterState, configs: Mapping[int, BrokerConfigFacts], skip_invalid: bool):
        self.s = state
        self.configs = configs
        self.skip_invalid = skip_invalid
        self.checks: list[Check] = []

    def add(self, name: str, status: Status, reason: str) -> None:
        self.checks.append(Check(name, status, reason))

    def run(self) -> list[Check]:
        for step in (self._znodes, self._cluster, self._controller, self._brokers,
                     self._registration_versions, self._ibp, self._flag, self._broker_ids, self._offline,
                     self._deletions, self._reassignments, self._topic_ids, self._unsupported,
                     self._migration_state):
            step()
        return self.checks

    def _znodes(self) -> None:
        bad = self.s.invalid
        if not bad:
            self.add("znodes", Status.PASS, f"all {self.s.znode_count} znodes are readable")
            return
        listing = _few([str(e) for e in bad], 3)
        if self.skip_invalid:
            self.add("znodes", Status.WARN, f"{len(bad)} invalid znode(s) skipped: {listing}")
        else:
            self.add("znodes", Status.FAIL, f"{len(bad)} invalid znode(s): {listing}")

    def _cluster(self) -> None:
        if self.s.cluster_id:
            self.add("cluster-id", Status.PASS,
                     f"/cluster/id is {self.s.cluster_id}; format the KRaft controllers with this cluster id")
        else:
            self.add("cluster-id", Status.FAIL,
                     "/cluster/id is missing: the KRaft controllers need the ZooKeeper cluster's id")

    def _controller(self) -> None:
        if self.s.controller_epoch is None:
            self.add("controller-epoch", Status.FAIL,
                     "/controller_epoch is missing: a KRaft controller cannot claim the controllership")
        else:
            self.add("controller-epoch", Status.PASS, f"/controller_epoch is {self.s.controller_epoch}")

    def _brokers(self) -> None:
        if self.s.brokers:
            self.add("brokers", Status.PASS,
                     f"{len(self.s.brokers)} brokers registered: {_ids(set(self.s.brokers))}")
        else:
            self.add("brokers", Status.FAIL, "no broker is registered in /brokers/ids")

    def _registration_versions(self) -> None:
        old = {b: z.version for b, z in self.s.brokers.items() if z.version < 5}
        if old:
            self.add("registration-version", Status.FAIL,
                     "brokers with registration JSON below version 5 run an "
                     "inter.broker.protocol.version below 2.7-IV0: " +
                     ", ".join(f"{b} (v{v})" for b, v in sorted(old.items())))
        elif self.s.brokers:
            versions = sorted({z.version for z in self.s.brokers.values()})
            self.add("registration-version", Status.PASS,
                     f"broker registration JSON version {'/'.join(map(str, versions))}")

    def _fact_sources(self) -> tuple[dict[int, tuple[bool, str | None]], list[int]]:
        """Per broker: (migration flag, IBP) from its v6 registration or its server.properties; and the
        brokers with neither."""
        known: dict[int, tuple[bool, str | None]] = {}
        unknown = []
        for b in sorted(self.s.brokers):
            z = self.s.brokers[b]
            if z.migration is not None:
                known[b] = (z.migration.is_ready, z.migration.ibp)
            elif b in self.configs:
                known[b] = (self.configs[b].migration_enabled, self.configs[b].ibp)
            else:
                unknown.append(b)
        return known, unknown

    def _ibp(self) -> None:
        known, unknown = self._fact_sources()
        low, bad, defaulted = [], [], []
        for b, (_, ibp) in known.items():
            if ibp is None:
                defaulted.append(b)
                continue
            try:
                mv = ibp_version(ibp)
            except VersionError:
                bad.append(f"{b} ({ibp!r})")
                continue
            if mv is None or mv < MINIMUM_IBP:
                low.append(f"{b} ({ibp})")
        if low or bad:
            problems = [f"below on {_few(low)}"] if low else []
            problems += [f"not a version on {_few(bad)}"] if bad else []
            self.add("inter-broker-protocol", Status.FAIL,
                     f"{IBP} must be {MINIMUM_IBP} or later: " + "; ".join(problems))
        elif unknown or defaulted:
            self.add("inter-broker-protocol", Status.UNKNOWN,
                     f"{IBP} of brokers {_ids(unknown + defaulted)} is not "
                     "known (not in ZooKeeper before registration v6; pass their server.properties with "
                     "--broker-config, with the IBP set)")
        else:
            self.add("inter-broker-protocol", Status.PASS, f"{IBP} is {MINIMUM_IBP} or later on every broker")

    def _flag(self) -> None:
        known, unknown = self._fact_sources()
        off = [b for b, (flag, _) in known.items() if not flag]
        if off:
            self.add("migration-enabled", Status.FAIL, f"{MIGRATION_FLAG} is not true on brokers {_ids(off)}")
        elif unknown:
            self.add("migration-enabled", Status.UNKNOWN,
                     f"{MIGRATION_FLAG} of brokers {_ids(unknown)} is not known "
                     "(pass their server.properties with --broker-config)")
        elif known:
            missing = [b for b in known if b in self.configs and not (
                self.configs[b].has_controller_quorum and self.configs[b].has_controller_listener)]
            if missing:
                self.add("migration-enabled", Status.FAIL,
                         f"brokers {_ids(missing)} set {MIGRATION_FLAG} but not "
                         "controller.quorum.voters (or .bootstrap.servers) and controller.listener.names")
            else:
                self.add("migration-enabled", Status.PASS, f"{MIGRATION_FLAG}=true on every broker")

    def _broker_ids(self) -> None:
        generated = [b for b in self.s.brokers if b > RESERVED_BROKER_MAX_ID]
        if generated and self.s.seqid_version > 0:
            self.add("broker-ids", Status.FAIL,
                     f"brokers {_ids(generated)} have generated ids (/brokers/seqid is "
                     "in use): a migrating broker needs broker.id set")
        else:
            self.add("broker-ids", Status.PASS, "no generated broker ids")

    def _offline(self) -> None:
        live = set(self.s.brokers)
        offline: dict[int, list[str]] = {}
        for name in sorted(self.s.topics):
            topic = self.s.topics[name].znode
            for p, replicas in sorted(topic.partitions.items()):
                for r in replicas:
                    if r not in live:
                        offline.setdefault(r, []).append(f"{name}-{p}")
        if offline:
            parts = [f"{b} ({len(ps)} partition(s), e.g. {ps[0]})" for b, ps in sorted(offline.items())]
            self.add("offline-brokers", Status.FAIL,
                     "partition assignments reference brokers not registered in "
                     "/brokers/ids: " + "; ".join(parts))
        else:
            self.add("offline-brokers", Status.PASS,
                     "every replica in the assignments is on a registered broker")

    def _deletions(self) -> None:
        pending = self.s.pending_deletions
        if pending:
            self.add("pending-deletions", Status.FAIL, f"{len(pending)} topic(s) pending deletion in "
                     f"/admin/delete_topics: {_few(pending)}")
        else:
            self.add("pending-deletions", Status.PASS, "no topic deletion is pending")

    def _reassignments(self) -> None:
        moving = [f"{name}-{p}" for name in sorted(self.s.topics)
                  for p in sorted(set(self.s.topics[name].znode.adding_replicas)
                                  | set(self.s.topics[name].znode.removing_replicas))]
        legacy = [f"{t}-{p}" for t, p, _ in self.s.reassignments]
        if moving or legacy:
            where = ([f"adding/removing replicas on {_few(moving)}"] if moving else []) + (
                [f"/admin/reassign_partitions holds {_few(legacy)}"] if legacy else [])
            self.add("pending-reassignments", Status.FAIL, "reassignments in progress: " + "; ".join(where))
        else:
            self.add("pending-reassignments", Status.PASS, "no reassignment is in progress")

    def _topic_ids(self) -> None:
        deleting = set(self.s.pending_deletions)
        without = [n for n in sorted(self.s.topics)
                   if self.s.topics[n].znode.topic_id is None and n not in deleting]
        if without:
            self.add("topic-ids", Status.FAIL,
                     f"topics without topic_id (Kafka's migration aborts on them; an IBP "
                     f"2.8+ controller assigns ids): {_few(without)}")
        else:
            self.add("topic-ids", Status.PASS, "every topic has a topic id")

    def _unsupported(self) -> None:
        problems = []
        for b, c in sorted(self.configs.items()):
            if c.log_dir_count > 1:
                mv = None
                with contextlib.suppress(VersionError):
                    mv = ibp_version(c.ibp) if c.ibp else None
                if mv is None or mv < MINIMUM_JBOD_IBP:
                    problems.append(f"broker {b} uses JBOD ({c.log_dir_count} log dirs), which migrates only "
                                    f"from {IBP}={MINIMUM_JBOD_IBP}")
        if problems:
            self.add("unsupported-features", Status.FAIL, "; ".join(problems))
            return
        encrypted = self.s.encrypted_broker_configs()
        if encrypted:
            self.add("unsupported-features", Status.WARN, "encrypted password broker configs need the same "
                     f"password.encoder.secret on the KRaft controllers: {_few(encrypted)}")
        else:
            self.add("unsupported-features", Status.PASS,
                     "no JBOD below 3.7-IV2, no encrypted broker passwords")

    def _migration_state(self) -> None:
        m = self.s.migration
        if m is None:
            self.add("migration-state", Status.PASS, "no /migration znode: no migration has started")
        elif m.initial_migration_done:
            self.add("migration-state", Status.WARN,
                     f"/migration says KRaft controller {m.kraft_controller_id} "
                     f"already migrated the metadata (offset {m.kraft_metadata_offset}); the cluster is in "
                     "dual-write")
        else:
            self.add("migration-state", Status.PASS, "/migration exists but no metadata was migrated yet")


def sizes_of(state: ZkClusterState) -> Sizes:
    users = state.entity_configs("users")
    scram = sum(1 for c in users.values() for k in c if k.startswith("SCRAM-"))
    quota_entities = list(users.values()) + list(state.entity_configs("clients").values()) + list(
        state.user_client_configs.values()) + list(state.entity_configs("ips").values())
    quotas = sum(1 for c in quota_entities for k in c if not k.startswith("SCRAM-"))
    configs = sum(len(c) for t in ("topics", "brokers") for c in state.entity_configs(t).values())
    try:
        estimated = len(translate(state, ESTIMATE_VERSION, skip_invalid=True).log_records())
    except MigrationError:
        estimated = 0
    return Sizes(len(state.brokers), len(state.topics), state.partition_count, configs,
                 sum(len(r.entries) for r in state.acls), quotas, scram, len(state.delegation_tokens),
                 state.znode_count, state.data_bytes, estimated)


def check_readiness(state: ZkClusterState, broker_configs: Mapping[int, BrokerConfigFacts] | None = None, *,
                    skip_invalid: bool = False) -> ReadinessReport:
    """Every precondition of a migration of ``state``, in a fixed order."""
    checks = _Checker(state, broker_configs or {}, skip_invalid).run()
    return ReadinessReport(state.cluster_id, tuple(checks), sizes_of(state))
