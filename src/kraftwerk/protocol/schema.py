"""Declarative message schemas: the one place a Kafka message's shape is written down.

A schema lists fields with the versions they exist in, which versions may hold null, which
versions carry the field as a tagged field, and its default. Codecs are derived from these
declarations (see ``codec``); nothing else describes bytes.
"""

from __future__ import annotations

import enum
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

ZERO_UUID = uuid.UUID(int=0)

PRIMITIVES = frozenset(
    {"int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool", "uuid", "string", "bytes",
     "records"}
)
_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive version range; ``highest`` is None for an open range ("N+")."""

    lowest: int
    highest: int | None

    NONE_TEXT = "none"

    @staticmethod
    def parse(text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return NONE
        m = re.fullmatch(r"(\d+)(\+|-(\d+))?", text)
        if not m:
            raise ValueError(f"bad version range {text!r}")
        low = int(m.group(1))
        if m.group(2) == "+":
            return Versions(low, None)
        if m.group(3) is not None:
            return Versions(low, int(m.group(3)))
        return Versions(low, low)

    def __contains__(self, version: object) -> bool:
        if not isinstance(version, int) or self.lowest < 0:
            return False
        return version >= self.lowest and (self.highest is None or version <= self.highest)

    def is_empty(self) -> bool:
        return self.lowest < 0

    def __str__(self) -> str:
        if self.lowest < 0:
            return "none"
        if self.highest is None:
            return f"{self.lowest}+"
        if self.highest == self.lowest:
            return str(self.lowest)
        return f"{self.lowest}-{self.highest}"


NONE = Versions(-1, -1)


def _versions(spec: str | Versions | None) -> Versions:
    if spec is None:
        return NONE
    return spec if isinstance(spec, Versions) else Versions.parse(spec)


class Kind(enum.Enum):
    """What a declared message is: one side of an RPC, a metadata record, or a control record."""

    REQUEST = "request"
    RESPONSE = "response"
    METADATA = "metadata"
    DATA = "data"


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a message or struct.

    ``type`` is Kafka's type name: a primitive, ``[]T`` for an array, or a struct name (with
    ``fields``). ``default`` is the declared default (None means the type's own zero value, or
    null where ``default_null`` is set).
    """

    name: str
    type: str
    versions: Versions
    nullable_versions: Versions = NONE
    tagged_versions: Versions = NONE
    tag: int | None = None
    default: Any = None
    default_null: bool = False
    ignorable: bool = False
    fields: tuple[Field, ...] = ()
    entity_type: str | None = None

    @property
    def json_name(self) -> str:
        return self.name[0].lower() + self.name[1:]

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def default_value(self) -> Any:
        """The value a reader gets when the field is absent at a version, as Kafka's classes do."""
        if self.default_null:
            return None
        if self.is_array:
            return []
        if self.is_struct:
            return {f.json_name: f.default_value() for f in self.fields}
        if self.default is not None:
            return self.default
        if self.type == "records" and not self.nullable_versions.is_empty():
            return None  # Kafka's generated classes start record sets out as null
        return _ZERO[self.type]


_ZERO: dict[str, Any] = {
    "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
    "bool": False, "uuid": ZERO_UUID, "string": "", "bytes": b"", "records": b"",
}


def field(
    name: str,
    type: str,
    versions: str | Versions = "0+",
    *,
    nullable: str | None = None,
    tagged: str | None = None,
    tag: int | None = None,
    default: Any = None,
    ignorable: bool = False,
    fields: Sequence[Field] = (),
    entity_type: str | None = None,
) -> Field:
    """Declare a field. ``default="null"`` declares a null default for a nullable field."""
    default_null = default == "null"
    if default_null:
        default = None
    elem = type[2:] if type.startswith("[]") else type
    if elem not in PRIMITIVES and not fields:
        raise ValueError(f"struct field {name} of type {type} declares no fields")
    if elem in PRIMITIVES and fields:
        raise ValueError(f"primitive field {name} declares sub-fields")
    if (tagged is None) != (tag is None):
        raise ValueError(f"field {name}: tagged versions and tag go together")
    if default is not None and type in _INT_RANGES:
        low, high = _INT_RANGES[type]
        if not low <= default <= high:
            raise ValueError(f"field {name}: default {default} out of range for {type}")
    return Field(
        name=name,
        type=type,
        versions=_versions(versions),
        nullable_versions=_versions(nullable),
        tagged_versions=_versions(tagged),
        tag=tag,
        default=default,
        default_null=default_null,
        ignorable=ignorable,
        fields=tuple(fields),
        entity_type=entity_type,
    )


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A declared message: an RPC request or response body, a metadata record, or a control record."""

    name: str
    api_key: int
    kind: Kind
    valid_versions: Versions
    flexible_versions: Versions
    fields: tuple[Field, ...]
    #: Kafka's metadata record type name (FEATURE_LEVEL_RECORD) for metadata records.
    record_type_name: str | None = None

    @property
    def api_name(self) -> str:
        """Kafka's API name without the Request/Response suffix (UpdateFeatures)."""
        for suffix in ("Request", "Response"):
            if self.kind.value == suffix.lower() and self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name

    def versions(self) -> range:
        high = self.valid_versions.highest
        assert high is not None, f"{self.name} has an open valid range"
        return range(self.valid_versions.lowest, high + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions


def message(
    name: str,
    api_key: int,
    kind: Kind,
    valid: str,
    flexible: str,
    fields: Iterable[Field],
    record_type_name: str | None = None,
) -> MessageSpec:
    """Declare a message; checks the declaration's internal consistency once, at import."""
    spec = MessageSpec(
        name=name,
        api_key=api_key,
        kind=kind,
        valid_versions=_versions(valid),
        flexible_versions=_versions(flexible),
        fields=tuple(fields),
        record_type_name=record_type_name,
    )
    if spec.valid_versions.highest is None:
        raise ValueError(f"{name}: valid versions must be closed")
    _check_fields(name, spec.fields)
    return spec


def _check_fields(owner: str, fields: Sequence[Field]) -> None:
    names: set[str] = set()
    tags: set[int] = set()
    for f in fields:
        if f.name in names:
            raise ValueError(f"{owner}: duplicate field {f.name}")
        names.add(f.name)
        if f.tag is not None:
            if f.tag in tags:
                raise ValueError(f"{owner}: duplicate tag {f.tag}")
            tags.add(f.tag)
        if f.default_null and f.nullable_versions.is_empty():
            raise ValueError(f"{owner}.{f.name}: null default on a non-nullable field")
        if f.fields:
            _check_fields(f"{owner}.{f.name}", f.fields)
