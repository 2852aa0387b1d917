"""ApiVersions (apiKey 18): which API versions (and, from v3, which features) a node supports.

Versions 0-2 of the request are identical and empty. v3 is the first flexible version: the request
adds the client software name/version (KIP-511) and the response gains the KIP-584 feature tagged
fields. v4 changes no bytes; it marks a client that accepts SupportedFeatures with MinVersion 0
(KAFKA-17011). The response header stays v0 even at flexible versions (see ``header``).
"""

from kraftwerk.protocol.schema import Kind, field, message

API_VERSIONS_REQUEST = message(
    "ApiVersionsRequest", 18, Kind.REQUEST, valid="0-4", flexible="3+",
    fields=[
        field("ClientSoftwareName", "string", "3+", ignorable=True),
        field("ClientSoftwareVersion", "string", "3+", ignorable=True),
    ],
)

API_VERSIONS_RESPONSE = message(
    "ApiVersionsResponse", 18, Kind.RESPONSE, valid="0-4", flexible="3+",
    # v1 adds ThrottleTimeMs; v2 only changes throttling behaviour; v3 adds the tagged features.
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ApiKeys", "[]ApiVersion", "0+", fields=[
            field("ApiKey", "int16", "0+"),
            field("MinVersion", "int16", "0+"),
            field("MaxVersion", "int16", "0+"),
        ]),
        field("ThrottleTimeMs", "int32", "1+", ignorable=True),
        field("SupportedFeatures", "[]SupportedFeatureKey", "3+", tagged="3+", tag=0, ignorable=True, fields=[
            field("Name", "string", "3+"),
            field("MinVersion", "int16", "3+"),
            field("MaxVersion", "int16", "3+"),
        ]),
        field("FinalizedFeaturesEpoch", "int64", "3+", tagged="3+", tag=1, default=-1, ignorable=True),
        field("FinalizedFeatures", "[]FinalizedFeatureKey", "3+", tagged="3+", tag=2, ignorable=True, fields=[
            field("Name", "string", "3+"),
            field("MaxVersionLevel", "int16", "3+"),
            field("MinVersionLevel", "int16", "3+"),
        ]),
        field("ZkMigrationReady", "bool", "3+", tagged="3+", tag=3, default=False, ignorable=True),
    ],
)

SPECS = (API_VERSIONS_REQUEST, API_VERSIONS_RESPONSE)
