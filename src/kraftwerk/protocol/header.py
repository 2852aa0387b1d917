"""Request and response headers (v0-v2 and v0-v1) and the header version rules."""

from __future__ import annotations

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.schema import Kind, MessageSpec, field, message

REQUEST_HEADER = message(
    "RequestHeader", -1, Kind.DATA, valid="0-2", flexible="2+",
    fields=[
        field("RequestApiKey", "int16", "0+"),
        field("RequestApiVersion", "int16", "0+"),
        field("CorrelationId", "int32", "0+"),
        # ClientId stays a classic nullable string even in the flexible v2 header. Kafka states no
        # default, so a v0 header (ControlledShutdown v0) reads as the empty string.
        field("ClientId", "string", "1+", nullable="1+", ignorable=True),
    ],
)

RESPONSE_HEADER = message(
    "ResponseHeader", -1, Kind.DATA, valid="0-1", flexible="1+",
    fields=[field("CorrelationId", "int32", "0+")],
)


def request_header_version(spec: MessageSpec, version: int) -> int:
    """Header version Kafka uses for a request: 2 when flexible, else 1 (ControlledShutdown v0: 0)."""
    if spec.api_key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
        return 0
    return 2 if spec.is_flexible(version) else 1


def response_header_version(spec: MessageSpec, version: int) -> int:
    """Header version of a response: 1 when flexible, except ApiVersions, which is always 0 so
    that a client can read it before it knows which versions the server speaks."""
    if spec.api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if spec.is_flexible(version) else 0


def encode_request_header(header: codec.Value, version: int) -> bytes:
    out = bytearray()
    _encode_header(REQUEST_HEADER, header, version, out)
    return bytes(out)


def _encode_header(spec: MessageSpec, header: codec.Value, version: int, out: bytearray) -> None:
    if spec is REQUEST_HEADER and version >= 1:
        # The client id is a classic string whatever the header version, so v2 is the v1 layout
        # followed by an (empty) tagged-field section.
        codec.encode_into(REQUEST_HEADER, 1, header, out)
        if version >= 2:
            out += codec.uvarint(0)
        return
    codec.encode_into(spec, version, header, out)


def decode_request_header(data: bytes, version: int) -> tuple[codec.Value, int]:
    """Decode a request header; returns it and the offset of the body."""
    if version >= 1:
        value, pos = codec.decode_from(REQUEST_HEADER, 1, data)
        if version >= 2:
            tail, pos = codec.decode_from(_TAGS_ONLY, 0, data, pos)
            value.update({k: v for k, v in tail.items() if k == codec.UNKNOWN_TAGGED})
        return value, pos
    return codec.decode_from(REQUEST_HEADER, 0, data)


def encode_response_header(header: codec.Value, version: int) -> bytes:
    return codec.encode(RESPONSE_HEADER, version, header)


def decode_response_header(data: bytes, version: int) -> tuple[codec.Value, int]:
    return codec.decode_from(RESPONSE_HEADER, version, data)


_TAGS_ONLY = message("TaggedFieldsOnly", -1, Kind.DATA, valid="0", flexible="0+", fields=[])
