"""What one node's software supports: a value, so an old and a new node can run side by side.

Kafka keeps these ranges in static constants of the running binary. Here they are a value built
for a release (``SoftwareVersion.for_release("3.9")``) or for this software (``latest()``), so a
controller, a broker or a test can hold nodes of different releases at once.

Per release: the metadata.version range (3.x software accepted levels from 3.0-IV1, 4.x from
3.3-IV3), the latest production and latest testing levels, and for each feature the release knew
its latest production and testing levels; ``4.4`` is newer than this software (kraftwerk's
KIP-1294 release, for rehearsing the upgrade to it). For releases before 4.3 the latest testing
metadata.version is approximated as the level after the latest production one (the next
release's first placeholder); features are first known in the release the reference names
(kraft 3.9, transaction 3.9 unstable, group and ELR 4.0, share and streams 4.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import UnknownReleaseError
from kraftwerk.versions.features import PRODUCTION_FEATURES, Feature, VersionRange
from kraftwerk.versions.metadata_version import MetadataVersion

MV = MetadataVersion
F = Feature


@dataclass(frozen=True, slots=True)
class FeatureSupport:
    """The latest production and latest testing level of one feature in one release."""

    feature: Feature
    latest_production: int
    latest_testing: int


@dataclass(frozen=True, slots=True)
class SoftwareVersion:
    """The feature ranges one node's software supports (metadata.version included)."""

    release: str
    minimum_metadata_version: MetadataVersion
    latest_production: MetadataVersion
    latest_testing: MetadataVersion
    features: tuple[FeatureSupport, ...]
    unstable_enabled: bool = False
    """``unstable.feature.versions.enable``: raises every maximum to its latest testing level."""

    # --- construction ------------------------------------------------------------------------

    @classmethod
    def latest(cls, *, unstable: bool = False) -> SoftwareVersion:
        """This software: the 4.3 line of the catalogue."""
        return cls.for_release(LATEST_RELEASE, unstable=unstable)

    @classmethod
    def for_release(cls, release: str, *, unstable: bool = False) -> SoftwareVersion:
        """The profile of a Kafka release ``X.Y`` (3.0 ... 4.3); ``X.Y.Z`` is accepted too."""
        key = ".".join(release.split(".")[:2])
        profile = _RELEASES.get(key)
        if profile is None:
            raise UnknownReleaseError(
                f"Unknown software release '{release}'. Known releases are: {', '.join(_RELEASES)}"
            )
        return replace(profile, unstable_enabled=unstable)

    def with_unstable(self, enabled: bool = True) -> SoftwareVersion:
        return replace(self, unstable_enabled=enabled)

    # --- metadata.version ---------------------------------------------------------------------

    @property
    def max_metadata_version(self) -> MetadataVersion:
        """The highest metadata.version this node accepts (depends on ``unstable_enabled``)."""
        return self.latest_testing if self.unstable_enabled else self.latest_production

    def metadata_version_range(self) -> VersionRange:
        low, high = self.minimum_metadata_version, self.max_metadata_version
        return VersionRange(low.feature_level, high.feature_level)

    def parse_metadata_version(self, version_string: str, unstable: bool | None = None) -> MetadataVersion:
        """``fromVersionString`` with this release's bounds (``unstable`` defaults to the node's)."""
        return mvs.parse_version_string(
            version_string,
            unstable=self.unstable_enabled if unstable is None else unstable,
            minimum=self.minimum_metadata_version,
            latest_production=self.latest_production,
            latest_testing=self.latest_testing,
        )

    def metadata_version_for_level(self, level: int) -> MetadataVersion:
        """``fromFeatureLevel`` with this release's bounds (stable or not)."""
        return mvs.lookup_feature_level(
            level, minimum=self.minimum_metadata_version, latest_testing=self.latest_testing
        )

    # --- features -----------------------------------------------------------------------------

    def feature_support(self, feature: Feature) -> FeatureSupport | None:
        for support in self.features:
            if support.feature is feature:
                return support
        return None

    def feature_range(self, feature: Feature) -> VersionRange | None:
        """The range of ``feature`` this node advertises, or None if it advertises none.

        As Kafka's ``defaultSupportedFeatureMap``: ``[0, max]``, and a feature whose max is 0 (or
        that the release does not know) is left out.
        """
        support = self.feature_support(feature)
        if support is None:
            return None
        top = support.latest_testing if self.unstable_enabled else support.latest_production
        if top <= 0:
            return None
        return VersionRange(feature.minimum_production, top)

    def supported_features(self) -> Mapping[str, VersionRange]:
        """Name → range for every advertised feature, metadata.version first, then Kafka's order."""
        result: dict[str, VersionRange] = {mvs.FEATURE_NAME: self.metadata_version_range()}
        for feature in PRODUCTION_FEATURES:
            found = self.feature_range(feature)
            if found is not None:
                result[feature.feature_name] = found
        return MappingProxyType(result)

    def supported_range(self, name: str) -> VersionRange | None:
        """The advertised range of a feature by name (``metadata.version`` included)."""
        return self.supported_features().get(name)

    def supports(self, name: str, level: int) -> bool:
        """Whether this node can run with ``name`` finalized at ``level``.

        A feature the node does not advertise is supported only at level 0 (disabled), which is
        how Kafka treats a feature missing from a broker registration.
        """
        found = self.supported_range(name)
        if found is None:
            return level == 0
        return found.contains(level)

    def __str__(self) -> str:
        suffix = " (unstable enabled)" if self.unstable_enabled else ""
        return f"{self.release} software{suffix}"


def _next(mv: MetadataVersion) -> MetadataVersion:
    following = mv.next()
    return mv if following is None else following


def _profile(
    release: str,
    latest_production: MetadataVersion,
    features: dict[Feature, tuple[int, int]],
    *,
    minimum: MetadataVersion = mvs.MINIMUM_VERSION,
    latest_testing: MetadataVersion | None = None,
) -> SoftwareVersion:
    return SoftwareVersion(
        release=release,
        minimum_metadata_version=minimum,
        latest_production=latest_production,
        latest_testing=_next(latest_production) if latest_testing is None else latest_testing,
        features=tuple(
            FeatureSupport(f, *features[f]) for f in PRODUCTION_FEATURES if f in features
        ),
    )


def _all_releases() -> Mapping[str, SoftwareVersion]:
    v3 = mvs.MINIMUM_KRAFT_VERSION
    kraft_tv_39 = {F.KRAFT_VERSION: (1, 1), F.TRANSACTION_VERSION: (0, 2)}
    base_40 = {
        F.KRAFT_VERSION: (1, 1),
        F.TRANSACTION_VERSION: (2, 2),
        F.GROUP_VERSION: (1, 1),
        F.ELIGIBLE_LEADER_REPLICAS_VERSION: (1, 1),
    }
    base_41 = {**base_40, F.SHARE_VERSION: (1, 1), F.STREAMS_VERSION: (0, 1)}
    base_42 = {**base_41, F.STREAMS_VERSION: (1, 1)}
    latest = {f: (f.latest_production, f.latest_testing) for f in PRODUCTION_FEATURES}
    profiles = (
        # 3.0 - 3.6 had no production/unstable split: everything they defined was usable.
        _profile("3.0", MV.IBP_3_0_IV1, {}, minimum=v3, latest_testing=MV.IBP_3_0_IV1),
        _profile("3.1", MV.IBP_3_1_IV0, {}, minimum=v3, latest_testing=MV.IBP_3_1_IV0),
        _profile("3.2", MV.IBP_3_2_IV0, {}, minimum=v3, latest_testing=MV.IBP_3_2_IV0),
        _profile("3.3", MV.IBP_3_3_IV3, {}, minimum=v3, latest_testing=MV.IBP_3_3_IV3),
        _profile("3.4", MV.IBP_3_4_IV0, {}, minimum=v3, latest_testing=MV.IBP_3_4_IV0),
        _profile("3.5", MV.IBP_3_5_IV2, {}, minimum=v3, latest_testing=MV.IBP_3_5_IV2),
        _profile("3.6", MV.IBP_3_6_IV2, {}, minimum=v3, latest_testing=MV.IBP_3_6_IV2),
        _profile("3.7", MV.IBP_3_7_IV4, {}, minimum=v3),
        _profile("3.8", MV.IBP_3_8_IV0, {}, minimum=v3),
        _profile("3.9", MV.IBP_3_9_IV0, kraft_tv_39, minimum=v3),
        _profile("4.0", MV.IBP_4_0_IV3, base_40),
        _profile("4.1", MV.IBP_4_1_IV1, base_41),
        _profile("4.2", MV.IBP_4_2_IV1, base_42),
        _profile(LATEST_RELEASE, mvs.LATEST_PRODUCTION, latest, latest_testing=mvs.LATEST_TESTING),
        # KIP-1294's release: 4.4-IV1 (static config reporting, the 3 MiB segment.bytes minimum) is
        # production; upstream 4.4.0 goes on to 4.4-IV2, which kraftwerk does not implement.
        _profile("4.4", MV.IBP_4_4_IV1, latest, latest_testing=mvs.LATEST_TESTING),
    )
    return MappingProxyType({p.release: p for p in profiles})


LATEST_RELEASE = "4.3"
"""The release this software behaves as (the catalogue also knows the newer ``4.4``)."""

_RELEASES: Mapping[str, SoftwareVersion] = _all_releases()


def known_releases() -> tuple[str, ...]:
    """Every release ``for_release`` accepts, oldest first."""
    return tuple(_RELEASES)
