"""Kafka's wire framing, as pure functions: size-prefixed frames, request and response headers.

Kept apart from the sockets so the header/version rules are tested without a network, and so the
server and the client share one definition of "what a frame is".
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.protocol import codec, header, registry
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError, UnknownMessageError
from kraftwerk.protocol.schema import Kind, MessageSpec
from kraftwerk.runtime.errors import FrameTooLargeError, NetworkError

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES = 104_857_600
SIZE = struct.Struct(">i")


class InvalidRequestError(NetworkError):
    """A request we cannot parse: unknown api key, unsupported version, corrupt header or body.

    Kafka closes the connection for these (except ApiVersions, answered with UNSUPPORTED_VERSION).
    ``api_key`` / ``api_version`` are what the frame's first four bytes said (None when shorter),
    so the refusal can be logged with them.
    """

    def __init__(self, message: str, api_key: int | None = None, api_version: int | None = None) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


@dataclass(frozen=True, slots=True)
class ParsedRequest:
    """One decoded request frame. ``unsupported_api_versions`` marks an ApiVersions request at a
    version we do not know: its body is not decoded and the answer is a v0 UNSUPPORTED_VERSION."""

    header: RequestHeader
    body: codec.Value
    unsupported_api_versions: bool = False


def check_frame_size(size: int, max_bytes: int) -> None:
    if size < 0:
        raise FrameTooLargeError(f"Invalid receive (size = {size})")
    if size > max_bytes:
        raise FrameTooLargeError(f"Invalid receive (size = {size} larger than {max_bytes})")


def request_spec(api_key: int, api_version: int | None = None) -> MessageSpec:
    try:
        return registry.by_api_key(Kind.REQUEST, api_key)
    except UnknownMessageError:
        raise InvalidRequestError(f"Unknown API key {api_key}", api_key, api_version) from None


def response_spec(api_key: int) -> MessageSpec:
    return registry.by_api_key(Kind.RESPONSE, api_key)


def parse_request(frame: bytes, supported: Mapping[int, tuple[int, int]]) -> ParsedRequest:
    """Decode a request frame (without its size prefix) as Kafka's ``RequestContext`` does.

    ``supported`` maps api key → (min, max) version the handler accepts; anything else is refused
    except ApiVersions above its range, which Kafka answers so old clients can downgrade. Unknown
    tagged fields are kept aside (``codec.UNKNOWN_TAGGED``) and bytes after the body are ignored:
    Kafka's generated readers stop at the end of the message and ``AbstractRequest.parseRequest``
    never checks what is left (librdkafka's MetadataRequest v13 carries three such bytes).
    """
    if len(frame) < 8:
        raise InvalidRequestError(f"Request header is truncated ({len(frame)} bytes)",
                                  *struct.unpack_from(">hh", frame) if len(frame) >= 4 else ())
    api_key, api_version = struct.unpack_from(">hh", frame, 0)
    spec = request_spec(api_key, api_version)
    limits = supported.get(api_key)
    if limits is None:
        raise InvalidRequestError(f"{spec.api_name} is not served on this listener", api_key, api_version)
    low, high = limits
    too_new_api_versions = api_key == ApiKey.API_VERSIONS and api_version > high
    if not too_new_api_versions and not low <= api_version <= high:
        raise InvalidRequestError(f"Unsupported version {api_version} of {spec.api_name} (supported "
                                  f"{low}-{high})", api_key, api_version)
    header_version = 2 if too_new_api_versions else header.request_header_version(spec, api_version)
    try:
        head, pos = header.decode_request_header(frame, header_version)
    except (ProtocolError, IndexError, struct.error) as exc:
        raise InvalidRequestError(f"Corrupt request header: {exc}", api_key, api_version) from None
    req_header = RequestHeader(
        api_key=api_key, api_version=api_version, correlation_id=head["correlationId"],
        client_id=head.get("clientId"), header_version=header_version,
    )
    if too_new_api_versions:
        return ParsedRequest(req_header, {}, unsupported_api_versions=True)
    try:
        body, _ = codec.decode_from(spec, api_version, frame, pos)
    except (ProtocolError, IndexError, struct.error) as exc:
        raise InvalidRequestError(f"Corrupt {spec.name} v{api_version}: {exc}", api_key,
                                  api_version) from None
    return ParsedRequest(req_header, body)


def encode_response(api_key: int, api_version: int, correlation_id: int, body: codec.Value) -> bytes:
    """A complete response frame (size prefix, header at Kafka's header version, body)."""
    spec = response_spec(api_key)
    head = header.encode_response_header(
        {"correlationId": correlation_id}, header.response_header_version(spec, api_version)
    )
    payload = codec.encode(spec, api_version, body)
    return SIZE.pack(len(head) + len(payload)) + head + payload


def unsupported_api_versions_response(high: int) -> dict[str, Any]:
    """What Kafka answers to an ApiVersions request at an unknown version: v0, UNSUPPORTED_VERSION,
    and only ApiVersions' own range so the client can retry at a version we speak."""
    return {
        "errorCode": Errors.UNSUPPORTED_VERSION.code,
        "apiKeys": [{"apiKey": ApiKey.API_VERSIONS, "minVersion": 0, "maxVersion": high}],
    }


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body: codec.Value) -> bytes:
    """A complete request frame."""
    spec = request_spec(api_key)
    head = header.encode_request_header(
        {"requestApiKey": api_key, "requestApiVersion": api_version,
         "correlationId": correlation_id, "clientId": client_id},
        header.request_header_version(spec, api_version),
    )
    payload = codec.encode(spec, api_version, body)
    return SIZE.pack(len(head) + len(payload)) + head + payload


def parse_response(frame: bytes, api_key: int, api_version: int) -> tuple[int, codec.Value]:
    """Decode a response frame for a request we sent: (correlation id, body)."""
    spec = response_spec(api_key)
    try:
        head, pos = header.decode_response_header(frame, header.response_header_version(spec, api_version))
        body, end = codec.decode_from(spec, api_version, frame, pos)
    except (ProtocolError, IndexError, struct.error) as exc:
        raise NetworkError(f"Corrupt {spec.name} v{api_version}: {exc}") from None
    if end != len(frame):
        raise NetworkError(f"{len(frame) - end} trailing bytes after {spec.name} v{api_version}")
    return head["correlationId"], body


def peek_correlation_id(frame: bytes) -> int:
    if len(frame) < 4:
        raise NetworkError(f"Response frame is truncated ({len(frame)} bytes)")
    value: int = SIZE.unpack_from(frame, 0)[0]
    return value
