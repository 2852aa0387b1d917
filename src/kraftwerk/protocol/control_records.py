"""Control records: the records of a control batch (attribute bit 5).

A control record's key is ``version int16 (0) + type int16``, the type being Kafka's
``ControlRecordType``. ABORT and COMMIT are transaction markers whose value is an ``EndTxnMarker``;
the KRaft types carry the message declared here, each with its own leading ``Version`` field. The
api key of each KRaft declaration is its control record type.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Mapping
from types import MappingProxyType

from kraftwerk.protocol.errors import DecodeError, UnknownMessageError
from kraftwerk.protocol.schema import Kind, MessageSpec, field, message

#: The only control record key version Kafka writes and reads.
CONTROL_KEY_VERSION = 0
CONTROL_KEY_SIZE = 4
_KEY = struct.Struct(">hh")


class ControlRecordType(enum.IntEnum):
    """Kafka's ControlRecordType; UNKNOWN stands for any type this code does not know."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1

    @staticmethod
    def for_code(code: int) -> ControlRecordType:
        """The type with this code, or UNKNOWN (Kafka ignores control records of unknown types)."""
        try:
            return ControlRecordType(code)
        except ValueError:
            return ControlRecordType.UNKNOWN


def encode_control_key(record_type: ControlRecordType) -> bytes:
    """The 4-byte key of a control record of this type."""
    if record_type is ControlRecordType.UNKNOWN:
        raise ValueError("cannot write a control record of UNKNOWN type")
    return _KEY.pack(CONTROL_KEY_VERSION, int(record_type))


def parse_control_key(key: bytes | None) -> tuple[ControlRecordType, int]:
    """The type of a control record key and its raw code; a bad key is a DecodeError.

    Like Kafka, a key longer than 4 bytes is accepted (later key versions may append fields) but
    its version must be 0.
    """
    if key is None or len(key) < CONTROL_KEY_SIZE:
        raise DecodeError(f"control record key must hold at least {CONTROL_KEY_SIZE} bytes")
    version, code = _KEY.unpack_from(key, 0)
    if version != CONTROL_KEY_VERSION:
        raise DecodeError(f"cannot parse control record key with version {version}")
    return ControlRecordType.for_code(code), code


LEADER_CHANGE_MESSAGE = message(
    "LeaderChangeMessage", int(ControlRecordType.LEADER_CHANGE), Kind.DATA, valid="0", flexible="0+",
    record_type_name="LEADER_CHANGE",
    fields=[
        field("Version", "int16", "0+"),
        field("LeaderId", "int32", "0+", entity_type="brokerId"),
        field("Voters", "[]Voter", "0+", fields=[field("VoterId", "int32", "0+")]),
        field("GrantingVoters", "[]Voter", "0+", fields=[field("VoterId", "int32", "0+")]),
    ],
)

SNAPSHOT_HEADER_RECORD = message(
    "SnapshotHeaderRecord", int(ControlRecordType.SNAPSHOT_HEADER), Kind.DATA, valid="0", flexible="0+",
    record_type_name="SNAPSHOT_HEADER",
    fields=[
        field("Version", "int16", "0+"),
        field("LastContainedLogTimestamp", "int64", "0+"),
    ],
)

SNAPSHOT_FOOTER_RECORD = message(
    "SnapshotFooterRecord", int(ControlRecordType.SNAPSHOT_FOOTER), Kind.DATA, valid="0", flexible="0+",
    record_type_name="SNAPSHOT_FOOTER",
    fields=[field("Version", "int16", "0+")],
)

KRAFT_VERSION_RECORD = message(
    "KRaftVersionRecord", int(ControlRecordType.KRAFT_VERSION), Kind.DATA, valid="0", flexible="0+",
    record_type_name="KRAFT_VERSION",
    fields=[
        field("Version", "int16", "0+"),
        field("KRaftVersion", "int16", "0+"),
    ],
)

VOTERS_RECORD = message(
    "VotersRecord", int(ControlRecordType.KRAFT_VOTERS), Kind.DATA, valid="0", flexible="0+",
    record_type_name="KRAFT_VOTERS",
    fields=[
        field("Version", "int16", "0+"),
        field("Voters", "[]Voter", "0+", fields=[
            field("VoterId", "int32", "0+", entity_type="brokerId"),
            field("VoterDirectoryId", "uuid", "0+"),
            field("Endpoints", "[]Endpoint", "0+", fields=[
                field("Name", "string", "0+"),
                field("Host", "string", "0+"),
                field("Port", "uint16", "0+"),
            ]),
            field("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
                field("MinSupportedVersion", "int16", "0+"),
                field("MaxSupportedVersion", "int16", "0+"),
            ]),
        ]),
    ],
)

#: The value of an ABORT or COMMIT marker. Kafka declares EndTxnMarker (v0, not flexible) with only
#: CoordinatorEpoch and prefixes the int16 version itself; declaring the version as the first field
#: makes the whole value one message. It is not in SPECS: both marker types share it, and the
#: registry keys control records by type (see :func:`spec_for`).
END_TXN_MARKER = message(
    "EndTxnMarker", int(ControlRecordType.ABORT), Kind.DATA, valid="0", flexible="none",
    fields=[
        field("Version", "int16", "0+"),
        field("CoordinatorEpoch", "int32", "0+"),
    ],
)

SPECS = (
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_HEADER_RECORD,
    SNAPSHOT_FOOTER_RECORD,
    KRAFT_VERSION_RECORD,
    VOTERS_RECORD,
)

_BY_TYPE: Mapping[int, MessageSpec] = MappingProxyType({spec.api_key: spec for spec in SPECS})


def spec_for(record_type: ControlRecordType | int) -> MessageSpec:
    """The declaration of a control record's value (EndTxnMarker for ABORT and COMMIT)."""
    code = int(record_type)
    if code in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return END_TXN_MARKER
    spec = _BY_TYPE.get(code)
    if spec is None:
        raise UnknownMessageError(f"no control record declared for control record type {code}")
    return spec
