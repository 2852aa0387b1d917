"""Errors raised by the versions layer.

They also derive from ``ValueError`` because every one of them is a bad value (a version string,
a level, a feature name); Kafka raises ``IllegalArgumentException`` in the same places.
"""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError


class VersionError(KraftwerkError, ValueError):
    """Base class of every versions-layer failure."""


class UnknownMetadataVersionError(VersionError):
    """A metadata.version string or level that the software does not know (or not as stable)."""


class UnknownFeatureError(VersionError):
    """A feature name that is not in the catalogue."""


class UnknownFeatureLevelError(VersionError):
    """A level that the feature does not define (or does not define as production-ready)."""


class FeatureDependencyError(VersionError):
    """A feature level whose dependencies (metadata.version or another feature) are not met."""


class FeatureSpecError(VersionError):
    """A ``name=level`` string that cannot be parsed."""


class UnknownReleaseError(VersionError):
    """A software release that the catalogue has no profile for."""


class UnsupportedAtVersionError(VersionError):
    """Something (a record, an RPC) that the given metadata.version cannot express."""
