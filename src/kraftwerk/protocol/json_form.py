"""Kafka's JSON form of a message (MessageDataJsonConverter): camelCase names, UUIDs in Kafka's
URL-safe base64, bytes in base64, only the fields that exist at the version, and tagged fields
only when they differ from their default (as Kafka's generated converters write them)."""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from kraftwerk.protocol.codec import UNKNOWN_TAGGED, Value
from kraftwerk.protocol.errors import EncodeError
from kraftwerk.protocol.schema import Field, MessageSpec


def uuid_to_str(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def uuid_from_str(text: str) -> uuid.UUID:
    """Kafka's ``Uuid.fromString``: URL-safe base64 of exactly 16 bytes (padding optional), with
    Kafka's texts for what it refuses (an EncodeError)."""
    if len(text) > 24:
        raise EncodeError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 "
                          "UUID")
    body = text[:-2] if text.endswith("==") else text[:-1] if text.endswith("=") else text
    for ch in body:
        if ch not in _URL_SAFE_BASE64:
            raise EncodeError(f"Illegal base64 character {ord(ch):x}")
    if len(body) % 4 == 1:
        raise EncodeError("Last unit does not have enough valid bits")
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    if len(raw) != 16:
        raise EncodeError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
                          "expected 16 bytes of a base64-encoded UUID")
    return uuid.UUID(bytes=raw)


_URL_SAFE_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def to_json(spec: MessageSpec, version: int, value: Value) -> dict[str, Any]:
    """The JSON object Kafka's converter writes for ``value`` at ``version``."""
    return _struct_to_json(spec.fields, version, value)


def _struct_to_json(fields: tuple[Field, ...], version: int, value: Value) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = value.get(f.json_name, f.default_value())
        if version in f.tagged_versions and v == f.default_value():
            continue
        out[f.json_name] = _field_to_json(f, version, v)
    return out


def _field_to_json(f: Field, version: int, v: Any) -> Any:
    if v is None:
        return None
    if f.is_array:
        return [_element_to_json(f, version, x) for x in v]
    return _element_to_json(f, version, v)


def _element_to_json(f: Field, version: int, v: Any) -> Any:
    if f.is_struct:
        return _struct_to_json(f.fields, version, v)
    kind = f.element_type
    if kind == "uuid":
        return uuid_to_str(v)
    if kind in ("bytes", "records"):
        return base64.b64encode(v).decode("ascii")
    return v


def from_json(spec: MessageSpec, version: int, obj: dict[str, Any]) -> Value:
    """A codec value from Kafka's JSON form; absent fields take their defaults.

    Fields the version lacks are kept (the encoder then refuses non-default ones, as Kafka does).
    """
    if not isinstance(obj, dict):
        raise EncodeError(f"{spec.name} JSON must be an object")
    return _struct_from_json(spec.fields, obj, spec.name)


def _struct_from_json(fields: tuple[Field, ...], obj: dict[str, Any], owner: str) -> Value:
    known = {f.json_name: f for f in fields}
    unknown = sorted(set(obj) - set(known) - {UNKNOWN_TAGGED})
    if unknown:
        raise EncodeError(f"{owner} has no field(s) {', '.join(unknown)}")
    out: Value = {}
    for name, f in known.items():
        if name in obj:
            out[name] = _field_from_json(f, obj[name], f"{owner}.{f.name}")
    return out


def _field_from_json(f: Field, v: Any, where: str) -> Any:
    if v is None:
        return None
    if f.is_array:
        if not isinstance(v, list):
            raise EncodeError(f"{where} must be a JSON array")
        return [_element_from_json(f, x, where) for x in v]
    return _element_from_json(f, v, where)


def _element_from_json(f: Field, v: Any, where: str) -> Any:
    if f.is_struct:
        if not isinstance(v, dict):
            raise EncodeError(f"{where} must be a JSON object")
        return _struct_from_json(f.fields, v, where)
    kind = f.element_type
    if kind == "uuid":
        if not isinstance(v, str):
            raise EncodeError(f"{where} must be a UUID string")
        return uuid_from_str(v)
    if kind in ("bytes", "records"):
        if not isinstance(v, str):
            raise EncodeError(f"{where} must be base64 text")
        try:
            return base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise EncodeError(f"{where} is not valid base64") from None
    if kind == "string":
        if not isinstance(v, str):
            raise EncodeError(f"{where} must be a string")
        return v
    if kind == "bool":
        if not isinstance(v, bool):
            raise EncodeError(f"{where} must be true or false")
        return v
    if kind == "float64":
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise EncodeError(f"{where} must be a number")
        return float(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise EncodeError(f"{where} must be an integer")
    return v
