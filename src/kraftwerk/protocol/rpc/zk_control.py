"""The ZK-mode controller's RPCs to brokers: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6).

Declared from Kafka 3.9's JSON message definitions (4.0 removed them with ZooKeeper). A ZK-mode
controller tells each broker which partitions it leads or follows, which to stop, and what the
cluster looks like; a KRaft controller sends the same three to ZK brokers during a KIP-866 migration
(``isKRaftController``).
"""

from collections.abc import Sequence

from kraftwerk.protocol.schema import Field, Kind, field, message


def _leader_and_isr_partition_state() -> list[Field]:
    return [
        field("TopicName", "string", "0-1", ignorable=True, entity_type="topicName"),
        field("PartitionIndex", "int32", "0+"),
        field("ControllerEpoch", "int32", "0+"),
        field("Leader", "int32", "0+", entity_type="brokerId"),
        field("LeaderEpoch", "int32", "0+"),
        field("Isr", "[]int32", "0+", entity_type="brokerId"),
        field("PartitionEpoch", "int32", "0+"),
        field("Replicas", "[]int32", "0+", entity_type="brokerId"),
        field("AddingReplicas", "[]int32", "3+", ignorable=True, entity_type="brokerId"),
        field("RemovingReplicas", "[]int32", "3+", ignorable=True, entity_type="brokerId"),
        field("IsNew", "bool", "1+", default=False, ignorable=True),
        field("LeaderRecoveryState", "int8", "6+", default=0),
    ]


LEADER_AND_ISR_REQUEST = message(
    "LeaderAndIsrRequest", 4, Kind.REQUEST, valid="0-7", flexible="4+",
    # v1 IsNew. v2 BrokerEpoch, partitions grouped by topic. v3 adding/removing replicas (KIP-455).
    # v4 flexible. v5 Type and TopicId. v6 LeaderRecoveryState (KIP-704). v7 isKRaftController (KIP-866).
    fields=[
        field("ControllerId", "int32", "0+", entity_type="brokerId"),
        field("isKRaftController", "bool", "7+", default=False),
        field("ControllerEpoch", "int32", "0+"),
        field("BrokerEpoch", "int64", "2+", default=-1, ignorable=True),
        field("Type", "int8", "5+"),
        field("UngroupedPartitionStates", "[]LeaderAndIsrPartitionState", "0-1",
              fields=_leader_and_isr_partition_state()),
        field("TopicStates", "[]LeaderAndIsrTopicState", "2+", fields=[
            field("TopicName", "string", "2+", entity_type="topicName"),
            field("TopicId", "uuid", "5+", ignorable=True),
            field("PartitionStates", "[]LeaderAndIsrPartitionState", "2+",
                  fields=_leader_and_isr_partition_state()),
        ]),
        field("LiveLeaders", "[]LeaderAndIsrLiveLeader", "0+", fields=[
            field("BrokerId", "int32", "0+", entity_type="brokerId"),
            field("HostName", "string", "0+"),
            field("Port", "int32", "0+"),
        ]),
    ],
)


def _leader_and_isr_partition_error() -> Sequence[Field]:
    return [
        field("TopicName", "string", "0-4", ignorable=True, entity_type="topicName"),
        field("PartitionIndex", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
    ]


LEADER_AND_ISR_RESPONSE = message(
    "LeaderAndIsrResponse", 4, Kind.RESPONSE, valid="0-7", flexible="4+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("PartitionErrors", "[]LeaderAndIsrPartitionError", "0-4",
              fields=_leader_and_isr_partition_error()),
        field("Topics", "[]LeaderAndIsrTopicError", "5+", fields=[
            field("TopicId", "uuid", "5+"),
            field("PartitionErrors", "[]LeaderAndIsrPartitionError", "5+",
                  fields=_leader_and_isr_partition_error()),
        ]),
    ],
)

STOP_REPLICA_REQUEST = message(
    "StopReplicaRequest", 5, Kind.REQUEST, valid="0-4", flexible="2+",
    # v1 BrokerEpoch, partitions grouped by topic. v2 flexible. v3 per-partition LeaderEpoch and
    # DeletePartition (KIP-570). v4 isKRaftController (KIP-866).
    fields=[
        field("ControllerId", "int32", "0+", entity_type="brokerId"),
        field("isKRaftController", "bool", "4+", default=False),
        field("ControllerEpoch", "int32", "0+"),
        field("BrokerEpoch", "int64", "1+", default=-1, ignorable=True),
        field("DeletePartitions", "bool", "0-2"),
        field("UngroupedPartitions", "[]StopReplicaPartitionV0", "0", fields=[
            field("TopicName", "string", "0", entity_type="topicName"),
            field("PartitionIndex", "int32", "0"),
        ]),
        field("Topics", "[]StopReplicaTopicV1", "1-2", fields=[
            field("Name", "string", "1-2", entity_type="topicName"),
            field("PartitionIndexes", "[]int32", "1-2"),
        ]),
        field("TopicStates", "[]StopReplicaTopicState", "3+", fields=[
            field("TopicName", "string", "3+", entity_type="topicName"),
            field("PartitionStates", "[]StopReplicaPartitionState", "3+", fields=[
                field("PartitionIndex", "int32", "3+"),
                field("LeaderEpoch", "int32", "3+", default=-1),
                field("DeletePartition", "bool", "3+"),
            ]),
        ]),
    ],
)

STOP_REPLICA_RESPONSE = message(
    "StopReplicaResponse", 5, Kind.RESPONSE, valid="0-4", flexible="2+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("PartitionErrors", "[]StopReplicaPartitionError", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("PartitionIndex", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
        ]),
    ],
)


def _update_metadata_partition_state() -> list[Field]:
    return [
        field("TopicName", "string", "0-4", ignorable=True, entity_type="topicName"),
        field("PartitionIndex", "int32", "0+"),
        field("ControllerEpoch", "int32", "0+"),
        field("Leader", "int32", "0+", entity_type="brokerId"),
        field("LeaderEpoch", "int32", "0+"),
        field("Isr", "[]int32", "0+", entity_type="brokerId"),
        field("ZkVersion", "int32", "0+"),
        field("Replicas", "[]int32", "0+", entity_type="brokerId"),
        field("OfflineReplicas", "[]int32", "4+", ignorable=True, entity_type="brokerId"),
    ]


UPDATE_METADATA_REQUEST = message(
    "UpdateMetadataRequest", 6, Kind.REQUEST, valid="0-8", flexible="6+",
    # v1 endpoints. v2 rack. v3 listener names. v4 offline replicas. v5 BrokerEpoch, grouped by
    # topic. v6 flexible. v7 TopicId. v8 isKRaftController and the tagged Type (KIP-866).
    fields=[
        field("ControllerId", "int32", "0+", entity_type="brokerId"),
        field("isKRaftController", "bool", "8+", default=False),
        field("Type", "int8", "8+", tagged="8+", tag=0, default=0),
        field("ControllerEpoch", "int32", "0+"),
        field("BrokerEpoch", "int64", "5+", default=-1, ignorable=True),
        field("UngroupedPartitionStates", "[]UpdateMetadataPartitionState", "0-4",
              fields=_update_metadata_partition_state()),
        field("TopicStates", "[]UpdateMetadataTopicState", "5+", fields=[
            field("TopicName", "string", "5+", entity_type="topicName"),
            field("TopicId", "uuid", "7+", ignorable=True),
            field("PartitionStates", "[]UpdateMetadataPartitionState", "5+",
                  fields=_update_metadata_partition_state()),
        ]),
        field("LiveBrokers", "[]UpdateMetadataBroker", "0+", fields=[
            field("Id", "int32", "0+", entity_type="brokerId"),
            field("V0Host", "string", "0", ignorable=True),
            field("V0Port", "int32", "0", ignorable=True),
            field("Endpoints", "[]UpdateMetadataEndpoint", "1+", ignorable=True, fields=[
                field("Port", "int32", "1+"),
                field("Host", "string", "1+"),
                field("Listener", "string", "3+", ignorable=True),
                field("SecurityProtocol", "int16", "1+"),
            ]),
            field("Rack", "string", "2+", nullable="0+", ignorable=True),
        ]),
    ],
)

UPDATE_METADATA_RESPONSE = message(
    "UpdateMetadataResponse", 6, Kind.RESPONSE, valid="0-8", flexible="6+",
    fields=[field("ErrorCode", "int16", "0+")],
)

SPECS = (
    LEADER_AND_ISR_REQUEST,
    LEADER_AND_ISR_RESPONSE,
    STOP_REPLICA_REQUEST,
    STOP_REPLICA_RESPONSE,
    UPDATE_METADATA_REQUEST,
    UPDATE_METADATA_RESPONSE,
)
