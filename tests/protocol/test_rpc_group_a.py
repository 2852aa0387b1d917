"""Group A RPCs (ApiVersions, cluster membership, configs, SASL): golden vectors from Kafka 4.3,
hand-checked bytes for kraftwerk's BrokerRegistration v5/v6, and a byte-level cross-check
against kio's independently generated codecs."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import importlib
import io
import json
import re
import typing
import uuid
from typing import Any

import pytest

from kraftwerk.protocol import codec, json_form, registry
from kraftwerk.protocol.errors import UnsupportedVersionError
from kraftwerk.protocol.rpc import api_versions, cluster, configs, sasl
from kraftwerk.protocol.schema import ZERO_UUID, Field, Kind, MessageSpec
from tests.conftest import golden_path

GROUP_A: tuple[MessageSpec, ...] = api_versions.SPECS + cluster.SPECS + configs.SPECS + sasl.SPECS
GOLDEN_APIS = {"ApiVersions", "BrokerRegistration", "DescribeCluster"}


def _golden_rows() -> list[tuple[MessageSpec, int, str, dict[str, Any]]]:
    rows = []
    for line in golden_path("message-vectors.tsv").read_text().splitlines()[1:]:
        if not line.strip():
            continue
        api, kind, version, hex_text, json_text = line.split("\t")
        if api in GOLDEN_APIS:
            spec = registry.by_name(Kind(kind), api)
            rows.append((spec, int(version), hex_text, json.loads(json_text)))
    return rows


# ---------------------------------------------------------------- declarations


def test_specs_are_registered_under_kafka_names_and_keys() -> None:
    expected = {
        "ApiVersions": 18, "DescribeCluster": 60, "BrokerRegistration": 62, "BrokerHeartbeat": 63,
        "UnregisterBroker": 64, "ControllerRegistration": 70, "Envelope": 58, "DescribeConfigs": 32,
        "AlterConfigs": 33, "IncrementalAlterConfigs": 44, "SaslHandshake": 17, "SaslAuthenticate": 36,
        "DescribeUserScramCredentials": 50, "AlterUserScramCredentials": 51,
    }
    for name, key in expected.items():
        for kind in (Kind.REQUEST, Kind.RESPONSE):
            spec = registry.by_name(kind, name)
            assert spec.api_key == key
            assert registry.by_api_key(kind, key) is spec
            assert spec.name == name + kind.value.capitalize()
            assert spec in GROUP_A
    assert len(GROUP_A) == 2 * len(expected)


def test_requests_and_responses_share_version_ranges() -> None:
    for spec in GROUP_A:
        if spec.kind is Kind.REQUEST:
            response = registry.by_api_key(Kind.RESPONSE, spec.api_key)
            assert response.valid_versions == spec.valid_versions, spec.name
            assert response.flexible_versions == spec.flexible_versions, spec.name


# ---------------------------------------------------------------- golden vectors (Kafka 4.3)


def test_golden_vectors_cover_the_group() -> None:
    rows = _golden_rows()
    assert {spec.api_name for spec, *_ in rows} == GOLDEN_APIS


def test_golden_vectors_encode_to_kafkas_bytes_and_decode_to_its_values() -> None:
    for spec, version, hex_text, obj in _golden_rows():
        where = f"{spec.name} v{version}"
        value = json_form.from_json(spec, version, obj)
        assert codec.encode(spec, version, value).hex() == hex_text, where
        decoded = codec.decode(spec, version, bytes.fromhex(hex_text))
        # Every field that exists at the version holds the JSON's value (or its default).
        assert json_form.to_json(spec, version, decoded) == json_form.to_json(spec, version, value), where


# ---------------------------------------------------------------- BrokerRegistration v5 / v6


def _registration(**extra: Any) -> dict[str, Any]:
    return {
        "brokerId": 1, "clusterId": "c", "incarnationId": uuid.UUID(int=1), "listeners": [],
        "features": [], "rack": None, **extra,
    }


_REG_V4_BODY = "00000001" "0263" + "00" * 15 + "01" "01" "01" "00" "00" "01" "ffffffffffffffff"


def test_broker_registration_v4_body() -> None:
    spec = cluster.BROKER_REGISTRATION_REQUEST
    assert codec.encode(spec, 4, _registration()).hex() == _REG_V4_BODY + "00"


def test_broker_registration_v5_carries_cordoned_log_dirs_as_tag_0() -> None:
    spec = cluster.BROKER_REGISTRATION_REQUEST
    dirs = [uuid.UUID(int=7)]
    data = codec.encode(spec, 5, _registration(cordonedLogDirs=dirs))
    assert data.hex() == _REG_V4_BODY + "01" "00" "11" "02" + "00" * 15 + "07"
    assert codec.decode(spec, 5, data)["cordonedLogDirs"] == dirs
    with pytest.raises(UnsupportedVersionError):
        codec.encode(spec, 4, _registration(cordonedLogDirs=dirs))


def test_broker_registration_v6_carries_static_configs_after_the_v5_body() -> None:
    """KIP-1294 numbers StaticConfigs as a plain (untagged) field of request v6."""
    spec = cluster.BROKER_REGISTRATION_REQUEST
    static = [{"name": "a", "value": "b"}, {"name": "s", "value": None}]
    value = _registration(cordonedLogDirs=[uuid.UUID(int=7)], staticConfigs=static)
    data = codec.encode(spec, 6, value)
    cordoned = "00" "11" "02" + "00" * 15 + "07"
    configs_ = "03" "0261" "0262" "00" "0273" "00" "00"
    assert data.hex() == _REG_V4_BODY + configs_ + "01" + cordoned
    decoded = codec.decode(spec, 6, data)
    assert decoded["staticConfigs"] == static
    # A v5 peer cannot receive static configs: Kafka's generated code refuses, and so do we.
    with pytest.raises(UnsupportedVersionError):
        codec.encode(spec, 5, _registration(staticConfigs=static))


def test_broker_registration_response_v6_is_v0() -> None:
    spec = cluster.BROKER_REGISTRATION_RESPONSE
    value = {"throttleTimeMs": 5, "errorCode": 0, "brokerEpoch": 42}
    assert codec.encode(spec, 6, value) == codec.encode(spec, 0, value)


# ---------------------------------------------------------------- version rules worth pinning


def test_ignorable_fields_are_dropped_and_non_ignorable_ones_refused() -> None:
    # ApiVersionsRequest v0-2 silently drop the client software fields (ignorable in Kafka).
    assert codec.encode(api_versions.API_VERSIONS_REQUEST, 2, {"clientSoftwareName": "x"}) == b""
    # DescribeCluster's EndpointType and IncludeFencedBrokers are not ignorable.
    with pytest.raises(UnsupportedVersionError):
        codec.encode(cluster.DESCRIBE_CLUSTER_REQUEST, 0, {"endpointType": 2})
    with pytest.raises(UnsupportedVersionError):
        codec.encode(cluster.DESCRIBE_CLUSTER_REQUEST, 1, {"includeFencedBrokers": True})
    # DescribeConfigs v0's IsDefault is not ignorable; v3's ConfigType/Documentation are.
    result = {"name": "n", "value": None, "readOnly": False, "isSensitive": False,
              "configType": 2, "documentation": "d", "synonyms": [{"name": "n", "value": "v", "source": 1}]}
    resp = {"results": [{"errorMessage": None, "resourceName": "r", "configs": [result]}]}
    codec.encode(configs.DESCRIBE_CONFIGS_RESPONSE, 0, resp)
    codec.encode(configs.DESCRIBE_CONFIGS_RESPONSE, 1, resp)
    with pytest.raises(UnsupportedVersionError):
        codec.encode(configs.DESCRIBE_CONFIGS_RESPONSE, 1, {"results": [
            {"resourceName": "r", "configs": [{"name": "n", "isDefault": True}]}]})
    # SaslAuthenticate's SessionLifetimeMs is ignorable below v1.
    sasl_resp = {"errorCode": 0, "errorMessage": None, "authBytes": b"", "sessionLifetimeMs": 9}
    assert codec.encode(sasl.SASL_AUTHENTICATE_RESPONSE, 0, sasl_resp).hex() == "0000" "ffff" "00000000"


def test_api_versions_response_v3_tagged_fields_in_tag_order() -> None:
    spec = api_versions.API_VERSIONS_RESPONSE
    value = {"errorCode": 0, "apiKeys": [], "throttleTimeMs": 0, "zkMigrationReady": True,
             "finalizedFeaturesEpoch": 3}
    tags = "02" "01" "08" "0000000000000003" "03" "01" "01"
    assert codec.encode(spec, 3, value).hex() == "0000" "01" "00000000" + tags


def test_broker_heartbeat_v2_cordoned_log_dirs_null_versus_empty() -> None:
    spec = cluster.BROKER_HEARTBEAT_REQUEST
    base = {"brokerId": 1, "currentMetadataOffset": 5}
    head = "00000001" "ffffffffffffffff" "0000000000000005" "00" "00"
    assert codec.encode(spec, 2, base).hex() == head + "00"
    assert codec.encode(spec, 2, {**base, "cordonedLogDirs": []}).hex() == head + "01" "01" "01" "01"
    assert codec.decode(spec, 2, bytes.fromhex(head + "00"))["cordonedLogDirs"] is None
    with pytest.raises(UnsupportedVersionError):
        codec.encode(spec, 1, {**base, "cordonedLogDirs": []})


# ---------------------------------------------------------------- cross-check against kio

_KIO_PACKAGE = {
    "ApiVersions": "api_versions", "DescribeCluster": "describe_cluster",
    "BrokerRegistration": "broker_registration", "BrokerHeartbeat": "broker_heartbeat",
    "UnregisterBroker": "unregister_broker", "ControllerRegistration": "controller_registration",
    "Envelope": "envelope", "DescribeConfigs": "describe_configs", "AlterConfigs": "alter_configs",
    "IncrementalAlterConfigs": "incremental_alter_configs", "SaslHandshake": "sasl_handshake",
    "SaslAuthenticate": "sasl_authenticate",
    "DescribeUserScramCredentials": "describe_user_scram_credentials",
    "AlterUserScramCredentials": "alter_user_scram_credentials",
}


def _kio_class(spec: MessageSpec, version: int) -> type | None:
    module_name = f"kio.schema.{_KIO_PACKAGE[spec.api_name]}.v{version}.{spec.kind.value}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return None
    for attr in vars(module).values():
        if (isinstance(attr, type) and dataclasses.is_dataclass(attr) and attr.__module__ == module.__name__
                and getattr(getattr(attr, "__type__", None), "name", None) == spec.kind.value):
            return attr
    raise AssertionError(f"no entity class in {module_name}")


def _kio_cases() -> list[tuple[MessageSpec, int]]:
    try:
        importlib.import_module("kio.serial")
    except ImportError:
        return []
    return [(spec, v) for spec in GROUP_A for v in spec.versions() if _kio_class(spec, v) is not None]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _kio_field_name(f: Field, kio_names: set[str]) -> str:
    name = _snake(f.name)
    if name not in kio_names and name.endswith("_ms") and name[:-3] in kio_names:
        return name[:-3]  # kio models ThrottleTimeMs / SessionLifetimeMs as timedeltas
    return name


def _element_class(hint: Any) -> type | None:
    """The dataclass inside ``tuple[C, ...]``, ``C | None`` or ``tuple[C, ...] | None``."""
    stack = [hint]
    while stack:
        t = stack.pop()
        if isinstance(t, type) and dataclasses.is_dataclass(t):
            return t
        stack.extend(typing.get_args(t))
    return None


def _to_kio(cls: type, fields: tuple[Field, ...], version: int, value: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    kio_fields = {k.name: k for k in dataclasses.fields(cls)}
    ours = {_kio_field_name(f, set(kio_fields)): f for f in fields if version in f.versions}
    assert set(ours) == set(kio_fields), f"{cls.__name__} v{version}: {sorted(ours)} != {sorted(kio_fields)}"
    kwargs = {}
    for name, f in ours.items():
        v = value.get(f.json_name, f.default_value())
        kafka_type = kio_fields[name].metadata.get("kafka_type")
        kwargs[name] = _value_to_kio(f, hints[name], kafka_type, version, v)
    return cls(**kwargs)


def _value_to_kio(f: Field, hint: Any, kafka_type: str | None, version: int, v: Any) -> Any:
    if v is None:
        return None
    if f.is_array:
        return tuple(_scalar_to_kio(f, hint, kafka_type, version, x) for x in v)
    return _scalar_to_kio(f, hint, kafka_type, version, v)


def _scalar_to_kio(f: Field, hint: Any, kafka_type: str | None, version: int, v: Any) -> Any:
    if f.is_struct:
        sub = _element_class(hint)
        assert sub is not None, f.name
        return _to_kio(sub, f.fields, version, v)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=v)
    if kafka_type == "error_code":
        from kio.schema.errors import ErrorCode
        return ErrorCode(v)
    return v


def _from_kio(fields: tuple[Field, ...], version: int, entity: Any) -> dict[str, Any]:
    names = {k.name for k in dataclasses.fields(entity)}
    out: dict[str, Any] = {}
    for f in fields:
        if version in f.versions:
            out[f.json_name] = _value_from_kio(f, version, getattr(entity, _kio_field_name(f, names)))
    return out


def _value_from_kio(f: Field, version: int, v: Any) -> Any:
    if v is None:
        return ZERO_UUID if f.type == "uuid" else None
    if f.is_array:
        return [_scalar_from_kio(f, version, x) for x in v]
    return _scalar_from_kio(f, version, v)


def _scalar_from_kio(f: Field, version: int, v: Any) -> Any:
    if f.is_struct:
        return _from_kio(f.fields, version, v)
    if v is None and f.element_type == "uuid":
        return ZERO_UUID
    if isinstance(v, datetime.timedelta):
        return round(v.total_seconds() * 1000)
    if isinstance(v, enum.Enum):
        return v.value
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return v


_COUNTER = iter(range(1, 10**9))


def _sample(fields: tuple[Field, ...], version: int, variant: int) -> dict[str, Any]:
    """A value with every field present at ``version`` set, mostly to non-default values.

    variant 0: non-default everything, 1: nulls wherever nullable, 2: empty arrays/strings."""
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if variant == 1 and version in f.nullable_versions:
            out[f.json_name] = None
        elif f.is_array:
            n = 0 if variant == 2 else 2
            out[f.json_name] = [_sample_scalar(f, version, variant) for _ in range(n)]
        else:
            out[f.json_name] = _sample_scalar(f, version, variant)
    return out


def _sample_scalar(f: Field, version: int, variant: int) -> Any:
    if f.is_struct:
        return _sample(f.fields, version, variant)
    kind = f.element_type
    n = next(_COUNTER)
    if f.name == "ErrorCode":
        return 3  # UNKNOWN_TOPIC_OR_PARTITION: kio models error codes as an enum
    if kind == "bool":
        return not f.default_value()
    if kind in ("int8", "int16", "uint16"):
        return 100 + n % 27
    if kind in ("int32", "int64"):
        return 70000 + n
    if kind == "uuid":
        return uuid.UUID(int=n * 0x1_0000_0001)
    if kind == "string":
        return "" if variant == 2 else f"{f.name.lower()}-{n}-é"
    if kind == "bytes":
        return b"" if variant == 2 else bytes([n % 256, 0, 255])
    raise AssertionError(kind)


@pytest.mark.interop
@pytest.mark.parametrize(("spec", "version"), _kio_cases(),
                         ids=lambda p: p.name if isinstance(p, MessageSpec) else f"v{p}")
@pytest.mark.parametrize("variant", [0, 1, 2])
def test_bytes_match_kio(spec: MessageSpec, version: int, variant: int) -> None:
    from kio.serial import entity_reader, entity_writer

    cls = _kio_class(spec, version)
    assert cls is not None
    value = _sample(spec.fields, version, variant)

    ours = codec.encode(spec, version, value)
    entity: Any
    entity, end = entity_reader(cls)(ours, 0)
    assert end == len(ours)
    assert _from_kio(spec.fields, version, entity) == value

    sink = io.BytesIO()
    entity_writer(cls)(sink, _to_kio(cls, spec.fields, version, value))
    theirs = sink.getvalue()
    assert theirs == ours
    decoded = codec.decode(spec, version, theirs)
    assert json_form.to_json(spec, version, decoded) == json_form.to_json(spec, version, value)


def _check_shape(cls: type, fields: tuple[Field, ...], version: int) -> None:
    """Field set, nullability and declared defaults agree with kio's class for this version."""
    hints = typing.get_type_hints(cls)
    kio_fields = {k.name: k for k in dataclasses.fields(cls)}
    ours = {_kio_field_name(f, set(kio_fields)): f for f in fields if version in f.versions}
    assert set(ours) == set(kio_fields), f"{cls.__name__} v{version}"
    for name, f in ours.items():
        where = f"{cls.__name__}.{name} v{version}"
        kio_nullable = type(None) in typing.get_args(hints[name])
        if f.type != "uuid":  # kio types every uuid as Optional (None is the zero uuid)
            assert kio_nullable == (version in f.nullable_versions), where
        k = kio_fields[name]
        if k.default is not dataclasses.MISSING:
            assert _value_from_kio(f, version, k.default) == f.default_value(), where
        if f.is_struct:
            sub = _element_class(hints[name])
            assert sub is not None, where
            _check_shape(sub, f.fields, version)


@pytest.mark.interop
@pytest.mark.parametrize(("spec", "version"), _kio_cases(),
                         ids=lambda p: p.name if isinstance(p, MessageSpec) else f"v{p}")
def test_shape_matches_kio(spec: MessageSpec, version: int) -> None:
    cls = _kio_class(spec, version)
    assert cls is not None
    _check_shape(cls, spec.fields, version)


@pytest.mark.interop
def test_kio_covers_every_version_kafka_4_3_ships() -> None:
    """kio tracks a later trunk; the versions it lacks are the ones documented in the modules."""
    pytest.importorskip("kio")
    missing = {(spec.name, v) for spec in GROUP_A for v in spec.versions() if _kio_class(spec, v) is None}
    assert missing == {
        ("DescribeConfigsRequest", 0), ("DescribeConfigsResponse", 0),  # removed by KIP-896 in 4.0
        ("BrokerRegistrationRequest", 5), ("BrokerRegistrationResponse", 5),  # removed by PR #22070
        ("BrokerRegistrationRequest", 6), ("BrokerRegistrationResponse", 6),  # KIP-1294 extension
    }
