"""Znode parsers: Kafka's JSON of every version read right, and any other bytes a ZnodeError naming
the path (fuzzed)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwerk.migration.errors import MalformedZnodeError, UnknownZnodeVersionError, ZnodeError
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import (
    parse_acls,
    parse_broker,
    parse_cluster_id,
    parse_config_change,
    parse_controller,
    parse_controller_epoch,
    parse_delegation_token,
    parse_entity_config,
    parse_feature,
    parse_migration,
    parse_partition_state,
    parse_producer_id_block,
    parse_reassignments,
    parse_scram,
    parse_topic,
)
from tests.migration.layout import kafka_uuid

STAT = ZnodeStat(czxid=16, version=3)

PARSERS: dict[str, Callable[[str, bytes | None], Any]] = {
    "/cluster/id": parse_cluster_id,
    "/controller": parse_controller,
    "/controller_epoch": parse_controller_epoch,
    "/brokers/ids/1": lambda p, d: parse_broker(p, d, STAT),
    "/brokers/topics/t": parse_topic,
    "/brokers/topics/t/partitions/0/state": lambda p, d: parse_partition_state(p, d, STAT),
    "/admin/reassign_partitions": parse_reassignments,
    "/config/topics/t": parse_entity_config,
    "/kafka-acl/Topic/t": parse_acls,
    "/latest_producer_id_block": parse_producer_id_block,
    "/delegation_token/tokens/x": parse_delegation_token,
    "/migration": lambda p, d: parse_migration(p, d, STAT),
    "/feature": parse_feature,
}


def js(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def test_broker_registration_of_kafka_39() -> None:
    data = (b'{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
            b'"endpoints":["PLAINTEXT://b1:9092","SSL://b1:9093"],"jmx_port":-1,"port":9092,"host":"b1",'
            b'"version":5,"timestamp":"1700000000000","rack":"r1"}')
    b = parse_broker("/brokers/ids/1", data, STAT)
    assert (b.broker_id, b.version, b.host, b.port, b.rack, b.epoch) == (1, 5, "b1", 9092, "r1", 16)
    assert b.endpoints == ("PLAINTEXT://b1:9092", "SSL://b1:9093") and b.migration is None


def test_broker_registration_v6_of_kip_866() -> None:
    data = js({"version": 6, "host": None, "port": -1, "jmx_port": -1, "endpoints": ["SSL://b:1"],
               "kraftMigration": {"isReady": True, "clusterId": "uKMoqJEZRSWt0uDX44O5Wg", "ibp": "3.4-IV0"}})
    b = parse_broker("/brokers/ids/7", data, STAT)
    assert b.migration is not None and b.migration.is_ready and b.migration.ibp == "3.4-IV0"
    with pytest.raises(MalformedZnodeError, match="kraftMigration"):
        parse_broker("/brokers/ids/7", js({"version": 6, "jmx_port": -1, "endpoints": []}), STAT)


def test_topic_versions() -> None:
    tid = uuid.uuid4()
    v3 = parse_topic("/brokers/topics/foo", js({"partitions": {"0": [1, 2, 3], "1": [2, 3, 1]},
                                                "topic_id": kafka_uuid(tid), "adding_replicas": {"1": [3]},
                                                "removing_replicas": {}, "version": 3}))
    assert v3.name == "foo" and v3.topic_id == tid and v3.adding_replicas == {1: (3,)}
    assert v3.partitions == {0: (1, 2, 3), 1: (2, 3, 1)}
    v1 = parse_topic("/brokers/topics/old", js({"version": 1, "partitions": {"0": [1]}}))
    assert v1.topic_id is None and v1.adding_replicas == {}
    with pytest.raises(UnknownZnodeVersionError, match=r"^/brokers/topics/x: unknown version 4"):
        parse_topic("/brokers/topics/x", js({"version": 4, "partitions": {}}))
    with pytest.raises(MalformedZnodeError, match="not a base64 Kafka Uuid"):
        parse_topic("/brokers/topics/x", js({"version": 3, "partitions": {}, "topic_id": "short"}))


def test_partition_state_epoch_is_the_znode_version() -> None:
    data = b'{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}'
    s = parse_partition_state("/s", data, ZnodeStat(version=12))
    assert (s.leader, s.leader_epoch, s.isr, s.partition_epoch) == (1, 7, (1, 2), 12)
    assert s.leader_recovery_state == 0
    recovering = json.loads(data)
    recovering["leader_recovery_state"] = 1
    assert parse_partition_state("/s", js(recovering), STAT).leader_recovery_state == 1


def test_acl_names_as_kafka_stores_and_decodes_them() -> None:
    entries = parse_acls("/kafka-acl/Cluster/kafka-cluster", js({"version": 1, "acls": [
        {"principal": "User:a", "permissionType": "Allow", "operation": "ClusterAction", "host": "*"},
        {"principal": "User:b", "permissionType": "DENY", "operation": "IDEMPOTENT_WRITE", "host": "h"}]}))
    assert [(e.permission_type, e.operation) for e in entries] == [(3, 9), (2, 12)]
    with pytest.raises(MalformedZnodeError, match="unknown ACL operation 'TwoPhaseCommit'"):
        parse_acls("/kafka-acl/Topic/t", js({"version": 1, "acls": [
            {"principal": "User:a", "permissionType": "Allow", "operation": "TwoPhaseCommit", "host": "*"}]}))


def test_small_znodes() -> None:
    assert parse_cluster_id("/cluster/id", b'{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qk"}') == \
        "MkU3OEVBNTcwNTJENDM2Qk"
    assert parse_controller_epoch("/controller_epoch", b"5") == 5
    c = parse_controller("/controller", b'{"version":1,"brokerid":2,"timestamp":"1"}')
    assert (c.broker_id, c.kraft_controller_epoch) == (2, -1)
    block = parse_producer_id_block("/latest_producer_id_block",
                                    b'{"version":1,"broker":2,"block_start":"5000","block_end":"5999"}')
    assert block is not None and (block.broker, block.block_start, block.block_end) == (2, 5000, 5999)
    assert parse_producer_id_block("/latest_producer_id_block", None) is None
    assert parse_entity_config("/config/users/u", None) == {}
    m = parse_migration("/migration", js({"version": 0, "kraft_controller_id": 3000,
                                          "kraft_controller_epoch": 2, "kraft_metadata_offset": 1543,
                                          "kraft_metadata_epoch": 2}), STAT)
    assert m.initial_migration_done and m.zk_version == 3
    token = parse_delegation_token("/delegation_token/tokens/AbC", js({
        "version": 3, "owner": "User%3Aalice", "tokenRequester": "User%3Aalice", "renewers": ["User%3Abob"],
        "issueTimestamp": 1, "maxTimestamp": 3, "expiryTimestamp": 2, "tokenId": "AbC"}))
    assert (token.owner, token.renewers) == ("User:alice", ("User:bob",))
    assert parse_feature("/feature", b'{"features":{},"version":2,"status":1}').enabled


def test_scram_value() -> None:
    cred = parse_scram("/config/users/u", "SCRAM-SHA-512",
                       "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=8192")
    assert (cred.mechanism, cred.salt, cred.iterations) == (2, b"salt", 8192)
    with pytest.raises(MalformedZnodeError, match="SCRAM-SHA-256 is not a SCRAM credential"):
        parse_scram("/config/users/u", "SCRAM-SHA-256", "salt=!!,iterations=1")


@pytest.mark.parametrize("path", sorted(PARSERS))
@pytest.mark.parametrize("data", [b"", b"{", b"[]", b"\xff\xfe", b'{"version":"x"}', b"null", b"1e999",
                                  b'{"version":1}', b"[" * 5000])
def test_bad_data_names_the_path(path: str, data: bytes) -> None:
    try:
        PARSERS[path](path, data)
    except ZnodeError as exc:
        assert str(exc).startswith(f"{path}: ")


SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
@settings(max_examples=100, deadline=None)
@given(assignment=st.dictionaries(st.integers(0, 50), st.lists(st.integers(0, 2**31 - 1), max_size=5),
                                  max_size=6),
       topic_id=st.uuids())
def test_generated_topic_znodes_round_trip(assignment: dict[int, list[int]], topic_id: uuid.UUID) -> None:
    data = js({"version": 3, "partitions": {str(p): r for p, r in assignment.items()},
               "adding_replicas": {}, "removing_replicas": {}, "topic_id": kafka_uuid(topic_id)})
    topic = parse_topic("/brokers/topics/t", data)
    assert topic.topic_id == topic_id
    assert topic.partitions == {p: tuple(r) for p, r in assignment.items()}


def test_config_change_notifications_of_both_versions() -> None:
    path = "/config/changes/config_change_0000000003"
    assert parse_config_change(path, b'{"version":2,"entity_path":"users/alice/clients/app"}') == \
        "users/alice/clients/app"
    legacy = b'{"version":1,"entity_type":"topics","entity_name":"foo"}'
    assert parse_config_change(path, legacy) == "topics/foo"
    with pytest.raises(UnknownZnodeVersionError):
        parse_config_change(path, b'{"version":3,"entity_path":"topics/foo"}')
