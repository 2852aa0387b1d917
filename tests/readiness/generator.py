"""A generated fleet of KRaft clusters' metadata logs (and some broker log dirs) for the readiness
report's tests and benchmarks.

Each cluster lives through a history: formatted at a release's metadata.version, its controllers and
brokers registered with that release's supported ranges, topics, partitions and configs created,
then rolling software upgrades, each followed (or not yet) by a metadata.version upgrade that also
raises the other features to the new release's defaults. Records are written at the versions the
metadata.version of the moment allows, in batches with leader epochs and append times, by the
project's own writers: the raft log files writer for ``__cluster_metadata-0`` segments (several per
copy, indexes and all), the image snapshot writer for snapshots after which the older segments are
deleted, ``meta.properties`` beside. Controllers hold full copies; a broker's copy lags (and may
end in a torn append).

Some clusters carry blockers of every kind toward :data:`TARGET` (a broker or controller left on old
software, a fenced broker, configs that break the target's rules, static configs a downgrade would
lose, a corrupt log, partitions with message format v0/v1). The generator keeps its own books of
what it seeded, independent of the code under test.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftwerk.image.loader import MetadataBatch, replay_batches
from kraftwerk.image.snapshot import SnapshotId, write_snapshot
from kraftwerk.image.writer import ImageWriterOptions
from kraftwerk.protocol import codec
from kraftwerk.protocol.control_records import ControlRecordType, spec_for
from kraftwerk.protocol.frame import MetadataRecord, encode_metadata_record
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.records import CompressionType, RecordsBuilder, TimestampType
from kraftwerk.runtime.raft_log_files import FileRaftLog
from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR
from kraftwerk.storage.properties import MetaProperties, write_meta_properties
from kraftwerk.storage.segment import Segment, delete_segment_files, list_segments
from kraftwerk.versions.features import default_levels
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from kraftwerk.versions.software import SoftwareVersion

TARGET = MV.IBP_4_3_IV0
RELEASES = ("3.5", "3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3")
TOPIC_NAMES = ("orders", "payments", "clicks", "audit-log", "inventory", "sessions", "alerts")
BROKER_RESOURCE, TOPIC_RESOURCE = 4, 2
#: configs every cluster sets: valid at every level
CLUSTER_DEFAULTS = {"log.retention.ms": "604800000", "log.cleaner.threads": "2"}
BROKER_DYNAMIC = {"message.max.bytes": "1048588", "ssl.keystore.password": "s3cret"}
TOPIC_CONFIGS = ({"retention.ms": "86400000"}, {"cleanup.policy": "compact"},
                 {"max.message.bytes": "2097152", "segment.bytes": "536870912"}, {})
SEGMENT_BYTES = 2048
LOSS_STATIC = "the static configs of one or more brokers"


@dataclass
class ClusterBooks:
    """What the generator wrote for one cluster and what the report must find."""

    cluster_id: str
    metadata_version: MV
    levels: list[int] = field(default_factory=list)
    """metadata.version levels in the order the log finalized them"""
    features: dict[str, int] = field(default_factory=dict)
    controllers: list[int] = field(default_factory=list)
    brokers: list[int] = field(default_factory=list)
    copies: dict[int, Path] = field(default_factory=dict)
    """node id -> the log dir holding its ``__cluster_metadata-0``"""
    source_node: int = -1
    snapshot: bool = False
    seeded: set[tuple[str, str]] = field(default_factory=set)
    """(finding kind, subject) the report must list, and nothing else"""
    log_dirs: list[Path] = field(default_factory=list)
    legacy_bytes: int = 0

    @property
    def status(self) -> str:
        if any(kind == "metadata_error" for kind, _ in self.seeded):
            return "unreadable"
        if any(kind != "legacy_data" for kind, _ in self.seeded):
            return "blocked"
        return "at_target" if self.metadata_version == TARGET else "ready"


@dataclass
class MetadataFleet:
    root: Path
    clusters: list[ClusterBooks]
    log_dirs: list[Path]
    orphan_log_dir: Path | None
    unattributed_copy: Path | None

    def books(self, cluster_id: str) -> ClusterBooks:
        return next(c for c in self.clusters if c.cluster_id == cluster_id)


def _record(record_name: str, version: int, /, **fields: Any) -> MetadataRecord:
    spec = lookup_record(record_name)
    value = codec.default_value(spec)
    value.update(fields)
    return MetadataRecord(spec, version, value)


class _Log:
    """The batches of one cluster's metadata log as its active controller appends them."""

    def __init__(self, rnd: random.Random, start_ms: int) -> None:
        self.rnd = rnd
        self.batches: list[bytes] = []
        self.replay: list[MetadataBatch] = []
        self.offset = 0
        self.epoch = 0
        self.ts = start_ms

    def leader(self, leader: int, voters: list[int]) -> None:
        self.epoch += 1
        b = RecordsBuilder(base_offset=self.offset, is_control=True, partition_leader_epoch=self.epoch)
        value = {"version": 0, "leaderId": leader, "voters": [{"voterId": v} for v in voters],
                 "grantingVoters": [{"voterId": v} for v in voters[: len(voters) // 2 + 1]]}
        b.append_control_record(self.ts, ControlRecordType.LEADER_CHANGE,
                                codec.encode(spec_for(ControlRecordType.LEADER_CHANGE), 0, value))
        self._add(b.build(), MetadataBatch(self.offset, self.offset, self.epoch, self.ts, (), True))

    def append(self, records: list[MetadataRecord]) -> int:
        """Append one batch; returns the offset of its first record."""
        assert records, "an empty batch"
        b = RecordsBuilder(base_offset=self.offset, partition_leader_epoch=self.epoch)
        for r in records:
            b.append(self.ts, None, encode_metadata_record(r.spec, r.version, r.value))
        first = self.offset
        pairs = tuple((first + i, r) for i, r in enumerate(records))
        self._add(b.build(), MetadataBatch(first, first + len(records) - 1, self.epoch, self.ts, pairs))
        return first

    def _add(self, data: bytes, batch: MetadataBatch) -> None:
        self.batches.append(data)
        self.replay.append(batch)
        self.offset = batch.last_offset + 1
        self.ts += self.rnd.randrange(1_000, 600_000)

    def noops(self, mv: MV, count: int) -> None:
        if mv.is_noop_record_supported():
            for _ in range(count):
                self.append([_record("NoOpRecord", 0)])


class _Cluster:
    """Builds one cluster's log and books."""

    def __init__(self, rnd: random.Random, index: int) -> None:
        self.rnd = rnd
        self.index = index
        self.cid = uuid_to_str(uuid.UUID(int=rnd.getrandbits(128)))
        self.log = _Log(rnd, 1_700_000_000_000 + index * 86_400_000)
        self.mv = MV.IBP_3_5_IV2
        self.features: dict[str, int] = {}
        self.software: dict[int, str] = {}
        self.epochs: dict[int, int] = {}
        self.books = ClusterBooks(self.cid, self.mv)

    # --- records ----------------------------------------------------------------------------

    def _ranges(self, release: str) -> list[dict[str, Any]]:
        return [{"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in SoftwareVersion.for_release(release).supported_features().items()]

    def register_controllers(self, release: str) -> None:
        rolled = [c for c in self.books.controllers if self.software[c] == release or release == "*"]
        if not self.mv.is_controller_registration_supported() or not rolled:
            return
        self.log.append([_record("RegisterControllerRecord", 0, controllerId=c,
                                 incarnationId=uuid.UUID(int=self.rnd.getrandbits(128)),
                                 endPoints=[{"name": "CONTROLLER", "host": f"c{c}.kafka", "port": 9093,
                                             "securityProtocol": 0}],
                                 features=self._ranges(self.software[c]))
                         for c in rolled])

    def register_broker(self, b: int, static: dict[str, str] | None = None) -> None:
        version = self.mv.register_broker_record_version()
        fields: dict[str, Any] = dict(
            brokerId=b, incarnationId=uuid.UUID(int=self.rnd.getrandbits(128)), brokerEpoch=self.log.offset,
            endPoints=[{"name": "PLAINTEXT", "host": f"b{b}.kafka", "port": 9092, "securityProtocol": 0}],
            features=self._ranges(self.software[b]), rack=f"rack-{b % 3}", fenced=True)
        if version >= 5 and static:
            fields["staticConfigs"] = [{"name": n, "value": v} for n, v in sorted(static.items())]
        self.epochs[b] = self.log.append([_record("RegisterBrokerRecord", version, **fields)])
        self.log.append([_record("UnfenceBrokerRecord", 0, id=b, epoch=self.epochs[b])])

    def finalize(self, mv: MV) -> None:
        """metadata.version (and every other feature to its default at ``mv``) as kafka-features
        upgrade --release-version does."""
        records = [_record("FeatureLevelRecord", 0, name="metadata.version", featureLevel=mv.feature_level)]
        for name, level in default_levels(mv).items():
            if name != "kraft.version" and level > self.features.get(name, 0):
                records.append(_record("FeatureLevelRecord", 0, name=name, featureLevel=level))
                self.features[name] = level
        self.log.append(records)
        registered = self.mv.is_controller_registration_supported()
        self.mv = mv
        self.books.levels.append(mv.feature_level)
        if not registered:  # controllers register once the metadata.version lets them
            self.register_controllers("*")

    def topics(self) -> None:
        brokers = self.books.brokers
        names = self.rnd.sample(TOPIC_NAMES, self.rnd.randrange(2, 5))
        for t_i, name in enumerate(names):
            tid = uuid.UUID(int=self.rnd.getrandbits(128))
            records = [_record("TopicRecord", 0, name=name, topicId=tid)]
            version = self.mv.partition_record_version()
            for p in range(self.rnd.randrange(1, 5)):
                replicas = [brokers[(p + k) % len(brokers)] for k in range(min(3, len(brokers)))]
                extra = {"directories": [uuid.UUID(int=0)] * len(replicas)} if version >= 1 else {}
                records.append(_record("PartitionRecord", version, partitionId=p, topicId=tid,
                                       replicas=replicas, isr=replicas, leader=replicas[0], leaderEpoch=0,
                                       partitionEpoch=0, **extra))
            self.log.append(records)
            self.configs(TOPIC_RESOURCE, name, TOPIC_CONFIGS[t_i % len(TOPIC_CONFIGS)])
        self.topic_names = names

    def configs(self, rtype: int, name: str, values: dict[str, str]) -> None:
        if values:
            self.log.append([_record("ConfigRecord", 0, resourceType=rtype, resourceName=name, name=n,
                                     value=v) for n, v in values.items()])


def _seed(books: ClusterBooks, kind: str, subject: str) -> None:
    books.seeded.add((kind, subject))


def _history(rnd: random.Random, profile: str) -> list[str]:
    """The releases a cluster ran, oldest first; the last is its software today."""
    drawn = rnd.randrange(2, len(RELEASES))
    last = {"ahead": len(RELEASES), "at_target": len(RELEASES) - 1}.get(profile, drawn)
    start = rnd.randrange(0, max(1, last - 3))
    picked = sorted(rnd.sample(range(start + 1, last + 1), min(rnd.randrange(1, 4), last - start)))
    path = [RELEASES[start]] + [RELEASES[i] if i < len(RELEASES) else "4.4" for i in picked]
    if profile in ("ahead", "at_target") or path[-1] != "4.3":
        path.append("4.4" if profile == "ahead" else "4.3")
    return list(dict.fromkeys(path))


def _build_cluster(rnd: random.Random, index: int, profile: str, seeds: set[str]) -> _Cluster:
    c = _Cluster(rnd, index)
    books = c.books
    books.controllers = [3000 + i for i in range(rnd.choice((1, 3, 3)))]
    books.brokers = list(range(1, rnd.randrange(2, 5)))
    path = _history(rnd, profile)
    for node in books.controllers + books.brokers:
        c.software[node] = path[0]
    c.log.leader(books.controllers[0], books.controllers)
    c.finalize(SoftwareVersion.for_release(path[0]).latest_production)
    for b in books.brokers:
        c.register_broker(b)
    c.topics()
    c.configs(BROKER_RESOURCE, "", CLUSTER_DEFAULTS)
    c.configs(BROKER_RESOURCE, str(books.brokers[0]), BROKER_DYNAMIC)
    first = books.brokers[0]
    c.log.append([_record("ProducerIdsRecord", 0, brokerId=first, brokerEpoch=c.epochs[first],
                          nextProducerId=1000 * rnd.randrange(1, 50))])
    c.log.noops(c.mv, rnd.randrange(1, 4))
    stay = {"broker_unsupported": books.brokers[-1], "controller_unsupported": books.controllers[-1]}
    stay = {k: v for k, v in stay.items() if k in seeds}
    static = {"metadata.log.segment.bytes": "4194304"} if "static_violation" in seeds else \
        {"metadata.log.segment.bytes": "1073741824"}
    for step, release in enumerate(path[1:], start=1):
        last = step == len(path) - 1
        if rnd.random() < 0.5:
            leader = books.controllers[step % len(books.controllers)]
            c.log.leader(leader, books.controllers)
        for node in books.controllers + books.brokers:
            if not (last and node in stay.values()):
                c.software[node] = release
        c.register_controllers(release)
        for b in books.brokers:
            if c.software[b] == release:
                c.register_broker(b, static)
        raise_mv = not last or profile in ("ahead", "at_target")
        if raise_mv:
            c.finalize(SoftwareVersion.for_release(release).latest_production)
        if last and profile == "ahead":  # restarted once more: the registrations now keep static configs
            for b in books.brokers:
                c.register_broker(b, static)
        c.log.noops(c.mv, rnd.randrange(0, 3))
    books.metadata_version = c.mv
    books.features = {"metadata.version": c.mv.feature_level, **{k: v for k, v in c.features.items() if v}}
    for kind, node in stay.items():
        _seed(books, kind, f"{kind.split('_')[0]} {node}")
    if "fenced_broker" in seeds:
        b = books.brokers[0]
        c.log.append([_record("FenceBrokerRecord", 0, id=b, epoch=c.epochs[b])])
        _seed(books, "fenced_broker", f"broker {b}")
    if "config_violation" in seeds:
        topic = c.topic_names[0]
        c.configs(TOPIC_RESOURCE, topic, {"segment.bytes": "524288"})
        c.configs(BROKER_RESOURCE, str(books.brokers[-1]), {"log.segment.bytes": "524288"})
        c.configs(BROKER_RESOURCE, "", {"remote.log.manager.copier.thread.pool.size": "-1"})
        _seed(books, "config_violation", f"topic {topic} segment.bytes")
        _seed(books, "config_violation", f"broker {books.brokers[-1]} log.segment.bytes")
        _seed(books, "config_violation", "cluster default remote.log.manager.copier.thread.pool.size")
    if profile == "ahead":
        _seed(books, "lossy_downgrade", LOSS_STATIC)
        if "static_violation" in seeds:
            for b in books.brokers:
                _seed(books, "config_violation", f"broker {b} metadata.log.segment.bytes")
    c.log.noops(c.mv, 1)
    return c


def _write_copy(c: _Cluster, directory: Path, node: int, batches: int, *, snapshot_at: int | None,
                torn: bool) -> None:
    partition = directory / METADATA_PARTITION_DIR
    log = FileRaftLog(partition, segment_bytes=SEGMENT_BYTES)
    for data in c.log.batches[:batches]:
        log.append(data)
    log.close()
    write_meta_properties(directory, MetaProperties(1, c.cid, node))
    if snapshot_at is not None:
        image = replay_batches(c.log.replay[:snapshot_at])
        sid = SnapshotId(image.provenance.last_offset + 1, image.provenance.last_epoch)
        assert image.metadata_version is not None
        write_snapshot(image, partition, ImageWriterOptions(image.metadata_version), sid)
        segments = list_segments(partition)
        for seg, following in itertools.pairwise(segments):
            if following.base_offset <= sid.end_offset:
                delete_segment_files(Segment(partition, seg.base_offset))
    if torn:
        last = list_segments(partition)[-1]
        with open(last.log_path, "ab") as f:
            f.write(c.log.batches[batches][: len(c.log.batches[batches]) // 2])


def _corrupt(directory: Path) -> None:
    """Flip a byte inside the second batch of the first segment (a CRC mismatch mid-log)."""
    first = list_segments(directory / METADATA_PARTITION_DIR)[0].log_path
    data = bytearray(first.read_bytes())
    length = int.from_bytes(data[8:12], "big")
    data[12 + length + 70] ^= 0xFF
    first.write_bytes(bytes(data))


def _legacy_dir(rnd: random.Random, c: _Cluster, root: Path, with_legacy: bool) -> tuple[Path, int]:
    """A broker log dir of the cluster with a few partitions of its topics; returns it and its v0/v1 bytes."""
    books = c.books
    broker = books.brokers[0]
    log_dir = root / "data" / f"{books.cluster_id}-broker-{broker}"
    log_dir.mkdir(parents=True)
    write_meta_properties(log_dir, MetaProperties(1, books.cluster_id, broker))
    legacy_total = 0
    for p, topic in enumerate(c.topic_names[:2]):
        pdir = log_dir / f"{topic}-{p}"
        pdir.mkdir()
        chunks = []
        offset = 0
        if with_legacy:
            for magic, codec_ in ((0, CompressionType.NONE), (1, CompressionType.GZIP)):
                b = RecordsBuilder(magic, codec_, TimestampType.CREATE_TIME, offset)
                for i in range(3):
                    b.append(1_600_000_000_000 + i, f"k{i}".encode(), rnd.randbytes(40))
                data = b.build()
                chunks.append(data)
                legacy_total += len(data)
                offset += 3
            _seed(books, "legacy_data", f"{topic}-{p} in {log_dir}")
        b = RecordsBuilder(2, CompressionType.LZ4, TimestampType.CREATE_TIME, offset)
        for i in range(5):
            b.append(1_700_000_000_000 + i, None, rnd.randbytes(60))
        chunks.append(b.build())
        (pdir / f"{0:020d}.log").write_bytes(b"".join(chunks))
    return log_dir, legacy_total


#: how often each kind of seeded trouble appears (the rest of the clusters are healthy)
_SEEDS = ("broker_unsupported", "controller_unsupported", "fenced_broker", "config_violation",
          "metadata_error", "legacy_data")


def build_metadata_fleet(root: Path, clusters: int = 200, *, seed: int = 24) -> MetadataFleet:
    """``clusters`` clusters under ``root/metadata`` (one dir per node copy), some broker log dirs
    under ``root/data``, a metadata copy without ``meta.properties`` and a log dir of no cluster."""
    rnd = random.Random(seed)
    fleet = MetadataFleet(root, [], [], None, None)
    for i in range(clusters):
        profile = rnd.choices(("ready", "at_target", "ahead", "seeded"), (7, 2, 1, 3))[0]
        seeds: set[str] = set()
        if profile == "seeded" or i < len(_SEEDS):
            picked = [_SEEDS[i]] if i < len(_SEEDS) else rnd.sample(_SEEDS, rnd.randrange(1, 3))
            seeds = set(picked)
            profile = "seeded"
        if profile == "ahead" and rnd.random() < 0.5:
            seeds.add("static_violation")
        if "controller_unsupported" in seeds or "broker_unsupported" in seeds:
            seeds.discard("metadata_error")
        c = _build_cluster(rnd, i, profile, seeds)
        registered = c.books.metadata_version.is_controller_registration_supported()
        if "controller_unsupported" in seeds and not registered:
            c.books.seeded.discard(("controller_unsupported", f"controller {c.books.controllers[-1]}"))
        books = c.books
        base = root / "metadata" / books.cluster_id
        count = len(c.log.batches)
        books.snapshot = rnd.random() < 0.3 and "metadata_error" not in seeds
        snapshot_at = rnd.randrange(count // 2, count - 2) if books.snapshot else None
        copies = books.controllers[:1] if "metadata_error" in seeds else books.controllers
        _write_copy(c, base / f"node-{copies[0]}", copies[0], count, snapshot_at=snapshot_at, torn=False)
        for node in copies:  # the other controllers hold the same files
            if node != copies[0]:
                shutil.copytree(base / f"node-{copies[0]}" / METADATA_PARTITION_DIR,
                                base / f"node-{node}" / METADATA_PARTITION_DIR)
                write_meta_properties(base / f"node-{node}", MetaProperties(1, c.cid, node))
            books.copies[node] = base / f"node-{node}"
        if "metadata_error" not in seeds and rnd.random() < 0.4:
            b = books.brokers[0]
            _write_copy(c, base / f"node-{b}", b, count - rnd.randrange(1, 4), snapshot_at=None,
                        torn=rnd.random() < 0.5)
            books.copies[b] = base / f"node-{b}"
        books.source_node = min(books.controllers)
        if "metadata_error" in seeds:
            _corrupt(base / f"node-{copies[0]}")
            books.seeded = {("metadata_error", f"node {copies[0]}")}
        if "legacy_data" in seeds or rnd.random() < 0.1:
            log_dir, legacy = _legacy_dir(rnd, c, root, "legacy_data" in seeds)
            books.log_dirs.append(log_dir)
            books.legacy_bytes = legacy
            fleet.log_dirs.append(log_dir)
        fleet.clusters.append(books)
    # a node dir without meta.properties, and a log dir that names no cluster
    donor = fleet.clusters[-1]
    stray = root / "metadata" / "stray-node"
    shutil.copytree(donor.copies[donor.source_node] / METADATA_PARTITION_DIR, stray / METADATA_PARTITION_DIR)
    fleet.unattributed_copy = stray
    orphan = root / "data" / "orphan"
    (orphan / "legacy-0").mkdir(parents=True)
    b = RecordsBuilder(1, CompressionType.NONE, TimestampType.CREATE_TIME, 0)
    b.append(1_600_000_000_000, b"k", b"v" * 30)
    (orphan / "legacy-0" / f"{0:020d}.log").write_bytes(b.build())
    fleet.orphan_log_dir = orphan
    fleet.log_dirs.append(orphan)
    return fleet


@contextlib.contextmanager
def fleet_on_tmpfs(clusters: int = 200, **kwargs: Any) -> Iterator[MetadataFleet]:
    """A generated fleet in a fresh directory on ``/dev/shm`` where there is one (the writers fsync
    every file and directory, which costs nothing on a tmpfs), removed afterwards."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    root = Path(tempfile.mkdtemp(prefix="kraftwerk-fleet-", dir=base))
    try:
        yield build_metadata_fleet(root, clusters, **kwargs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
