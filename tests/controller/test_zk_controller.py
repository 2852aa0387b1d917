"""The ZK-mode controller's rules on trees written in Kafka 3.9's layout: elections, ISR shrink on
broker loss, new topics and partitions, AlterPartition, deletions, and every request it sends is a
valid LeaderAndIsr / UpdateMetadata / StopReplica of the version it names."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftwerk.controller.zk_controller import (
    LEADER_DURING_DELETE,
    NO_LEADER,
    BrokerRequest,
    Decisions,
    ZkController,
    ZkCreate,
    ZkDelete,
    ZkSet,
)
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.tree import ZnodeStat
from kraftwerk.migration.znodes import BrokerZnode, TopicZnode, parse_partition_state
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from tests.migration.layout import Layout

ORDERS = uuid.UUID(int=7)


def controller(*, brokers: tuple[int, ...] = (1, 2, 3),
               isr: dict[int, list[int]] | None = None) -> ZkController:
    layout = Layout().cluster("MkU3OEVBNTcwNTJENDM2Qk", controller=1, controller_epoch=4)
    for b in brokers:
        layout.broker(b, rack=f"r{b}")
    layout.topic("orders", {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}, topic_id=ORDERS, leader_epoch=2,
                 partition_epoch=5, isr=isr)
    state = parse_cluster(layout.tree())
    assert not state.invalid
    return ZkController(1, 5, state, new_topic_id=lambda: uuid.UUID(int=99))


def registrations(c: ZkController, ids: tuple[int, ...],
                  bounced: tuple[int, ...] = ()) -> dict[int, BrokerZnode]:
    out = {}
    for b in ids:
        epoch = c.brokers[b].epoch if b in c.brokers and b not in bounced else 1000 + b
        out[b] = BrokerZnode(b, 5, "h", 9092, (f"PLAINTEXT://b{b}:9092",), None, epoch, None,
                             (("PLAINTEXT", "PLAINTEXT"),))
    return out


def wire(d: Decisions) -> list[BrokerRequest]:
    """Every request encodes and decodes at its version (a malformed body would raise)."""
    for r in d.requests:
        spec = by_api_key(Kind.REQUEST, r.api_key)
        assert codec.decode(spec, r.version, codec.encode(spec, r.version, r.body))["controllerEpoch"] == 5
    return d.requests


def sent(d: Decisions, api_key: int) -> dict[int, dict[str, Any]]:
    return {r.broker_id: r.body for r in wire(d) if r.api_key == api_key}


def partitions(body: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(t["topicName"], p["partitionIndex"]): p
            for t in body["topicStates"] for p in t["partitionStates"]}


def state_writes(d: Decisions) -> dict[str, tuple[Any, int]]:
    """state znode path → (parsed new state, the version the write is conditional on)."""
    return {w.path: (parse_partition_state(w.path, w.data, ZnodeStat()), w.version)
            for w in d.writes if isinstance(w, ZkSet) and w.path.endswith("/state")}


def test_failover_tells_every_broker_everything_and_writes_nothing_when_leaders_live() -> None:
    c = controller()
    d = c.become_controller()
    assert d.writes == []  # the tree has its /feature znode already
    lai = sent(d, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [1, 2, 3]
    p0 = partitions(lai[1])[("orders", 0)]
    assert (p0["leader"], p0["leaderEpoch"], p0["isr"], p0["partitionEpoch"], p0["replicas"]) == \
        (1, 2, [1, 2, 3], 5, [1, 2, 3])
    assert lai[1]["topicStates"][0]["topicId"] == ORDERS and lai[1]["brokerEpoch"] == c.brokers[1].epoch
    um = sent(d, ApiKey.UPDATE_METADATA)
    assert sorted(um) == [1, 2, 3]
    assert {b["id"]: b["rack"] for b in um[2]["liveBrokers"]} == {1: "r1", 2: "r2", 3: "r3"}
    assert um[2]["liveBrokers"][0]["endpoints"] == [
        {"port": 9092, "host": "b1.example", "listener": "PLAINTEXT", "securityProtocol": 0}]


def test_a_dead_broker_loses_leadership_and_leaves_every_isr() -> None:
    c = controller()
    c.become_controller()
    d = c.brokers_changed(registrations(c, (2, 3)))
    writes = state_writes(d)
    assert set(writes) == {f"/brokers/topics/orders/partitions/{p}/state" for p in (0, 1, 2)}
    s0, v0 = writes["/brokers/topics/orders/partitions/0/state"]
    assert (s0.leader, s0.leader_epoch, s0.isr, s0.controller_epoch, v0) == (2, 3, (2, 3), 5, 5)
    s1, _ = writes["/brokers/topics/orders/partitions/1/state"]
    assert (s1.leader, s1.leader_epoch, s1.isr) == (2, 3, (2, 3))  # a follower left: epoch bumped too
    lai = sent(d, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [2, 3] and partitions(lai[3])[("orders", 0)]["leader"] == 2
    um = sent(d, ApiKey.UPDATE_METADATA)
    assert sorted(um) == [2, 3] and [b["id"] for b in um[2]["liveBrokers"]] == [2, 3]
    assert partitions(um[2])[("orders", 0)]["offlineReplicas"] == [1]


def test_without_a_live_isr_member_the_partition_goes_leaderless_and_comes_back_with_it() -> None:
    c = controller(isr={0: [1]})
    c.become_controller()
    d = c.brokers_changed(registrations(c, (2, 3)))
    s0, _ = state_writes(d)["/brokers/topics/orders/partitions/0/state"]
    assert (s0.leader, s0.isr) == (NO_LEADER, (1,))  # no unclean election; the last ISR member stays
    back = c.brokers_changed(registrations(c, (1, 2, 3)))
    s0, version = state_writes(back)["/brokers/topics/orders/partitions/0/state"]
    assert (s0.leader, s0.isr, version) == (1, (1,), 6)
    assert partitions(sent(back, ApiKey.LEADER_AND_ISR)[1])[("orders", 0)]["leader"] == 1


def test_a_bounced_broker_with_a_new_epoch_is_a_failure_then_a_join() -> None:
    c = controller()
    c.become_controller()
    d = c.brokers_changed(registrations(c, (1, 2, 3), bounced=(3,)))
    s2, _ = state_writes(d)["/brokers/topics/orders/partitions/2/state"]
    assert s2.leader == 1 and 3 not in s2.isr
    assert c.brokers[3].epoch == 1003 and sent(d, ApiKey.LEADER_AND_ISR)[3]["brokerEpoch"] == 1003


def test_new_topics_and_partitions_come_online_with_the_live_replicas() -> None:
    c = controller(brokers=(1, 2))
    c.become_controller()
    znode = TopicZnode("audit", 2, {0: (3, 2), 1: (1, 2)}, {}, {}, None)
    d = c.topics_changed({"audit": znode})
    topic_write = next(w for w in d.writes if isinstance(w, ZkSet) and w.path == "/brokers/topics/audit")
    assert b'"topic_id"' in topic_write.data and c.topics["audit"].topic_id == uuid.UUID(int=99)
    creates = {w.path: parse_partition_state(w.path, w.data, ZnodeStat()) for w in d.writes
               if isinstance(w, ZkCreate)}
    p0 = creates["/brokers/topics/audit/partitions/0/state"]
    assert (p0.leader, p0.isr, p0.leader_epoch, p0.controller_epoch) == (2, (2,), 0, 5)
    lai = sent(d, ApiKey.LEADER_AND_ISR)
    assert sorted(lai) == [1, 2] and all(p["isNew"] for p in partitions(lai[2]).values())
    more = c.topics_changed({"audit": TopicZnode("audit", 3, {0: (3, 2), 1: (1, 2), 2: (1,)}, {}, {},
                                                 uuid.UUID(int=99))})
    assert [w.path for w in more.writes] == ["/brokers/topics/audit/partitions/2/state"]
    shrunk = TopicZnode("audit", 3, {0: (3, 2)}, {}, {}, uuid.UUID(int=99))
    assert c.topics_changed({"audit": shrunk}).writes == []


def alter(c: ZkController, isr: list[int], *, leader: int = 1, leader_epoch: int = 2,
          partition_epoch: int = 5, version: int = 3) -> tuple[dict[str, Any], Decisions]:
    body = {"brokerId": leader, "brokerEpoch": c.brokers[leader].epoch, "topics": [{
        "topicName": "orders", "topicId": ORDERS, "partitions": [{
            "partitionIndex": 0, "leaderEpoch": leader_epoch, "newIsr": isr,
            "partitionEpoch": partition_epoch,
            "newIsrWithEpochs": [{"brokerId": b, "brokerEpoch": -1} for b in isr]}]}]}
    return c.alter_partition(body, version)


def test_alter_partition_writes_an_isr_change_on_the_current_epochs() -> None:
    c = controller(isr={0: [1]})
    c.become_controller()
    response, d = alter(c, [1, 2])
    p = response["topics"][0]["partitions"][0]
    assert (p["errorCode"], p["isr"], p["leaderEpoch"], p["partitionEpoch"]) == (0, [1, 2], 2, 6)
    s0, version = state_writes(d)["/brokers/topics/orders/partitions/0/state"]
    assert (s0.isr, s0.leader_epoch, version) == ((1, 2), 2, 5)
    assert sorted(sent(d, ApiKey.UPDATE_METADATA)) == [1, 2, 3]
    spec = by_api_key(Kind.RESPONSE, ApiKey.ALTER_PARTITION)
    codec.encode(spec, 3, response)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"partition_epoch": 4}, Errors.INVALID_UPDATE_VERSION),
    ({"partition_epoch": 6}, Errors.NOT_CONTROLLER),  # Kafka: the leader knows more, find the controller
    ({"leader_epoch": 3}, Errors.NOT_CONTROLLER),
    ({"leader_epoch": 1}, Errors.FENCED_LEADER_EPOCH),
    ({"leader": 2}, Errors.FENCED_LEADER_EPOCH),
    ({"isr": [1, 9]}, Errors.INELIGIBLE_REPLICA),
    ({"isr": [2, 3]}, Errors.INELIGIBLE_REPLICA),
])
def test_alter_partition_refuses_stale_or_ineligible_changes(kwargs: dict[str, Any], error: Errors) -> None:
    c = controller()
    c.become_controller()
    isr = kwargs.pop("isr", [1, 2])
    response, d = alter(c, isr, **kwargs)
    assert response["topics"][0]["partitions"][0]["errorCode"] == error.code
    assert d.writes == [] and d.requests == []


def test_alter_partition_resent_after_its_commit_answers_the_current_state() -> None:
    """Kafka's equalsAllowStalePartitionEpoch: the leader resends a change whose answer was lost;
    already applied, it gets the current state (and settles), not INVALID_UPDATE_VERSION."""
    c = controller(isr={0: [1]})
    c.become_controller()
    alter(c, [1, 2])
    response, d = alter(c, [1, 2])  # the same request: partition epoch 5, now 6
    p = response["topics"][0]["partitions"][0]
    assert (p["errorCode"], p["isr"], p["partitionEpoch"]) == (0, [1, 2], 6)
    assert d.writes == [] and d.requests == []
    assert alter(c, [1])[0]["topics"][0]["partitions"][0]["errorCode"] == Errors.INVALID_UPDATE_VERSION.code


def test_alter_partition_from_an_unknown_broker_epoch_is_stale() -> None:
    c = controller()
    c.become_controller()
    response, _ = c.alter_partition({"brokerId": 1, "brokerEpoch": 12345, "topics": []}, 3)
    assert response["errorCode"] == Errors.STALE_BROKER_EPOCH.code


def test_deletion_stops_and_deletes_the_replicas_then_the_znodes() -> None:
    c = controller()
    c.become_controller()
    d = c.deletions_requested(["orders", "never-existed"])
    stops = sent(d, ApiKey.STOP_REPLICA)
    assert sorted(stops) == [1, 2, 3]
    assert all(p["deletePartition"] for p in stops[1]["topicStates"][0]["partitionStates"])
    um = sent(d, ApiKey.UPDATE_METADATA)
    assert {p["leader"] for p in partitions(um[2]).values()} == {LEADER_DURING_DELETE}
    deletes = [w.path for w in d.writes if isinstance(w, ZkDelete)]
    assert deletes == ["/admin/delete_topics/never-existed", "/admin/delete_topics/orders",
                       "/brokers/topics/orders", "/config/topics/orders"]
    change = next(w for w in d.writes if isinstance(w, ZkCreate))
    assert change.sequential and change.path == "/config/changes/config_change_"
    assert "orders" not in c.topics


def test_a_new_controller_takes_brokers_that_died_meanwhile_out_of_the_isrs() -> None:
    layout = Layout().cluster("MkU3OEVBNTcwNTJENDM2Qk", controller=3, controller_epoch=4)
    for b in (1, 2):
        layout.broker(b)
    layout.topic("orders", {0: [3, 1, 2], 1: [1, 2, 3]}, topic_id=ORDERS, leader_epoch=2, partition_epoch=5)
    c = ZkController(1, 5, parse_cluster(layout.tree()))
    writes = state_writes(c.become_controller())
    s0, _ = writes["/brokers/topics/orders/partitions/0/state"]
    s1, _ = writes["/brokers/topics/orders/partitions/1/state"]
    assert (s0.leader, s0.isr, s0.leader_epoch) == (1, (1, 2), 3)
    assert (s1.leader, s1.isr, s1.leader_epoch) == (1, (1, 2), 3)


def test_a_first_controller_writes_the_feature_znode() -> None:
    layout = Layout()
    layout.put("/brokers/ids", None)
    layout.broker(1)
    d = ZkController(1, 1, parse_cluster(layout.tree())).become_controller()
    assert [(w.path, w.data) for w in d.writes if isinstance(w, ZkCreate)] == [
        ("/feature", b'{"version":2,"status":1,"features":{}}')]
