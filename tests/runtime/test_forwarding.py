"""KIP-590 Envelope framing: what a broker wraps and what it unwraps."""

from __future__ import annotations

import pytest

from kraftwerk.controller.responses import encode_response
from kraftwerk.protocol import codec
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.header import decode_request_header, request_header_version
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.runtime.forwarding import (
    ForwardingError,
    client_address_bytes,
    deserialize_principal,
    envelope_body,
    serialize_principal,
    unwrap_response,
)


def test_principal_is_version_prefixed_default_principal_data() -> None:
    data = serialize_principal("User", "ANONYMOUS")
    assert data.hex() == "0000" + "05" + b"User".hex() + "0a" + b"ANONYMOUS".hex() + "00" + "00"
    assert deserialize_principal(data) == ("User", "ANONYMOUS", False)


def test_envelope_carries_the_client_request_as_sent() -> None:
    body = {"timeoutMs": 60000, "validateOnly": True,
            "featureUpdates": [{"feature": "metadata.version", "maxVersionLevel": 25, "upgradeType": 2}]}
    env = envelope_body(57, 2, 4242, "adminclient-1", body, "127.0.0.1:51234")
    assert env["clientHostAddress"] == bytes([127, 0, 0, 1])
    data = env["requestData"]
    spec = by_api_key(Kind.REQUEST, 57)
    header, pos = decode_request_header(data, request_header_version(spec, 2))
    assert (header["requestApiKey"], header["requestApiVersion"], header["correlationId"],
            header["clientId"]) == (57, 2, 4242, "adminclient-1")
    assert codec.decode(spec, 2, data[pos:])["featureUpdates"][0]["maxVersionLevel"] == 25
    assert client_address_bytes("[::1]:9092") == bytes(15) + b"\x01"


def test_unwrap_response_and_errors() -> None:
    response = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "results": []}
    wrapped = {"responseData": encode_response(57, 2, 4242, response), "errorCode": 0}
    unwrapped = unwrap_response(57, 2, wrapped)
    assert unwrapped.correlation_id == 4242 and unwrapped.body["errorCode"] == 0
    with pytest.raises(ForwardingError) as info:
        unwrap_response(57, 2, {"responseData": None, "errorCode": Errors.NOT_CONTROLLER.code})
    assert info.value.error is Errors.NOT_CONTROLLER
    with pytest.raises(ForwardingError):
        unwrap_response(57, 2, {"responseData": b"\x00\x01", "errorCode": 0})
