"""A real Kafka 3.7 data dir (another project's cluster) read by every layer.

The data dir is not ours to ship, so it stays outside the repository, at
``../shared/golden/kafka-3.7-cluster``: ``__cluster_metadata-0`` (4,814 batches, MV 3.7-IV4, a
ZkMigrationStateRecord, a static quorum's ``quorum-state``), a data topic partition, a
``__consumer_offsets`` partition, ``bootstrap.checkpoint`` and ``meta.properties``. The checks are
the ones each layer runs on the Kafka 4.3 files in ``tests/data/kafka``; this module skips as a
whole, saying why, where the directory is absent.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import KAFKA_37_CLUSTER

if not KAFKA_37_CLUSTER.is_dir():
    pytest.skip(f"the Kafka 3.7 data dir {KAFKA_37_CLUSTER} is absent (it sits beside the clone in CI, "
                "as ../shared/golden/kafka-3.7-cluster)", allow_module_level=True)

from kraftwerk.cli.main import main
from kraftwerk.image.model import MetadataImage, SupportedRange
from kraftwerk.image.snapshot import SnapshotId
from kraftwerk.image.source import load_log_dir, load_snapshot_file
from kraftwerk.image.writer import image_losses
from kraftwerk.protocol.frame import decode_metadata_record
from kraftwerk.records import iter_batches
from kraftwerk.storage.metadata_log import MetadataLogDir
from kraftwerk.storage.properties import read_meta_properties
from kraftwerk.storage.quorum_state import QuorumState, read_quorum_state
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.cli.test_dump_log_cmd import check_json_is_one_object_per_batch
from tests.image.test_golden import check_identity_at_own_version, check_lower_versions_lossless
from tests.image.test_snapshot import check_snapshot_reads_back
from tests.protocol.test_control_records import check_control_records
from tests.protocol.test_kafka_definitions import check_records_against_table
from tests.protocol.test_metadata_records import check_every_record_decodes, walk_batches
from tests.records.test_golden import check_reencodes_byte_for_byte, check_segment_scans_clean
from tests.records.test_interop import check_peer_reads_alike
from tests.storage.fleet import PEERS
from tests.storage.test_metadata_log import check_bootstrap_round_trip
from tests.storage.test_segment import check_log_dir_scans_clean
from tests.storage.test_small_files import (
    check_leader_epoch_checkpoint_round_trip,
    check_meta_properties_round_trip,
    check_partition_metadata_round_trip,
    check_quorum_state_round_trip,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

METADATA = KAFKA_37_CLUSTER / "__cluster_metadata-0"
SEGMENT = "00000000000000000000.log"
PARTITIONS = ("__cluster_metadata-0", "TestTopicPatient-0", "__consumer_offsets-6")
SEGMENTS = [KAFKA_37_CLUSTER / p / SEGMENT for p in PARTITIONS]


@pytest.fixture(scope="module")
def image37() -> MetadataImage:
    return load_log_dir(METADATA)


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- records and protocol

@pytest.mark.parametrize("path", SEGMENTS, ids=lambda p: p.parent.name)
def test_segments_scan_clean_and_reencode(path: Path) -> None:
    data = path.read_bytes()
    check_segment_scans_clean(data)
    check_reencodes_byte_for_byte(data)
    check_log_dir_scans_clean(path.parent)


@pytest.mark.interop
def test_segments_read_alike_by_peer_libraries() -> None:
    for path in SEGMENTS:
        for peer in PEERS:
            check_peer_reads_alike(peer, path.read_bytes())


def test_every_metadata_and_control_record_decodes() -> None:
    for path in (METADATA / SEGMENT, KAFKA_37_CLUSTER / "bootstrap.checkpoint"):
        check_every_record_decodes(path)
        check_control_records(path)


def test_every_metadata_and_control_record_matches_kafkas_definitions() -> None:
    """Checked against tests/protocol/kafka_messages.tsv, the facts of Kafka's message definitions."""
    seen = check_records_against_table(METADATA / SEGMENT)
    assert {("ZkMigrationStateRecord", 0), ("RegisterBrokerRecord", 3), ("PartitionRecord", 1)} <= seen
    check_records_against_table(KAFKA_37_CLUSTER / "bootstrap.checkpoint")


def test_the_metadata_log_holds_the_expected_records() -> None:
    seen: dict[str, set[int]] = {}
    for rec in walk_batches(METADATA / SEGMENT):
        if rec.control:
            continue
        assert rec.value is not None
        decoded = decode_metadata_record(rec.value)
        seen.setdefault(decoded.spec.name, set()).add(decoded.version)
    assert seen["ZkMigrationStateRecord"] == {0}
    assert seen["RegisterBrokerRecord"] == {3}
    assert seen["PartitionRecord"] == {1}
    assert seen["PartitionChangeRecord"] == {1}
    data = (METADATA / SEGMENT).read_bytes()
    pos = batches = 0
    while pos < len(data):
        _, length = struct.unpack_from(">qi", data, pos)
        pos += 12 + length
        batches += 1
    assert batches == 4814


# ---------------------------------------------------------------- storage

def test_small_files_round_trip(tmp_path: Path) -> None:
    checks = [(check_meta_properties_round_trip, KAFKA_37_CLUSTER / "meta.properties"),
              (check_quorum_state_round_trip, METADATA / "quorum-state"),
              (check_leader_epoch_checkpoint_round_trip, METADATA / "leader-epoch-checkpoint"),
              (check_partition_metadata_round_trip, METADATA / "partition.metadata"),
              (check_bootstrap_round_trip, KAFKA_37_CLUSTER / "bootstrap.checkpoint")]
    for i, (check, path) in enumerate(checks):
        out = tmp_path / str(i)
        out.mkdir()
        check(path, out)
    assert read_meta_properties(KAFKA_37_CLUSTER / "meta.properties").node_id == 1


def test_static_quorum_state_is_data_version_0() -> None:
    state = read_quorum_state(METADATA / "quorum-state")
    assert state == QuorumState(0, 1, 1, -1, cluster_id="", applied_offset=0, current_voters=(1,))


def test_metadata_log_streams() -> None:
    d37 = MetadataLogDir(METADATA)
    records = [e.record for b in d37.log_batches() for e in b.entries if hasattr(e.record, "spec")]
    assert any(r.spec.name == "ZkMigrationStateRecord" for r in records)  # type: ignore[union-attr]
    assert len(list(d37.log_batches(from_offset=4900))) < 40


# ---------------------------------------------------------------- image

def test_image(image37: MetadataImage) -> None:
    assert image37.metadata_version is MV.IBP_3_7_IV4
    assert image37.metadata_version.feature_level == 19
    assert dict(image37.features.finalized) == {}
    assert image37.features_epoch == 2  # the offset of the FeatureLevelRecord
    (broker,) = image37.cluster.brokers.values()
    assert broker.id == 1 and broker.epoch == 8
    assert [(e.name, e.host, e.port) for e in broker.listeners] == [("PLAINTEXT", "kafka", 9092)]
    assert broker.supported_features == (("metadata.version", SupportedRange(1, 19)),)
    assert len(broker.directories) == 1
    (controller,) = image37.cluster.controllers.values()
    assert controller.id == 1 and controller.listeners[0].name == "CONTROLLER"
    assert sorted(image37.topics.by_name) == [
        "Retry.TestTopicPatient",
        "TestTopicPatient",
        "__consumer_offsets",
        "batch2.work.notification.SHR_PROD.persistence",
        "subscription.matching.SHR_PROD.persistence",
    ]
    assert len(image37.topics.by_name["__consumer_offsets"].partitions) == 50
    assert image37.topics.partition_count() == 54
    part = image37.topics.by_name["TestTopicPatient"].partitions[0]
    assert part.replicas == (1,) and part.isr == (1,) and part.directories == broker.directories
    assert image37.producer_ids_next == 1000
    assert image37.features.zk_migration_state.name == "NONE"
    assert image37.provenance.last_offset == 4928


def test_image_writes_back(image37: MetadataImage, tmp_path: Path) -> None:
    check_identity_at_own_version(image37)
    check_lower_versions_lossless(image37)
    check_snapshot_reads_back(METADATA, tmp_path, MV.IBP_3_7_IV4, SnapshotId(4929, 1))


def test_losses_by_version(image37: MetadataImage) -> None:
    dirs = [
        "the online log directories of one or more brokers",
        "the directory assignment state of one or more replicas",
    ]
    assert list(image_losses(image37, MV.IBP_3_7_IV1)) == dirs
    assert list(image_losses(image37, MV.IBP_3_7_IV0)) == dirs
    assert list(image_losses(image37, MV.IBP_3_6_IV2)) == [dirs[0], "controller registration data", dirs[1]]
    # the 3.7 broker was in controlled shutdown when the log ended
    assert list(image_losses(image37, MV.IBP_3_3_IV2)) == [
        "the inControlledShutdown state of one or more brokers",
        dirs[0],
        "controller registration data",
        dirs[1],
    ]


# ---------------------------------------------------------------- cli

def test_dump_log_json(capsys: pytest.CaptureFixture[str]) -> None:
    for path in SEGMENTS:
        check_json_is_one_object_per_batch(capsys, path)
    assert main(["dump-log", "--cluster-metadata-decoder", "--output", "json", "--files",
                 str(METADATA / SEGMENT)]) == 0
    lines = capsys.readouterr().out.splitlines()
    types = {r["payload"]["type"] for line in lines for r in json.loads(line)["records"] if "payload" in r}
    assert {"FEATURE_LEVEL_RECORD", "ZK_MIGRATION_STATE_RECORD", "REGISTER_BROKER_RECORD"} <= types


def test_metadata_show_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["metadata", "show", "--log-dir", str(METADATA), "--output", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["metadataVersion"] == "3.7-IV4"
    assert doc["features"][0] == {"name": "metadata.version", "level": 19, "version": "3.7-IV4"}
    assert doc["featuresEpoch"] == 2
    assert [b["id"] for b in doc["brokers"]] == [1]
    assert doc["brokers"][0]["supportedFeatures"]["metadata.version"]["maxVersion"] == "3.7-IV4"
    assert len(doc["topics"]) == 5
    assert doc["configs"][0]["configs"]["cleanup.policy"] == "compact"


def test_metadata_rewrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "snap.checkpoint"
    argv = ["metadata", "rewrite", "--log-dir", str(METADATA), "--metadata-version", "3.6-IV2",
            "--out", str(out_file)]
    code, _, err = _run(argv, capsys)
    assert code == 1 and not out_file.exists() and "controller registration data" in err
    code, out, _ = _run([*argv, "--unsafe", "--output", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["written"] is True
    assert doc["losses"] == [
        "the online log directories of one or more brokers",
        "controller registration data",
        "the directory assignment state of one or more replicas",
    ]
    assert load_snapshot_file(out_file).metadata_version.version == "3.6-IV2"  # type: ignore[union-attr]
    lossless = tmp_path / "lossless"
    lossless.mkdir()
    code, out, _ = _run(["metadata", "rewrite", "--log-dir", str(METADATA), "--metadata-version", "3.7-IV2",
                         "--out", str(lossless)], capsys)
    assert code == 0 and "No metadata was lost." in out
    (snap,) = lossless.iterdir()
    code, out, _ = _run(["metadata", "show", "--snapshot", str(snap)], capsys)
    assert "Feature: metadata.version\tFinalizedVersionLevel: 3.7-IV2\tEpoch: 4928" in out.splitlines()


# ---------------------------------------------------------------- spark

@pytest.mark.spark
def test_kafka_log_source_reads_the_data_dir() -> None:
    from tests.spark.session import shared_spark

    spark: SparkSession = shared_spark()
    from kraftwerk.spark.source import list_segments_with_spark, read_log_dirs

    # Spark's own recursive listing hides names starting with "_": the listing must still find them
    listed = {Path(p).parent.name for p, _ in list_segments_with_spark(spark, [str(KAFKA_37_CLUSTER)])}
    assert listed == set(PARTITIONS)
    direct = spark.read.format("kafka-log").load(str(KAFKA_37_CLUSTER))
    assert sorted(direct.collect()) == sorted(read_log_dirs(spark, [str(KAFKA_37_CLUSTER)]).collect())
    df = direct.where("topic = '__cluster_metadata'")
    stats = df.groupBy("magic").count().collect()
    assert [(r["magic"], r["count"]) for r in stats] == [(2, 4814)]
    assert df.where("not crc_valid or error is not null").count() == 0
    assert sum(1 for _ in iter_batches((METADATA / SEGMENT).read_bytes())) == 4814
