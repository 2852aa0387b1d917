"""SASL: SaslHandshake (apiKey 17), SaslAuthenticate (36), and the SCRAM credential admin RPCs
DescribeUserScramCredentials (50) and AlterUserScramCredentials (51, KIP-554)."""

from kraftwerk.protocol.schema import Kind, field, message

SASL_HANDSHAKE_REQUEST = message(
    "SaslHandshakeRequest", 17, Kind.REQUEST, valid="0-1", flexible="none",
    # v1 (KIP-152) only changes semantics: the SASL tokens then travel in SaslAuthenticate
    # requests instead of raw on the socket. Never flexible.
    fields=[
        field("Mechanism", "string", "0+"),
    ],
)

SASL_HANDSHAKE_RESPONSE = message(
    "SaslHandshakeResponse", 17, Kind.RESPONSE, valid="0-1", flexible="none",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("Mechanisms", "[]string", "0+"),
    ],
)

SASL_AUTHENTICATE_REQUEST = message(
    "SaslAuthenticateRequest", 36, Kind.REQUEST, valid="0-2", flexible="2+",
    # v1 is the same as v0 (the response adds the session lifetime); v2 is the first flexible version.
    fields=[
        field("AuthBytes", "bytes", "0+"),
    ],
)

SASL_AUTHENTICATE_RESPONSE = message(
    "SaslAuthenticateResponse", 36, Kind.RESPONSE, valid="0-2", flexible="2+",
    fields=[
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("AuthBytes", "bytes", "0+"),
        # v1 (KIP-368): re-authentication deadline.
        field("SessionLifetimeMs", "int64", "1+", default=0, ignorable=True),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "DescribeUserScramCredentialsRequest", 50, Kind.REQUEST, valid="0", flexible="0+",
    fields=[
        field("Users", "[]UserName", "0+", nullable="0+", fields=[  # null or empty: every user
            field("Name", "string", "0+"),
        ]),
    ],
)

DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "DescribeUserScramCredentialsResponse", 50, Kind.RESPONSE, valid="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("ErrorCode", "int16", "0+"),
        field("ErrorMessage", "string", "0+", nullable="0+"),
        field("Results", "[]DescribeUserScramCredentialsResult", "0+", fields=[
            field("User", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
            field("CredentialInfos", "[]CredentialInfo", "0+", fields=[
                field("Mechanism", "int8", "0+"),
                field("Iterations", "int32", "0+"),
            ]),
        ]),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_REQUEST = message(
    "AlterUserScramCredentialsRequest", 51, Kind.REQUEST, valid="0", flexible="0+",
    fields=[
        field("Deletions", "[]ScramCredentialDeletion", "0+", fields=[
            field("Name", "string", "0+"),
            field("Mechanism", "int8", "0+"),
        ]),
        field("Upsertions", "[]ScramCredentialUpsertion", "0+", fields=[
            field("Name", "string", "0+"),
            field("Mechanism", "int8", "0+"),
            field("Iterations", "int32", "0+"),
            field("Salt", "bytes", "0+"),
            field("SaltedPassword", "bytes", "0+"),
        ]),
    ],
)

ALTER_USER_SCRAM_CREDENTIALS_RESPONSE = message(
    "AlterUserScramCredentialsResponse", 51, Kind.RESPONSE, valid="0", flexible="0+",
    fields=[
        field("ThrottleTimeMs", "int32", "0+"),
        field("Results", "[]AlterUserScramCredentialsResult", "0+", fields=[
            field("User", "string", "0+"),
            field("ErrorCode", "int16", "0+"),
            field("ErrorMessage", "string", "0+", nullable="0+"),
        ]),
    ],
)

SPECS = (
    SASL_HANDSHAKE_REQUEST,
    SASL_HANDSHAKE_RESPONSE,
    SASL_AUTHENTICATE_REQUEST,
    SASL_AUTHENTICATE_RESPONSE,
    DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
    DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE,
    ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
    ALTER_USER_SCRAM_CREDENTIALS_RESPONSE,
)
