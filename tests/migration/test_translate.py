"""The translation: Kafka 3.9's migration order and record values, metadata.version gates reported as
losses, invalid znodes refused or skipped, and the snapshot Kafka's loader reads."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraftwerk.image.source import load_snapshot_file
from kraftwerk.migration.errors import InvalidZnodesError, UnsupportedMetadataVersionError
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import snapshot_file_bytes, translate
from kraftwerk.migration.tree import dump_lines, parse_dump
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.migration.layout import Layout, sample_layout

MV = MetadataVersion


def minimal() -> Layout:
    """``reference/zookeeper-layout.md`` §5: the minimal synthetic tree."""
    layout = Layout().cluster("MkU3OEVBNTcwNTJENDM2Qk")
    for b in (1, 2, 3):
        layout.broker(b)
    layout.topic("foo", {0: [1, 2, 3]}, topic_id=uuid.UUID(int=42), partition_epoch=1)
    layout.config("topics", "foo", {"retention.ms": "86400000"})
    layout.config("brokers", "<default>", {"log.cleaner.threads": "2"})
    layout.config("users", "alice", {
        "SCRAM-SHA-256": "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
        "producer_byte_rate": "1048576"})
    layout.config("users", "<default>/clients/<default>", {"consumer_byte_rate": "2097152"})
    layout.acl("Topic", "foo", [{"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
                                 "host": "*"}])
    layout.acl("Group", "app-", [{"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
                                  "host": "*"}], prefixed=True)
    layout.producer_ids(1, 0)
    return layout


def test_minimal_tree_gives_the_reference_records_in_order() -> None:
    result = translate(parse_cluster(minimal().tree()), MV.IBP_3_9_IV0)
    got = [(r.spec.name, r.value) for r in result.records]
    names = [n for n, _ in got]
    assert names == ["TopicRecord", "ConfigRecord", "PartitionRecord", "ConfigRecord",
                     "UserScramCredentialRecord", "ClientQuotaRecord", "ClientQuotaRecord",
                     "ProducerIdsRecord",
                     "AccessControlEntryRecord", "AccessControlEntryRecord"]
    assert got[1][1] == {"resourceType": 2, "resourceName": "foo", "name": "retention.ms",
                         "value": "86400000"}
    p = got[2][1]
    assert (p["leader"], p["isr"], p["partitionEpoch"], p["leaderEpoch"]) == (1, [1, 2, 3], 1, 0)
    assert got[3][1]["resourceType"] == 4 and got[3][1]["resourceName"] == ""
    assert (got[4][1]["name"], got[4][1]["mechanism"], got[4][1]["iterations"]) == ("alice", 1, 4096)
    assert got[5][1]["entity"] == [{"entityType": "user", "entityName": "alice"}]
    assert got[5][1]["value"] == 1048576.0
    assert got[6][1]["entity"] == [{"entityType": "user", "entityName": None},
                                   {"entityType": "client-id", "entityName": None}]
    assert got[7][1] == {"brokerId": 1, "brokerEpoch": -1, "nextProducerId": 1000}
    assert [(a["resourceType"], a["patternType"]) for _, a in got[8:]] == [(2, 3), (3, 4)]
    log = [r.spec.name for r in result.log_records()]
    assert log[0] == "BeginTransactionRecord"
    assert log[-2:] == ["ZkMigrationStateRecord", "EndTransactionRecord"]


def test_below_metadata_transactions_no_markers_and_a_note() -> None:
    result = translate(parse_cluster(minimal().tree()), MV.IBP_3_5_IV2)
    assert [r.spec.name for r in result.log_records()][-1] == "ZkMigrationStateRecord"
    assert "BeginTransactionRecord" not in {r.spec.name for r in result.log_records()}
    assert any("no metadata transactions" in n for n in result.notes)


def test_what_the_version_cannot_hold_is_a_loss() -> None:
    layout = minimal()
    layout.put("/delegation_token/tokens/tok1",
               b'{"version":3,"owner":"User%3Aa","tokenRequester":"User%3Aa","renewers":[],'
               b'"issueTimestamp":1,"maxTimestamp":3,"expiryTimestamp":2,"tokenId":"tok1"}')
    state = parse_cluster(layout.tree())
    low = translate(state, MV.IBP_3_4_IV0)
    assert len(low.losses) == 2
    assert "alice (SCRAM-SHA-256)" in low.losses[0] and "3.5-IV2" in low.losses[0]
    assert "tok1" in low.losses[1] and "3.6-IV2" in low.losses[1]
    assert not {"UserScramCredentialRecord", "DelegationTokenRecord"} & {r.spec.name for r in low.records}
    full = translate(state, MV.IBP_3_6_IV2)
    assert full.losses == () and full.counts()["DelegationTokenRecord"] == 1
    with pytest.raises(UnsupportedMetadataVersionError, match=r"3\.3-IV3 does not support ZK migrations"):
        translate(state, MV.IBP_3_3_IV3)


def test_pending_deletions_are_left_out_and_topics_without_ids_refused() -> None:
    layout = minimal().delete_topic("foo")
    layout.topic("legacy", {0: [1]}, topic_id=None)
    state = parse_cluster(layout.tree())
    with pytest.raises(InvalidZnodesError, match="/brokers/topics/legacy: topic legacy has no topic_id"):
        translate(state, MV.IBP_3_9_IV0)
    result = translate(state, MV.IBP_3_9_IV0, skip_invalid=True)
    assert "TopicRecord" not in result.counts()
    assert [e.path for e in result.skipped] == ["/brokers/topics/legacy"]
    assert any("foo" in n for n in result.notes)


def test_non_numeric_quota_is_an_invalid_znode() -> None:
    layout = minimal().config("clients", "app", {"producer_byte_rate": "fast"})
    with pytest.raises(InvalidZnodesError, match="/config/clients/app: quota producer_byte_rate='fast'"):
        translate(parse_cluster(layout.tree()), MV.IBP_3_9_IV0)


def test_snapshot_loads_into_the_same_image(tmp_path: Path) -> None:
    layout, ids = sample_layout()
    result = translate(parse_cluster(layout.tree()), MV.IBP_3_7_IV4)
    data, sid = snapshot_file_bytes(result, 1700000000000)
    path = tmp_path / sid.file_name
    path.write_bytes(data)
    image = load_snapshot_file(path)
    assert image.metadata_version == MV.IBP_3_7_IV4
    assert {t.name: t.id for t in image.topics.by_name.values()} == ids
    assert len(image.acls) == 4 and image.producer_ids_next == 6000 and len(image.scram) == 1
    assert sid.end_offset == len(result.snapshot_records())


def test_exports_are_reproducible() -> None:
    layout, _ = sample_layout()
    tree = layout.tree()
    dumped = parse_dump(list(dump_lines(tree)), "mem")
    a = snapshot_file_bytes(translate(parse_cluster(tree), MV.IBP_3_9_IV0), 1)[0]
    b = snapshot_file_bytes(translate(parse_cluster(dumped), MV.IBP_3_9_IV0), 1)[0]
    assert a == b

