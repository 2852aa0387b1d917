"""Metadata record declarations against Kafka's bytes: golden vectors and real metadata logs."""

from __future__ import annotations

import json
import re
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.protocol import codec, json_form, registry
from kraftwerk.protocol import metadata_records as mr
from kraftwerk.protocol.errors import UnsupportedVersionError
from kraftwerk.protocol.frame import decode_metadata_record, encode_metadata_record
from kraftwerk.protocol.schema import Kind, MessageSpec
from tests.conftest import golden_path

# ---------------------------------------------------------------- a minimal v2 batch walker (tests only)

_BATCH_HEADER = 61
_ATTR_COMPRESSION = 0x07
_ATTR_CONTROL = 0x20


@dataclass(frozen=True)
class LogRecord:
    offset: int
    control: bool
    key: bytes | None
    value: bytes | None


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    n, pos = _uvarint(buf, pos)
    return (n >> 1) ^ -(n & 1), pos


def walk_batches(path: Path) -> Iterator[LogRecord]:
    """Every record of an uncompressed v2 log segment or snapshot file."""
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        assert end <= len(data), f"truncated batch at {pos} in {path}"
        magic = data[pos + 16]
        assert magic == 2
        attributes, = struct.unpack_from(">h", data, pos + 21)
        count, = struct.unpack_from(">i", data, pos + 57)
        assert attributes & _ATTR_COMPRESSION == 0, "only uncompressed batches are expected here"
        control = bool(attributes & _ATTR_CONTROL)
        q = pos + _BATCH_HEADER
        for _ in range(count):
            size, q = _varint(data, q)
            rec_end = q + size
            q += 1  # attributes
            _, q = _varint(data, q)  # timestamp delta
            offset_delta, q = _varint(data, q)
            key_len, q = _varint(data, q)
            key = None if key_len < 0 else data[q:q + key_len]
            q += max(key_len, 0)
            value_len, q = _varint(data, q)
            value = None if value_len < 0 else data[q:q + value_len]
            q += max(value_len, 0)
            headers, q = _varint(data, q)
            assert headers == 0
            assert q == rec_end, f"record at offset {base_offset + offset_delta} has trailing bytes"
            yield LogRecord(base_offset + offset_delta, control, key, value)
        assert q == end, f"batch at {pos} has trailing bytes"
        pos = end


METADATA_FILES = [
    ("kafka-4.3-standalone", "00000000000000000000.log"),
    ("kafka-4.3-standalone", "00000000000000000000-0000000000.checkpoint"),
    ("kafka-4.3-standalone", "bootstrap.checkpoint"),
]


# ---------------------------------------------------------------- declarations

EXPECTED_KEYS = {
    0: "REGISTER_BROKER_RECORD", 1: "UNREGISTER_BROKER_RECORD", 2: "TOPIC_RECORD", 3: "PARTITION_RECORD",
    4: "CONFIG_RECORD", 5: "PARTITION_CHANGE_RECORD", 7: "FENCE_BROKER_RECORD", 8: "UNFENCE_BROKER_RECORD",
    9: "REMOVE_TOPIC_RECORD", 10: "DELEGATION_TOKEN_RECORD", 11: "USER_SCRAM_CREDENTIAL_RECORD",
    12: "FEATURE_LEVEL_RECORD", 14: "CLIENT_QUOTA_RECORD", 15: "PRODUCER_IDS_RECORD",
    17: "BROKER_REGISTRATION_CHANGE_RECORD", 18: "ACCESS_CONTROL_ENTRY_RECORD",
    19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 20: "NO_OP_RECORD", 21: "ZK_MIGRATION_STATE_RECORD",
    22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 23: "BEGIN_TRANSACTION_RECORD", 24: "END_TRANSACTION_RECORD",
    25: "ABORT_TRANSACTION_RECORD", 26: "REMOVE_DELEGATION_TOKEN_RECORD", 27: "REGISTER_CONTROLLER_RECORD",
    28: "CLEAR_ELR_RECORD", 29: "UNREGISTER_CONTROLLER_RECORD",
}


def test_api_keys_and_type_names_match_kafkas_metadata_record_type() -> None:
    got = {spec.api_key: spec.record_type_name for spec in mr.SPECS}
    assert got == EXPECTED_KEYS
    for spec in mr.SPECS:
        assert spec.kind is Kind.METADATA
        assert spec.versions().start == 0
        assert spec.flexible_versions.lowest == 0 and spec.flexible_versions.highest is None
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", spec.name).upper()
        assert spec.record_type_name == snake
        assert registry.by_api_key(Kind.METADATA, spec.api_key) is spec
        assert registry.lookup_record(spec.record_type_name) is spec


@pytest.mark.parametrize(("spec", "highest"), [
    (mr.REGISTER_BROKER_RECORD, 5), (mr.PARTITION_RECORD, 2), (mr.PARTITION_CHANGE_RECORD, 2),
    (mr.BROKER_REGISTRATION_CHANGE_RECORD, 3), (mr.FEATURE_LEVEL_RECORD, 0), (mr.NO_OP_RECORD, 0),
])
def test_version_ranges(spec: MessageSpec, highest: int) -> None:
    assert spec.valid_versions.highest == highest


# ---------------------------------------------------------------- golden vectors

def _record_rows() -> list[tuple[str, int, str, str]]:
    path = golden_path("message-vectors.tsv")
    rows = []
    for line in path.read_text().splitlines()[1:]:
        api, kind, version, hexdata, obj = line.split("\t")
        if kind == "record":
            rows.append((api, int(version), hexdata, obj))
    assert {r[0] for r in rows} >= {"FEATURE_LEVEL_RECORD", "REGISTER_BROKER_RECORD"}
    return rows


def test_golden_record_vectors() -> None:
    for api, version, hexdata, obj in _record_rows():
        spec = registry.lookup_record(api)
        value = json_form.from_json(spec, version, json.loads(obj))
        encoded = encode_metadata_record(spec, version, value)
        assert encoded.hex() == hexdata, f"{api} v{version}"
        decoded = decode_metadata_record(bytes.fromhex(hexdata))
        assert decoded.spec is spec and decoded.version == version
        assert json_form.to_json(spec, version, decoded.value) == json_form.to_json(spec, version, value)


# ---------------------------------------------------------------- real metadata logs

@pytest.mark.parametrize("parts", METADATA_FILES, ids=lambda p: "/".join(p))
def test_every_record_of_a_real_metadata_log_decodes(parts: tuple[str, ...]) -> None:
    check_every_record_decodes(golden_path(*parts))


def check_every_record_decodes(path: Path) -> None:
    """Every record of a real metadata log or checkpoint decodes with no unknown tagged fields and
    encodes back to Kafka's bytes."""
    from kraftwerk.protocol.control_records import parse_control_key, spec_for

    data_records = control_records = 0
    for rec in walk_batches(path):
        assert rec.value is not None
        if rec.control:
            record_type, _ = parse_control_key(rec.key)
            value = codec.decode(spec_for(record_type), 0, rec.value)
            assert codec.encode(spec_for(record_type), 0, value) == rec.value
            control_records += 1
            continue
        assert rec.key is None
        decoded = decode_metadata_record(rec.value)  # refuses trailing bytes
        assert codec.UNKNOWN_TAGGED not in decoded.value, f"offset {rec.offset}: unknown tagged fields"
        # Byte-exact: what we decode, we write back identically.
        assert encode_metadata_record(decoded.spec, decoded.version, decoded.value) == rec.value
        data_records += 1
    assert data_records > 0 or control_records > 0


_DUMP_LINE = re.compile(
    r"\| offset: (\d+) .*?headerKeys: \[\] (payload: |LeaderChange: |KRaftVersion |KRaftVoters )(.*)$")


def _dump_payloads() -> dict[int, tuple[str, Any]]:
    """offset -> (kind, JSON) from kafka-dump-log.txt: metadata payloads and control record values."""
    text = golden_path("kafka-4.3-standalone", "kafka-dump-log.txt").read_text()
    out: dict[int, tuple[str, Any]] = {}
    for line in text.splitlines():
        m = _DUMP_LINE.match(line)
        if m:
            out[int(m.group(1))] = (m.group(2).strip(" :"), json.loads(m.group(3)))
    return out


def _matches_kafka_json(spec: MessageSpec, version: int, value: codec.Value, kafka: dict[str, Any]) -> None:
    ours = json_form.to_json(spec, version, value)
    for key, item in kafka.items():
        assert ours[key] == item, f"{spec.name} v{version}: {key}"
    # Kafka's converter leaves out tagged fields at their default; nothing else may be missing.
    for f in spec.fields:
        if f.json_name in ours and f.json_name not in kafka:
            assert version in f.tagged_versions, f"{spec.name}.{f.name} missing from Kafka's JSON"
            assert value[f.json_name] == f.default_value()


def test_decoded_values_match_kafka_dump_log() -> None:
    from kraftwerk.protocol.control_records import parse_control_key, spec_for

    dump = _dump_payloads()
    checked: set[str] = set()
    for rec in walk_batches(golden_path(*METADATA_FILES[0])):
        if rec.offset not in dump:
            continue
        kind, kafka = dump[rec.offset]
        assert rec.value is not None
        if rec.control:
            record_type, _ = parse_control_key(rec.key)
            spec = spec_for(record_type)
            _matches_kafka_json(spec, 0, codec.decode(spec, 0, rec.value), kafka)
            checked.add(spec.name)
            continue
        assert kind == "payload"
        decoded = decode_metadata_record(rec.value)
        assert kafka["type"] == decoded.spec.record_type_name
        assert kafka["version"] == decoded.version
        _matches_kafka_json(decoded.spec, decoded.version, decoded.value, kafka["data"])
        checked.add(decoded.spec.name)
    assert checked >= {
        "LeaderChangeMessage", "KRaftVersionRecord", "VotersRecord", "FeatureLevelRecord",
        "RegisterBrokerRecord", "RegisterControllerRecord", "BrokerRegistrationChangeRecord",
        "BeginTransactionRecord", "EndTransactionRecord", "ConfigRecord", "NoOpRecord",
    }


def test_register_broker_record_v4_from_a_43_broker() -> None:
    for rec in walk_batches(golden_path(*METADATA_FILES[0])):
        if rec.control or rec.value is None:
            continue
        decoded = decode_metadata_record(rec.value)
        if decoded.spec is mr.REGISTER_BROKER_RECORD:
            assert decoded.version == 4
            assert decoded.value["brokerId"] == 1
            assert decoded.value["cordonedLogDirs"] is None
            assert len(decoded.value["logDirs"]) == 1
            return
    pytest.fail("no RegisterBrokerRecord in the 4.3 log")


# ---------------------------------------------------------------- KIP-1294: RegisterBrokerRecord v5

def _broker_value() -> codec.Value:
    return {
        "brokerId": 3, "incarnationId": uuid.UUID(int=7), "brokerEpoch": 42,
        "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
        "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 30}],
        "rack": None, "fenced": True, "logDirs": [uuid.UUID(int=9)],
    }


def test_register_broker_record_v5_carries_static_configs_as_tag_2() -> None:
    value = _broker_value() | {
        "staticConfigs": [{"name": "log.segment.bytes", "value": "2048"}, {"name": "secret", "value": None}],
    }
    data = encode_metadata_record(mr.REGISTER_BROKER_RECORD, 5, value)
    decoded = decode_metadata_record(data)
    assert decoded.version == 5
    assert decoded.value["staticConfigs"] == value["staticConfigs"]
    # Without StaticConfigs, v5 is v4 apart from the frame's version byte.
    plain = _broker_value()
    v4 = encode_metadata_record(mr.REGISTER_BROKER_RECORD, 4, plain)
    v5 = encode_metadata_record(mr.REGISTER_BROKER_RECORD, 5, plain)
    assert v4[:2] == v5[:2] and v4[2] == 4 and v5[2] == 5 and v4[3:] == v5[3:]


def test_static_configs_bytes() -> None:
    value = _broker_value() | {"logDirs": [], "staticConfigs": [{"name": "a.b", "value": "1"},
                                                                 {"name": "c", "value": None}]}
    body = codec.encode(mr.REGISTER_BROKER_RECORD, 5, value)
    # compact array of 2: ("a.b", "1", no tags), ("c", null, no tags)
    payload = bytes([3, 4]) + b"a.b" + bytes([2]) + b"1" + bytes([0, 2]) + b"c" + bytes([0, 0])
    assert body.endswith(bytes([1, 2, len(payload)]) + payload)  # one tagged field: tag 2


def test_static_configs_cannot_be_written_below_v5() -> None:
    value = _broker_value() | {"staticConfigs": [{"name": "a", "value": "b"}]}
    with pytest.raises(UnsupportedVersionError):
        encode_metadata_record(mr.REGISTER_BROKER_RECORD, 4, value)


def test_cordoned_log_dirs_are_nullable_with_a_null_default() -> None:
    # null (unknown) is not written; an empty list is.
    none = codec.encode(mr.REGISTER_BROKER_RECORD, 4, _broker_value())
    empty = codec.encode(mr.REGISTER_BROKER_RECORD, 4, _broker_value() | {"cordonedLogDirs": []})
    assert empty != none
    assert codec.decode(mr.REGISTER_BROKER_RECORD, 4, empty)["cordonedLogDirs"] == []
    assert codec.decode(mr.REGISTER_BROKER_RECORD, 4, none)["cordonedLogDirs"] is None


def test_every_record_round_trips_its_defaults_at_every_version() -> None:
    for spec in mr.SPECS:
        for version in spec.versions():
            value = codec.default_value(spec)
            data = encode_metadata_record(spec, version, value)
            decoded = decode_metadata_record(data)
            assert decoded.spec is spec and decoded.version == version
            assert encode_metadata_record(spec, version, decoded.value) == data
