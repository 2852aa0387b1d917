"""The data path: Produce (apiKey 0), Fetch (apiKey 1) and ListOffsets (apiKey 2).

Every version Kafka ever defined is declared, including the ones KIP-896 removed from the
broker in 4.0 (Produce v0-2, Fetch v0-3, ListOffsets v0): a broker still has to recognise
them to answer UNSUPPORTED_VERSION properly (and Produce v0-2 stay advertised, KAFKA-18659).
"""

from kraftwerk.protocol.schema import Kind, field, message

# ---------------------------------------------------------------------------------- Produce

PRODUCE_REQUEST = message(
    "ProduceRequest", 0, Kind.REQUEST, valid="0-13", flexible="9+",
    # v1-2 same as v0. v3 adds TransactionalId (and record batch format v2). v4-8 same layout
    # (new errors, zstd at v7, KIP-467 response fields at v8). v9 flexible. v10-12 same
    # (KIP-951, KIP-890). v13 identifies topics by id instead of name (KIP-516).
    fields=[
        field("TransactionalId", "string", "3+", nullable="3+", default="null",
              entity_type="transactionalId"),
        field("Acks", "int16", "0+"),
        field("TimeoutMs", "int32", "0+"),
        field("TopicData", "[]TopicProduceData", "0+", fields=[
            field("Name", "string", "0-12", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("PartitionData", "[]PartitionProduceData", "0+", fields=[
                field("Index", "int32", "0+"),
                field("Records", "records", "0+", nullable="0+"),
            ]),
        ]),
    ],
)

_NODE_ENDPOINT_V10 = [
    field("NodeId", "int32", "10+", entity_type="brokerId"),
    field("Host", "string", "10+"),
    field("Port", "int32", "10+"),
    field("Rack", "string", "10+", nullable="10+", default="null"),
]

PRODUCE_RESPONSE = message(
    "ProduceResponse", 0, Kind.RESPONSE, valid="0-13", flexible="9+",
    # v1 adds ThrottleTimeMs, v2 LogAppendTimeMs, v5 LogStartOffset, v8 RecordErrors and
    # ErrorMessage (KIP-467), v9 flexible, v10 CurrentLeader and NodeEndpoints as tagged
    # fields (KIP-951), v13 TopicId replaces Name (KIP-516).
    fields=[
        field("Responses", "[]TopicProduceResponse", "0+", fields=[
            field("Name", "string", "0-12", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("PartitionResponses", "[]PartitionProduceResponse", "0+", fields=[
                field("Index", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("BaseOffset", "int64", "0+"),
                field("LogAppendTimeMs", "int64", "2+", default=-1, ignorable=True),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("RecordErrors", "[]BatchIndexAndErrorMessage", "8+", ignorable=True, fields=[
                    field("BatchIndex", "int32", "8+"),
                    field("BatchIndexErrorMessage", "string", "8+", nullable="8+", default="null"),
                ]),
                field("ErrorMessage", "string", "8+", nullable="8+", default="null", ignorable=True),
                field("CurrentLeader", "LeaderIdAndEpoch", "10+", tagged="10+", tag=0, fields=[
                    field("LeaderId", "int32", "10+", default=-1, entity_type="brokerId"),
                    field("LeaderEpoch", "int32", "10+", default=-1),
                ]),
            ]),
        ]),
        field("ThrottleTimeMs", "int32", "1+", default=0, ignorable=True),
        field("NodeEndpoints", "[]NodeEndpoint", "10+", tagged="10+", tag=0, fields=_NODE_ENDPOINT_V10),
    ],
)

# ------------------------------------------------------------------------------------ Fetch

FETCH_REQUEST = message(
    "FetchRequest", 1, Kind.REQUEST, valid="0-18", flexible="12+",
    # v1-2 same as v0. v3 MaxBytes. v4 IsolationLevel. v5 LogStartOffset. v7 incremental fetch
    # sessions (SessionId, SessionEpoch, ForgottenTopicsData). v9 CurrentLeaderEpoch (KIP-320).
    # v11 RackId (KIP-392). v12 flexible, ClusterId tag 0 and LastFetchedEpoch (KIP-595).
    # v13 topic ids (KIP-516). v15 ReplicaState tag 1 replaces ReplicaId (KIP-903).
    # v17 ReplicaDirectoryId tag 0 (KIP-853). v18 HighWatermark tag 1 (KIP-1166).
    fields=[
        field("ClusterId", "string", "12+", nullable="12+", default="null", tagged="12+", tag=0,
              ignorable=True),
        field("ReplicaId", "int32", "0-14", default=-1, entity_type="brokerId"),
        field("ReplicaState", "ReplicaState", "15+", tagged="15+", tag=1, fields=[
            field("ReplicaId", "int32", "15+", default=-1, entity_type="brokerId"),
            field("ReplicaEpoch", "int64", "15+", default=-1),
        ]),
        field("MaxWaitMs", "int32", "0+"),
        field("MinBytes", "int32", "0+"),
        field("MaxBytes", "int32", "3+", default=0x7FFFFFFF, ignorable=True),
        field("IsolationLevel", "int8", "4+", default=0, ignorable=True),
        field("SessionId", "int32", "7+", default=0, ignorable=True),
        field("SessionEpoch", "int32", "7+", default=-1, ignorable=True),
        field("Topics", "[]FetchTopic", "0+", fields=[
            field("Topic", "string", "0-12", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]FetchPartition", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "9+", default=-1, ignorable=True),
                field("FetchOffset", "int64", "0+"),
                field("LastFetchedEpoch", "int32", "12+", default=-1),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("PartitionMaxBytes", "int32", "0+"),
                field("ReplicaDirectoryId", "uuid", "17+", tagged="17+", tag=0, ignorable=True),
                field("HighWatermark", "int64", "18+", default=0x7FFFFFFFFFFFFFFF, tagged="18+", tag=1,
                      ignorable=True),
            ]),
        ]),
        field("ForgottenTopicsData", "[]ForgottenTopic", "7+", fields=[
            field("Topic", "string", "7-12", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]int32", "7+"),
        ]),
        field("RackId", "string", "11+", default="", ignorable=True),
    ],
)

FETCH_RESPONSE = message(
    "FetchResponse", 1, Kind.RESPONSE, valid="0-18", flexible="12+",
    # v1 ThrottleTimeMs. v4 LastStableOffset and AbortedTransactions. v5 LogStartOffset.
    # v7 ErrorCode and SessionId. v11 PreferredReadReplica. v12 flexible with DivergingEpoch,
    # CurrentLeader and SnapshotId tagged (tags 0, 1, 2). v13 TopicId replaces Topic.
    # v16 NodeEndpoints tag 0 (KIP-951). v14, v15, v17 and v18 change nothing here.
    fields=[
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("ErrorCode", "int16", "7+", ignorable=True),
        field("SessionId", "int32", "7+", default=0),
        field("Responses", "[]FetchableTopicResponse", "0+", fields=[
            field("Topic", "string", "0-12", ignorable=True, entity_type="topicName"),
            field("TopicId", "uuid", "13+", ignorable=True),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("HighWatermark", "int64", "0+"),
                field("LastStableOffset", "int64", "4+", default=-1, ignorable=True),
                field("LogStartOffset", "int64", "5+", default=-1, ignorable=True),
                field("DivergingEpoch", "EpochEndOffset", "12+", tagged="12+", tag=0, fields=[
                    field("Epoch", "int32", "12+", default=-1),
                    field("EndOffset", "int64", "12+", default=-1),
                ]),
                field("CurrentLeader", "LeaderIdAndEpoch", "12+", tagged="12+", tag=1, fields=[
                    field("LeaderId", "int32", "12+", default=-1, entity_type="brokerId"),
                    field("LeaderEpoch", "int32", "12+", default=-1),
                ]),
                field("SnapshotId", "SnapshotId", "12+", tagged="12+", tag=2, fields=[
                    field("EndOffset", "int64", "0+", default=-1),
                    field("Epoch", "int32", "0+", default=-1),
                ]),
                field("AbortedTransactions", "[]AbortedTransaction", "4+", nullable="4+", ignorable=True,
                      fields=[
                          field("ProducerId", "int64", "4+", entity_type="producerId"),
                          field("FirstOffset", "int64", "4+"),
                      ]),
                field("PreferredReadReplica", "int32", "11+", default=-1, entity_type="brokerId"),
                field("Records", "records", "0+", nullable="0+"),
            ]),
        ]),
        field("NodeEndpoints", "[]NodeEndpoint", "16+", tagged="16+", tag=0, fields=[
            field("NodeId", "int32", "16+", entity_type="brokerId"),
            field("Host", "string", "16+"),
            field("Port", "int32", "16+"),
            field("Rack", "string", "16+", nullable="16+", default="null"),
        ]),
    ],
)

# ------------------------------------------------------------------------------ ListOffsets

LIST_OFFSETS_REQUEST = message(
    "ListOffsetsRequest", 2, Kind.REQUEST, valid="0-11", flexible="6+",
    # v1 drops MaxNumOffsets (one offset per partition). v2 IsolationLevel. v4
    # CurrentLeaderEpoch. v6 flexible. v7-9 new timestamp sentinels only (max timestamp,
    # local log start, last tiered). v10 TimeoutMs (KIP-1075). v11 earliest pending upload
    # offset sentinel (KIP-1023), no layout change.
    fields=[
        field("ReplicaId", "int32", "0+", entity_type="brokerId"),
        field("IsolationLevel", "int8", "2+"),
        field("Topics", "[]ListOffsetsTopic", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]ListOffsetsPartition", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "4+", default=-1, ignorable=True),
                field("Timestamp", "int64", "0+"),
                field("MaxNumOffsets", "int32", "0", default=1),
            ]),
        ]),
        field("TimeoutMs", "int32", "10+", ignorable=True),
    ],
)

LIST_OFFSETS_RESPONSE = message(
    "ListOffsetsResponse", 2, Kind.RESPONSE, valid="0-11", flexible="6+",
    # v1 replaces OldStyleOffsets with a single Timestamp/Offset pair. v2 ThrottleTimeMs.
    # v4 LeaderEpoch. v6 flexible. v7-11 no layout change.
    fields=[
        field("ThrottleTimeMs", "int32", "2+", ignorable=True),
        field("Topics", "[]ListOffsetsTopicResponse", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]ListOffsetsPartitionResponse", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("OldStyleOffsets", "[]int64", "0"),
                field("Timestamp", "int64", "1+", default=-1),
                field("Offset", "int64", "1+", default=-1),
                field("LeaderEpoch", "int32", "4+", default=-1),
            ]),
        ]),
    ],
)

SPECS = (
    PRODUCE_REQUEST,
    PRODUCE_RESPONSE,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    LIST_OFFSETS_REQUEST,
    LIST_OFFSETS_RESPONSE,
)
