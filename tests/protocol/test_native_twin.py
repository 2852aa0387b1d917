"""The compiled decoder (``_ccodec``, an interpreter of decode plans) against the generated Python
decoders, for every declared (message, version): same value, same keys in the same order, same
end position, or the same exception with the same text, on valid, cut, bit-flipped and random bytes.
The compiled metadata record frame decoder likewise against ``frame``'s pure one.
"""

from __future__ import annotations

import importlib
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.protocol import codec, frame, registry
from kraftwerk.protocol.errors import DecodeError, ProtocolError
from kraftwerk.protocol.schema import Kind, MessageSpec, field, message
from tests.protocol.strategies import value_for
from tests.protocol.test_codec import SAMPLE

ccodec: Any
try:
    ccodec = importlib.import_module("kraftwerk.protocol._ccodec")
except ImportError:  # tests/test_native.py fails for a missing extension; no need to fail here too
    ccodec = None
    pytestmark = pytest.mark.skip(reason="the compiled extension kraftwerk.protocol._ccodec is not built")

# a declaration with every shape the interpreter handles, tagged ones included
SHAPES = message(
    "ShapesRecord", 1001, Kind.METADATA, valid="0-1", flexible="1+",
    fields=[
        field("Small", "int8", "0+"), field("Port", "uint16", "0+"), field("Big", "uint32", "0+"),
        field("Ratio", "float64", "0+"), field("On", "bool", "0+"), field("Ids", "[]uuid", "0+"),
        field("Flags", "[]bool", "0+"), field("Names", "[]string", "0+"), field("Blobs", "[]bytes", "0+"),
        field("Longs", "[]int64", "0+"),
        field("Maybe", "Inner", "0+", nullable="0+", default="null", fields=[
            field("Depth", "int16", "0+"),
            field("Leaves", "[]Leaf", "0+", fields=[field("Weight", "int32", "0+")]),
        ]),
        field("Records", "records", "0+", nullable="0+"),
        field("Zone", "uuid", "1+", tagged="1+", tag=3),
        field("Tags", "[]Tag", "1+", tagged="1+", tag=4, fields=[field("K", "string", "1+")]),
        field("Epoch", "int32", "1+", tagged="1+", tag=5, default=-1),
    ],
)

SPECS = [(spec, v) for spec in (*registry.all_specs(), SAMPLE, SHAPES) for v in spec.versions()]
_FAILURES = (DecodeError, IndexError, struct.error, UnicodeDecodeError, ValueError)
_DECODERS: dict[tuple[int, int], tuple[codec.Decoder, codec.Decoder]] = {}


def _decoders(spec: MessageSpec, version: int) -> tuple[codec.Decoder, codec.Decoder]:
    key = (id(spec), version)
    if key not in _DECODERS:
        gen = codec._Gen(spec, version)
        pure = gen.compile()[0]
        compiled = ccodec.decoder(gen.plan(spec.fields), codec.uuid_from_bytes, codec.UNKNOWN_TAGGED)
        _DECODERS[key] = pure, compiled
    return _DECODERS[key]


def _outcome(decoder: codec.Decoder, data: bytes, end: int) -> object:
    try:
        value, pos = decoder(data, 0, end)
    except _FAILURES as exc:
        return type(exc).__name__, str(exc)
    return repr(value), pos  # repr: the keys' order counts, and NaN equals itself


@st.composite
def cases(draw: Any) -> tuple[MessageSpec, int, bytes, int]:
    spec, version = draw(st.sampled_from(SPECS))
    data = bytearray(codec.encode(spec, version, draw(value_for(spec, version))))
    damage = draw(st.sampled_from(["none", "cut", "flip", "byte", "random", "tail"]))
    if damage == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif damage == "flip" and data:
        for _ in range(draw(st.integers(1, 3))):
            data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    elif damage == "byte" and data:  # a length, count or tag turned huge, negative or null
        data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
    elif damage == "random":
        data = bytearray(draw(st.binary(max_size=80)))
    elif damage == "tail":  # unknown tagged fields and trailing bytes
        data += draw(st.binary(min_size=1, max_size=12))
    end = len(data) + draw(st.sampled_from([0, 0, 0, -1, 3]))  # an end before or past the buffer too
    return spec, version, bytes(data), max(end, 0)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_compiled_decoder_matches_the_generated_one(case: tuple[MessageSpec, int, bytes, int]) -> None:
    spec, version, data, end = case
    pure, compiled = _decoders(spec, version)
    assert _outcome(compiled, data, end) == _outcome(pure, data, end)


def test_defaults_are_fresh_objects_and_tagged_values_decode() -> None:
    _, compiled = _decoders(SHAPES, 1)
    value = {"ids": [uuid.UUID(int=7)], "names": ["a"], "zone": uuid.UUID(int=9), "tags": [{"k": "x"}],
             "epoch": 4}
    data = codec.encode(SHAPES, 1, value)
    first, end = compiled(data, 0, len(data))
    assert end == len(data)
    assert first["zone"] == uuid.UUID(int=9) and first["tags"] == [{"k": "x"}] and first["epoch"] == 4
    assert first["maybe"] is None and first["records"] is None
    bare = codec.encode(SHAPES, 0, {})
    one, _ = compiled_v0 = _decoders(SHAPES, 0)[1](bare, 0, len(bare))
    two, _ = _decoders(SHAPES, 0)[1](bare, 0, len(bare))
    assert one["tags"] == [] and one["tags"] is not two["tags"]
    assert compiled_v0[1] == len(bare)


def test_uuids_decode_right_past_the_decoders_cache_of_them() -> None:
    """More distinct ids than the compiled decoder keeps, in two rounds: every one comes out as
    itself, whether found in the cache, evicted from it, or colliding in it."""
    spec = registry.lookup_record("TopicRecord")
    _, compiled = _decoders(spec, 0)
    ids = [uuid.UUID(int=(i * 7919) << 64 | i) for i in range(2000)]
    frames = [codec.encode(spec, 0, {"name": f"t{i}", "topicId": tid}) for i, tid in enumerate(ids)]
    for _ in range(2):
        assert [compiled(data, 0, len(data))[0]["topicId"] for data in frames] == ids


METADATA_SPECS = [(spec, v) for spec in registry.all_specs() if spec.kind is Kind.METADATA
                  for v in spec.versions()]
FRAME_DECODER = ccodec.frame_decoder(frame.MetadataRecord, frame._known_frame,
                                     frame._decode_metadata_record_py) if ccodec is not None else None


def _frame_outcome(decode: Any, data: bytes) -> object:
    try:
        record = decode(data)
    except ProtocolError as exc:
        return type(exc).__name__, str(exc)
    assert type(record) is frame.MetadataRecord
    return record.spec.name, record.version, repr(record.value)


@st.composite
def frames(draw: Any) -> bytes | bytearray:
    spec, version = draw(st.sampled_from(METADATA_SPECS))
    body = codec.encode(spec, version, draw(value_for(spec, version)))
    head = [frame.FRAME_VERSION, spec.api_key, version]
    shape = draw(st.sampled_from(["plain", "plain", "head", "long", "cut", "flip", "tail", "bytearray"]))
    if shape == "head":  # an unknown frame version, api key or record version
        head[draw(st.integers(0, 2))] = draw(st.sampled_from([0, 2, 99, 127, 128, 300]))
    data = bytearray(b"".join(codec.uvarint(x) for x in head) + body)
    if shape == "long":  # the frame's varints written in two bytes each: legal, and decoded alike
        data = bytearray(b"".join(bytes([0x80 | x, 0]) for x in head) + body)
    elif shape == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif shape == "flip" and data:
        data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
    elif shape == "tail":
        data += draw(st.binary(min_size=1, max_size=4))
    return data if shape == "bytearray" else bytes(data)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames())
def test_compiled_frame_decoder_matches_the_pure_one(data: bytes) -> None:
    assert _frame_outcome(FRAME_DECODER, data) == _frame_outcome(frame._decode_metadata_record_py, data)
