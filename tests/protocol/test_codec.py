"""The derived codec: primitives, tagged fields, version rules, and every declared message."""

from __future__ import annotations

import contextlib
import json
import tracemalloc
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.protocol import codec, frame, json_form, registry
from kraftwerk.protocol.errors import DecodeError, EncodeError, UnsupportedVersionError
from kraftwerk.protocol.schema import Kind, MessageSpec, field, message
from tests.conftest import golden_path
from tests.protocol.strategies import value_for

SAMPLE = message(
    "SampleRequest", 1000, Kind.REQUEST, valid="0-3", flexible="2+",
    fields=[
        field("Id", "int32", "0+", default=-1),
        field("Name", "string", "0+", nullable="1+"),
        field("Added", "int64", "1+", default=7),
        field("Lossy", "int16", "0-1", ignorable=True),
        field("Topic", "uuid", "0+"),
        field("Items", "[]Item", "0+", nullable="3+", fields=[
            field("Key", "string", "0+"),
            field("Blob", "bytes", "0+", nullable="0+"),
            field("Ratio", "float64", "0+"),
        ]),
        field("Numbers", "[]int32", "0+"),
        field("Note", "string", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
        field("Count", "uint16", "3+", tagged="3+", tag=0),
    ],
)


def assert_contains(actual: object, expected: object) -> None:
    """``actual`` holds every field of ``expected`` (decoders add the fields a version lacks)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict)
        for key, item in expected.items():
            assert_contains(actual[key], item)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_contains(a, e)
    else:
        assert actual == expected


def every_spec_version() -> list[tuple[MessageSpec, int]]:
    return [(spec, v) for spec in registry.all_specs() for v in spec.versions()]


def test_classic_layout_is_big_endian_with_int16_strings() -> None:
    value = {"id": 1, "name": "ab", "topic": uuid.UUID(int=1), "items": [], "numbers": [5]}
    data = codec.encode(SAMPLE, 0, value)
    assert data.hex() == (
        "00000001" "0002" "6162" "0000" + "00" * 15 + "01" + "00000000" "00000001" "00000005"
    )
    decoded = codec.decode(SAMPLE, 0, data)
    assert decoded["added"] == 7  # absent at v0: the declared default
    assert decoded["note"] is None


def test_flexible_layout_uses_compact_forms_and_tagged_fields_in_tag_order() -> None:
    value = {"id": 2, "name": None, "topic": uuid.UUID(int=0), "items": None, "numbers": [],
             "note": "n", "count": 9}
    data = codec.encode(SAMPLE, 3, value)
    body = "00000002" "00" "0000000000000007" + "00" * 16 + "00" "01"
    tags = "02" "00" "02" "0009" "01" "02" "026e"
    assert data.hex() == body + tags
    assert codec.decode(SAMPLE, 3, data) == {**value, "added": 7, "lossy": 0}


def test_default_tagged_fields_are_not_written() -> None:
    data = codec.encode(SAMPLE, 2, {"topic": uuid.UUID(int=0)})
    assert data.endswith(b"\x00")  # empty tagged-field section
    assert codec.decode(SAMPLE, 2, data)["note"] is None


def test_unknown_tagged_fields_survive_a_round_trip() -> None:
    data = codec.encode(SAMPLE, 2, {"_unknownTaggedFields": [(5, b"\x01\x02")]})
    decoded = codec.decode(SAMPLE, 2, data)
    assert decoded["_unknownTaggedFields"] == [(5, b"\x01\x02")]
    assert codec.encode(SAMPLE, 2, decoded) == data


def test_non_default_value_in_a_version_without_the_field_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError, match="non-default Added at version 0"):
        codec.encode(SAMPLE, 0, {"added": 8})
    codec.encode(SAMPLE, 0, {"added": 7})  # the default is fine
    codec.encode(SAMPLE, 2, {"lossy": 3})  # ignorable: dropped silently


def test_null_in_a_non_nullable_version_is_refused() -> None:
    with pytest.raises(EncodeError, match="Name"):
        codec.encode(SAMPLE, 0, {"name": None})
    with pytest.raises(DecodeError, match="Name"):
        codec.decode(SAMPLE, 0, bytes.fromhex("00000001ffff"))


def test_out_of_range_integers_and_wrong_types_are_encode_errors() -> None:
    with pytest.raises(EncodeError):
        codec.encode(SAMPLE, 0, {"id": 2**31})
    with pytest.raises(EncodeError):
        codec.encode(SAMPLE, 0, {"name": 5})


def test_unknown_version_is_refused() -> None:
    with pytest.raises(UnsupportedVersionError):
        codec.encode(SAMPLE, 4, {})
    with pytest.raises(UnsupportedVersionError):
        codec.decode(SAMPLE, -1, b"")


@pytest.mark.parametrize("claim", ["7fffffff", "0fffffff"])
def test_oversized_counts_fail_without_allocating(claim: str) -> None:
    data = bytes.fromhex("00000001" "0000" "0000" + "00" * 16 + claim)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="exceeds"):
            codec.decode(SAMPLE, 0, data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


def test_varints_round_trip_at_their_limits() -> None:
    for n in (0, 1, -1, 63, -64, 64, 2**31 - 1, -(2**31)):
        assert codec.read_varint(codec.varint(n), 0)[0] == n
    for n in (0, 2**63 - 1, -(2**63)):
        assert codec.read_varlong(codec.varlong(n), 0)[0] == n
    with pytest.raises(DecodeError):
        codec.read_uvarint(b"\xff\xff\xff\xff\xff\x01", 0)


def _rows() -> list[list[str]]:
    path = golden_path("message-vectors.tsv")
    lines = path.read_text().splitlines()
    return [line.split("\t") for line in lines[1:] if line.strip()]


def _spec_of(api: str, kind: str) -> MessageSpec:
    if kind == "record":
        return registry.lookup_record(api)
    return registry.by_name(Kind(kind), api)


def test_golden_message_vectors_encode_and_decode() -> None:
    rows = _rows()
    assert {(r[0], r[1]) for r in rows} >= {("UpdateFeatures", "request"), ("UpdateFeatures", "response"),
                                            ("ApiVersions", "response"), ("REGISTER_BROKER_RECORD", "record")}
    for api, kind, version_text, hex_text, json_text in rows:
        spec = _spec_of(api, kind)
        version = int(version_text)
        value = json_form.from_json(spec, version, json.loads(json_text))
        if spec.kind is Kind.METADATA:
            encoded = frame.encode_metadata_record(spec, version, value)
            decoded = frame.decode_metadata_record(bytes.fromhex(hex_text)).value
        else:
            encoded = codec.encode(spec, version, value)
            decoded = codec.decode(spec, version, bytes.fromhex(hex_text))
        assert encoded.hex() == hex_text, f"{api} {kind} v{version}"
        expected = {k: v for k, v in json.loads(json_text).items()}
        actual = json_form.to_json(spec, version, decoded)
        for name, got in actual.items():
            assert got == expected.get(name, got), f"{api} {kind} v{version} field {name}"


@pytest.mark.parametrize(("spec", "version"), every_spec_version(),
                         ids=lambda p: p.name if isinstance(p, MessageSpec) else f"v{p}")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_message_round_trips_and_rejects_truncation(spec: MessageSpec, version: int,
                                                          data: st.DataObject) -> None:
    value = data.draw(value_for(spec, version))
    encoded = codec.encode(spec, version, value)
    decoded = codec.decode(spec, version, encoded)
    assert_contains(decoded, value)
    assert codec.encode(spec, version, decoded) == encoded
    # Kafka's JSON form carries everything the bytes do: back from JSON, the same bytes
    from_json = json_form.from_json(spec, version, json_form.to_json(spec, version, decoded))
    assert codec.encode(spec, version, from_json) == encoded
    if encoded:
        cut = data.draw(st.integers(0, len(encoded) - 1))
        with pytest.raises(DecodeError):
            codec.decode(spec, version, encoded[:cut])


@pytest.mark.parametrize(("spec", "version"), every_spec_version(),
                         ids=lambda p: p.name if isinstance(p, MessageSpec) else f"v{p}")
@settings(max_examples=10, deadline=None)
@given(garbage=st.binary(max_size=64))
def test_garbage_only_raises_decode_error(spec: MessageSpec, version: int, garbage: bytes) -> None:
    with contextlib.suppress(DecodeError):
        codec.decode(spec, version, garbage)
