"""Control record declarations: types, keys, and the control batches of real metadata logs."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraftwerk.protocol import codec, json_form, registry
from kraftwerk.protocol import control_records as cr
from kraftwerk.protocol.errors import DecodeError, UnknownMessageError
from kraftwerk.protocol.schema import Kind
from tests.conftest import golden_path
from tests.protocol.test_metadata_records import walk_batches


def test_control_record_types_are_kafkas() -> None:
    assert [(t.name, int(t)) for t in cr.ControlRecordType] == [
        ("ABORT", 0), ("COMMIT", 1), ("LEADER_CHANGE", 2), ("SNAPSHOT_HEADER", 3), ("SNAPSHOT_FOOTER", 4),
        ("KRAFT_VERSION", 5), ("KRAFT_VOTERS", 6), ("UNKNOWN", -1),
    ]
    assert cr.ControlRecordType.for_code(99) is cr.ControlRecordType.UNKNOWN


def test_declarations_are_keyed_by_control_record_type() -> None:
    names = {spec.name: (spec.api_key, spec.record_type_name) for spec in cr.SPECS}
    assert names == {
        "LeaderChangeMessage": (2, "LEADER_CHANGE"),
        "SnapshotHeaderRecord": (3, "SNAPSHOT_HEADER"),
        "SnapshotFooterRecord": (4, "SNAPSHOT_FOOTER"),
        "KRaftVersionRecord": (5, "KRAFT_VERSION"),
        "VotersRecord": (6, "KRAFT_VOTERS"),
    }
    for spec in cr.SPECS:
        assert spec.kind is Kind.DATA
        assert registry.by_api_key(Kind.DATA, spec.api_key) is spec
        assert registry.lookup_record(spec.name) is spec
        assert cr.spec_for(cr.ControlRecordType(spec.api_key)) is spec
    assert cr.spec_for(cr.ControlRecordType.ABORT) is cr.END_TXN_MARKER
    assert cr.spec_for(1) is cr.END_TXN_MARKER
    with pytest.raises(UnknownMessageError):
        cr.spec_for(-1)


def test_control_keys() -> None:
    assert cr.encode_control_key(cr.ControlRecordType.KRAFT_VOTERS) == bytes([0, 0, 0, 6])
    assert cr.parse_control_key(bytes([0, 0, 0, 1])) == (cr.ControlRecordType.COMMIT, 1)
    assert cr.parse_control_key(bytes([0, 0, 0, 42, 9])) == (cr.ControlRecordType.UNKNOWN, 42)
    for bad in (None, b"", bytes([0, 0, 0]), bytes([0, 1, 0, 0])):
        with pytest.raises(DecodeError):
            cr.parse_control_key(bad)
    with pytest.raises(ValueError):
        cr.encode_control_key(cr.ControlRecordType.UNKNOWN)


def test_end_txn_marker_value() -> None:
    data = codec.encode(cr.END_TXN_MARKER, 0, {"version": 0, "coordinatorEpoch": 5})
    assert data == bytes([0, 0, 0, 0, 0, 5])
    assert codec.decode(cr.END_TXN_MARKER, 0, data) == {"version": 0, "coordinatorEpoch": 5}


def test_leader_change_bytes() -> None:
    value = {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]}
    data = codec.encode(cr.LEADER_CHANGE_MESSAGE, 0, value)
    # version, leader, [voter 1], [voter 1], no tagged fields — the 19 bytes Kafka 4.3 wrote
    assert data == bytes([0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 1, 0, 2, 0, 0, 0, 1, 0, 0])


def test_voters_record_json_form() -> None:
    obj = {"version": 0, "voters": [{
        "voterId": 1, "voterDirectoryId": "zLzHk_h9QHKlrG_xQlVDxQ",
        "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
    }]}
    value = json_form.from_json(cr.VOTERS_RECORD, 0, obj)
    assert isinstance(value["voters"][0]["voterDirectoryId"], uuid.UUID)
    data = codec.encode(cr.VOTERS_RECORD, 0, value)
    assert len(data) == 55  # valueSize in Kafka's dump of the same record
    assert json_form.to_json(cr.VOTERS_RECORD, 0, codec.decode(cr.VOTERS_RECORD, 0, data)) == obj


@pytest.mark.parametrize("parts", [
    ("kafka-4.3-standalone", "00000000000000000000.log"),
    ("kafka-4.3-standalone", "00000000000000000000-0000000000.checkpoint"),
    ("kafka-4.3-standalone", "bootstrap.checkpoint"),
], ids=lambda p: "/".join(p))
def test_control_records_of_real_logs(parts: tuple[str, ...]) -> None:
    check_control_records(golden_path(*parts))


def check_control_records(path: Path) -> None:
    """Every control record of a real log or checkpoint decodes and re-encodes to Kafka's bytes."""
    seen: list[str] = []
    for rec in walk_batches(path):
        if not rec.control:
            continue
        record_type, _ = cr.parse_control_key(rec.key)
        assert record_type is not cr.ControlRecordType.UNKNOWN
        assert rec.value is not None
        value = codec.decode(cr.spec_for(record_type), 0, rec.value)
        assert value["version"] == 0
        assert codec.encode(cr.spec_for(record_type), 0, value) == rec.value
        seen.append(record_type.name)
    assert seen
    if path.name.endswith(".checkpoint"):
        # A snapshot opens with its header and closes with its footer.
        assert seen[0] == "SNAPSHOT_HEADER" and seen[-1] == "SNAPSHOT_FOOTER"
