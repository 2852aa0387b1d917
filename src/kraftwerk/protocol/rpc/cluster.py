"""Cluster membership RPCs: DescribeCluster (apiKey 60), BrokerRegistration (62), BrokerHeartbeat (63),
UnregisterBroker (64), ControllerRegistration (70) and Envelope (58). All are flexible from v0."""

from kraftwerk.protocol.schema import Kind, field, message

DESCRIBE_CLUSTER_REQUEST = message(
    "DescribeClusterRequest", 60, Kind.REQUEST, valid="0-2", flexible="0+",
    # v1 adds EndpointType (KIP-919); v2 adds IncludeFencedBrokers (KIP-1073).
    fields=[
        field("IncludeClusterAuthorizedOperations", "bool", "0+"),
        field("EndpointType", "int8", "1+", default=1),  # 1 brokers, 2 controllers
        field("IncludeFencedBrokers", "bool", "2+"),
    ],
)

DESCRIBE_CLUSTER_RESPONSE = message(
    "DescribeClusterResponse", 60, Kind.RESPONSE, valid="0-2", flexible="0+",
    # v1 adds EndpointType; v2 adds IsFenced per broker.
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+", default="null"),
        field("EndpointType", "int8", "1+", default=1),
        field("ClusterId", "string", "0+"),
        field("ControllerId", "int32", "0+", default=-1, entity_type="brokerId"),
        field("Brokers", "[]DescribeClusterBroker", "0+", fields=[
            field("BrokerId", "int32", "0+", entity_type="brokerId"),
            field("Host", "string", "0+"),
            field("Port", "int32", "0+"),
            field("Rack", "string", "0+", nullable="0+", default="null"),
            field("IsFenced", "bool", "2+"),
        ]),
        field("ClusterAuthorizedOperations", "int32", "0+", default=-2147483648),
    ],
)

BROKER_REGISTRATION_REQUEST = message(
    "BrokerRegistrationRequest", 62, Kind.REQUEST, valid="0-6", flexible="0+",
    # v1 adds IsMigratingZkBroker (KIP-866); v2 adds LogDirs (KIP-858); v3 adds PreviousBrokerEpoch
    # (KIP-966); v4 changes no bytes (features with MinSupportedVersion 0 may be sent, KAFKA-17011);
    # v5 adds the tagged CordonedLogDirs (KIP-1066, PR #21273; apache/kafka PR #22070 later removed
    # it from trunk in favour of BrokerHeartbeat v2).
    # v6 is kraftwerk's KIP-1294 extension (not in Apache Kafka): StaticConfigs, the broker's
    # non-sensitive static configs, exactly as the KIP text declares it: a plain (untagged) field
    # after the v5 body, its struct a Name and a nullable Value (docs/compatibility.md).
    # RegisterBrokerRecord v5 carries it as tagged field 2, as the KIP text says.
    fields=[
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("ClusterId", "string", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("Listeners", "[]Listener", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]Feature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
        field("Rack", "string", "0+", nullable="0+"),
        field("IsMigratingZkBroker", "bool", "1+", default=False),
        field("LogDirs", "[]uuid", "2+", ignorable=True),
        field("PreviousBrokerEpoch", "int64", "3+", default=-1, ignorable=True),
        field("CordonedLogDirs", "[]uuid", "5+", tagged="5+", tag=0),
        field("StaticConfigs", "[]StaticConfig", "6+", fields=[
            field("Name", "string", "6+"),
            field("Value", "string", "6+", nullable="6+"),
        ]),
    ],
)

BROKER_REGISTRATION_RESPONSE = message(
    "BrokerRegistrationResponse", 62, Kind.RESPONSE, valid="0-6", flexible="0+",
    # Versions 1-6 are the same as v0 (their changes are in the request).
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("BrokerEpoch", "int64", "0+", default=-1),
    ],
)

BROKER_HEARTBEAT_REQUEST = message(
    "BrokerHeartbeatRequest", 63, Kind.REQUEST, valid="0-2", flexible="0+",
    # v1 adds the tagged OfflineLogDirs (KIP-858); v2 adds the tagged CordonedLogDirs (KIP-1066),
    # null until the broker has caught up (shape after apache/kafka PR #22070).
    fields=[
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
        field("BrokerEpoch", "int64", "0+", default=-1),
        field("CurrentMetadataOffset", "int64", "0+"),
        field("WantFence", "bool", "0+"),
        field("WantShutDown", "bool", "0+"),
        field("OfflineLogDirs", "[]uuid", "1+", tagged="1+", tag=0),
        field("CordonedLogDirs", "[]uuid", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
    ],
)

BROKER_HEARTBEAT_RESPONSE = message(
    "BrokerHeartbeatResponse", 63, Kind.RESPONSE, valid="0-2", flexible="0+",
    # Versions 1 and 2 are the same as v0.
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("IsCaughtUp", "bool", "0+", default=False),
        field("IsFenced", "bool", "0+", default=True),
        field("ShouldShutDown", "bool", "0+"),
    ],
)

UNREGISTER_BROKER_REQUEST = message(
    "UnregisterBrokerRequest", 64, Kind.REQUEST, valid="0", flexible="0+",
    fields=[
        field("BrokerId", "int32", "0+", entity_type="brokerId"),
    ],
)

UNREGISTER_BROKER_RESPONSE = message(
    "UnregisterBrokerResponse", 64, Kind.RESPONSE, valid="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ],
)

CONTROLLER_REGISTRATION_REQUEST = message(
    "ControllerRegistrationRequest", 70, Kind.REQUEST, valid="0", flexible="0+",
    # KIP-919 (Kafka 3.7).
    fields=[
        field("ControllerId", "int32", "0+"),
        field("IncarnationId", "uuid", "0+"),
        field("ZkMigrationReady", "bool", "0+"),
        field("Listeners", "[]Listener", "0+", fields=[
            field("Name", "string", "0+"),
            field("Host", "string", "0+"),
            field("Port", "uint16", "0+"),
            field("SecurityProtocol", "int16", "0+"),
        ]),
        field("Features", "[]Feature", "0+", fields=[
            field("Name", "string", "0+"),
            field("MinSupportedVersion", "int16", "0+"),
            field("MaxSupportedVersion", "int16", "0+"),
        ]),
    ],
)

CONTROLLER_REGISTRATION_RESPONSE = message(
    "ControllerRegistrationResponse", 70, Kind.RESPONSE, valid="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
    ],
)

ENVELOPE_REQUEST = message(
    "EnvelopeRequest", 58, Kind.REQUEST, valid="0", flexible="0+",
    # KIP-590 request forwarding: a whole serialized request (header and body) inside.
    fields=[
        field("RequestData", "bytes", "0+"),
        field("RequestPrincipal", "bytes", "0+", nullable="0+"),
        field("ClientHostAddress", "bytes", "0+"),
    ],
)

ENVELOPE_RESPONSE = message(
    "EnvelopeResponse", 58, Kind.RESPONSE, valid="0", flexible="0+",
    # No ThrottleTimeMs: the embedded response carries its own.
    fields=[
        field("ResponseData", "bytes", "0+", nullable="0+", default="null"),
        field("ErrorCode", "int16", "0+"),
    ],
)

SPECS = (
    DESCRIBE_CLUSTER_REQUEST,
    DESCRIBE_CLUSTER_RESPONSE,
    BROKER_REGISTRATION_REQUEST,
    BROKER_REGISTRATION_RESPONSE,
    BROKER_HEARTBEAT_REQUEST,
    BROKER_HEARTBEAT_RESPONSE,
    UNREGISTER_BROKER_REQUEST,
    UNREGISTER_BROKER_RESPONSE,
    CONTROLLER_REGISTRATION_REQUEST,
    CONTROLLER_REGISTRATION_RESPONSE,
    ENVELOPE_REQUEST,
    ENVELOPE_RESPONSE,
)
