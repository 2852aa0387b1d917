"""SASL: SaslHandshake (apiKey 17) and SaslAuthenticate (apiKey 36)."""

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

SPECS = (
    SASL_HANDSHAKE_REQUEST,
    SASL_HANDSHAKE_RESPONSE,
    SASL_AUTHENTICATE_REQUEST,
    SASL_AUTHENTICATE_RESPONSE,
)
