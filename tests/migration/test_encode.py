"""Znode encoders: Kafka 3.9's JSON key for key (the reference's examples), and every encoder the
inverse of its parser (hypothesis round trips)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.migration import encode as enc
from kraftwerk.migration.encode import BrokerInfo, ZkEndpoint
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import (
    ACL_OPERATIONS,
    ACL_PERMISSIONS,
    AclEntry,
    DelegationTokenZnode,
    KRaftMigrationInfo,
    MigrationZnode,
    ProducerIdBlock,
    base64_uuid,
    desanitize,
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
    parse_topic,
)

STAT = ZnodeStat(czxid=42, version=5)


def same_json(data: bytes, reference: str) -> None:
    """Same keys, same values, same JSON types (a string timestamp stays a string)."""
    assert json.loads(data) == json.loads(reference)


# ---------------------------------------------------------------------------- the reference's examples


def test_broker_registration_is_kafka_39s() -> None:
    listeners = (ZkEndpoint("PLAINTEXT", "b1", 9092, "PLAINTEXT"), ZkEndpoint("SSL", "b1", 9093, "SSL"))
    info = BrokerInfo(1, listeners, 1700000000000, rack="r1")
    same_json(enc.encode_broker(info),
              '{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT","SSL":"SSL"},'
              '"endpoints":["PLAINTEXT://b1:9092","SSL://b1:9093"],"jmx_port":-1,"port":9092,"host":"b1",'
              '"version":5,"timestamp":"1700000000000","rack":"r1"}')


def test_broker_without_plaintext_listener_or_rack() -> None:
    listeners = (ZkEndpoint("INTERNAL", "::1", 9094, "SSL"), ZkEndpoint("EXT", None, 9095, "SASL_SSL"))
    info = BrokerInfo(2, listeners, 5)
    obj = json.loads(enc.encode_broker(info))
    assert (obj["host"], obj["port"]) == (None, -1) and "rack" not in obj
    assert obj["endpoints"] == ["INTERNAL://[::1]:9094", "EXT://:9095"]
    assert "features" not in json.loads(enc.encode_broker(BrokerInfo(2, (), 5, version=4)))
    with pytest.raises(ValueError, match="versions 2, 4 and 5"):
        enc.encode_broker(BrokerInfo(2, (), 5, version=3))
    with pytest.raises(ValueError, match="kraftMigration"):
        enc.encode_broker(BrokerInfo(2, (), 5, version=6))


def test_topic_and_partition_state_are_kafka_39s() -> None:
    tid = base64_uuid("/t", "gZ3XzbLnQ4WnF5e3R6t7Ug")
    same_json(enc.encode_topic({0: [1, 2, 3], 1: [2, 3, 1]}, tid, adding={0: [], 1: [3]}),
              '{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"gZ3XzbLnQ4WnF5e3R6t7Ug",'
              '"adding_replicas":{"1":[3]},"removing_replicas":{},"version":3}')
    assert json.loads(enc.encode_topic({0: [1]}, None))["version"] == 2
    same_json(enc.encode_partition_state(1, 7, [1, 2], 3),
              '{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}')
    assert json.loads(enc.encode_partition_state(1, 7, [1], 3, 1))["leader_recovery_state"] == 1
    assert enc.partition_state_path("t", 4) == "/brokers/topics/t/partitions/4/state"


def test_controller_cluster_and_small_znodes_are_kafka_39s() -> None:
    same_json(enc.encode_cluster_id("MkU3OEVBNTcwNTJENDM2Qk"),
              '{"version":"1","id":"MkU3OEVBNTcwNTJENDM2Qk"}')
    same_json(enc.encode_controller(1, 1700000000000),
              '{"version":2,"brokerid":1,"timestamp":"1700000000000","kraftControllerEpoch":-1}')
    same_json(enc.encode_controller(3000, 1, 7), '{"version":2,"brokerid":3000,"timestamp":"1",'
                                                 '"kraftControllerEpoch":7}')
    assert "kraftControllerEpoch" not in json.loads(enc.encode_controller(1, 1, version=1))
    assert enc.encode_controller_epoch(5) == b"5"
    same_json(enc.encode_producer_id_block(ProducerIdBlock(2, 5000, 5999)),
              '{"version":1,"broker":2,"block_start":"5000","block_end":"5999"}')
    same_json(enc.encode_migration(MigrationZnode(3000, 2, 1543, 2, 0)),
              '{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":2,"kraft_metadata_offset":1543,'
              '"kraft_metadata_epoch":2}')
    same_json(enc.encode_feature(), '{"features":{},"version":2,"status":1}')
    same_json(enc.encode_delegation_token(DelegationTokenZnode(
        "AbCdEf", "User:alice", "User:alice", ("User:bob",), 1700000000000, 1700604800000, 1700086400000)),
        '{"version":3,"owner":"User%3Aalice","tokenRequester":"User%3Aalice","renewers":["User%3Abob"],'
        '"issueTimestamp":1700000000000,"maxTimestamp":1700604800000,"expiryTimestamp":1700086400000,'
        '"tokenId":"AbCdEf"}')


def test_configs_and_change_notifications_are_kafka_39s() -> None:
    same_json(enc.encode_entity_config({"retention.ms": "86400000"}),
              '{"version":1,"config":{"retention.ms":"86400000"}}')
    assert enc.config_path("topics", "foo") == "/config/topics/foo"
    assert enc.config_path("brokers", None) == "/config/brokers/<default>"
    assert enc.config_path("users", "alice@EX.COM") == "/config/users/alice%40EX.COM"
    assert enc.config_path("clients", "a b*~") == "/config/clients/a%20b%2A%7E"
    assert enc.user_client_config_path(None, "app1") == "/config/users/<default>/clients/app1"
    with pytest.raises(ValueError, match="unknown config type"):
        enc.config_path("groups", "g")
    path = enc.user_client_config_path("alice", None)
    same_json(enc.encode_config_change(enc.config_entity_path(path)),
              '{"version":2,"entity_path":"users/alice/clients/<default>"}')


def test_acls_and_their_change_notifications_are_kafka_39s() -> None:
    entries = [AclEntry("User:alice", 3, 3, "*"), AclEntry("User:admin", 3, 9, "10.0.0.1")]
    same_json(enc.encode_acls(entries),
              '{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"Read",'
              '"host":"*"},{"principal":"User:admin","permissionType":"Allow","operation":"ClusterAction",'
              '"host":"10.0.0.1"}]}')
    assert enc.acl_path(3, 2, "foo") == "/kafka-acl/Topic/foo"
    assert enc.acl_path(4, 3, "app-") == "/kafka-acl-extended/prefixed/Group/app-"
    assert enc.acl_path(3, 4, "kafka-cluster") == "/kafka-acl/Cluster/kafka-cluster"
    assert enc.encode_acl_change(3, 2, "foo") == (enc.LITERAL_ACL_CHANGE_PREFIX, b"TOPIC:foo")
    prefix, data = enc.encode_acl_change(4, 3, "app-")
    assert prefix == "/kafka-acl-extended-changes/acl_changes_"
    same_json(data, '{"version":1,"resourceType":"GROUP","name":"app-","patternType":"PREFIXED"}')
    with pytest.raises(ValueError, match="no ZooKeeper ACL store"):
        enc.acl_path(1, 2, "x")
    with pytest.raises(ValueError, match="cannot be stored"):
        enc.encode_acls([AclEntry("User:a", 3, 1, "*")])


# ---------------------------------------------------------------------------- round trips through the parsers

ints = st.integers(min_value=-1, max_value=2**31 - 1)
ids = st.integers(min_value=0, max_value=2**31 - 1)
names = st.text(min_size=1, max_size=20)
replicas = st.lists(ids, min_size=1, max_size=5)
assignments = st.dictionaries(st.integers(min_value=0, max_value=500), replicas, max_size=8)
uuids = st.uuids()
hosts = st.sampled_from(["b1", "10.0.0.7", "::1", "fe80::1:2", None])
protocols = st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])
endpoints = st.builds(ZkEndpoint, st.from_regex(r"[A-Z_]{1,12}", fullmatch=True), hosts,
                      st.integers(min_value=0, max_value=65535), protocols)


@st.composite
def broker_infos(draw: Any) -> BrokerInfo:
    version = draw(st.sampled_from([2, 4, 5, 6]))
    migration = draw(st.builds(KRaftMigrationInfo, st.booleans(), st.none() | names, st.none() | names)) \
        if version == 6 else None
    return BrokerInfo(draw(ids), tuple(draw(st.lists(endpoints, max_size=3))), draw(ids),
                      draw(st.none() | names), draw(ints), version, migration=migration)


@given(broker_infos())
def test_broker_round_trip(info: BrokerInfo) -> None:
    b = parse_broker(f"/brokers/ids/{info.broker_id}", enc.encode_broker(info), STAT)
    plaintext = next((e for e in info.endpoints if e.security_protocol == "PLAINTEXT"), None)
    assert (b.broker_id, b.version, b.epoch) == (info.broker_id, info.version, 42)
    assert b.migration == info.migration
    assert b.endpoints == tuple(e.connection_string for e in info.endpoints)
    assert (b.host, b.port) == ((plaintext.host, plaintext.port) if plaintext else (None, -1))
    assert b.rack == (info.rack if info.version >= 3 else None)
    assert dict(b.security_protocols) == ({e.listener: e.security_protocol for e in info.endpoints}
                                          if info.version >= 4 else {})


@given(assignments, st.none() | uuids, assignments, assignments)
def test_topic_round_trip(assignment: dict[int, list[int]], topic_id: uuid.UUID | None,
                          adding: dict[int, list[int]], removing: dict[int, list[int]]) -> None:
    data = enc.encode_topic(assignment, topic_id, adding=adding, removing=removing)
    t = parse_topic("/brokers/topics/t", data)
    assert t.topic_id == topic_id and t.version == (3 if topic_id else 2)
    assert t.partitions == {p: tuple(r) for p, r in assignment.items()}
    assert (t.adding_replicas, t.removing_replicas) == ({p: tuple(r) for p, r in adding.items()},
                                                        {p: tuple(r) for p, r in removing.items()})


@given(ints, ints, st.lists(ids, max_size=5), ints, st.sampled_from([0, 1]))
def test_partition_state_round_trip(leader: int, epoch: int, isr: list[int], controller_epoch: int,
                                    recovery: int) -> None:
    data = enc.encode_partition_state(leader, epoch, isr, controller_epoch, recovery)
    s = parse_partition_state("/s", data, STAT)
    assert (s.leader, s.leader_epoch, s.isr) == (leader, epoch, tuple(isr))
    assert s.controller_epoch == controller_epoch
    assert (s.leader_recovery_state, s.partition_epoch) == (recovery, 5)


@given(ids, st.integers(min_value=0, max_value=2**62), st.integers(min_value=-1, max_value=2**31 - 1),
       st.sampled_from([1, 2]))
def test_controller_round_trip(broker: int, ts: int, kraft_epoch: int, version: int) -> None:
    c = parse_controller("/controller", enc.encode_controller(broker, ts, kraft_epoch, version=version))
    assert (c.version, c.broker_id, c.kraft_controller_epoch) == (version, broker, kraft_epoch if version == 2
                                                                   else -1)


@given(ids, names, st.dictionaries(names, st.text(max_size=30), max_size=5))
def test_small_znodes_round_trip(epoch: int, cluster_id: str, config: dict[str, str]) -> None:
    assert parse_controller_epoch("/controller_epoch", enc.encode_controller_epoch(epoch)) == epoch
    assert parse_cluster_id("/cluster/id", enc.encode_cluster_id(cluster_id)) == cluster_id
    assert parse_entity_config("/config/topics/t", enc.encode_entity_config(config)) == config
    entity = enc.config_entity_path(enc.config_path("users", cluster_id))
    assert parse_config_change("/config/changes/config_change_0000000001", enc.encode_config_change(entity)) \
        == entity
    assert parse_feature("/feature", enc.encode_feature({cluster_id: epoch})).features == {cluster_id: epoch}


@given(st.builds(ProducerIdBlock, ints, st.integers(0, 2**62), st.just(0)),
       st.builds(MigrationZnode, ints, ints, st.integers(-1, 2**62), ints, st.just(5)))
def test_producer_ids_and_migration_round_trip(block: ProducerIdBlock, state: MigrationZnode) -> None:
    end = block.block_start + enc.PRODUCER_ID_BLOCK_SIZE - 1
    block = ProducerIdBlock(block.broker, block.block_start, end)
    assert parse_producer_id_block("/latest_producer_id_block", enc.encode_producer_id_block(block)) == block
    assert parse_migration("/migration", enc.encode_migration(state), STAT) == state


acl_entries = st.builds(AclEntry, names, st.sampled_from(sorted(ACL_PERMISSIONS.values())),
                        st.sampled_from(sorted(ACL_OPERATIONS.values())), names)


@given(st.lists(acl_entries, max_size=6))
def test_acls_round_trip(entries: list[AclEntry]) -> None:
    assert parse_acls("/kafka-acl/Topic/t", enc.encode_acls(entries)) == tuple(entries)


@given(st.builds(DelegationTokenZnode, names, names, names, st.lists(names, max_size=3).map(tuple),
                 ints, ints, ints))
def test_delegation_token_round_trip(token: DelegationTokenZnode) -> None:
    assert parse_delegation_token("/delegation_token/tokens/x", enc.encode_delegation_token(token)) == token


@given(st.text(max_size=30))
def test_sanitize_is_the_inverse_of_desanitize(name: str) -> None:
    sanitized = enc.sanitize(name)
    assert desanitize(sanitized) == name and "/" not in sanitized and "+" not in sanitized
