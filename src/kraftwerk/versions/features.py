"""The feature flags other than metadata.version, as the 4.3 software defines them.

Each feature is a list of levels; a level has a bootstrap metadata.version (the lowest MV whose
release turns it on by default) and dependencies on other features. ``metadata.version`` itself
is not a :class:`Feature` (Kafka handles it separately everywhere), but dependencies may name it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import (
    FeatureDependencyError,
    UnknownFeatureError,
    UnknownFeatureLevelError,
    VersionError,
)
from kraftwerk.versions.metadata_version import MetadataVersion


@dataclass(frozen=True, slots=True, order=True)
class VersionRange:
    """An inclusive ``[min, max]`` range of levels, as in ApiVersions/BrokerRegistration."""

    min: int
    max: int

    def __post_init__(self) -> None:
        if self.min > self.max:
            raise VersionError(f"invalid version range {self.min}-{self.max}")

    def contains(self, level: int) -> bool:
        return self.min <= level <= self.max

    def __contains__(self, level: object) -> bool:
        return isinstance(level, int) and self.contains(level)

    def __str__(self) -> str:
        return f"{self.min}-{self.max}"


@dataclass(frozen=True, slots=True)
class FeatureLevel:
    """One level of a feature (Kafka's ``FeatureVersion``), e.g. ``transaction.version=2``."""

    feature_name: str
    level: int
    bootstrap_metadata_version: MetadataVersion
    dependencies: tuple[tuple[str, int], ...] = ()
    """(feature name, minimum level) pairs; the name may be ``metadata.version``."""

    def dependency_map(self) -> dict[str, int]:
        return dict(self.dependencies)

    def __str__(self) -> str:
        return f"{self.feature_name}={self.level}"


def _levels(name: str, *spec: tuple[int, MetadataVersion, tuple[tuple[str, int], ...]]) -> tuple[
    FeatureLevel, ...
]:
    return tuple(FeatureLevel(name, level, mv, deps) for level, mv, deps in spec)


_MIN = mvs.MINIMUM_VERSION
_MV = mvs.FEATURE_NAME


class Feature(enum.Enum):
    """A production feature flag. Enum order is Kafka's (the order ``version-mapping`` prints)."""

    levels: tuple[FeatureLevel, ...]
    latest_production: int

    KRAFT_VERSION = (
        "kraft.version",
        _levels("kraft.version", (0, _MIN, ()), (1, MetadataVersion.IBP_3_9_IV0, ())),
        1,
    )
    TRANSACTION_VERSION = (
        "transaction.version",
        _levels(
            "transaction.version",
            (0, _MIN, ()),
            (1, MetadataVersion.IBP_4_0_IV2, ()),
            (2, MetadataVersion.IBP_4_0_IV2, ()),
        ),
        2,
    )
    GROUP_VERSION = (
        "group.version",
        _levels("group.version", (0, _MIN, ()), (1, MetadataVersion.IBP_4_0_IV0, ())),
        1,
    )
    ELIGIBLE_LEADER_REPLICAS_VERSION = (
        "eligible.leader.replicas.version",
        _levels(
            "eligible.leader.replicas.version",
            (0, _MIN, ()),
            (1, MetadataVersion.IBP_4_1_IV0, ((_MV, MetadataVersion.IBP_4_0_IV1.feature_level),)),
        ),
        1,
    )
    SHARE_VERSION = (
        "share.version",
        _levels(
            "share.version",
            (0, _MIN, ()),
            (1, MetadataVersion.IBP_4_2_IV0, ()),
            (2, MetadataVersion.IBP_4_4_IV2, ()),
        ),
        1,
    )
    STREAMS_VERSION = (
        "streams.version",
        _levels("streams.version", (0, _MIN, ()), (1, MetadataVersion.IBP_4_2_IV1, ())),
        1,
    )

    def __new__(cls, name: str, levels: tuple[FeatureLevel, ...], latest_production: int) -> Feature:
        obj = object.__new__(cls)
        obj._value_ = name
        obj.levels = levels
        obj.latest_production = latest_production
        return obj

    @property
    def feature_name(self) -> str:
        """Kafka's ``featureName()``, e.g. ``kraft.version``."""
        name: str = self.value
        return name

    def __str__(self) -> str:
        return self.feature_name

    @property
    def latest_testing(self) -> int:
        """The highest level defined at all (usable only with unstable versions enabled)."""
        return self.levels[-1].level

    @property
    def minimum_production(self) -> int:
        return self.levels[0].level

    def supported_version_range(self, unstable: bool = True) -> VersionRange:
        """``[0, latestTesting]`` (Kafka's ``supportedVersionRange``), or up to production."""
        top = self.latest_testing if unstable else self.latest_production
        return VersionRange(self.minimum_production, top)

    def from_feature_level(self, level: int, allow_unstable: bool = False) -> FeatureLevel:
        """The level's definition; levels above latest production need ``allow_unstable``."""
        for candidate in self.levels:
            if candidate.level == level and (allow_unstable or level <= self.latest_production):
                return candidate
        raise UnknownFeatureLevelError(f"No feature:{self.feature_name} with feature level {level}")

    def default_version(self, metadata_version: MetadataVersion) -> FeatureLevel:
        """The last level whose bootstrap MV ≤ ``metadata_version`` (Kafka's ``defaultVersion``)."""
        chosen = self.levels[0]
        for candidate in self.levels:
            if candidate.bootstrap_metadata_version > metadata_version:
                break
            chosen = candidate
        return chosen

    def default_level(self, metadata_version: MetadataVersion) -> int:
        """The level a release implies for this feature (what ``version-mapping`` prints)."""
        return self.default_version(metadata_version).level

    @classmethod
    def lookup(cls, name: str) -> Feature | None:
        for feature in cls:
            if feature.feature_name == name:
                return feature
        return None

    @classmethod
    def from_name(cls, name: str) -> Feature:
        """The feature called ``name``; error text as ``kafka-features feature-dependencies``."""
        feature = cls.lookup(name)
        if feature is None:
            raise UnknownFeatureError(f"Unknown feature: {name}")
        return feature


PRODUCTION_FEATURES: tuple[Feature, ...] = tuple(Feature)

#: kraft.version's name, for the code that handles it apart from the other features (raft writes it,
#: the image keeps it outside the finalized levels), as Kafka does.
KRAFT_VERSION = Feature.KRAFT_VERSION.feature_name
"""Every feature, in Kafka's order (there are no test-only features in the catalogue)."""


def feature_names_sorted() -> tuple[str, ...]:
    """Feature names sorted, as Kafka lists them in "Supported features are: ..." messages."""
    return tuple(sorted(f.feature_name for f in PRODUCTION_FEATURES))


def validate_version(feature_level: FeatureLevel, proposed: Mapping[str, int]) -> None:
    """Kafka's ``Feature.validateVersion``: check one level against a proposed set of levels.

    ``proposed`` maps feature names (``metadata.version`` included) to levels. Any level ≥ 1
    needs metadata.version ≥ 3.3-IV3, then every declared dependency must be met.
    """
    mv_level = proposed.get(mvs.FEATURE_NAME)
    minimum = mvs.MINIMUM_VERSION
    if feature_level.level >= 1 and (mv_level is None or mv_level < minimum.feature_level):
        raise FeatureDependencyError(
            f"{feature_level.feature_name} could not be set to {feature_level.level} because it depends on "
            f"{mvs.FEATURE_NAME}={minimum.feature_level} ({minimum})"
        )
    for dep_name, dep_level in feature_level.dependencies:
        have = proposed.get(dep_name)
        if have is None or have < dep_level:
            raise FeatureDependencyError(
                f"{feature_level.feature_name} could not be set to {feature_level.level} "
                f"because it depends on {dep_name} level {dep_level}"
            )


def default_levels(metadata_version: MetadataVersion) -> dict[str, int]:
    """Every feature's default level at ``metadata_version``, in Kafka's order."""
    return {f.feature_name: f.default_level(metadata_version) for f in PRODUCTION_FEATURES}


def check_catalogue() -> None:
    """Kafka's static invariants (``validateDefaultValueAndLatestProductionValue``, rules 1-6).

    Raises :class:`VersionError` naming the broken rule; the tests run it, like ``FeatureTest``.
    """
    latest_mv = mvs.LATEST_PRODUCTION
    for feature in PRODUCTION_FEATURES:
        levels = [lv.level for lv in feature.levels]
        if levels != list(range(len(levels))):
            raise VersionError(f"{feature}: levels must be 0, 1, ... without gaps, got {levels}")
        # 1. latest production is one of the levels
        if feature.latest_production not in levels:
            raise VersionError(f"{feature}: latest production {feature.latest_production} is not a level")
        production = feature.from_feature_level(feature.latest_production, allow_unstable=True)
        # 2. latest production >= the default at the latest production metadata.version
        default = feature.default_version(latest_mv)
        if default.level > feature.latest_production:
            raise VersionError(
                f"{feature}: default {default.level} at {latest_mv} exceeds latest production "
                f"{feature.latest_production}"
            )
        for dep_name, dep_level in production.dependencies:
            if dep_name == mvs.FEATURE_NAME:
                # 5. an MV dependency of latest production is a production MV
                if dep_level > latest_mv.feature_level:
                    raise VersionError(f"{production}: depends on unstable {mvs.FEATURE_NAME}={dep_level}")
            else:
                # 3. dependencies of latest production are production-ready
                dep = Feature.from_name(dep_name)
                if dep_level > dep.latest_production:
                    raise VersionError(f"{production}: depends on unstable {dep_name}={dep_level}")
        for mv in mvs.VERSIONS:
            default = feature.default_version(mv)
            for dep_name, dep_level in default.dependencies:
                if dep_name == mvs.FEATURE_NAME:
                    # 6. an MV dependency of a default is <= that default's bootstrap MV
                    if dep_level > default.bootstrap_metadata_version.feature_level:
                        raise VersionError(
                            f"{default}: depends on {mvs.FEATURE_NAME}={dep_level}, above its bootstrap "
                            f"{default.bootstrap_metadata_version}"
                        )
                # 4. dependencies of a default are <= that dependency's own default
                elif dep_level > Feature.from_name(dep_name).default_level(mv):
                    raise VersionError(
                        f"{default}: depends on {dep_name}={dep_level} above its default at {mv}"
                    )
