"""Every declared message, looked up by Kafka's names and api keys."""

from __future__ import annotations

import importlib
from functools import cache

from kraftwerk.protocol.errors import UnknownMessageError
from kraftwerk.protocol.schema import Kind, MessageSpec

#: Modules that declare messages; each exports ``SPECS``.
DECLARING_MODULES = (
    "kraftwerk.protocol.rpc.features",
    "kraftwerk.protocol.rpc.api_versions",
    "kraftwerk.protocol.rpc.cluster",
    "kraftwerk.protocol.rpc.configs",
    "kraftwerk.protocol.rpc.topics",
    "kraftwerk.protocol.rpc.data",
    "kraftwerk.protocol.rpc.replication",
    "kraftwerk.protocol.rpc.zk_control",
    "kraftwerk.protocol.rpc.raft",
    "kraftwerk.protocol.rpc.sasl",
    "kraftwerk.protocol.rpc.acls",
    "kraftwerk.protocol.metadata_records",
    "kraftwerk.protocol.control_records",
)


@cache
def all_specs() -> tuple[MessageSpec, ...]:
    specs: list[MessageSpec] = []
    for name in DECLARING_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # a family not declared yet
            raise
        specs.extend(module.SPECS)
    return tuple(specs)


@cache
def _by_key() -> dict[tuple[Kind, int], MessageSpec]:
    table: dict[tuple[Kind, int], MessageSpec] = {}
    for spec in all_specs():
        key = (spec.kind, spec.api_key)
        if key in table:
            raise AssertionError(f"{spec.name} and {table[key].name} share {key}")
        table[key] = spec
    return table


@cache
def _by_name() -> dict[tuple[Kind, str], MessageSpec]:
    table: dict[tuple[Kind, str], MessageSpec] = {}
    for spec in all_specs():
        table[(spec.kind, spec.name)] = spec
        table[(spec.kind, spec.api_name)] = spec
        if spec.record_type_name:
            table[(spec.kind, spec.record_type_name)] = spec
    return table


def by_api_key(kind: Kind, api_key: int) -> MessageSpec:
    """The request, response, metadata record or control record with this api key."""
    try:
        return _by_key()[(kind, api_key)]
    except KeyError:
        raise UnknownMessageError(f"no {kind.value} declared with api key {api_key}") from None


def by_name(kind: Kind, name: str) -> MessageSpec:
    """Look up by Kafka's name: ``UpdateFeatures``, ``UpdateFeaturesRequest``,
    ``FeatureLevelRecord`` or the metadata record type ``FEATURE_LEVEL_RECORD``."""
    spec = _by_name().get((kind, name))
    if spec is None:
        known = sorted({s.api_name for s in all_specs() if s.kind is kind})
        raise UnknownMessageError(f"unknown {kind.value} {name!r}; known: {', '.join(known)}")
    return spec


def records() -> tuple[MessageSpec, ...]:
    """Metadata records and control records ("record" kind in the CLI)."""
    return tuple(s for s in all_specs() if s.kind in (Kind.METADATA, Kind.DATA))


def lookup_record(name: str) -> MessageSpec:
    """A metadata or control record by any of its names."""
    for kind in (Kind.METADATA, Kind.DATA):
        spec = _by_name().get((kind, name))
        if spec is not None:
            return spec
    known = sorted(s.api_name for s in records())
    raise UnknownMessageError(f"unknown record {name!r}; known: {', '.join(known)}")
