"""Group B RPCs (topics, data path, raft): cross-checked against kio, plus hand-built layouts.

kio's per-version dataclasses are generated from Kafka's message JSON, so for every version
both sides declare, a value must encode to the same bytes on both sides and decode to the same
fields. kio only carries the versions Kafka 4.x still supports; the removed ones (Produce v0-2,
Fetch v0-3, ListOffsets v0, CreateTopics v0-1, DeleteTopics v0) are checked by hand below.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import random
import re
import struct
import types
import typing
import uuid
from typing import Any

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.errors import UnsupportedVersionError
from kraftwerk.protocol.rpc import data, raft, topics
from kraftwerk.protocol.schema import ZERO_UUID, Field, MessageSpec

SPECS: tuple[MessageSpec, ...] = data.SPECS + topics.SPECS + raft.SPECS

# The full version history each API must declare (Kafka 4.3's newest included).
EXPECTED_VERSIONS = {
    "Produce": (0, 0, 13), "Fetch": (1, 0, 18), "ListOffsets": (2, 0, 11),
    "Metadata": (3, 0, 13), "CreateTopics": (19, 0, 7), "DeleteTopics": (20, 0, 6),
    "Vote": (52, 0, 2), "BeginQuorumEpoch": (53, 0, 1), "EndQuorumEpoch": (54, 0, 1),
    "DescribeQuorum": (55, 0, 2), "FetchSnapshot": (59, 0, 1), "AddRaftVoter": (80, 0, 1),
    "RemoveRaftVoter": (81, 0, 0), "CreatePartitions": (37, 0, 3), "DescribeTopicPartitions": (75, 0, 0),
}


def test_every_api_declares_its_whole_history() -> None:
    seen = {}
    for spec in SPECS:
        key, low, high = EXPECTED_VERSIONS[spec.api_name]
        assert spec.api_key == key, spec.name
        assert (spec.valid_versions.lowest, spec.valid_versions.highest) == (low, high), spec.name
        seen.setdefault(spec.api_name, set()).add(spec.kind.value)
    assert seen == {name: {"request", "response"} for name in EXPECTED_VERSIONS}
    for module in (data, topics, raft):
        for name, value in vars(module).items():
            if isinstance(value, MessageSpec):
                assert value in module.SPECS, name


# ------------------------------------------------------------------------- kio plumbing

def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _kio_class(spec: MessageSpec, version: int) -> type[Any] | None:
    module_name = f"kio.schema.{_snake(spec.api_name)}.v{version}.{spec.kind.value}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return None
    cls: type[Any] = getattr(module, spec.name)
    return cls


def _kio_pairs() -> list[tuple[MessageSpec, int]]:
    return [(spec, v) for spec in SPECS for v in spec.versions() if _kio_class(spec, v) is not None]


def _inner_dataclass(hint: Any) -> type[Any] | None:
    stack = [hint]
    while stack:
        t = stack.pop()
        if dataclasses.is_dataclass(t) and isinstance(t, type):
            return t
        stack.extend(typing.get_args(t))
    return None


def _optional(hint: Any) -> bool:
    return isinstance(hint, types.UnionType) and type(None) in typing.get_args(hint)


def _pairs(fields: tuple[Field, ...], version: int, cls: type[Any]) -> list[tuple[Field, Any, Any]]:
    """Our fields present at ``version`` beside kio's fields, in wire order, names checked."""
    ours = [f for f in fields if version in f.versions]
    theirs = dataclasses.fields(cls)
    hints = typing.get_type_hints(cls)
    ours_names = [_snake(f.name) for f in ours]
    their_names = [k.name for k in theirs]
    # kio drops the unit suffix of fields it turns into timedelta/datetime values.
    ours_names = [
        o[:-3] if o.endswith("_ms") and o[:-3] == t else o
        for o, t in zip(ours_names, their_names, strict=False)
    ]
    assert ours_names == their_names, f"{cls.__name__} v{version}: {ours_names} != {their_names}"
    return [(f, k, hints[k.name]) for f, k in zip(ours, theirs, strict=True)]


def _prim_to_kio(kafka_type: str, value: Any) -> Any:
    from kio.schema.errors import ErrorCode
    from kio.serial.readers import tz_aware_from_i64
    from kio.static.primitive import i64

    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=value)
    if kafka_type == "datetime_i64":
        return None if value == -1 else tz_aware_from_i64(i64(value))
    if kafka_type == "error_code":
        return ErrorCode(value)
    if kafka_type == "uuid":
        return None if value == ZERO_UUID else value
    return value


def _prim_from_kio(kafka_type: str, value: Any) -> Any:
    if value is None:
        return {"uuid": ZERO_UUID, "datetime_i64": -1}.get(kafka_type)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    return value


def to_kio(fields: tuple[Field, ...], version: int, value: dict[str, Any], cls: type[Any]) -> Any:
    kwargs = {}
    for f, k, hint in _pairs(fields, version, cls):
        v = value[f.json_name]
        if v is None:
            kwargs[k.name] = None
        elif f.is_struct:
            sub = _inner_dataclass(hint)
            assert sub is not None
            if f.is_array:
                kwargs[k.name] = tuple(to_kio(f.fields, version, x, sub) for x in v)
            else:
                kwargs[k.name] = to_kio(f.fields, version, v, sub)
        else:
            kt = k.metadata.get("kafka_type", f.element_type)
            kwargs[k.name] = tuple(_prim_to_kio(kt, x) for x in v) if f.is_array else _prim_to_kio(kt, v)
    return cls(**kwargs)


def from_kio(fields: tuple[Field, ...], version: int, obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f, k, _hint in _pairs(fields, version, type(obj)):
        v = getattr(obj, k.name)
        kt = k.metadata.get("kafka_type", f.element_type)
        if f.is_struct:
            if v is None:
                out[f.json_name] = None
            elif f.is_array:
                out[f.json_name] = [from_kio(f.fields, version, x) for x in v]
            else:
                out[f.json_name] = from_kio(f.fields, version, v)
        elif f.is_array:
            out[f.json_name] = None if v is None else [_prim_from_kio(kt, x) for x in v]
        else:
            out[f.json_name] = _prim_from_kio(kt, v)
    return out


def _present(fields: tuple[Field, ...], version: int, value: dict[str, Any]) -> dict[str, Any]:
    """Project a decoded value onto the fields present at ``version`` (what kio models)."""
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = value[f.json_name]
        if f.is_struct and v is not None:
            v = [_present(f.fields, version, x) for x in v] if f.is_array else _present(f.fields, version, v)
        out[f.json_name] = v
    return out


def kio_encode(cls: type[Any], obj: Any) -> bytes:
    from kio.serial import entity_writer

    buf = io.BytesIO()
    entity_writer(cls)(buf, obj)
    return buf.getvalue()


def kio_decode(cls: type[Any], payload: bytes) -> Any:
    from kio.serial import entity_reader

    obj, size = entity_reader(cls)(payload, 0)
    assert size == len(payload)
    return obj


# ------------------------------------------------------------------- representative values

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1), "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1), "uint16": (1, 2**16 - 1),
}


def _gen_prim(kafka_type: str, our_type: str, rnd: random.Random) -> Any:
    from kio.schema.errors import ErrorCode

    if kafka_type == "error_code":
        return int(rnd.choice([c for c in ErrorCode if c != 0]))
    if kafka_type == "timedelta_i32":
        return rnd.randint(1, 2**31 - 1)
    if kafka_type == "datetime_i64":
        return rnd.choice([-1, rnd.randint(1, 4_000_000_000_000)])
    if our_type in _INT_RANGES:
        low, high = _INT_RANGES[our_type]
        n = 0
        while n in (0, -1):
            n = rnd.randint(low, high)
        return n
    if our_type == "bool":
        return True
    if our_type == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128) | 1)
    if our_type == "string":
        return rnd.choice(["t", "topic-ü", "__cluster_metadata", "x" * rnd.randint(1, 40)])
    if our_type in ("bytes", "records"):
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 30)))
    raise AssertionError(our_type)


def gen_value(fields: tuple[Field, ...], version: int, cls: type[Any], rnd: random.Random,
              depth: int = 0) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for f, k, hint in _pairs(fields, version, cls):
        nullable = version in f.nullable_versions
        if nullable and rnd.random() < 0.25:
            value[f.json_name] = None
            continue
        if f.is_struct:
            sub = _inner_dataclass(hint)
            assert sub is not None
            if f.is_array:
                count = rnd.randint(1, 2 if depth < 2 else 1)
                value[f.json_name] = [gen_value(f.fields, version, sub, rnd, depth + 1) for _ in range(count)]
            else:
                value[f.json_name] = gen_value(f.fields, version, sub, rnd, depth + 1)
            continue
        kt = k.metadata.get("kafka_type", f.element_type)
        if f.is_array:
            value[f.json_name] = [_gen_prim(kt, f.element_type, rnd) for _ in range(rnd.randint(1, 3))]
        else:
            value[f.json_name] = _gen_prim(kt, f.type, rnd)
    return value


# --------------------------------------------------------------------------- interop tests

PAIRS = _kio_pairs()
IDS = [f"{spec.name}-v{v}" for spec, v in PAIRS]


@pytest.mark.interop
def test_kio_covers_what_kafka_4x_supports() -> None:
    covered = {(spec.name, v) for spec, v in PAIRS}
    # Every version Kafka 4.x still serves must be cross-checked; spot-check the newest ones.
    for name, version in [("ProduceRequest", 13), ("FetchRequest", 18), ("FetchResponse", 18),
                          ("ListOffsetsRequest", 11), ("MetadataResponse", 13), ("CreateTopicsResponse", 7),
                          ("DeleteTopicsRequest", 6), ("VoteRequest", 2), ("BeginQuorumEpochRequest", 1),
                          ("EndQuorumEpochRequest", 1), ("DescribeQuorumResponse", 2),
                          ("FetchSnapshotResponse", 1)]:
        assert (name, version) in covered
    assert len(PAIRS) >= 150


@pytest.mark.interop
@pytest.mark.parametrize(("spec", "version"), PAIRS, ids=IDS)
def test_shape_matches_kio(spec: MessageSpec, version: int) -> None:
    """Field order, names, tags, flexibility, nullability and declared defaults agree with kio."""
    cls = _kio_class(spec, version)
    assert cls is not None
    assert cls.__flexible__ == spec.is_flexible(version)
    assert cls.__api_key__ == spec.api_key
    _check_shape(spec.fields, version, cls, spec.is_flexible(version))


def _check_shape(fields: tuple[Field, ...], version: int, cls: type[Any], flexible: bool) -> None:
    for f, k, hint in _pairs(fields, version, cls):
        where = f"{cls.__name__}.{f.name} v{version}"
        tagged = flexible and version in f.tagged_versions
        assert k.metadata.get("tag") == (f.tag if tagged else None), where
        kt = k.metadata.get("kafka_type")
        if kt not in ("uuid", "datetime_i64"):  # kio models zero uuids / -1 timestamps as None
            assert _optional(hint) == (version in f.nullable_versions), where
        if f.is_struct:
            sub = _inner_dataclass(hint)
            assert sub is not None
            _check_shape(f.fields, version, sub, flexible)
        if k.default_factory is not dataclasses.MISSING:
            assert f.is_array and f.default_value() == list(k.default_factory()), where
        if k.default is dataclasses.MISSING:
            continue  # kio requires it: Kafka declares no default beyond the type's zero
        if k.default is None and (f.is_array or f.is_struct):  # a nullable field whose default is null
            assert f.default_value() is None, where
        elif f.is_array:
            assert f.default_value() == list(k.default), where
        elif f.is_struct:
            expected = _present(f.fields, version, f.default_value())
            assert from_kio(f.fields, version, k.default) == expected, where
        else:
            kind = kt or f.type
            ours = _prim_from_kio(kind, _prim_to_kio(kind, f.default_value()))
            assert ours == _prim_from_kio(kind, k.default), where


@pytest.mark.interop
@pytest.mark.parametrize(("spec", "version"), PAIRS, ids=IDS)
@pytest.mark.parametrize("seed", range(6))
def test_bytes_agree_with_kio(spec: MessageSpec, version: int, seed: int) -> None:
    cls = _kio_class(spec, version)
    assert cls is not None
    rnd = random.Random(f"{spec.name}/{version}/{seed}")
    value = gen_value(spec.fields, version, cls, rnd)

    ours = codec.encode(spec, version, value)
    expected = _present(spec.fields, version, codec.decode(spec, version, ours))

    # ours -> kio
    decoded_by_kio = kio_decode(cls, ours)
    assert from_kio(spec.fields, version, decoded_by_kio) == expected

    # kio -> ours, and byte-for-byte equality of the two encoders
    theirs = kio_encode(cls, to_kio(spec.fields, version, value, cls))
    assert theirs == ours
    assert _present(spec.fields, version, codec.decode(spec, version, theirs)) == expected


@pytest.mark.interop
@pytest.mark.parametrize(("spec", "version"), PAIRS, ids=IDS)
def test_defaults_agree_with_kio(spec: MessageSpec, version: int) -> None:
    """A value left at every default (non-empty containers only where required) is the same
    bytes on both sides; this exercises tagged fields being left out."""
    cls = _kio_class(spec, version)
    assert cls is not None
    value = _present(spec.fields, version, codec.default_value(spec))
    ours = codec.encode(spec, version, value)
    assert kio_encode(cls, to_kio(spec.fields, version, value, cls)) == ours
    assert from_kio(spec.fields, version, kio_decode(cls, ours)) == value


# ----------------------------------------------------------- hand-checked oldest layouts

def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_produce_v0_layout() -> None:
    records = b"\x00" * 12 + b"legacy-msgset"
    value = {
        "acks": -1,
        "timeoutMs": 30000,
        "topicData": [{"name": "orders", "partitionData": [{"index": 3, "records": records}]}],
    }
    expected = (
        struct.pack(">hi", -1, 30000)
        + struct.pack(">i", 1) + _s("orders")
        + struct.pack(">i", 1) + struct.pack(">i", 3)
        + struct.pack(">i", len(records)) + records
    )
    assert codec.encode(data.PRODUCE_REQUEST, 0, value) == expected
    decoded = codec.decode(data.PRODUCE_REQUEST, 0, expected)
    assert decoded["topicData"][0]["partitionData"][0]["records"] == records
    assert decoded["transactionalId"] is None
    # v0-2 have no TransactionalId and it is not ignorable: a transactional produce must fail.
    with pytest.raises(UnsupportedVersionError):
        codec.encode(data.PRODUCE_REQUEST, 2, {**value, "transactionalId": "tx"})
    # v3 inserts the nullable TransactionalId first.
    assert codec.encode(data.PRODUCE_REQUEST, 3, value) == struct.pack(">h", -1) + expected
    # null records are a -1 length.
    null_records = codec.encode(data.PRODUCE_REQUEST, 0, {
        **value, "topicData": [{"name": "o", "partitionData": [{"index": 0, "records": None}]}]})
    assert null_records.endswith(struct.pack(">ii", 0, -1))


def test_produce_response_v0_to_v2_layout() -> None:
    value = {"responses": [{"name": "t", "partitionResponses": [
        {"index": 1, "errorCode": 0, "baseOffset": 42, "logAppendTimeMs": 1700000000000}]}],
        "throttleTimeMs": 5}
    v0 = struct.pack(">i", 1) + _s("t") + struct.pack(">iihq", 1, 1, 0, 42)
    assert codec.encode(data.PRODUCE_RESPONSE, 0, value) == v0  # both newer fields are ignorable
    assert codec.encode(data.PRODUCE_RESPONSE, 1, value) == v0 + struct.pack(">i", 5)
    assert codec.encode(data.PRODUCE_RESPONSE, 2, value) == (
        struct.pack(">i", 1) + _s("t") + struct.pack(">iihqq", 1, 1, 0, 42, 1700000000000)
        + struct.pack(">i", 5))


def test_fetch_v0_layout() -> None:
    value = {
        "replicaId": -1, "maxWaitMs": 500, "minBytes": 1,
        "topics": [{"topic": "orders", "partitions": [
            {"partition": 2, "fetchOffset": 1234, "partitionMaxBytes": 1048576}]}],
    }
    expected = (
        struct.pack(">iii", -1, 500, 1)
        + struct.pack(">i", 1) + _s("orders")
        + struct.pack(">i", 1) + struct.pack(">iqi", 2, 1234, 1048576)
    )
    assert codec.encode(data.FETCH_REQUEST, 0, value) == expected
    assert codec.encode(data.FETCH_REQUEST, 1, value) == expected
    assert codec.encode(data.FETCH_REQUEST, 2, value) == expected
    # v3 adds MaxBytes after MinBytes, defaulting to 0x7fffffff.
    assert codec.encode(data.FETCH_REQUEST, 3, value) == (
        struct.pack(">iiii", -1, 500, 1, 0x7FFFFFFF) + expected[12:])
    decoded = codec.decode(data.FETCH_REQUEST, 0, expected)
    assert decoded["maxBytes"] == 0x7FFFFFFF and decoded["isolationLevel"] == 0
    assert decoded["topics"][0]["partitions"][0]["logStartOffset"] == -1


def test_fetch_response_v0_layout() -> None:
    records = b"\x01\x02\x03"
    value = {"throttleTimeMs": 0, "responses": [{"topic": "t", "partitions": [
        {"partitionIndex": 0, "errorCode": 0, "highWatermark": 10, "records": records}]}]}
    body = _s("t") + struct.pack(">i", 1) + struct.pack(">ihq", 0, 0, 10) + struct.pack(">i", 3) + records
    assert codec.encode(data.FETCH_RESPONSE, 0, value) == struct.pack(">i", 1) + body
    # v1 puts ThrottleTimeMs first.
    assert codec.encode(data.FETCH_RESPONSE, 1, value) == struct.pack(">ii", 0, 1) + body


def test_list_offsets_v0_layout() -> None:
    request = {"replicaId": -1, "topics": [{"name": "t", "partitions": [
        {"partitionIndex": 0, "timestamp": -2, "maxNumOffsets": 5}]}]}
    assert codec.encode(data.LIST_OFFSETS_REQUEST, 0, request) == (
        struct.pack(">ii", -1, 1) + _s("t") + struct.pack(">iiqi", 1, 0, -2, 5))
    # MaxNumOffsets only exists at v0 and is not ignorable.
    with pytest.raises(UnsupportedVersionError):
        codec.encode(data.LIST_OFFSETS_REQUEST, 1, request)
    response = {"topics": [{"name": "t", "partitions": [
        {"partitionIndex": 0, "errorCode": 0, "oldStyleOffsets": [7, 3]}]}]}
    assert codec.encode(data.LIST_OFFSETS_RESPONSE, 0, response) == (
        struct.pack(">i", 1) + _s("t") + struct.pack(">iihi", 1, 0, 0, 2) + struct.pack(">qq", 7, 3))


def test_old_topic_admin_layouts() -> None:
    create = {"topics": [{"name": "t", "numPartitions": 3, "replicationFactor": 1,
                          "assignments": [], "configs": [{"name": "cleanup.policy", "value": None}]}],
              "timeoutMs": 1000}
    expected = (struct.pack(">i", 1) + _s("t") + struct.pack(">ihii", 3, 1, 0, 1)
                + _s("cleanup.policy") + struct.pack(">h", -1) + struct.pack(">i", 1000))
    assert codec.encode(topics.CREATE_TOPICS_REQUEST, 0, create) == expected
    assert codec.encode(topics.CREATE_TOPICS_REQUEST, 1, create) == expected + b"\x00"
    with pytest.raises(UnsupportedVersionError):
        codec.encode(topics.CREATE_TOPICS_REQUEST, 0, {**create, "validateOnly": True})
    delete = {"topicNames": ["a", "b"], "timeoutMs": 100}
    assert codec.encode(topics.DELETE_TOPICS_REQUEST, 0, delete) == (
        struct.pack(">i", 2) + _s("a") + _s("b") + struct.pack(">i", 100))
    # v6 replaces TopicNames with Topics; the old list is ignorable, the new one is not.
    v6 = codec.encode(topics.DELETE_TOPICS_REQUEST, 6, delete)
    assert v6 == bytes([1]) + struct.pack(">i", 100) + b"\x00"
    with pytest.raises(UnsupportedVersionError):
        codec.encode(topics.DELETE_TOPICS_REQUEST, 5, {"topics": [{"name": "a", "topicId": ZERO_UUID}]})
    metadata = {"topics": [{"name": "t"}]}
    assert codec.encode(topics.METADATA_REQUEST, 0, metadata) == struct.pack(">i", 1) + _s("t")
    with pytest.raises(UnsupportedVersionError):
        codec.encode(topics.METADATA_REQUEST, 3, {**metadata, "allowAutoTopicCreation": False})


def test_version_gated_fields_follow_kafka_ignorable_rules() -> None:
    base = {"maxWaitMs": 1, "minBytes": 1, "topics": []}
    # Ignorable fields are dropped silently at versions without them.
    assert codec.encode(data.FETCH_REQUEST, 3, {**base, "isolationLevel": 1, "rackId": "r"}) == \
        codec.encode(data.FETCH_REQUEST, 3, base)
    # ReplicaState (v15+) is not ignorable; ReplicaId (v0-14) is gone at v15.
    with pytest.raises(UnsupportedVersionError):
        codec.encode(data.FETCH_REQUEST, 14, {**base, "replicaState": {"replicaId": 1, "replicaEpoch": 2}})
    with pytest.raises(UnsupportedVersionError):
        codec.encode(data.FETCH_REQUEST, 15, {**base, "replicaId": 1})
    # A pre-vote must not be sent to a voter that predates KIP-996.
    vote = {"clusterId": None, "topics": [{"topicName": "__cluster_metadata", "partitions": [
        {"partitionIndex": 0, "replicaEpoch": 1, "replicaId": 1, "lastOffsetEpoch": 0, "lastOffset": 0,
         "preVote": True}]}]}
    with pytest.raises(UnsupportedVersionError):
        codec.encode(raft.VOTE_REQUEST, 1, vote)


def test_flexible_tagged_fields() -> None:
    value = {"clusterId": "abc", "replicaState": {"replicaId": 3, "replicaEpoch": 9},
             "maxWaitMs": 0, "minBytes": 0, "topics": [], "forgottenTopicsData": []}
    out = codec.encode(data.FETCH_REQUEST, 15, value)
    fixed = struct.pack(">iiibii", 0, 0, 0x7FFFFFFF, 0, 0, -1) + b"\x01\x01" + b"\x01"
    tags = b"\x02" + b"\x00\x04\x04abc" + b"\x01\x0d" + struct.pack(">iq", 3, 9) + b"\x00"
    assert out == fixed + tags
    decoded = codec.decode(data.FETCH_REQUEST, 15, out)
    assert decoded["clusterId"] == "abc" and decoded["replicaState"] == {"replicaId": 3, "replicaEpoch": 9}
    assert decoded["replicaId"] == -1
