"""Every declared message against Kafka's own definitions (``kafka_messages.tsv``).

The table holds what Apache Kafka's JSON message definitions state (field names, order, types,
versions, nullable and tagged versions, tags, defaults), one entry per source release. Each
(message, version) kraftwerk declares is compared field by field with the entry that covers it,
so a transcription error fails here even when it round-trips perfectly through our own codec.
The records real Kafka wrote (golden metadata logs) are decoded and checked against the table too.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.protocol import codec, registry
from kraftwerk.protocol.control_records import parse_control_key, spec_for
from kraftwerk.protocol.frame import decode_metadata_record
from kraftwerk.protocol.header import REQUEST_HEADER, RESPONSE_HEADER
from kraftwerk.protocol.json_form import uuid_from_str
from kraftwerk.protocol.schema import NONE, Field, Kind, MessageSpec, Versions
from kraftwerk.runtime.forwarding import DEFAULT_PRINCIPAL_DATA
from kraftwerk.storage.quorum_state import QuorumState
from tests.conftest import golden_path
from tests.protocol.test_metadata_records import METADATA_FILES, walk_batches

TABLE = Path(__file__).with_name("kafka_messages.tsv")
MAX_VERSION = 127


def kafka_versions(text: str) -> frozenset[int]:
    """Kafka's version notation ("none", "3", "0-2", "4+") as a set of versions."""
    if text in ("-", "none"):
        return frozenset()
    m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
    assert m is not None, f"bad version text {text!r} in {TABLE.name}"
    low = int(m.group(1))
    high = MAX_VERSION if m.group(2) == "+" else int(m.group(3) or low)
    return frozenset(range(low, high + 1))


@dataclass(frozen=True)
class KafkaField:
    path: tuple[str, ...]
    type: str
    versions: frozenset[int]
    nullable: frozenset[int]
    tagged: frozenset[int]
    tag: int | None
    default: str | None

    def default_value(self) -> Any:
        """The value Kafka's generated class holds when the field is absent."""
        text, elem = self.default, self.type.removeprefix("[]")
        if text == "null":
            return None
        if self.type.startswith("[]"):
            return []
        if elem == "records":
            return None  # Kafka's generator starts record sets out as null
        if elem in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            return 0 if text is None else int(text, 0)
        if elem == "float64":
            return 0.0 if text is None else float(text)
        if elem == "bool":
            return text == "true"
        if elem == "string":
            return text or ""
        if elem == "bytes":
            return b""
        if elem == "uuid":
            return uuid.UUID(int=0)
        raise AssertionError(f"no default for a field of type {self.type}")


@dataclass(frozen=True)
class KafkaMessage:
    name: str
    kind: str
    api_key: int
    covers: frozenset[int]
    flexible: frozenset[int]
    source: str
    file: str
    fields: tuple[KafkaField, ...]

    def fields_at(self, version: int) -> list[KafkaField]:
        """The fields present at ``version`` (a nested field needs its parents present too)."""
        present = {f.path for f in self.fields if version in f.versions}
        return [f for f in self.fields
                if all(f.path[:i] in present for i in range(1, len(f.path) + 1))]


@cache
def load_table() -> tuple[dict[str, str], tuple[KafkaMessage, ...]]:
    sources: dict[str, str] = {}
    messages: list[KafkaMessage] = []
    head: list[str] | None = None
    fields: list[KafkaField] = []

    def close() -> None:
        if head is not None:
            name, kind, key, covers, flexible, source, file = head
            messages.append(KafkaMessage(name, kind, -1 if key == "-" else int(key), kafka_versions(covers),
                                         kafka_versions(flexible), source, file, tuple(fields)))

    for line in TABLE.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        row = line.split("\t")
        if row[0] == "source":
            assert row[1] not in sources, f"source {row[1]} is declared twice"
            sources[row[1]] = row[2]
        elif row[0] == "message":
            close()
            head, fields = row[1:], []
        else:
            assert row[0] == "field" and len(row) == 8, line
            path, ftype, versions, nullable, tagged, tag, default = row[1:]
            fields.append(KafkaField(tuple(path.split(".")), ftype, kafka_versions(versions),
                                     kafka_versions(nullable), kafka_versions(tagged),
                                     None if tag == "-" else int(tag), None if default == "-" else default))
    close()
    return sources, tuple(messages)


def declared_specs() -> list[MessageSpec]:
    """Every message kraftwerk declares: the registry plus the headers and the principal data."""
    return [*registry.all_specs(), REQUEST_HEADER, RESPONSE_HEADER, DEFAULT_PRINCIPAL_DATA]


def entry_for(name: str, version: int) -> KafkaMessage | None:
    found = [m for m in load_table()[1] if m.name == name and version in m.covers]
    assert len(found) <= 1, f"{name} v{version} is covered by {len(found)} entries"
    return found[0] if found else None


def _ours_at(fields: Sequence[Field], version: int, prefix: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], Field]]:
    for f in fields:
        if version in f.versions:
            path = (*prefix, f.name)
            yield path, f
            yield from _ours_at(f.fields, version, path)


def _key(path: tuple[str, ...]) -> tuple[str, ...]:
    # Kafka writes a few field names in camelCase ("timeoutMs"); the generated name is the same.
    return tuple(p[0].upper() + p[1:] for p in path)


def compare(spec: MessageSpec, version: int) -> list[str]:
    """How ``spec`` at ``version`` differs from Kafka's definition (empty: it agrees)."""
    where = f"{spec.name} v{version}"
    entry = entry_for(spec.name, version)
    if entry is None:
        return [f"{where}: no Kafka definition in {TABLE.name}"]
    problems = []
    if spec.kind.value != entry.kind and not (entry.kind == "header" and spec.kind.value == "data"):
        problems.append(f"{where}: kind {spec.kind.value}, Kafka {entry.kind}")
    if spec.api_key != entry.api_key:
        problems.append(f"{where}: api key {spec.api_key}, Kafka {entry.api_key}")
    if spec.is_flexible(version) != (version in entry.flexible):
        problems.append(f"{where}: flexible {spec.is_flexible(version)}, Kafka {version in entry.flexible}")
    ours = {_key(p): f for p, f in _ours_at(spec.fields, version)}
    theirs = {_key(f.path): f for f in entry.fields_at(version)}
    if list(ours) != list(theirs):
        names = [".".join(k) for k in ours], [".".join(k) for k in theirs]
        problems.append(f"{where}: fields {names[0]}, Kafka {names[1]}")
    for key in ours.keys() & theirs.keys():
        mine, kafka, name = ours[key], theirs[key], f"{where} {'.'.join(key)}"
        if mine.type != kafka.type:
            problems.append(f"{name}: type {mine.type}, Kafka {kafka.type}")
        nullable = version in mine.nullable_versions
        if nullable != (version in kafka.nullable):
            problems.append(f"{name}: nullable {nullable}, Kafka {version in kafka.nullable}")
        tagged = version in mine.tagged_versions
        if tagged != (version in kafka.tagged) or (tagged and mine.tag != kafka.tag):
            problems.append(f"{name}: tagged {tagged} (tag {mine.tag}), Kafka {version in kafka.tagged} "
                            f"(tag {kafka.tag})")
        # Kafka's class starts a record set out as null even where null cannot be written; kraftwerk
        # starts a non-nullable one as empty bytes so that a default body encodes.
        writable_null = mine.type != "records" or not mine.nullable_versions.is_empty()
        valued = (not mine.is_struct or mine.is_array) and writable_null
        if valued and mine.default_value() != kafka.default_value():
            problems.append(f"{name}: default {mine.default_value()!r}, Kafka {kafka.default_value()!r}")
    return problems


DECLARED = [(spec, v) for spec in declared_specs() for v in spec.versions()]


@pytest.mark.parametrize(("spec", "version"), DECLARED, ids=[f"{s.name}-v{v}" for s, v in DECLARED])
def test_declaration_matches_kafkas_definition(spec: MessageSpec, version: int) -> None:
    assert compare(spec, version) == []


def test_the_table_holds_only_what_is_declared() -> None:
    """No stale facts: every entry names a declared message and covers only declared versions, and
    every entry's source is described."""
    sources, messages = load_table()
    declared = {s.name: set(s.versions()) for s in declared_specs()}
    declared["QuorumStateData"] = {0, 1}  # storage.quorum_state writes it (test below)
    for m in messages:
        assert m.name in declared, m.name
        assert m.covers and m.covers <= declared[m.name], (m.name, sorted(m.covers))
        assert m.source in sources, m.source
    extensions = {(m.name, v) for m in messages if m.source == "kip1294" for v in m.covers}
    assert extensions == {("BrokerRegistrationRequest", 6), ("BrokerRegistrationResponse", 6),
                          ("RegisterBrokerRecord", 5)}


def _with_field(spec: MessageSpec, name: str, **changes: Any) -> MessageSpec:
    fields = tuple(dataclasses.replace(f, **changes) if f.name == name else f for f in spec.fields)
    return dataclasses.replace(spec, fields=fields)


def _register_broker() -> MessageSpec:
    return registry.by_name(Kind.METADATA, "RegisterBrokerRecord")


MUTANTS = {
    "type": (lambda s: _with_field(s, "BrokerEpoch", type="int32"), "BrokerEpoch: type int32, Kafka int64"),
    "tag": (lambda s: _with_field(s, "LogDirs", tag=5), "LogDirs: tagged True (tag 5)"),
    "untagged": (lambda s: _with_field(s, "LogDirs", tagged_versions=NONE, tag=None),
                 "LogDirs: tagged False"),
    "nullable": (lambda s: _with_field(s, "Rack", nullable_versions=NONE), "Rack: nullable False"),
    "default": (lambda s: _with_field(s, "Fenced", default=False), "Fenced: default False, Kafka True"),
    "versions": (lambda s: _with_field(s, "InControlledShutdown", versions=Versions(2, None)),
                 "fields ["),
    "order": (lambda s: dataclasses.replace(s, fields=(s.fields[1], s.fields[0], *s.fields[2:])), "fields ["),
    "dropped": (lambda s: dataclasses.replace(s, fields=s.fields[:-3] + s.fields[-2:]), "fields ["),
    "flexible": (lambda s: dataclasses.replace(s, flexible_versions=Versions(1, None)),
                 "flexible False, Kafka True"),
}


@pytest.mark.parametrize("mutation", sorted(MUTANTS))
def test_a_wrong_declaration_fails_the_comparison(mutation: str) -> None:
    """A copy of RegisterBrokerRecord with one deliberate transcription error is caught."""
    original = _register_broker()
    assert [p for v in original.versions() for p in compare(original, v)] == []
    mutate, expected = MUTANTS[mutation]
    problems = [p for v in original.versions() for p in compare(mutate(original), v)]
    assert any(expected in p for p in problems), problems


def test_quorum_state_file_fields_match_kafkas_quorum_state_data() -> None:
    """raft's QuorumStateData, which ``storage.quorum_state`` writes by hand: the field order and
    the defaults a fresh state starts from, at both data versions."""
    for version in (0, 1):
        entry = entry_for("QuorumStateData", version)
        assert entry is not None
        top = [f for f in entry.fields_at(version) if len(f.path) == 1]
        state = QuorumState(version)
        written = state.to_json_object()
        assert list(written) == [f.path[0][0].lower() + f.path[0][1:] for f in top] + ["data_version"]
        check_against_table("QuorumStateData", version, {
            k: uuid_from_str(v) if k == "votedDirectoryId" else v for k, v in written.items()})
        for f in top:
            if f.type in ("int32", "int64"):
                assert written[f.path[0][0].lower() + f.path[0][1:]] == f.default_value(), f.path


# ---------------------------------------------------------------- Kafka-written records

def _conforms(value: Any, field: KafkaField, version: int) -> bool:
    """Does a decoded value have the shape Kafka's definition gives the field at ``version``?"""
    if value is None:
        return version in field.nullable
    elem = field.type.removeprefix("[]")
    if field.type.startswith("[]"):
        if not isinstance(value, list):
            return False
        if elem in _SCALARS:
            return all(isinstance(x, _SCALARS[elem]) for x in value)
        return all(isinstance(x, dict) for x in value)
    if elem in _SCALARS:
        return isinstance(value, _SCALARS[elem]) and (elem == "bool" or not isinstance(value, bool))
    return isinstance(value, dict) or (elem == "records" and isinstance(value, bytes | bytearray))


_SCALARS: dict[str, type | tuple[type, ...]] = {
    "int8": int, "int16": int, "int32": int, "int64": int, "uint16": int, "uint32": int, "float64": float,
    "bool": bool, "string": str, "bytes": (bytes, bytearray), "uuid": uuid.UUID,
}
_BITS = {"int8": (-(2**7), 2**7), "int16": (-(2**15), 2**15), "int32": (-(2**31), 2**31),
         "int64": (-(2**63), 2**63), "uint16": (0, 2**16), "uint32": (0, 2**32)}


def check_against_table(name: str, version: int, value: dict[str, Any]) -> None:
    """Every field Kafka defines at this version is decoded, with a value of its type."""
    entry = entry_for(name, version)
    assert entry is not None, f"{name} v{version}: not in {TABLE.name}"
    fields = entry.fields_at(version)
    _check_level(name, version, value, fields, ())


def _check_level(name: str, version: int, value: dict[str, Any], fields: list[KafkaField],
                 parent: tuple[str, ...]) -> None:
    level = [f for f in fields if f.path[:-1] == parent]
    expected = {f.path[-1][0].lower() + f.path[-1][1:] for f in level}
    # The codec hands out every declared field; those absent at this version hold their defaults.
    missing = expected - set(value)
    assert not missing, f"{name} v{version} {'.'.join(parent)}: {sorted(missing)} not decoded"
    for f in level:
        item = value[f.path[-1][0].lower() + f.path[-1][1:]]
        assert _conforms(item, f, version), f"{name} v{version} {'.'.join(f.path)}: {item!r} is not {f.type}"
        elem = f.type.removeprefix("[]")
        for x in item if isinstance(item, list) else [item]:
            if elem in _BITS and x is not None:
                low, high = _BITS[elem]
                assert low <= x < high, f"{name} v{version} {'.'.join(f.path)}: {x} out of {elem}"
            elif isinstance(x, dict):
                _check_level(name, version, x, fields, f.path)





def check_records_against_table(path: Path) -> set[tuple[str, int]]:
    """Decode every record of a Kafka-written metadata log, snapshot or bootstrap file and check each
    against the table; the (message, version) pairs seen."""
    seen: set[tuple[str, int]] = set()
    for rec in walk_batches(path):
        assert rec.value is not None
        if rec.control:
            record_type, _ = parse_control_key(rec.key)
            spec = spec_for(record_type)
            version = int.from_bytes(rec.value[:2], "big")
            check_against_table(spec.name, version, codec.decode(spec, version, rec.value))
            seen.add((spec.name, version))
            continue
        decoded = decode_metadata_record(rec.value)
        check_against_table(decoded.spec.name, decoded.version, decoded.value)
        seen.add((decoded.spec.name, decoded.version))
    assert seen
    return seen


@pytest.mark.parametrize("parts", METADATA_FILES, ids=lambda p: "/".join(p))
def test_records_kafka_wrote_match_the_table(parts: tuple[str, ...]) -> None:
    """The Kafka 4.3 files; tests/kafka37 runs the same check on the Kafka 3.7 data dir."""
    seen = check_records_against_table(golden_path(*parts))
    if parts[1].endswith(".log"):
        # The 4.3-only versions the table takes from pull requests, confirmed by Kafka's own bytes.
        assert {("RegisterBrokerRecord", 4), ("BrokerRegistrationChangeRecord", 3)} <= seen
