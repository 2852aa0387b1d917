"""Topic administration and discovery: Metadata (apiKey 3), CreateTopics (19), DeleteTopics (20),
CreatePartitions (37), DescribeTopicPartitions (75).

Every version Kafka ever defined is declared, including CreateTopics v0-1 and DeleteTopics v0
that KIP-896 removed from the broker in 4.0.
"""

from kraftwerk.protocol.schema import Kind, field, message

# --------------------------------------------------------------------------------- Metadata

METADATA_REQUEST = message(
    "MetadataRequest", 3, Kind.REQUEST, valid="0-13", flexible="9+",
    # v0: an empty topic list means "all topics"; from v1 null means all and empty means none.
    # v4 AllowAutoTopicCreation. v8 the two Include*AuthorizedOperations flags. v9 flexible.
    # v10 TopicId, and Name becomes nullable. v11 drops IncludeClusterAuthorizedOperations
    # (KIP-700). v12 topic-id lookups. v13 adds a top-level response error (KIP-1102).
    fields=[
        field("Topics", "[]MetadataRequestTopic", "0+", nullable="1+", fields=[
            field("TopicId", "uuid", "10+", ignorable=True),
            field("Name", "string", "0+", nullable="10+", entity_type="topicName"),
        ]),
        field("AllowAutoTopicCreation", "bool", "4+", default=True),
        field("IncludeClusterAuthorizedOperations", "bool", "8-10"),
        field("IncludeTopicAuthorizedOperations", "bool", "8+"),
    ],
)

METADATA_RESPONSE = message(
    "MetadataResponse", 3, Kind.RESPONSE, valid="0-13", flexible="9+",
    # v1 Rack, ControllerId, IsInternal. v2 ClusterId. v3 ThrottleTimeMs. v5 OfflineReplicas.
    # v7 LeaderEpoch. v8 authorized operations. v9 flexible. v10 TopicId. v11 drops
    # ClusterAuthorizedOperations. v12 Name nullable. v13 top-level ErrorCode.
    fields=[
        field("ThrottleTimeMs", "int32", "3+", ignorable=True),
        field("Brokers", "[]MetadataResponseBroker", "0+", fields=[
            field("NodeId", "int32", "0+", entity_type="brokerId"),
            field("Host", "string", "0+"),
            field("Port", "int32", "0+"),
            field("Rack", "string", "1+", nullable="1+", default="null", ignorable=True),
        ]),
        field("ClusterId", "string", "2+", nullable="2+", default="null", ignorable=True),
        field("ControllerId", "int32", "1+", default=-1, ignorable=True, entity_type="brokerId"),
        field("Topics", "[]MetadataResponseTopic", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("Name", "string", "0+", nullable="12+", entity_type="topicName"),
            field("TopicId", "uuid", "10+", ignorable=True),
            field("IsInternal", "bool", "1+", default=False, ignorable=True),
            field("Partitions", "[]MetadataResponsePartition", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("PartitionIndex", "int32", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "7+", default=-1, ignorable=True),
                field("ReplicaNodes", "[]int32", "0+", entity_type="brokerId"),
                field("IsrNodes", "[]int32", "0+", entity_type="brokerId"),
                field("OfflineReplicas", "[]int32", "5+", ignorable=True, entity_type="brokerId"),
            ]),
            field("TopicAuthorizedOperations", "int32", "8+", default=-2147483648),
        ]),
        field("ClusterAuthorizedOperations", "int32", "8-10", default=-2147483648),
        field("ErrorCode", "int16", "13+", ignorable=True),
    ],
)

# ----------------------------------------------------------------------------- CreateTopics

CREATE_TOPICS_REQUEST = message(
    "CreateTopicsRequest", 19, Kind.REQUEST, valid="0-7", flexible="5+",
    # v1 ValidateOnly. v2-4 same layout (v4: NumPartitions/ReplicationFactor may be -1 for
    # broker defaults). v5 flexible. v6 quota errors (KIP-599). v7 topic ids in the response.
    fields=[
        field("Topics", "[]CreatableTopic", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("NumPartitions", "int32", "0+"),
            field("ReplicationFactor", "int16", "0+"),
            field("Assignments", "[]CreatableReplicaAssignment", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("BrokerIds", "[]int32", "0+", entity_type="brokerId"),
            ]),
            field("Configs", "[]CreatableTopicConfig", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        field("TimeoutMs", "int32", "0+", default=60000),
        field("ValidateOnly", "bool", "1+", default=False),
    ],
)

CREATE_TOPICS_RESPONSE = message(
    "CreateTopicsResponse", 19, Kind.RESPONSE, valid="0-7", flexible="5+",
    # v1 ErrorMessage. v2 ThrottleTimeMs. v5 flexible with the created topic's configuration
    # (NumPartitions, ReplicationFactor, Configs; TopicConfigErrorCode tag 0). v7 TopicId.
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]CreatableTopicResult", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("TopicId", "uuid", "7+", ignorable=True),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "1+", nullable="0+", ignorable=True),
            field("TopicConfigErrorCode", "int16", "5+", tagged="5+", tag=0, ignorable=True),
            field("NumPartitions", "int32", "5+", default=-1, ignorable=True),
            field("ReplicationFactor", "int16", "5+", default=-1, ignorable=True),
            field("Configs", "[]CreatableTopicConfigs", "5+", nullable="5+", ignorable=True, fields=[
                field("Name", "string", "5+"),
                field("Value", "string", "5+", nullable="5+"),
                field("ReadOnly", "bool", "5+"),
                field("ConfigSource", "int8", "5+", default=-1, ignorable=True),
                field("IsSensitive", "bool", "5+"),
            ]),
        ]),
    ],
)

# ----------------------------------------------------------------------------- DeleteTopics

DELETE_TOPICS_REQUEST = message(
    "DeleteTopicsRequest", 20, Kind.REQUEST, valid="0-6", flexible="4+",
    # v0-3 same layout. v4 flexible. v5 quota errors (KIP-599). v6 names or ids per topic.
    fields=[
        field("Topics", "[]DeleteTopicState", "6+", fields=[
            field("Name", "string", "6+", nullable="6+", default="null", entity_type="topicName"),
            field("TopicId", "uuid", "6+"),
        ]),
        field("TopicNames", "[]string", "0-5", ignorable=True, entity_type="topicName"),
        field("TimeoutMs", "int32", "0+"),
    ],
)

DELETE_TOPICS_RESPONSE = message(
    "DeleteTopicsResponse", 20, Kind.RESPONSE, valid="0-6", flexible="4+",
    # v1 ThrottleTimeMs. v4 flexible. v5 ErrorMessage. v6 TopicId, Name nullable.
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("Responses", "[]DeletableTopicResult", "0+", fields=[
            field("Name", "string", "0+", nullable="6+", entity_type="topicName"),
            field("TopicId", "uuid", "6+", ignorable=True),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "5+", nullable="5+", default="null", ignorable=True),
        ]),
    ],
)

# ------------------------------------------------------------------------- CreatePartitions

CREATE_PARTITIONS_REQUEST = message(
    "CreatePartitionsRequest", 37, Kind.REQUEST, valid="0-3", flexible="2+",
    # v1 = v0. v2 flexible. v3 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599).
    fields=[
        field("Topics", "[]CreatePartitionsTopic", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("Count", "int32", "0+"),
            field("Assignments", "[]CreatePartitionsAssignment", "0+", nullable="0+", fields=[
                field("BrokerIds", "[]int32", "0+", entity_type="brokerId"),
            ]),
        ]),
        field("TimeoutMs", "int32", "0+"),
        field("ValidateOnly", "bool", "0+"),
    ],
)

CREATE_PARTITIONS_RESPONSE = message(
    "CreatePartitionsResponse", 37, Kind.RESPONSE, valid="0-3", flexible="2+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]CreatePartitionsTopicResult", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+", default="null"),
        ]),
    ],
)

# ------------------------------------------------------------------ DescribeTopicPartitions

_CURSOR = [
    field("TopicName", "string", "0+", entity_type="topicName"),
    field("PartitionIndex", "int32", "0+"),
]

DESCRIBE_TOPIC_PARTITIONS_REQUEST = message(
    "DescribeTopicPartitionsRequest", 75, Kind.REQUEST, valid="0", flexible="0+",
    # KIP-966: the paged topic description (brokers only).
    fields=[
        field("Topics", "[]TopicRequest", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
        ]),
        field("ResponsePartitionLimit", "int32", "0+", default=2000),
        field("Cursor", "Cursor", "0+", nullable="0+", default="null", fields=list(_CURSOR)),
    ],
)

DESCRIBE_TOPIC_PARTITIONS_RESPONSE = message(
    "DescribeTopicPartitionsResponse", 75, Kind.RESPONSE, valid="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+", ignorable=True),
        field("Topics", "[]DescribeTopicPartitionsResponseTopic", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("Name", "string", "0+", nullable="0+", entity_type="topicName"),
            field("TopicId", "uuid", "0+", ignorable=True),
            field("IsInternal", "bool", "0+", default=False, ignorable=True),
            field("Partitions", "[]DescribeTopicPartitionsResponsePartition", "0+", fields=[
                field("ErrorCode", "int16", "0+"),
                field("PartitionIndex", "int32", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+", default=-1, ignorable=True),
                field("ReplicaNodes", "[]int32", "0+", entity_type="brokerId"),
                field("IsrNodes", "[]int32", "0+", entity_type="brokerId"),
                field("EligibleLeaderReplicas", "[]int32", "0+", nullable="0+", default="null",
                      entity_type="brokerId"),
                field("LastKnownElr", "[]int32", "0+", nullable="0+", default="null", entity_type="brokerId"),
                field("OfflineReplicas", "[]int32", "0+", ignorable=True, entity_type="brokerId"),
            ]),
            field("TopicAuthorizedOperations", "int32", "0+", default=-2147483648),
        ]),
        field("NextCursor", "Cursor", "0+", nullable="0+", default="null", fields=list(_CURSOR)),
    ],
)

SPECS = (
    METADATA_REQUEST,
    METADATA_RESPONSE,
    CREATE_TOPICS_REQUEST,
    CREATE_TOPICS_RESPONSE,
    DELETE_TOPICS_REQUEST,
    DELETE_TOPICS_RESPONSE,
    CREATE_PARTITIONS_REQUEST,
    CREATE_PARTITIONS_RESPONSE,
    DESCRIBE_TOPIC_PARTITIONS_REQUEST,
    DESCRIBE_TOPIC_PARTITIONS_RESPONSE,
)
