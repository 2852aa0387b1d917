"""Hypothesis strategies that build a valid value for any declared message at any version."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from kraftwerk.protocol.schema import Field, MessageSpec

_INTS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}


def _primitive(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.integers(low, high)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.builds(uuid.UUID, int=st.integers(0, 2**128 - 1))
    if kind == "string":
        return st.text(max_size=12)
    return st.binary(max_size=24)


def value_for(spec: MessageSpec, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return _struct(spec.fields, version, depth=0)


def _struct(fields: tuple[Field, ...], version: int, depth: int) -> st.SearchStrategy[dict[str, Any]]:
    parts = {f.json_name: _field(f, version, depth) for f in fields if version in f.versions}
    return st.fixed_dictionaries(parts)


def _field(f: Field, version: int, depth: int) -> st.SearchStrategy[Any]:
    if f.is_struct:
        element: st.SearchStrategy[Any] = st.deferred(lambda: _struct(f.fields, version, depth + 1))
    else:
        element = _primitive(f.element_type)
    base = st.lists(element, max_size=3 if depth < 2 else 1) if f.is_array else element
    if version in f.nullable_versions:
        return st.one_of(st.none(), base)
    return base
