"""Request and response helpers both cores use: ApiVersions bodies, finalized levels, request
feature ranges, and trimming a body to the fields its version has."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kraftwerk.controller.effects import Body
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import all_specs, by_api_key, lookup_record
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.features import KRAFT_VERSION, VersionRange
from kraftwerk.versions.metadata_version import FEATURE_NAME
from kraftwerk.versions.software import SoftwareVersion


def rec(name: str, version: int, value: dict[str, Any]) -> MetadataRecord:
    """A metadata record by its record name."""
    return MetadataRecord(lookup_record(name), version, value)


def ranges_of(pairs: Any) -> dict[str, VersionRange]:
    """Name → range of a registration's supported features (a reversed range becomes [max, max])."""
    out: dict[str, VersionRange] = {}
    for name, r in pairs:
        out[name] = VersionRange(r.min, r.max) if r.min <= r.max else VersionRange(r.max, r.max)
    return out


# --------------------------------------------------------------------------- ApiVersions


def declared_api_ranges(api_keys: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(min, max) of every declared request version for these api keys."""
    out: dict[int, tuple[int, int]] = {}
    wanted = set(api_keys)
    for spec in all_specs():
        if spec.kind is Kind.REQUEST and spec.api_key in wanted:
            valid = spec.valid_versions
            out[spec.api_key] = (valid.lowest, valid.highest if valid.highest is not None else valid.lowest)
    return dict(sorted(out.items()))


def api_versions_body(
    version: int,
    api_ranges: Mapping[int, tuple[int, int]],
    software: SoftwareVersion,
    finalized: Mapping[str, int],
    finalized_epoch: int,
) -> Body:
    """An ApiVersions response: api ranges, supported features (``alterFeatureLevel0`` below v4:
    features whose minimum is 0 are left out) and finalized levels (level 0 omitted, min = max)."""
    supported = []
    for name, rng in software.supported_features().items():
        if version < 4 and rng.min == 0:
            continue
        supported.append({"name": name, "minVersion": rng.min, "maxVersion": rng.max})
    finalized_keys = [
        {"name": n, "maxVersionLevel": lvl, "minVersionLevel": lvl} for n, lvl in finalized.items() if lvl > 0
    ]
    return {
        "errorCode": 0,
        "apiKeys": [{"apiKey": k, "minVersion": lo, "maxVersion": hi} for k, (lo, hi) in api_ranges.items()],
        "throttleTimeMs": 0,
        "supportedFeatures": supported,
        "finalizedFeaturesEpoch": finalized_epoch,
        "finalizedFeatures": finalized_keys,
        "zkMigrationReady": False,
    }


def finalized_levels(image: MetadataImage, kraft_version: int = 0) -> dict[str, int]:
    """metadata.version, then the other finalized features (sorted), kraft.version when > 0."""
    out: dict[str, int] = {}
    if image.metadata_version is not None:
        out[FEATURE_NAME] = image.metadata_version.feature_level
    levels = dict(image.features.finalized)
    if kraft_version > 0:
        levels[KRAFT_VERSION] = kraft_version
    for name in sorted(levels):
        out[name] = levels[name]
    return out


def features_from_request(items: Iterable[Mapping[str, Any]]) -> dict[str, VersionRange]:
    """Name → range from a registration's Features list; a reversed range is kept as [max, max]
    would hide the bug, so it becomes an empty-looking [min, min] only when valid."""
    out: dict[str, VersionRange] = {}
    for f in items:
        lo, hi = f["minSupportedVersion"], f["maxSupportedVersion"]
        out[f["name"]] = VersionRange(lo, hi) if lo <= hi else VersionRange(hi, hi)
    return out


def _shape_fields(fields: Sequence[Any], version: int, value: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        name = f.json_name
        if name not in value or version not in f.versions:
            continue
        v = value[name]
        if f.fields and isinstance(v, list):
            v = [_shape_fields(f.fields, version, x) for x in v]
        elif f.fields and isinstance(v, Mapping):
            v = _shape_fields(f.fields, version, v)
        out[name] = v
    return out


def shape_body(kind: Kind, api_key: int, version: int, body: Mapping[str, Any]) -> Body:
    """Keep only the fields (nested ones too) that ``version`` of the message has.

    The cores build one body for every version; the codec refuses a non-default value in a field
    the version lacks, so replies are trimmed to the request's version before they leave.
    """
    spec = by_api_key(kind, api_key)
    return _shape_fields(spec.fields, version, body)


def shape_response(api_key: int, version: int, body: Mapping[str, Any]) -> Body:
    return shape_body(Kind.RESPONSE, api_key, version, body)
