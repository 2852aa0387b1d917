"""Request and response headers: byte layouts and the header-version rules."""

from __future__ import annotations

from kraftwerk.protocol import header, registry
from kraftwerk.protocol.schema import Kind


def test_request_header_v2_keeps_a_classic_client_id_then_tags() -> None:
    value = {"requestApiKey": 18, "requestApiVersion": 3, "correlationId": 7, "clientId": "ab"}
    data = header.encode_request_header(value, 2)
    assert data.hex() == "0012" "0003" "00000007" "0002" "6162" "00"
    decoded, pos = header.decode_request_header(data + b"body", 2)
    assert pos == len(data) and decoded["clientId"] == "ab"
    assert header.encode_request_header({**value, "clientId": None}, 1).hex().endswith("ffff")


def test_header_versions_follow_flexibility_with_kafkas_exceptions() -> None:
    api_versions = registry.by_name(Kind.RESPONSE, "ApiVersions")
    fetch_request = registry.by_name(Kind.REQUEST, "Fetch")
    assert header.response_header_version(api_versions, 3) == 0  # always v0
    assert header.request_header_version(fetch_request, 11) == 1
    assert header.request_header_version(fetch_request, 12) == 2
    fetch_response = registry.by_name(Kind.RESPONSE, "Fetch")
    assert header.response_header_version(fetch_response, 12) == 1
    assert header.encode_response_header({"correlationId": 5}, 1).hex() == "00000005" "00"


def test_request_header_v0_has_no_client_id_and_reads_kafkas_empty_default() -> None:
    """ControlledShutdown v0's header stops after the correlation id; Kafka's RequestHeaderData
    then holds its declared default, the empty string (not null)."""
    value = {"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 9, "clientId": None}
    data = header.encode_request_header(value, 0)
    assert data.hex() == "0007" "0000" "00000009"
    decoded, pos = header.decode_request_header(data, 0)
    assert pos == len(data) and decoded["clientId"] == ""
