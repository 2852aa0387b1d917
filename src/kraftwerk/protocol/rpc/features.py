"""UpdateFeatures (apiKey 57): KIP-584 / KIP-778 feature-level updates.

Version 3 is kraftwerk's (KIP-920): the same fields as v2, and the response may carry
MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED; Kafka 4.3's latest is v2 (docs/compatibility.md).
v3 also has kraftwerk's tagged ``SkipConfigAudit`` (KIP-1294's ``--skip-config-audit``).
"""

from kraftwerk.protocol.schema import Kind, field, message

UPDATE_FEATURES_REQUEST = message(
    "UpdateFeaturesRequest", 57, Kind.REQUEST, valid="0-3", flexible="0+",
    # v1: AllowDowngrade became UpgradeType (1 upgrade, 2 safe downgrade, 3 unsafe downgrade)
    #     and ValidateOnly was added. v2: the response drops per-feature results.
    # v3 (KIP-920, kraftwerk): the response may carry MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED.
    fields=[
        field("TimeoutMs", "int32", "0+", default=60000),
        field("FeatureUpdates", "[]FeatureUpdateKey", "0+", fields=[
            field("Feature", "string", "0+"),
            field("MaxVersionLevel", "int16", "0+"),
            field("AllowDowngrade", "bool", "0"),
            field("UpgradeType", "int8", "1+", default=1),
        ]),
        field("ValidateOnly", "bool", "1+", default=False),
        # kraftwerk (KIP-1294): skip the pre-flight config audit of a metadata.version change.
        field("SkipConfigAudit", "bool", "3+", tagged="3+", tag=0, default=False),
    ],
)

UPDATE_FEATURES_RESPONSE = message(
    "UpdateFeaturesResponse", 57, Kind.RESPONSE, valid="0-3", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Results", "[]UpdatableFeatureResult", "0-1", fields=[
            field("Feature", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
        # kraftwerk (KIP-1294): the pre-flight config audit of a metadata.version change, as JSON.
        field("ConfigAudit", "string", "3+", nullable="3+", tagged="3+", tag=0, default="null"),
    ],
)

SPECS = (UPDATE_FEATURES_REQUEST, UPDATE_FEATURES_RESPONSE)
