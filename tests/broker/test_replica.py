"""The replica manager's decisions: roles from the image, the high watermark from the ISR's log
ends, ISR expansion once a follower catches up, shrinking when one lags, acks=all vs min ISR."""

from __future__ import annotations

import uuid

from kraftwerk.broker.replica import (
    BecomeFollower,
    BecomeLeader,
    ReplicaManager,
    StopReplica,
    TopicPartition,
    alter_partition_body,
)
from kraftwerk.controller.common import rec
from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.rpc.replication import ALTER_PARTITION_REQUEST as ALTER_PARTITION

TOPIC_ID = uuid.UUID(int=77)
TP = TopicPartition("orders", 0)


def _image(leader: int, isr: list[int], leader_epoch: int = 0, topic: bool = True) -> MetadataImage:
    delta = MetadataDelta()
    if topic:
        delta.replay(rec("TopicRecord", 0, {"name": "orders", "topicId": TOPIC_ID}))
        delta.replay(rec("PartitionRecord", 0, {
            "partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2, 3], "isr": isr, "removingReplicas": [],
            "addingReplicas": [], "leader": leader, "leaderEpoch": leader_epoch, "partitionEpoch": 0}))
    return delta.apply()


def test_roles_follow_the_image() -> None:
    rm = ReplicaManager(1)
    assert rm.apply_image(_image(1, [1, 2, 3]), 0) == [BecomeLeader(TP, TOPIC_ID, 0)]
    assert rm.apply_image(_image(1, [1, 2]), 0) == []  # same leadership: no role change
    assert rm.partitions[TP].isr == (1, 2)
    assert rm.apply_image(_image(2, [2], leader_epoch=1), 0) == [BecomeFollower(TP, TOPIC_ID, 2, 1)]
    assert rm.leader(TP) is Errors.NOT_LEADER_OR_FOLLOWER
    assert rm.apply_image(_image(2, [2], topic=False), 0) == [StopReplica(TP, True)]
    assert rm.leader(TP) is Errors.UNKNOWN_TOPIC_OR_PARTITION


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
    body = alter_partition_body(1, 5, [expand], {1: 5, 2: 6, 3: 7}, 3)
    sent = codec.decode(ALTER_PARTITION, 3, codec.encode(ALTER_PARTITION, 3, body))
    assert sent["topics"][0]["partitions"][0]["newIsrWithEpochs"][2] == {"brokerId": 3, "brokerEpoch": 7}
    old = codec.decode(ALTER_PARTITION, 1, codec.encode(ALTER_PARTITION, 1, alter_partition_body(
        1, 5, [expand], {}, 1)))
    assert old["topics"][0]["partitions"][0]["newIsr"] == [1, 2, 3]
    rm.on_alter_partition_result(expand, Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2, 3],
                                                       "partitionEpoch": 1})
    assert st.isr == (1, 2, 3) and st.partition_epoch == 1 and st.pending_isr is None


def test_min_insync_replicas_and_lagging_followers() -> None:
    rm = ReplicaManager(1, replica_lag_time_max_ms=1000)
    rm.apply_image(_image(1, [1, 2, 3]), 0)
    st = rm.leader(TP)
    assert not isinstance(st, Errors)
    assert rm.check_produce(st, -1, 3) is Errors.NONE
    rm.on_follower_fetch(st, 2, 5, 5, 0, 900)
    assert rm.lagging_followers(900) == []
    shrinks = rm.lagging_followers(1500)  # 3 has not caught up since it became a follower at 0
    assert [c.new_isr for c in shrinks] == [(1, 2)]
    assert rm.lagging_followers(5000) == []  # until the controller answers
    rm.on_alter_partition_result(shrinks[0], Errors.NONE, {"leaderEpoch": 0, "isr": [1, 2],
                                                           "partitionEpoch": 1})
    assert rm.check_produce(st, -1, 3) is Errors.NOT_ENOUGH_REPLICAS
    assert rm.check_produce(st, 1, 3) is Errors.NONE


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
    rm.apply_image(_image(1, [1, 2, 3]), 300)  # the controller committed {1, 2, 3}
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
