"""KIP-590 request forwarding: a broker wraps a client's admin request in an EnvelopeRequest.

The envelope carries the request exactly as the client sent it (request header with the
client's correlation id and client id, then the body at the client's version), the client's
principal (Kafka's ``DefaultPrincipalData``, version-prefixed, as ``DefaultKafkaPrincipalBuilder``
serializes it) and the client's IP address as raw bytes. The active controller unwraps it,
answers, and returns the embedded response (header + body) in the EnvelopeResponse; the broker
decodes that and relays the body to the client.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from kraftwerk.controller.authorizer import ANONYMOUS
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.header import (
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind, field, message
from kraftwerk.runtime.errors import NetworkError

DEFAULT_PRINCIPAL_DATA = message(
    "DefaultPrincipalData", -1, Kind.DATA, valid="0", flexible="0+",
    # clients/src/main/resources/common/message/DefaultPrincipalData.json
    fields=[
        field("Type", "string", "0+"),
        field("Name", "string", "0+"),
        field("TokenAuthenticated", "bool", "0+"),
    ],
)



class ForwardingError(NetworkError):
    """The controller's EnvelopeResponse carried an error or an unreadable embedded response."""

    def __init__(self, error: Errors, text: str) -> None:
        super().__init__(text)
        self.error = error


def serialize_principal(principal_type: str, name: str, token_authenticated: bool = False) -> bytes:
    """Kafka's ``MessageUtil.toVersionPrefixedBytes(0, DefaultPrincipalData)``."""
    body = codec.encode(DEFAULT_PRINCIPAL_DATA, 0, {"type": principal_type, "name": name,
                                                    "tokenAuthenticated": token_authenticated})
    return (0).to_bytes(2, "big") + body


def deserialize_principal(data: bytes) -> tuple[str, str, bool]:
    if len(data) < 2:
        raise ProtocolError("principal data is shorter than its version prefix")
    version = int.from_bytes(data[:2], "big", signed=True)
    if version != 0:
        raise ProtocolError(f"unsupported DefaultPrincipalData version {version}")
    value = codec.decode(DEFAULT_PRINCIPAL_DATA, 0, data[2:])
    return value["type"], value["name"], bool(value["tokenAuthenticated"])


def client_host(peer: str) -> str:
    """The address of ``host:port`` (what an ACL's host names)."""
    return peer.rsplit(":", 1)[0].strip("[]")


def client_address_bytes(peer: str) -> bytes:
    """The raw IPv4/IPv6 address of ``host:port`` (``InetAddress.getAddress()``)."""
    try:
        return ipaddress.ip_address(client_host(peer)).packed
    except ValueError:
        return bytes(4)


def envelope_body(api_key: int, version: int, correlation_id: int, client_id: str | None,
                  body: codec.Value, peer: str, principal: str = ANONYMOUS) -> dict[str, Any]:
    """The EnvelopeRequest v0 body wrapping one client request."""
    spec = by_api_key(Kind.REQUEST, api_key)
    header = encode_request_header(
        {"requestApiKey": api_key, "requestApiVersion": version, "correlationId": correlation_id,
         "clientId": client_id}, request_header_version(spec, version))
    return {
        "requestData": header + codec.encode(spec, version, dict(body)),
        "requestPrincipal": serialize_principal(*principal.partition(":")[::2]),
        "clientHostAddress": client_address_bytes(peer),
    }


@dataclass(frozen=True, slots=True)
class Unwrapped:
    correlation_id: int
    body: codec.Value


def unwrap_response(api_key: int, version: int, envelope_response: codec.Value) -> Unwrapped:
    """The embedded response of an EnvelopeResponse; :class:`ForwardingError` on an envelope error."""
    error = Errors.for_code(int(envelope_response.get("errorCode", 0)))
    data = envelope_response.get("responseData")
    if error is not Errors.NONE or data is None:
        raise ForwardingError(error if error is not Errors.NONE else Errors.UNKNOWN_SERVER_ERROR,
                              f"forwarding failed: {error.name}")
    spec = by_api_key(Kind.RESPONSE, api_key)
    try:
        header, pos = decode_response_header(bytes(data), response_header_version(spec, version))
        return Unwrapped(int(header["correlationId"]), codec.decode(spec, version, bytes(data)[pos:]))
    except ProtocolError as exc:
        raise ForwardingError(Errors.CORRUPT_MESSAGE, f"unreadable forwarded response: {exc}") from None


__all__ = [
    "DEFAULT_PRINCIPAL_DATA",
    "ForwardingError",
    "Unwrapped",
    "client_address_bytes",
    "client_host",
    "deserialize_principal",
    "envelope_body",
    "serialize_principal",
    "unwrap_response",
]
