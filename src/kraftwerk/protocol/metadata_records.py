"""The metadata records of a KRaft metadata log (Kafka's ``metadata`` schema set).

Every record a 3.3-4.3 metadata log or snapshot can hold, with every version Kafka defined, declared
from the facts of ``metadata/src/main/resources/common/metadata/*.json``. The api key is the
record's ``MetadataRecordType`` id; ``record_type_name`` is that enum's name. Api keys 6, 13 and 16
belonged to records removed before KRaft shipped (AccessControlRecord, RemoveFeatureLevelRecord,
...) and never occur in a released log.

One kraftwerk extension (KIP-1294): RegisterBrokerRecord v5 adds the tagged ``StaticConfigs``
field (tag 2, as the KIP text numbers it). Kafka 4.3 stops at v4.
"""

from kraftwerk.protocol.schema import Field, Kind, MessageSpec, field, message


def _record(name: str, api_key: int, type_name: str, valid: str, fields: list[Field]) -> MessageSpec:
    # Every KRaft-era metadata record is flexible from version 0.
    return message(name, api_key, Kind.METADATA, valid=valid, flexible="0+", fields=fields,
                   record_type_name=type_name)


def _endpoint_fields() -> list[Field]:
    return [
        field("Name", "string", "0+"),
        field("Host", "string", "0+"),
        field("Port", "uint16", "0+"),
        field("SecurityProtocol", "int16", "0+"),
    ]


def _feature_range_fields() -> list[Field]:
    return [
        field("Name", "string", "0+"),
        field("MinSupportedVersion", "int16", "0+"),
        field("MaxSupportedVersion", "int16", "0+"),
    ]


REGISTER_BROKER_RECORD = _record(
    "RegisterBrokerRecord", 0, "REGISTER_BROKER_RECORD", "0-5",
    # v1 InControlledShutdown (3.3-IV3), v2 IsMigratingZkBroker (3.4-IV0), v3 LogDirs (3.7-IV2),
    # v4 CordonedLogDirs (KIP-1066, 4.3-IV0), v5 StaticConfigs (KIP-1294, kraftwerk).
    [
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("IsMigratingZkBroker", "bool", "2+", default=False),
        field("IncarnationId", "uuid", "0+"),
        field("BrokerEpoch", "int64", "0+"),
        field("EndPoints", "[]BrokerEndpoint", "0+", fields=_endpoint_fields()),
        field("Features", "[]BrokerFeature", "0+", fields=_feature_range_fields()),
        field("Rack", "string", "0+", nullable="0+"),
        field("Fenced", "bool", "0+", default=True),
        field("InControlledShutdown", "bool", "1+", default=False),
        field("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
        # Kafka 4.3 (after KAFKA-20441) declares CordonedLogDirs nullable with a null default,
        # like BrokerRegistrationChangeRecord's: null = not known. A non-null empty list is written.
        field("CordonedLogDirs", "[]uuid", "4+", nullable="4+", tagged="4+", tag=1, default="null"),
        # KIP-1294: the broker's static configs that have metadata-version-aware validators. The
        # KIP text gives tag 2; a null Value is a config whose value is not reported (sensitive).
        field("StaticConfigs", "[]BrokerStaticConfig", "5+", tagged="5+", tag=2, fields=[
            field("Name", "string", "5+"),
            field("Value", "string", "5+", nullable="5+"),
        ]),
    ],
)

UNREGISTER_BROKER_RECORD = _record(
    "UnregisterBrokerRecord", 1, "UNREGISTER_BROKER_RECORD", "0",
    [
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("BrokerEpoch", "int64", "0+"),
    ],
)

TOPIC_RECORD = _record(
    "TopicRecord", 2, "TOPIC_RECORD", "0",
    [
        field("Name", "string", "0+", entity_type="topicName"),
        field("TopicId", "uuid", "0+"),
    ],
)

PARTITION_RECORD = _record(
    "PartitionRecord", 3, "PARTITION_RECORD", "0-2",
    # v1 Directories (KIP-858, 3.7-IV2), v2 ELR and LastKnownElr (KIP-966, 4.0-IV1).
    [
        field("PartitionId", "int32", "0+", default=-1),
        field("TopicId", "uuid", "0+"),
        field("Replicas", "[]int32", "0+", entity_type="brokerId"),
        field("Isr", "[]int32", "0+"),
        field("RemovingReplicas", "[]int32", "0+", entity_type="brokerId"),
        field("AddingReplicas", "[]int32", "0+", entity_type="brokerId"),
        field("Leader", "int32", "0+", default=-1, entity_type="brokerId"),
        field("LeaderRecoveryState", "int8", "0+", tagged="0+", tag=0, default=0),
        field("LeaderEpoch", "int32", "0+", default=-1),
        field("PartitionEpoch", "int32", "0+", default=-1),
        field("Directories", "[]uuid", "1+"),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1,
              default="null", entity_type="brokerId"),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default="null",
              entity_type="brokerId"),
    ],
)

CONFIG_RECORD = _record(
    "ConfigRecord", 4, "CONFIG_RECORD", "0",
    [
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("Name", "string", "0+"),
        # A null value deletes the config.
        field("Value", "string", "0+", nullable="0+"),
    ],
)

PARTITION_CHANGE_RECORD = _record(
    "PartitionChangeRecord", 5, "PARTITION_CHANGE_RECORD", "0-2",
    # Every change is a tagged field whose default means "unchanged". v1 Directories (3.7-IV2),
    # v2 ELR and LastKnownElr (4.0-IV1). The tags are Kafka's: Directories 8, the ELR fields 6 and 7.
    [
        field("PartitionId", "int32", "0+", default=-1),
        field("TopicId", "uuid", "0+"),
        field("Isr", "[]int32", "0+", nullable="0+", tagged="0+", tag=0, default="null",
              entity_type="brokerId"),
        field("Leader", "int32", "0+", tagged="0+", tag=1, default=-2, entity_type="brokerId"),
        field("Replicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=2, default="null",
              entity_type="brokerId"),
        field("RemovingReplicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=3, default="null",
              entity_type="brokerId"),
        field("AddingReplicas", "[]int32", "0+", nullable="0+", tagged="0+", tag=4, default="null",
              entity_type="brokerId"),
        field("LeaderRecoveryState", "int8", "0+", tagged="0+", tag=5, default=-1),
        field("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null"),
        field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6,
              default="null", entity_type="brokerId"),
        field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default="null",
              entity_type="brokerId"),
    ],
)

FENCE_BROKER_RECORD = _record(
    "FenceBrokerRecord", 7, "FENCE_BROKER_RECORD", "0",
    # Replaced by BrokerRegistrationChangeRecord from 3.3-IV2; still replayed.
    [
        field("Id", "int32", "0+", entity_type="brokerId"),
        field("Epoch", "int64", "0+"),
    ],
)

UNFENCE_BROKER_RECORD = _record(
    "UnfenceBrokerRecord", 8, "UNFENCE_BROKER_RECORD", "0",
    [
        field("Id", "int32", "0+", entity_type="brokerId"),
        field("Epoch", "int64", "0+"),
    ],
)

REMOVE_TOPIC_RECORD = _record(
    "RemoveTopicRecord", 9, "REMOVE_TOPIC_RECORD", "0",
    [field("TopicId", "uuid", "0+")],
)

DELEGATION_TOKEN_RECORD = _record(
    "DelegationTokenRecord", 10, "DELEGATION_TOKEN_RECORD", "0",
    [
        field("Owner", "string", "0+"),
        field("Requester", "string", "0+"),
        field("Renewers", "[]string", "0+"),
        field("IssueTimestamp", "int64", "0+"),
        field("MaxTimestamp", "int64", "0+"),
        field("ExpirationTimestamp", "int64", "0+"),
        field("TokenId", "string", "0+"),
    ],
)

USER_SCRAM_CREDENTIAL_RECORD = _record(
    "UserScramCredentialRecord", 11, "USER_SCRAM_CREDENTIAL_RECORD", "0",
    [
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
        field("Salt", "bytes", "0+"),
        field("StoredKey", "bytes", "0+"),
        field("ServerKey", "bytes", "0+"),
        field("Iterations", "int32", "0+"),
    ],
)

FEATURE_LEVEL_RECORD = _record(
    "FeatureLevelRecord", 12, "FEATURE_LEVEL_RECORD", "0",
    [
        field("Name", "string", "0+"),
        field("FeatureLevel", "int16", "0+"),
    ],
)

CLIENT_QUOTA_RECORD = _record(
    "ClientQuotaRecord", 14, "CLIENT_QUOTA_RECORD", "0",
    [
        field("Entity", "[]EntityData", "0+", fields=[
            field("EntityType", "string", "0+"),
            field("EntityName", "string", "0+", nullable="0+"),
        ]),
        field("Key", "string", "0+"),
        field("Value", "float64", "0+"),
        field("Remove", "bool", "0+"),
    ],
)

PRODUCER_IDS_RECORD = _record(
    "ProducerIdsRecord", 15, "PRODUCER_IDS_RECORD", "0",
    [
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("NextProducerId", "int64", "0+"),
    ],
)

BROKER_REGISTRATION_CHANGE_RECORD = _record(
    "BrokerRegistrationChangeRecord", 17, "BROKER_REGISTRATION_CHANGE_RECORD", "0-3",
    # v1 InControlledShutdown, v2 LogDirs, v3 CordonedLogDirs (KIP-1066, 4.3-IV0; null = unchanged).
    [
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("BrokerEpoch", "int64", "0+"),
        # -1 unfenced, 0 no change, 1 fenced.
        field("Fenced", "int8", "0+", tagged="0+", tag=0),
        # 0 no change, 1 in controlled shutdown.
        field("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        field("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
        field("CordonedLogDirs", "[]uuid", "3+", nullable="3+", tagged="3+", tag=3, default="null"),
    ],
)

ACCESS_CONTROL_ENTRY_RECORD = _record(
    "AccessControlEntryRecord", 18, "ACCESS_CONTROL_ENTRY_RECORD", "0",
    [
        field("Id", "uuid", "0+"),
        field("ResourceType", "int8", "0+"),
        field("ResourceName", "string", "0+"),
        field("PatternType", "int8", "0+"),
        field("Principal", "string", "0+"),
        field("Host", "string", "0+"),
        field("Operation", "int8", "0+"),
        field("PermissionType", "int8", "0+"),
    ],
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = _record(
    "RemoveAccessControlEntryRecord", 19, "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", "0",
    [field("Id", "uuid", "0+")],
)

NO_OP_RECORD = _record("NoOpRecord", 20, "NO_OP_RECORD", "0", [])

ZK_MIGRATION_STATE_RECORD = _record(
    "ZkMigrationStateRecord", 21, "ZK_MIGRATION_STATE_RECORD", "0",
    # 0 NONE, 1 MIGRATION, 2 PRE_MIGRATION, 3 POST_MIGRATION (3.5+; 3.4 swapped 1 and 2).
    [field("ZkMigrationState", "int8", "0+")],
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = _record(
    "RemoveUserScramCredentialRecord", 22, "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", "0",
    [
        field("Name", "string", "0+"),
        field("Mechanism", "int8", "0+"),
    ],
)

BEGIN_TRANSACTION_RECORD = _record(
    "BeginTransactionRecord", 23, "BEGIN_TRANSACTION_RECORD", "0",
    [field("Name", "string", "0+", nullable="0+", tagged="0+", tag=0, default="null")],
)

END_TRANSACTION_RECORD = _record("EndTransactionRecord", 24, "END_TRANSACTION_RECORD", "0", [])

ABORT_TRANSACTION_RECORD = _record(
    "AbortTransactionRecord", 25, "ABORT_TRANSACTION_RECORD", "0",
    [field("Reason", "string", "0+", nullable="0+", tagged="0+", tag=0, default="null")],
)

REMOVE_DELEGATION_TOKEN_RECORD = _record(
    "RemoveDelegationTokenRecord", 26, "REMOVE_DELEGATION_TOKEN_RECORD", "0",
    [field("TokenId", "string", "0+")],
)

REGISTER_CONTROLLER_RECORD = _record(
    "RegisterControllerRecord", 27, "REGISTER_CONTROLLER_RECORD", "0",
    [
        field("ControllerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("ZkMigrationReady", "bool", "0+"),
        field("EndPoints", "[]ControllerEndpoint", "0+", fields=_endpoint_fields()),
        field("Features", "[]ControllerFeature", "0+", fields=_feature_range_fields()),
    ],
)

CLEAR_ELR_RECORD = _record(
    "ClearElrRecord", 28, "CLEAR_ELR_RECORD", "0",
    # An empty TopicName clears the ELRs of every topic.
    [field("TopicName", "string", "0+", entity_type="topicName")],
)

UNREGISTER_CONTROLLER_RECORD = _record(
    "UnregisterControllerRecord", 29, "UNREGISTER_CONTROLLER_RECORD", "0",
    # Kafka 4.4 (4.4-IV2); declared so logs of newer clusters still decode.
    [field("ControllerId", "int32", "0+")],
)

SPECS = (
    REGISTER_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    PARTITION_RECORD,
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    FENCE_BROKER_RECORD,
    UNFENCE_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    DELEGATION_TOKEN_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    FEATURE_LEVEL_RECORD,
    CLIENT_QUOTA_RECORD,
    PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD,
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    NO_OP_RECORD,
    ZK_MIGRATION_STATE_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD,
    REMOVE_DELEGATION_TOKEN_RECORD,
    REGISTER_CONTROLLER_RECORD,
    CLEAR_ELR_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
)
