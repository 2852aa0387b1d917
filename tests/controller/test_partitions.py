"""The controller's partition rules through the controller core: CreateTopics assignments,
AlterPartition checks, and leadership moving off a fenced broker (never to an out-of-sync one)."""

from __future__ import annotations

import uuid

from kraftwerk.controller import features as fc
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.image.model import NO_LEADER, PartitionRegistration
from kraftwerk.protocol.error_codes import Errors
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker

BROKERS = (2, 3, 4)


def _cluster() -> tuple[Log, QuorumController]:
    log = Log()
    ctl = controller(1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", 30)])
    log.controllers.append(ctl)
    activate(log, ctl)
    for node_id in BROKERS:
        b = broker(node_id)
        log.join(b)
        drive_broker(log, ctl, b, 0)
        drive_broker(log, ctl, b, 1)
    assert all(not ctl.image.cluster.brokers[i].fenced for i in BROKERS)
    return log, ctl


def _create(log: Log, ctl: QuorumController, name: str, partitions: int, rf: int) -> dict[str, object]:
    body = {"topics": [{"name": name, "numPartitions": partitions, "replicationFactor": rf, "assignments": [],
                        "configs": [{"name": "min.insync.replicas", "value": "2"}]}],
            "timeoutMs": 1000, "validateOnly": False}
    response = call(log, ctl, 19, 7, body)
    topic: dict[str, object] = response["topics"][0]
    return topic


def _partition(ctl: QuorumController, name: str, pid: int) -> PartitionRegistration:
    return ctl.image.topics.by_name[name].partitions[pid]


def test_create_topics_assigns_round_robin_and_refuses_what_cannot_be_placed() -> None:
    log, ctl = _cluster()
    created = _create(log, ctl, "orders", 3, 3)
    assert created["errorCode"] == 0 and created["numPartitions"] == 3
    topic = ctl.image.topics.by_name["orders"]
    assert topic.id == created["topicId"]
    leaders = sorted(p.leader for p in topic.partitions.values())
    assert leaders == [2, 3, 4]  # one leadership each
    assert all(sorted(p.replicas) == [2, 3, 4] and p.isr == p.replicas for p in topic.partitions.values())
    assert dict(ctl.image.configs.items())  # the topic config went in
    again = _create(log, ctl, "orders", 1, 1)
    assert again["errorCode"] == Errors.TOPIC_ALREADY_EXISTS.code
    too_many = _create(log, ctl, "wide", 1, 4)
    assert too_many["errorCode"] == Errors.INVALID_REPLICATION_FACTOR.code
    assert "only 3 broker(s) are registered" in str(too_many["errorMessage"])
    assert "wide" not in ctl.image.topics.by_name


def _alter(log: Log, ctl: QuorumController, name: str, pid: int, leader: int, isr: list[int],
           partition_epoch: int | None = None) -> dict[str, object]:
    p = _partition(ctl, name, pid)
    body = {"brokerId": leader, "brokerEpoch": ctl.image.cluster.brokers[leader].epoch, "topics": [
        {"topicId": ctl.image.topics.by_name[name].id, "partitions": [
            {"partitionIndex": pid, "leaderEpoch": p.leader_epoch,
             "newIsrWithEpochs": [{"brokerId": b, "brokerEpoch": -1} for b in isr],
             "leaderRecoveryState": 0,
             "partitionEpoch": p.partition_epoch if partition_epoch is None else partition_epoch}]}]}
    response = call(log, ctl, 56, 3, body)
    result: dict[str, object] = response["topics"][0]["partitions"][0]
    return result


def test_alter_partition_shrinks_and_expands_the_isr_and_checks_epochs() -> None:
    log, ctl = _cluster()
    _create(log, ctl, "t", 1, 3)
    p = _partition(ctl, "t", 0)
    follower = next(r for r in p.replicas if r != p.leader)
    shrunk = [r for r in p.isr if r != follower]
    result = _alter(log, ctl, "t", 0, p.leader, shrunk)
    assert result["errorCode"] == 0 and result["isr"] == shrunk
    after = _partition(ctl, "t", 0)
    assert list(after.isr) == shrunk and after.partition_epoch == p.partition_epoch + 1
    assert result["partitionEpoch"] == after.partition_epoch
    stale = _alter(log, ctl, "t", 0, p.leader, list(p.isr), partition_epoch=p.partition_epoch)
    assert stale["errorCode"] == Errors.INVALID_UPDATE_VERSION.code
    not_leader = _alter(log, ctl, "t", 0, follower, list(p.isr))
    assert not_leader["errorCode"] == Errors.INVALID_REQUEST.code
    assert _alter(log, ctl, "t", 0, p.leader, list(p.isr))["errorCode"] == 0
    assert sorted(_partition(ctl, "t", 0).isr) == sorted(p.isr)
    # a leader ahead of this controller's image: Kafka's NOT_CONTROLLER, retried at the active one
    current = _partition(ctl, "t", 0).partition_epoch
    ahead = _alter(log, ctl, "t", 0, p.leader, shrunk, partition_epoch=current + 1)
    assert ahead["errorCode"] == Errors.NOT_CONTROLLER.code


def test_a_fenced_leader_hands_over_to_an_in_sync_replica_and_takes_back_a_leaderless_partition() -> None:
    log, ctl = _cluster()
    _create(log, ctl, "t", 1, 3)
    p = _partition(ctl, "t", 0)
    old_leader = p.leader
    log.append(ctl.tick(10 ** 9))  # every session timed out: all three fenced in turn
    after = _partition(ctl, "t", 0)
    assert after.leader == NO_LEADER  # unclean election is off: the last ISR member stays in the ISR
    assert len(after.isr) == 1
    last = after.isr[0]
    b = next(x for x in log.brokers if x.node_id == last)
    b.broker_epoch = ctl.image.cluster.brokers[last].epoch
    reply = ctl.handle_request(63, 1, {"brokerId": last, "brokerEpoch": b.broker_epoch,
                                       "currentMetadataOffset": 10 ** 6, "wantFence": False,
                                       "wantShutDown": False}, 10 ** 9, next_offset=log.end)
    log.append(getattr(reply, "records", ()))
    assert _partition(ctl, "t", 0).leader == last
    assert old_leader in BROKERS


def test_leadership_moves_on_controlled_shutdown() -> None:
    log, ctl = _cluster()
    _create(log, ctl, "t", 3, 3)
    led_by_2 = [pid for pid, p in ctl.image.topics.by_name["t"].partitions.items() if p.leader == 2]
    reply = ctl.handle_request(63, 1, {"brokerId": 2, "brokerEpoch": ctl.image.cluster.brokers[2].epoch,
                                       "currentMetadataOffset": 10 ** 6, "wantFence": False,
                                       "wantShutDown": True}, 5, next_offset=log.end)
    log.append(getattr(reply, "records", ()))
    for pid in led_by_2:
        p = _partition(ctl, "t", pid)
        assert p.leader in (3, 4) and 2 not in p.isr
        assert p.leader_epoch == 1
    assert uuid.UUID(int=0) != ctl.image.topics.by_name["t"].id
