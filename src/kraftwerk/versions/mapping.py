"""The offline look-ups behind ``version-mapping`` and ``feature-dependencies``.

Both ``kafka-storage`` and ``kafka-features`` offer them with the same output, so the values and
the rendering live here and any CLI group can print them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import FeatureSpecError, UnknownMetadataVersionError
from kraftwerk.versions.features import PRODUCTION_FEATURES, Feature
from kraftwerk.versions.metadata_version import MetadataVersion

_SHORT = re.compile(r"[+-]?[0-9]+")
_SHORT_MIN, _SHORT_MAX = -(2**15), 2**15 - 1


def parse_feature_spec(spec: str) -> tuple[str, int]:
    """Split ``name=level`` as Kafka's tools do (both sides trimmed, level a Java short)."""
    name, sep, level_text = spec.partition("=")
    if not sep:
        raise FeatureSpecError(f"Can't parse feature=level string {spec}: equals sign not found.")
    name, level_text = name.strip(), level_text.strip()
    if _SHORT.fullmatch(level_text) is None or not _SHORT_MIN <= int(level_text) <= _SHORT_MAX:
        raise FeatureSpecError(
            f"Can't parse feature=level string {spec}: unable to parse {level_text} as a short."
        )
    return name, int(level_text)


@dataclass(frozen=True, slots=True)
class VersionMapping:
    """The levels a release implies: its metadata.version and every feature's default."""

    release_version: str
    """The release as typed; Kafka prints it back unchanged."""
    metadata_version: MetadataVersion
    features: tuple[tuple[Feature, int], ...]

    def lines(self) -> list[str]:
        """Exactly what ``kafka-storage version-mapping`` prints."""
        out = [f"{mvs.FEATURE_NAME}={self.metadata_version.feature_level} ({self.release_version})"]
        out.extend(f"{feature.feature_name}={level}" for feature, level in self.features)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "release_version": self.release_version,
            "metadata_version": {
                "level": self.metadata_version.feature_level,
                "version": self.metadata_version.version,
            },
            "features": {feature.feature_name: level for feature, level in self.features},
        }


def version_mapping(release_version: str | None = None) -> VersionMapping:
    """Resolve a release (default: latest production) with unstable levels allowed, as Kafka does."""
    typed = mvs.LATEST_PRODUCTION.version if release_version is None else release_version
    mv = MetadataVersion.from_version_string(typed, unstable=True)
    return VersionMapping(typed, mv, tuple((f, f.default_level(mv)) for f in PRODUCTION_FEATURES))


def render_version_mapping(release_version: str | None = None) -> list[str]:
    return version_mapping(release_version).lines()


@dataclass(frozen=True, slots=True)
class Dependency:
    """One requirement of a feature level: ``name`` at ``level`` or higher."""

    feature_name: str
    level: int

    def line(self) -> str:
        if self.feature_name == mvs.FEATURE_NAME:
            mv = MetadataVersion.from_feature_level(self.level)
            return f"    {self.feature_name}={self.level} ({mv})"
        return f"    {self.feature_name}={self.level}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"feature": self.feature_name, "level": self.level}
        if self.feature_name == mvs.FEATURE_NAME:
            out["version"] = MetadataVersion.from_feature_level(self.level).version
        return out


@dataclass(frozen=True, slots=True)
class FeatureDependencies:
    """The dependencies of one ``name=level``; a metadata.version level has none."""

    feature_name: str
    level: int
    dependencies: tuple[Dependency, ...]
    metadata_version: MetadataVersion | None = None
    """Set when the feature is metadata.version (the level printed as ``(3.7-IV2)``)."""

    def lines(self) -> list[str]:
        """Exactly what ``kafka-storage feature-dependencies`` prints for this feature."""
        head = f"{self.feature_name}={self.level}"
        if self.metadata_version is not None:
            head += f" ({self.metadata_version})"
        if not self.dependencies:
            return [f"{head} has no dependencies."]
        return [f"{head} requires:", *(dep.line() for dep in self.dependencies)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"feature": self.feature_name, "level": self.level}
        if self.metadata_version is not None:
            out["version"] = self.metadata_version.version
        out["dependencies"] = [dep.to_json() for dep in self.dependencies]
        return out


def feature_dependencies(spec: str) -> FeatureDependencies:
    """Look up one ``name=level`` (any defined level, stable or not), with Kafka's errors."""
    name, level = parse_feature_spec(spec)
    if name == mvs.FEATURE_NAME:
        try:
            mv = MetadataVersion.from_feature_level(level)
        except UnknownMetadataVersionError:
            raise UnknownMetadataVersionError(f"Unknown metadata.version {level}") from None
        return FeatureDependencies(name, level, (), mv)
    definition = Feature.from_name(name).from_feature_level(level, allow_unstable=True)
    deps = tuple(Dependency(dep, lvl) for dep, lvl in definition.dependencies)
    return FeatureDependencies(name, level, deps)


def render_feature_dependencies(specs: Iterable[str]) -> list[str]:
    """All lines for several ``name=level`` strings; raises on the first bad one."""
    return [line for spec in specs for line in feature_dependencies(spec).lines()]
