"""The protocol layer's parsers on random bytes, bit flips and truncations: a metadata record frame,
a request or response header, a control record key, Kafka's JSON form. Each returns a value or
raises a :class:`ProtocolError`, and allocates no more than its input allows."""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.protocol import codec, header, json_form, registry
from kraftwerk.protocol.control_records import parse_control_key
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.frame import decode_metadata_record, encode_metadata_record
from kraftwerk.protocol.schema import Kind
from tests.fuzzing import FUZZ, damaged, parse_or_typed_error

REGISTER_BROKER = registry.by_name(Kind.METADATA, "RegisterBrokerRecord")
BROKER_VALUE = {
    "brokerId": 3, "incarnationId": uuid.UUID(int=7), "brokerEpoch": 42,
    "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
    "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 30}],
    "rack": None, "fenced": True, "logDirs": [uuid.UUID(int=9)], "cordonedLogDirs": [],
    "staticConfigs": [{"name": "a", "value": None}],
}
LATER_FIELDS = {"logDirs": 3, "cordonedLogDirs": 4, "staticConfigs": 5}


def broker_value(version: int) -> dict[str, Any]:
    return {k: v for k, v in BROKER_VALUE.items() if LATER_FIELDS.get(k, 0) <= version}


VALID_RECORDS = [encode_metadata_record(REGISTER_BROKER, v, broker_value(v)) for v in (1, 3, 4, 5)]


def _frame(data: bytes) -> None:
    record = parse_or_typed_error(lambda: decode_metadata_record(data), ProtocolError, len(data))
    if record is not None:  # what decodes is a declared version of a declared record
        assert record.version in record.spec.valid_versions


@FUZZ
@given(st.binary(max_size=300))
def test_metadata_record_frame_on_random_bytes(data: bytes) -> None:
    _frame(data)


@FUZZ
@given(st.sampled_from(VALID_RECORDS).flatmap(damaged))
def test_metadata_record_frame_on_damaged_records(data: bytes) -> None:
    _frame(data)


@FUZZ
@given(st.integers(0, 127).map(lambda k: k.to_bytes(2, "big")), st.binary(max_size=200))
def test_metadata_record_frame_behind_a_real_frame_header(key: bytes, rest: bytes) -> None:
    """Random bodies behind a frame version 1, a real api key and a version."""
    _frame(b"\x01" + key[1:] + rest)


VALID_HEADERS = [
    header.encode_request_header({"requestApiKey": 18, "requestApiVersion": 3, "correlationId": 7,
                                  "clientId": "adminclient-1"}, 2),
    header.encode_request_header({"requestApiKey": 57, "requestApiVersion": 1, "correlationId": 9,
                                  "clientId": None}, 1),
    header.encode_request_header({"requestApiKey": 7, "requestApiVersion": 0, "correlationId": 1}, 0),
]


@FUZZ
@given(st.one_of(st.binary(max_size=120), st.sampled_from(VALID_HEADERS).flatmap(damaged)),
       st.sampled_from([0, 1, 2]))
def test_request_header_decoder(data: bytes, version: int) -> None:
    decode = header.decode_request_header
    result = parse_or_typed_error(lambda: decode(data, version), ProtocolError, len(data))
    if result is not None:
        head, pos = result
        assert 0 < pos <= len(data) and isinstance(head["correlationId"], int)


@FUZZ
@given(st.binary(max_size=40), st.sampled_from([0, 1]))
def test_response_header_decoder(data: bytes, version: int) -> None:
    parse_or_typed_error(lambda: header.decode_response_header(data, version), ProtocolError, len(data))


@FUZZ
@given(st.one_of(st.none(), st.binary(max_size=12)))
def test_control_record_key(key: bytes | None) -> None:
    parse_or_typed_error(lambda: parse_control_key(key), ProtocolError, len(key or b""))


# ---------------------------------------------------------------- Kafka's JSON form

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
json_values = st.recursive(
    scalars | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
SPECS = [s for s in registry.all_specs() if s.kind in (Kind.METADATA, Kind.REQUEST)]


def _mutate_json(draw: st.DrawFn, obj: Any) -> Any:
    """Replace one value somewhere in ``obj`` with a random JSON value."""
    if isinstance(obj, dict) and obj and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(obj)))
        return {**obj, key: _mutate_json(draw, obj[key])}
    if isinstance(obj, list) and obj and draw(st.booleans()):
        i = draw(st.integers(0, len(obj) - 1))
        return [*obj[:i], _mutate_json(draw, obj[i]), *obj[i + 1:]]
    return draw(json_values)


@st.composite
def json_inputs(draw: st.DrawFn) -> tuple[Any, int, Any]:
    spec = draw(st.sampled_from(SPECS))
    version = draw(st.sampled_from(list(spec.versions())))
    valid = json_form.to_json(spec, version, codec.default_value(spec))
    if spec is REGISTER_BROKER:
        valid = json_form.to_json(spec, version, broker_value(version))
    obj = draw(st.one_of(json_values, st.just(valid).map(lambda v: _mutate_json(draw, v))))
    return spec, version, obj


@FUZZ
@given(json_inputs())
def test_from_json_then_encode_only_raise_protocol_errors(case: tuple[Any, int, Any]) -> None:
    spec, version, obj = case
    size = len(json.dumps(obj, default=str))
    value = parse_or_typed_error(lambda: json_form.from_json(spec, version, obj), ProtocolError, size)
    if value is not None:
        parse_or_typed_error(lambda: codec.encode(spec, version, value), ProtocolError, size)


@FUZZ
@given(st.text(max_size=30))
def test_kafka_uuid_text(text: str) -> None:
    value = parse_or_typed_error(lambda: json_form.uuid_from_str(text), ProtocolError, len(text))
    if value is not None:
        assert json_form.uuid_from_str(json_form.uuid_to_str(value)) == value
