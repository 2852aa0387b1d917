"""KRaft's own RPCs (KIP-595), with the KIP-853 dynamic-quorum and KIP-996 pre-vote additions:
Vote (apiKey 52), BeginQuorumEpoch (53), EndQuorumEpoch (54), DescribeQuorum (55),
FetchSnapshot (59), AddRaftVoter (80) and RemoveRaftVoter (81)."""

from kraftwerk.protocol.schema import Field, Kind, MessageSpec, field, message


def _node_endpoints(since: str) -> Field:
    """KIP-853's tagged (tag 0) list of leader endpoints that raft responses carry."""
    return field("NodeEndpoints", "[]NodeEndpoint", since, tagged=since, tag=0, fields=[
        field("NodeId", "int32", since, entity_type="brokerId"),
        field("Host", "string", since),
        field("Port", "uint16", since),
    ])


def _leader_endpoints(since: str) -> Field:
    """KIP-853's list of the sending leader's listeners, in Begin/EndQuorumEpoch requests."""
    return field("LeaderEndpoints", "[]LeaderEndpoint", since, ignorable=True, fields=[
        field("Name", "string", since),
        field("Host", "string", since),
        field("Port", "uint16", since),
    ])


# ------------------------------------------------------------------------------------- Vote

VOTE_REQUEST = message(
    "VoteRequest", 52, Kind.REQUEST, valid="0-2", flexible="0+",
    # v1 (KIP-853) VoterId, ReplicaDirectoryId and VoterDirectoryId; the candidate fields were
    # renamed Replica* (same wire). v2 (KIP-996) PreVote.
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default="null"),
        field("VoterId", "int32", "1+", default=-1, ignorable=True, entity_type="brokerId"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ReplicaEpoch", "int32", "0+"),
                field("ReplicaId", "int32", "0+", entity_type="brokerId"),
                field("ReplicaDirectoryId", "uuid", "1+", ignorable=True),
                field("VoterDirectoryId", "uuid", "1+", ignorable=True),
                field("LastOffsetEpoch", "int32", "0+"),
                field("LastOffset", "int64", "0+"),
                # Not ignorable: a pre-vote must never reach a v1 voter as a real vote.
                field("PreVote", "bool", "2+"),
            ]),
        ]),
    ],
)

VOTE_RESPONSE = message(
    "VoteResponse", 52, Kind.RESPONSE, valid="0-2", flexible="0+",
    # v1 NodeEndpoints tag 0. v2 same layout.
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
                field("VoteGranted", "bool", "0+"),
            ]),
        ]),
        _node_endpoints("1+"),
    ],
)

# ------------------------------------------------------------------------- BeginQuorumEpoch

BEGIN_QUORUM_EPOCH_REQUEST = message(
    "BeginQuorumEpochRequest", 53, Kind.REQUEST, valid="0-1", flexible="1+",
    # v0 is not flexible. v1 (KIP-853) flexible, VoterId, VoterDirectoryId, LeaderEndpoints.
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default="null"),
        field("VoterId", "int32", "1+", default=-1, ignorable=True, entity_type="brokerId"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("VoterDirectoryId", "uuid", "1+", ignorable=True),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        _leader_endpoints("1+"),
    ],
)

BEGIN_QUORUM_EPOCH_RESPONSE = message(
    "BeginQuorumEpochResponse", 53, Kind.RESPONSE, valid="0-1", flexible="1+",
    # v1 flexible, NodeEndpoints tag 0.
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        _node_endpoints("1+"),
    ],
)

# --------------------------------------------------------------------------- EndQuorumEpoch

END_QUORUM_EPOCH_REQUEST = message(
    "EndQuorumEpochRequest", 54, Kind.REQUEST, valid="0-1", flexible="1+",
    # v0 is not flexible. v1 (KIP-853) flexible; PreferredCandidates (with directory ids)
    # replace PreferredSuccessors; LeaderEndpoints.
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default="null"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
                field("PreferredSuccessors", "[]int32", "0", ignorable=True, entity_type="brokerId"),
                field("PreferredCandidates", "[]ReplicaInfo", "1+", ignorable=True, fields=[
                    field("CandidateId", "int32", "1+", entity_type="brokerId"),
                    field("CandidateDirectoryId", "uuid", "1+", ignorable=True),
                ]),
            ]),
        ]),
        _leader_endpoints("1+"),
    ],
)

END_QUORUM_EPOCH_RESPONSE = message(
    "EndQuorumEpochResponse", 54, Kind.RESPONSE, valid="0-1", flexible="1+",
    # v1 flexible, NodeEndpoints tag 0.
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
            ]),
        ]),
        _node_endpoints("1+"),
    ],
)

# --------------------------------------------------------------------------- DescribeQuorum

DESCRIBE_QUORUM_REQUEST = message(
    "DescribeQuorumRequest", 55, Kind.REQUEST, valid="0-2", flexible="0+",
    # v1 and v2 only change the response.
    fields=[
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
            ]),
        ]),
    ],
)


def _replica_state() -> list[Field]:
    return [
        field("ReplicaId", "int32", "0+", entity_type="brokerId"),
        field("ReplicaDirectoryId", "uuid", "2+", ignorable=True),
        field("LogEndOffset", "int64", "0+"),
        field("LastFetchTimestamp", "int64", "1+", default=-1, ignorable=True),
        field("LastCaughtUpTimestamp", "int64", "1+", default=-1, ignorable=True),
    ]


DESCRIBE_QUORUM_RESPONSE = message(
    "DescribeQuorumResponse", 55, Kind.RESPONSE, valid="0-2", flexible="0+",
    # v1 (KIP-836) LastFetchTimestamp and LastCaughtUpTimestamp per replica. v2 (KIP-853)
    # ErrorMessage fields, ReplicaDirectoryId and the Nodes listener list.
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
        field("Topics", "[]TopicData", "0+", fields=[
            field("TopicName", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionData", "0+", fields=[
                field("PartitionIndex", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("ErrorMessage", "string", "2+", nullable="2+", ignorable=True),
                field("LeaderId", "int32", "0+", entity_type="brokerId"),
                field("LeaderEpoch", "int32", "0+"),
                field("HighWatermark", "int64", "0+"),
                field("CurrentVoters", "[]ReplicaState", "0+", fields=_replica_state()),
                field("Observers", "[]ReplicaState", "0+", fields=_replica_state()),
            ]),
        ]),
        field("Nodes", "[]Node", "2+", ignorable=True, fields=[
            field("NodeId", "int32", "2+", entity_type="brokerId"),
            field("Listeners", "[]Listener", "2+", fields=[
                field("Name", "string", "2+"),
                field("Host", "string", "2+"),
                field("Port", "uint16", "2+"),
            ]),
        ]),
    ],
)

# ---------------------------------------------------------------------------- FetchSnapshot

FETCH_SNAPSHOT_REQUEST = message(
    "FetchSnapshotRequest", 59, Kind.REQUEST, valid="0-1", flexible="0+",
    # v1 (KIP-853) ReplicaDirectoryId tag 0 per partition.
    fields=[
        field("ClusterId", "string", "0+", nullable="0+", default="null", tagged="0+", tag=0),
        field("ReplicaId", "int32", "0+", default=-1, entity_type="brokerId"),
        field("MaxBytes", "int32", "0+", default=0x7FFFFFFF),
        field("Topics", "[]TopicSnapshot", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionSnapshot", "0+", fields=[
                field("Partition", "int32", "0+"),
                field("CurrentLeaderEpoch", "int32", "0+"),
                field("SnapshotId", "SnapshotId", "0+", fields=[
                    field("EndOffset", "int64", "0+"),
                    field("Epoch", "int32", "0+"),
                ]),
                field("Position", "int64", "0+"),
                field("ReplicaDirectoryId", "uuid", "1+", tagged="1+", tag=0, ignorable=True),
            ]),
        ]),
    ],
)

FETCH_SNAPSHOT_RESPONSE = message(
    "FetchSnapshotResponse", 59, Kind.RESPONSE, valid="0-1", flexible="0+",
    # v1 (KIP-853) NodeEndpoints tag 0.
    fields=[
        field("ThrottleTimeMs", "int32", "0+", ignorable=True),
        field("ErrorCode", "int16", "0+"),
        field("Topics", "[]TopicSnapshot", "0+", fields=[
            field("Name", "string", "0+", entity_type="topicName"),
            field("Partitions", "[]PartitionSnapshot", "0+", fields=[
                field("Index", "int32", "0+"),
                field("ErrorCode", "int16", "0+"),
                field("SnapshotId", "SnapshotId", "0+", fields=[
                    field("EndOffset", "int64", "0+"),
                    field("Epoch", "int32", "0+"),
                ]),
                field("CurrentLeader", "LeaderIdAndEpoch", "0+", tagged="0+", tag=0, fields=[
                    field("LeaderId", "int32", "0+", entity_type="brokerId"),
                    field("LeaderEpoch", "int32", "0+"),
                ]),
                field("Size", "int64", "0+"),
                field("Position", "int64", "0+"),
                field("UnalignedRecords", "records", "0+"),
            ]),
        ]),
        _node_endpoints("1+"),
    ],
)

# ----------------------------------------------------------- AddRaftVoter / RemoveRaftVoter

ADD_RAFT_VOTER_REQUEST = message(
    "AddRaftVoterRequest", 80, Kind.REQUEST, valid="0-1", flexible="0+",
    # v1 (KIP-1186) AckWhenCommitted: false answers once the leader wrote the new voter set.
    fields=[
        field("ClusterId", "string", "0+", nullable="0+"),
        field("TimeoutMs", "int32", "0+"),
        field("VoterId", "int32", "0+", entity_type="brokerId"),
        field("VoterDirectoryId", "uuid", "0+"),
        field("Listeners", "[]Listener", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
        ]),
        field("AckWhenCommitted", "bool", "1+", default=True),
    ],
)


def _voter_change_response(name: str, api_key: int, valid: str) -> MessageSpec:
    return message(
        name, api_key, Kind.RESPONSE, valid=valid, flexible="0+",
        fields=[
            field("ThrottleTimeMs", "int32", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+", ignorable=True),
        ],
    )


ADD_RAFT_VOTER_RESPONSE = _voter_change_response("AddRaftVoterResponse", 80, "0-1")

REMOVE_RAFT_VOTER_REQUEST = message(
    "RemoveRaftVoterRequest", 81, Kind.REQUEST, valid="0", flexible="0+",
    fields=[
        field("ClusterId", "string", "0+", nullable="0+"),
        field("VoterId", "int32", "0+", entity_type="brokerId"),
        field("VoterDirectoryId", "uuid", "0+"),
    ],
)

REMOVE_RAFT_VOTER_RESPONSE = _voter_change_response("RemoveRaftVoterResponse", 81, "0")

SPECS = (
    VOTE_REQUEST,
    VOTE_RESPONSE,
    BEGIN_QUORUM_EPOCH_REQUEST,
    BEGIN_QUORUM_EPOCH_RESPONSE,
    END_QUORUM_EPOCH_REQUEST,
    END_QUORUM_EPOCH_RESPONSE,
    DESCRIBE_QUORUM_REQUEST,
    DESCRIBE_QUORUM_RESPONSE,
    FETCH_SNAPSHOT_REQUEST,
    FETCH_SNAPSHOT_RESPONSE,
    ADD_RAFT_VOTER_REQUEST,
    ADD_RAFT_VOTER_RESPONSE,
    REMOVE_RAFT_VOTER_REQUEST,
    REMOVE_RAFT_VOTER_RESPONSE,
)
