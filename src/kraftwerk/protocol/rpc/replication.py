"""Replication and producer-id RPCs: InitProducerId (22), OffsetForLeaderEpoch (23), AlterPartition (56).

Declared from Kafka's JSON message definitions; the data plane needs them for idempotent producers
(a producer id before the first batch), follower divergence checks and ISR changes.
"""

from kraftwerk.protocol.schema import Kind, field, message

INIT_PRODUCER_ID_REQUEST = message(
    "InitProducerIdRequest", 22, Kind.REQUEST, valid="0-5", flexible="2+",
    # v1 same as v0 (throttle on quota). v2 flexible. v3 ProducerId/ProducerEpoch (KIP-360).
    # v4 may return PRODUCER_FENCED. v5 may return TRANSACTION_ABORTABLE (KIP-890).
    fields=[
        field("TransactionalId", "string", "0+", nullable="0+", entity_type="transactionalId"),
        field("TransactionTimeoutMs", "int32", "0+"),
        field("ProducerId", "int64", "3+", default=-1, entity_type="producerId"),
        field("ProducerEpoch", "int16", "3+", default=-1),
    ],
)

INIT_PRODUCER_ID_RESPONSE = message(
    "InitProducerIdResponse", 22, Kind.RESPONSE, valid="0-5", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("ProducerId", "int64", "0+", default=-1, entity_type="producerId"),
        field("ProducerEpoch", "int16", "0+"),
    ],
)

OFFSET_FOR_LEADER_EPOCH_REQUEST = message(
    "OffsetForLeaderEpochRequest", 23, Kind.REQUEST, valid="0-4", flexible="4+",
    # v1 adds LeaderEpoch to the response. v2 CurrentLeaderEpoch (KIP-320). v3 ReplicaId. v4 flexible.
    fields=[
        field("ReplicaId", "int32", "3+", default=-2, ignorable=True, entity_type="brokerId"),
        field("Topics", "[]OffsetForLeaderTopic", "0+", fields=[
            field("Topic", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]OffsetForLeaderPartition", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "2+", default=-1, ignorable=True),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

OFFSET_FOR_LEADER_EPOCH_RESPONSE = message(
    "OffsetForLeaderEpochResponse", 23, Kind.RESPONSE, valid="0-4", flexible="4+",
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]OffsetForLeaderTopicResult", "0+", fields=[
            field("Topic", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]EpochEndOffset", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("Partition", "int32", "0+"),
                field("LeaderEpoch", "int32", "1+", default=-1, ignorable=True),
                field("EndOffset", "int64", "0+", default=-1),
            ]),
        ]),
    ],
)

ALTER_PARTITION_REQUEST = message(
    "AlterPartitionRequest", 56, Kind.REQUEST, valid="0-3", flexible="0+",
    # v1 LeaderRecoveryState (KIP-704). v2 topic ids. v3 NewIsrWithEpochs (KIP-903).
    fields=[
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0-1", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "2+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("LeaderEpoch", "int32", "0+"),
                field("NewIsr", "[]int32", "0-2", entity_type="brokerId"),
                field("NewIsrWithEpochs", "[]BrokerState", "3+", fields=[
                    field("BrokerId", "int32", "3+", entity_type="brokerId"),
                    field("BrokerEpoch", "int64", "3+", default=-1),
                ]),
                field("LeaderRecoveryState", "int8", "1+", default=0),
                field("PartitionEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

ALTER_PARTITION_RESPONSE = message(
    "AlterPartitionResponse", 56, Kind.RESPONSE, valid="0-3", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0-1", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "2+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
                field("Isr", "[]int32", "0+", entity_type="brokerId"),
                field("LeaderRecoveryState", "int8", "1+", default=0, ignorable=True),
                field("PartitionEpoch", "int32", "0+"),
            ]),
        ]),
    ],
)

SPECS = (
    INIT_PRODUCER_ID_REQUEST,
    INIT_PRODUCER_ID_RESPONSE,
    OFFSET_FOR_LEADER_EPOCH_REQUEST,
    OFFSET_FOR_LEADER_EPOCH_RESPONSE,
    ALTER_PARTITION_REQUEST,
    ALTER_PARTITION_RESPONSE,
)
