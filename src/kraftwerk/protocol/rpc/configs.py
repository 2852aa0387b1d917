"""Config RPCs: DescribeConfigs (apiKey 32), AlterConfigs (33), IncrementalAlterConfigs (44)."""

from kraftwerk.protocol.schema import Kind, field, message

DESCRIBE_CONFIGS_REQUEST = message(
    "DescribeConfigsRequest", 32, Kind.REQUEST, valid="0-4", flexible="4+",
    # v1 adds IncludeSynonyms; v2 is the same as v1; v3 adds IncludeDocumentation (KIP-569);
    # v4 is the first flexible version. Kafka 4.0 stopped accepting v0 (KIP-896) but it stays
    # declared here so old bytes still decode.
    fields=[
        field("Resources", "[]DescribeConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("ConfigurationKeys", "[]string", "0+", nullable="0+"),
        ]),
        field("IncludeSynonyms", "bool", "1+", default=False),
        field("IncludeDocumentation", "bool", "3+", default=False),
    ],
)

DESCRIBE_CONFIGS_RESPONSE = message(
    "DescribeConfigsResponse", 32, Kind.RESPONSE, valid="0-4", flexible="4+",
    # v1 replaces IsDefault with ConfigSource and adds synonyms; v2 throttles after responding;
    # v3 adds ConfigType and Documentation; v4 is the first flexible version.
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]DescribeConfigsResult", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]DescribeConfigsResourceResult", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
                field("ReadOnly", "bool", "0+"),
                field("IsDefault", "bool", "0"),
                field("ConfigSource", "int8", "1+", default=-1, ignorable=True),
                field("IsSensitive", "bool", "0+"),
                field("Synonyms", "[]DescribeConfigsSynonym", "1+", ignorable=True, fields=[
                    field("Name", "string", "1+"),
                    field("Value", "string", "1+", nullable="0+"),
                    field("Source", "int8", "1+"),
                ]),
                field("ConfigType", "int8", "3+", default=0, ignorable=True),
                field("Documentation", "string", "3+", nullable="0+", ignorable=True),
            ]),
        ]),
    ],
)

ALTER_CONFIGS_REQUEST = message(
    "AlterConfigsRequest", 33, Kind.REQUEST, valid="0-2", flexible="2+",
    # v1 is the same as v0; v2 is the first flexible version.
    fields=[
        field("Resources", "[]AlterConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]AlterableConfig", "0+", fields=[
                field("Name", "string", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        field("ValidateOnly", "bool", "0+"),
    ],
)

ALTER_CONFIGS_RESPONSE = message(
    "AlterConfigsResponse", 33, Kind.RESPONSE, valid="0-2", flexible="2+",
    # v1: on quota violation the broker responds before throttling.
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
        ]),
    ],
)

INCREMENTAL_ALTER_CONFIGS_REQUEST = message(
    "IncrementalAlterConfigsRequest", 44, Kind.REQUEST, valid="0-1", flexible="1+",
    # KIP-339. v1 is the first flexible version.
    fields=[
        field("Resources", "[]AlterConfigsResource", "0+", fields=[
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
            field("Configs", "[]AlterableConfig", "0+", fields=[
                field("Name", "string", "0+"),
                # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
                field("ConfigOperation", "int8", "0+"),
                field("Value", "string", "0+", nullable="0+"),
            ]),
        ]),
        field("ValidateOnly", "bool", "0+"),
    ],
)

INCREMENTAL_ALTER_CONFIGS_RESPONSE = message(
    "IncrementalAlterConfigsResponse", 44, Kind.RESPONSE, valid="0-1", flexible="1+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Responses", "[]AlterConfigsResourceResponse", "0+", fields=[
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("ResourceType", "int8", "0+"),
            field("ResourceName", "string", "0+"),
        ]),
    ],
)

SPECS = (
    DESCRIBE_CONFIGS_REQUEST,
    DESCRIBE_CONFIGS_RESPONSE,
    ALTER_CONFIGS_REQUEST,
    ALTER_CONFIGS_RESPONSE,
    INCREMENTAL_ALTER_CONFIGS_REQUEST,
    INCREMENTAL_ALTER_CONFIGS_RESPONSE,
)
