"""The replica manager's decisions: roles from the image, the high watermark from the ISR's log
ends, ISR expansion once a follower catches up, shrinking when one lags, acks=all vs min ISR, and
what each AlterPartition answer (or its loss) does to an unsettled ISR change (Kafka's rules)."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from kraftwerk.broker.replica import (
    BecomeFollower,
    BecomeLeader,
    IsrChange,
    PartitionState,
    ReplicaManager,
    StopReplica,
    TopicPartition,
    alter_partition_answers,
    alter_partition_body,
)
from kraftwerk.controller.common import rec
from kraftwerk.controller.partitions import alter_partition
from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.rpc.replication import ALTER_PARTITION_REQUEST as ALTER_PARTITION
from kraftwerk.versions.metadata_version import MetadataVersion

TOPIC_ID = uuid.UUID(int=77)
TP = TopicPartition("orders", 0)


def _image(leader: int, isr: list[int], leader_epoch: int = 0, topic: bool = True, partition_epoch: int = 0
           ) -> MetadataImage:
    delta = MetadataDelta()
    for b in (1, 2, 3):
        delta.replay(rec("RegisterBrokerRecord", 0, {"brokerId": b, "brokerEpoch": 10 + b, "fenced": False,
                                                     "incarnationId": uuid.UUID(int=b)}))
    if topic:
        delta.replay(rec("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID}))
        delta.replay(rec("PartitionRecord", 0, {
            "partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2, 3], "isr": isr, "removingReplicas": [],
            "addingReplicas": [], "leader": leader, "leaderEpoch": leader_epoch,
            "partitionEpoch": partition_epoch}))
    return delta.apply()


def test_roles_follow_the_image() -> None:
    rm = ReplicaManager(1)
    assert rm.apply_image(_image(1, [1, 2, 3]), 0) == [BecomeLeader(TP, TOPIC_ID, 0)]
    assert rm.apply_image(_image(1, [1, 2], partition_epoch=1), 0) == []  # same leadership: no role change
    assert rm.partitions[TP].isr == (1, 2)
    assert rm.apply_image(_image(2, [2], leader_epoch=1), 0) == [BecomeFollower(TP, TOPIC_ID, 2, 1)]
    assert rm.leader(TP) is Errors.NOT_LEADER_OR_FOLLOWER
    assert rm.apply_image(_image(2, [2], topic=False), 0) == [StopReplica(TP, True)]
    assert rm.leader(TP) is Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_leaders_first_every_partition_and_the_high_watermark_kept_across_epochs() -> None:
    rm = ReplicaManager(1)
    delta = MetadataDelta(_image(2, [1, 2, 3]))  # partition 0: led by 2
    for pid, replicas in ((1, [2, 3]), (2, [1, 2, 3])):  # 1: not hosted here; 2: led here
        delta.replay(rec("PartitionRecord", 0, {
            "partitionId": pid, "topicId": TOPIC_ID, "replicas": replicas, "isr": replicas,
            "removingReplicas": [], "addingReplicas": [], "leader": replicas[0], "leaderEpoch": 2,
            "partitionEpoch": 0}))
    image = delta.apply()
    p2 = TopicPartition("orders", 2)
    assert rm.apply_image(image, 0) == [BecomeLeader(p2, TOPIC_ID, 2), BecomeFollower(TP, TOPIC_ID, 2, 0)]
    assert rm.leader(p2, 0) is Errors.FENCED_LEADER_EPOCH
    assert rm.leader(p2, 1) is Errors.FENCED_LEADER_EPOCH
    assert rm.leader(p2, 3) is Errors.UNKNOWN_LEADER_EPOCH
    st = rm.leader(p2, 2)
    assert not isinstance(st, Errors)
    rm.on_follower_fetch(st, 2, 5, 5, 0, 0)
    rm.on_follower_fetch(st, 3, 5, 5, 0, 0)
    assert st.high_watermark == 5
    delta = MetadataDelta(image)
    delta.replay(rec("PartitionChangeRecord", 0, {"partitionId": 2, "topicId": TOPIC_ID, "leader": 1}))
    assert rm.apply_image(delta.apply(), 0) == [BecomeLeader(p2, TOPIC_ID, 3)]  # a new epoch, still here
    renewed = rm.leader(p2)
    assert not isinstance(renewed, Errors) and renewed is not st and renewed.high_watermark == 5


def test_high_watermark_is_the_smallest_isr_log_end_and_a_caught_up_follower_joins() -> None:
    rm = ReplicaManager(1)
    rm.apply_image(_image(1, [1, 2]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    assert rm.leader(TP, 1) is Errors.UNKNOWN_LEADER_EPOCH
    assert not rm.update_high_watermark(st, 10)  # follower 2 has not fetched: HW stays 0
    moved, expand = rm.on_follower_fetch(st, 2, 6, 10, 0, 100)
    assert moved and st.high_watermark == 6 and expand is None
    moved, expand = rm.on_follower_fetch(st, 3, 6, 10, 0, 100)  # 3 reached the HW: ask to add it
    assert not moved and expand is not None and expand.new_isr == (1, 2, 3)
    assert rm.on_follower_fetch(st, 3, 7, 10, 0, 100)[1] is None  # one change in flight at a time
    body = alter_partition_body(1, 5, [expand], {1: 5, 2: 6}, 3)
    sent = codec.decode(ALTER_PARTITION, 3, codec.encode(ALTER_PARTITION, 3, body))
    assert (sent["brokerId"], sent["brokerEpoch"], sent["topics"][0]["topicId"]) == (1, 5, TOPIC_ID)
    part = sent["topics"][0]["partitions"][0]
    assert part["newIsrWithEpochs"] == [{"brokerId": 1, "brokerEpoch": 5}, {"brokerId": 2, "brokerEpoch": 6},
                                        {"brokerId": 3, "brokerEpoch": -1}]  # -1: an epoch not known here
    assert (part["leaderEpoch"], part["partitionEpoch"], part["leaderRecoveryState"]) == (0, 0, 0)
    old = codec.decode(ALTER_PARTITION, 1, codec.encode(ALTER_PARTITION, 1, alter_partition_body(
        1, 5, [expand], {}, 1)))
    assert old["topics"][0]["topicName"] == "orders"  # before v2, topics by name
    assert old["topics"][0]["partitions"][0]["newIsr"] == [1, 2, 3]
    rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2, 3],
                                                       "partitionEpoch": 1})
    assert st.isr == (1, 2, 3) and st.partition_epoch == 1 and st.pending is None


def test_min_insync_replicas_and_lagging_followers() -> None:
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(_image(1, [1, 2, 3]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    assert rm.check_produce(st, -1, 3) is Errors.NONE
    rm.on_follower_fetch(st, 2, 5, 5, 0, 900)
    assert rm.lagging_followers(1000) == []  # 3 caught up at 0: lagging only beyond the 1000 ms
    shrinks = rm.lagging_followers(1500)  # 3 has not caught up since it became a follower at 0
    assert [c.new_isr for c in shrinks] == [(1, 2)]
    assert rm.lagging_followers(5000) == []  # until the controller answers
    rm.on_alter_partition_result(shrinks[0], Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2],
                                                           "partitionEpoch": 1})
    assert rm.check_produce(st, -1, 3) is Errors.NOT_ENOUGH_REPLICAS
    assert rm.check_produce(st, 1, 3) is Errors.NONE


def test_lagging_followers_of_every_led_partition_and_only_those_timed() -> None:
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    delta = MetadataDelta(_image(2, [1, 2, 3]))  # partition 0: led by 2, this broker follows
    delta.replay(rec("PartitionRecord", 0, {
        "partitionId": 1, "topicId": TOPIC_ID, "replicas": [1, 2, 3], "isr": [1, 2, 3],
        "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0}))
    rm.apply_image(delta.apply(), 0)
    assert [c.new_isr for c in rm.lagging_followers(1500)] == [(1,)]  # partition 1's, after 0's
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(_image(1, [1, 2]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    st.follower_caught_up_ms.pop(2)  # a member this leader has not timed yet (e.g. one the metadata added)
    assert rm.lagging_followers(5000) == []


def test_topic_configs_come_from_the_topic_then_the_cluster_then_the_broker() -> None:
    delta = MetadataDelta(_image(1, [1, 2]))
    delta.replay(rec("ConfigRecord", 0, {"resourceType": 4, "resourceName": "", "name": "log.retention.ms",
                                         "value": "7"}))
    image = delta.apply()
    broker = {"log.retention.ms": "8", "log.segment.bytes": "9"}

    def config(image: MetadataImage, name: str, broker_name: str) -> str:
        return ReplicaManager.topic_config(image, "orders", name, broker, broker_name, "1")

    assert config(image, "retention.ms", "log.retention.ms") == "7"
    assert config(image, "segment.bytes", "log.segment.bytes") == "9"
    assert config(image, "segment.ms", "log.roll.ms") == "1"
    delta = MetadataDelta(image)
    delta.replay(rec("ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders", "name": "retention.ms",
                                         "value": "6"}))
    assert config(delta.apply(), "retention.ms", "log.retention.ms") == "6"


def test_high_watermark_waits_for_a_follower_whose_isr_addition_is_in_flight() -> None:
    """Kafka's maximal ISR: once the controller commits an expansion, the new member may be elected,
    so the HW (what acks=all answers on) must not pass its log end meanwhile (else an acknowledged
    record exists only on replicas that a leader change can truncate)."""
    rm = ReplicaManager(1)
    rm.apply_image(_image(1, [1, 2]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    rm.on_follower_fetch(st, 2, 10, 10, 0, 100)
    assert st.high_watermark == 10
    _, expand = rm.on_follower_fetch(st, 3, 10, 10, 0, 100)  # 3 caught up: expansion in flight
    assert expand is not None and expand.new_isr == (1, 2, 3)
    rm.on_follower_fetch(st, 2, 15, 15, 0, 200)  # records 10..14 on leader and 2, not yet on 3
    assert st.high_watermark == 10
    rm.apply_image(_image(1, [1, 2, 3], partition_epoch=1), 300)  # the controller committed {1, 2, 3}
    assert st.isr == (1, 2, 3) and st.high_watermark == 10
    rm.on_follower_fetch(st, 3, 15, 15, 0, 400)
    assert st.high_watermark == 15


def test_high_watermark_keeps_counting_a_follower_whose_isr_removal_is_in_flight() -> None:
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(_image(1, [1, 2, 3]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    rm.on_follower_fetch(st, 2, 5, 5, 0, 900)
    rm.on_follower_fetch(st, 3, 5, 5, 0, 100)
    [shrink] = rm.lagging_followers(1500)
    assert shrink.new_isr == (1, 2)
    rm.on_follower_fetch(st, 2, 9, 9, 0, 1500)
    assert st.high_watermark == 5  # until the controller removes 3, it still counts
    rm.on_alter_partition_result(shrink, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2], "partitionEpoch": 1})
    assert rm.update_high_watermark(st, 9) and st.high_watermark == 9


# ---------------------------------------------------------------------- an ISR change's answer

def _expanding() -> tuple[ReplicaManager, PartitionState, IsrChange]:
    """Leader 1 with ISR {1, 2}, all at offset 10; follower 3 caught up: {1, 2, 3} in flight."""
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(_image(1, [1, 2]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    rm.on_follower_fetch(st, 2, 10, 10, 0, 100)
    _, expand = rm.on_follower_fetch(st, 3, 10, 10, 0, 100)
    assert expand is not None and st.pending is expand
    return rm, st, expand


def _counts_follower_3(rm: ReplicaManager, st: PartitionState) -> bool:
    """Whether the HW still waits for follower 3 (stuck at 10) while 2 and the leader reach 15."""
    rm.on_follower_fetch(st, 2, 15, 15, 0, 200)
    return st.high_watermark == 10


def test_a_lost_answer_keeps_the_maximal_isr_and_the_change_is_sent_again() -> None:
    """The controller may have committed {1, 2, 3} before the answer was lost: 3 may be elected, so
    acks=all must keep waiting for it, and the same change goes out again."""
    rm, st, expand = _expanding()
    assert rm.on_alter_partition_result(expand, Errors.NETWORK_EXCEPTION, None)
    assert st.pending is expand and rm.is_pending(expand)
    assert _counts_follower_3(rm, st)
    assert rm.lagging_followers(5000) == []  # no other change while this one is unsettled
    assert rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2, 3],
                                                              "partitionEpoch": 1}) is False
    assert st.isr == (1, 2, 3) and st.pending is None and not rm.is_pending(expand)


@pytest.mark.parametrize("error", [Errors.NOT_CONTROLLER, Errors.STALE_BROKER_EPOCH, Errors.REQUEST_TIMED_OUT,
                                   Errors.UNKNOWN_SERVER_ERROR, Errors.CLUSTER_AUTHORIZATION_FAILED])
def test_a_retriable_error_sends_the_same_change_again(error: Errors) -> None:
    rm, st, expand = _expanding()
    assert rm.on_alter_partition_result(expand, error, None)
    assert st.pending is expand and st.isr == (1, 2) and _counts_follower_3(rm, st)


def test_a_partition_missing_from_the_answer_is_sent_again() -> None:
    rm, st, expand = _expanding()
    other = IsrChange(TopicPartition("orders", 1), TOPIC_ID, 0, 0, (1, 2))
    result = {"partitionIndex": 1, "errorCode": Errors.INVALID_UPDATE_VERSION.code}
    answers = alter_partition_answers([expand, other], {"errorCode": 0, "topics": [
        {"topicId": TOPIC_ID, "partitions": [result]}]})
    assert answers == [(expand, Errors.NONE, None), (other, Errors.INVALID_UPDATE_VERSION, result)]
    assert rm.on_alter_partition_result(expand, Errors.NONE, None)
    assert st.pending is expand and _counts_follower_3(rm, st)
    refused = alter_partition_answers([expand], {"errorCode": Errors.NOT_CONTROLLER.code, "topics": [
        {"topicId": TOPIC_ID, "partitions": [{"partitionIndex": 0, "errorCode": 0}]}]})
    assert refused == [(expand, Errors.NOT_CONTROLLER, None)]  # a top-level error is every change's


@pytest.mark.parametrize("error", [Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED])
def test_an_answer_that_the_change_was_not_applied_restores_the_committed_isr(error: Errors) -> None:
    rm, st, expand = _expanding()
    assert not rm.on_alter_partition_result(expand, error, None)
    assert st.pending is None and st.isr == (1, 2)
    assert not _counts_follower_3(rm, st) and st.high_watermark == 15
    _, again = rm.on_follower_fetch(st, 3, 15, 15, 0, 300)  # a new proposal may go out
    assert again is not None and again.new_isr == (1, 2, 3)


@pytest.mark.parametrize("error", [Errors.FENCED_LEADER_EPOCH, Errors.INVALID_UPDATE_VERSION,
                                   Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.UNKNOWN_TOPIC_ID,
                                   Errors.INVALID_REQUEST, Errors.NEW_LEADER_ELECTED])
def test_a_stale_view_error_waits_for_the_metadata_to_decide(error: Errors) -> None:
    """Kafka's "awaiting new the latest metadata": not retried, and since nobody knows whether the
    change (or an earlier send of it) was applied, the maximal ISR stays until the metadata says."""
    rm, st, expand = _expanding()
    assert not rm.on_alter_partition_result(expand, error, None)
    assert st.pending is expand and _counts_follower_3(rm, st)
    rm.apply_image(_image(1, [1, 2]), 300)  # the same partition epoch: nothing new
    assert st.pending is expand and st.high_watermark == 10
    rm.apply_image(_image(1, [1, 2], partition_epoch=1), 400)  # the controller's word: 3 is not in
    assert st.pending is None and st.isr == (1, 2) and st.partition_epoch == 1
    assert rm.update_high_watermark(st, 15) and st.high_watermark == 15


def test_a_newer_partition_epoch_from_the_metadata_supersedes_the_pending_change() -> None:
    rm, st, expand = _expanding()
    rm.apply_image(_image(1, [1, 2, 3], partition_epoch=1), 300)
    assert st.pending is None and st.isr == (1, 2, 3) and not rm.is_pending(expand)
    # answers that arrive late are out of date: ignored, never resent
    assert not rm.on_alter_partition_result(expand, Errors.NETWORK_EXCEPTION, None)
    assert not rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2],
                                                                  "partitionEpoch": 1})
    assert st.isr == (1, 2, 3) and st.partition_epoch == 1


def test_an_answer_at_the_same_partition_epoch_settles_the_change() -> None:
    """Kafka's handleAlterPartitionUpdate: an answer at the leader's own partition epoch means the
    controller already had that state (nothing written); the change is settled all the same."""
    rm, st, expand = _expanding()
    assert not rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2, 3],
                                                                  "partitionEpoch": 0})
    assert st.pending is None and st.isr == (1, 2, 3)


def test_metadata_older_than_an_answer_does_not_take_the_isr_back() -> None:
    """The answer's partition epoch may arrive before the metadata that carries it (UpdateMetadata
    from a ZooKeeper controller, a broker's lagging image): an older epoch is not news."""
    rm, st, expand = _expanding()
    assert not rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2, 3],
                                                                  "partitionEpoch": 1})
    rm.apply_image(_image(1, [1, 2]), 300)
    assert st.isr == (1, 2, 3) and st.partition_epoch == 1 and _counts_follower_3(rm, st)


def test_a_success_about_another_epoch_leaves_the_change_pending() -> None:
    rm, st, expand = _expanding()
    rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 1, "isr": [1, 2], "partitionEpoch": 1})
    assert st.pending is expand and st.isr == (1, 2)
    st.partition_epoch = 2  # learnt meanwhile from the metadata
    rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2], "partitionEpoch": 1})
    assert st.pending is expand and st.isr == (1, 2) and _counts_follower_3(rm, st)


# ---------------------------------------------------------------------- against the real controller rule

STEPS = ("append", "fetch 2", "fetch 3", "tick", "answered", "answer lost", "request lost", "metadata",
         "old metadata")


@settings(max_examples=400, deadline=None)
@given(steps=hs.lists(hs.sampled_from(STEPS), max_size=60))
@example(steps=["fetch 3", "answer lost", "fetch 2"])
@example(steps=["fetch 3", "answered", "old metadata", "append", "fetch 2", "fetch 2"])
def test_the_high_watermark_never_passes_a_replica_the_controller_may_have_put_in_the_isr(
        steps: list[str]) -> None:
    """Leader 1's ISR changes go to the KRaft controller's own AlterPartition rule; requests and
    answers get lost, the metadata arrives late or out of date: whatever the order, every replica
    in the ISR the controller committed holds every record below the HW (what acks=all answered
    on), and once the faults stop the ISR settles on every caught-up replica."""
    controller_image = _image(1, [1, 2])
    history = [controller_image]
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(controller_image, 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    ends = {1: 0, 2: 0, 3: 0}  # each replica's log end
    outbox: list[IsrChange] = []
    now = 0

    def controller(change: IsrChange) -> dict[str, Any]:
        nonlocal controller_image
        body = alter_partition_body(1, 11, [change], {1: 11, 2: 12, 3: 13}, 3)
        records, response = alter_partition(controller_image, MetadataVersion.latest_production(), 3,
                                            cast(Any, body))
        delta = MetadataDelta(controller_image)
        for record in records:
            delta.replay(record)
        controller_image = delta.apply()
        history.append(controller_image)
        return dict(response["topics"][0]["partitions"][0])

    def step(name: str) -> None:
        nonlocal now
        now += 100
        if name == "append":
            ends[1] += 1
        elif name.startswith("fetch"):
            follower = int(name[-1])
            _, change = rm.on_follower_fetch(st, follower, ends[follower], ends[1], 0, now)
            ends[follower] = ends[1]
            outbox.extend([change] if change is not None else [])
        elif name == "tick":
            now += 1000
            outbox.extend(rm.lagging_followers(now))
        elif name == "metadata":
            rm.apply_image(controller_image, now)
        elif name == "old metadata":  # e.g. a ZooKeeper controller's UpdateMetadata sent before
            rm.apply_image(history[max(len(history) - 2, 0)], now)
        elif outbox:
            change = outbox.pop(0)
            result = None if name == "request lost" else controller(change)
            if result is None or name == "answer lost":
                retry = rm.on_alter_partition_result(change, Errors.NETWORK_EXCEPTION, None)
            else:
                error = Errors.for_code(result["errorCode"])
                retry = rm.on_alter_partition_result(change, error, result if error is Errors.NONE else None)
            outbox.extend([change] if retry else [])
        committed = controller_image.topics.by_id[TOPIC_ID].partitions[0].isr
        assert st.high_watermark <= min(ends[r] for r in committed), (name, committed, ends)

    for name in steps:
        step(name)
    for _ in range(4):  # the faults stop: every change settles, the caught-up followers join
        for name in ("metadata", "fetch 2", "fetch 3", "answered", "answered", "metadata"):
            step(name)
    assert st.pending is None and not outbox and st.isr == (1, 2, 3)
    assert st.high_watermark == ends[1]
