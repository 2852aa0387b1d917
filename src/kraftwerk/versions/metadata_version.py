"""The KRaft ``metadata.version`` catalogue: every level from 3.0-IV1 (1) to 4.5-IV0 (34).

An entry is (feature level, release, sub-version, didMetadataChange). Order is the feature level,
which is contiguous, so comparing levels is comparing Kafka's enum ordinals.

The catalogue is the one of "4.3 software": 4.3-IV0 is the latest production level, 4.4-IV0 and
later are unstable placeholders. Levels 1-6 stay in the catalogue so old logs can be read, but
the 4.x lookups (``from_version_string``, ``from_feature_level``) start at ``MINIMUM_VERSION``
(3.3-IV3), exactly as Kafka 4.x does. A node of another release is described by
:class:`kraftwerk.versions.software.SoftwareVersion`, which reuses the parametrised helpers here.
"""

from __future__ import annotations

import enum
from typing import Final

from kraftwerk.versions.errors import UnknownMetadataVersionError, UnsupportedAtVersionError

FEATURE_NAME: Final = "metadata.version"


class MetadataVersion(enum.Enum):
    """One ``metadata.version`` level. ``str(mv)`` is Kafka's form, e.g. ``3.3-IV3``."""

    feature_level: int
    release: str
    sub_version: str
    did_metadata_change: bool

    IBP_3_0_IV1 = (1, "3.0", "IV1", True)
    IBP_3_1_IV0 = (2, "3.1", "IV0", False)
    IBP_3_2_IV0 = (3, "3.2", "IV0", True)
    IBP_3_3_IV0 = (4, "3.3", "IV0", False)
    IBP_3_3_IV1 = (5, "3.3", "IV1", True)
    IBP_3_3_IV2 = (6, "3.3", "IV2", True)
    IBP_3_3_IV3 = (7, "3.3", "IV3", True)
    IBP_3_4_IV0 = (8, "3.4", "IV0", True)
    IBP_3_5_IV0 = (9, "3.5", "IV0", False)
    IBP_3_5_IV1 = (10, "3.5", "IV1", False)
    IBP_3_5_IV2 = (11, "3.5", "IV2", True)
    IBP_3_6_IV0 = (12, "3.6", "IV0", False)
    IBP_3_6_IV1 = (13, "3.6", "IV1", True)
    IBP_3_6_IV2 = (14, "3.6", "IV2", True)
    IBP_3_7_IV0 = (15, "3.7", "IV0", True)
    IBP_3_7_IV1 = (16, "3.7", "IV1", False)
    IBP_3_7_IV2 = (17, "3.7", "IV2", True)
    IBP_3_7_IV3 = (18, "3.7", "IV3", False)
    IBP_3_7_IV4 = (19, "3.7", "IV4", False)
    IBP_3_8_IV0 = (20, "3.8", "IV0", False)
    IBP_3_9_IV0 = (21, "3.9", "IV0", False)
    IBP_4_0_IV0 = (22, "4.0", "IV0", False)
    IBP_4_0_IV1 = (23, "4.0", "IV1", True)
    IBP_4_0_IV2 = (24, "4.0", "IV2", False)
    IBP_4_0_IV3 = (25, "4.0", "IV3", False)
    IBP_4_1_IV0 = (26, "4.1", "IV0", False)
    IBP_4_1_IV1 = (27, "4.1", "IV1", False)
    IBP_4_2_IV0 = (28, "4.2", "IV0", False)
    IBP_4_2_IV1 = (29, "4.2", "IV1", False)
    IBP_4_3_IV0 = (30, "4.3", "IV0", True)
    IBP_4_4_IV0 = (31, "4.4", "IV0", False)
    IBP_4_4_IV1 = (32, "4.4", "IV1", True)
    IBP_4_4_IV2 = (33, "4.4", "IV2", True)
    IBP_4_5_IV0 = (34, "4.5", "IV0", False)

    def __new__(cls, level: int, release: str, sub_version: str, did_change: bool) -> MetadataVersion:
        obj = object.__new__(cls)
        obj._value_ = level
        obj.feature_level = level
        obj.release = release
        obj.sub_version = sub_version
        obj.did_metadata_change = did_change
        return obj

    # --- identity and order -------------------------------------------------------------------

    @property
    def version(self) -> str:
        """Kafka's ``version()``: ``release-subVersion``, e.g. ``3.3-IV3``."""
        return f"{self.release}-{self.sub_version}"

    @property
    def short_version(self) -> str:
        """Kafka's ``shortVersion()``: the release, e.g. ``3.3``."""
        return self.release

    @property
    def feature_name(self) -> str:
        return FEATURE_NAME

    def __str__(self) -> str:
        return self.version

    def __repr__(self) -> str:
        return f"MetadataVersion.{self.name}"

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level < other.feature_level

    def __le__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level <= other.feature_level

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level > other.feature_level

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, MetadataVersion):
            return NotImplemented
        return self.feature_level >= other.feature_level

    def is_at_least(self, other: MetadataVersion) -> bool:
        return self.feature_level >= other.feature_level

    def is_less_than(self, other: MetadataVersion) -> bool:
        return self.feature_level < other.feature_level

    def previous(self) -> MetadataVersion | None:
        """The entry before this one in the catalogue (levels are contiguous), or None at 3.0-IV1."""
        if self.feature_level == 1:
            return None
        return VERSIONS[self.feature_level - 2]

    def next(self) -> MetadataVersion | None:
        """The entry after this one, or None at the end of the catalogue."""
        if self.feature_level == _LAST_LEVEL:
            return None
        return VERSIONS[self.feature_level]

    @property
    def is_production(self) -> bool:
        """Production-ready in the 4.3 software this catalogue describes (≤ 4.3-IV0)."""
        return self.feature_level <= _LATEST_PRODUCTION_LEVEL

    @property
    def is_supported(self) -> bool:
        """Known to a 4.x node at all (≥ MINIMUM_VERSION); lower levels exist only in old logs."""
        return self.feature_level >= _MINIMUM_LEVEL

    # --- what a level gates (named after Kafka's helpers) ---------------------------------------

    def is_kraft_supported(self) -> bool:
        return self.feature_level > 0

    def is_leader_recovery_supported(self) -> bool:
        return self.feature_level >= 3

    def is_noop_record_supported(self) -> bool:
        return self.feature_level >= 5

    def is_broker_registration_change_record_supported(self) -> bool:
        return self.feature_level >= 6

    def is_in_controlled_shutdown_state_supported(self) -> bool:
        return self.feature_level >= 7

    def is_migration_supported(self) -> bool:
        return self.feature_level >= 8

    def is_api_forwarding_enabled(self) -> bool:
        return self.feature_level >= 8

    def is_scram_supported(self) -> bool:
        return self.feature_level >= 11

    def is_leader_epoch_bump_required_on_isr_shrink(self) -> bool:
        return self.feature_level < 12

    def is_metadata_transaction_supported(self) -> bool:
        return self.feature_level >= 13

    def is_delegation_token_supported(self) -> bool:
        return self.feature_level >= 14

    def is_controller_registration_supported(self) -> bool:
        return self.feature_level >= 15

    def is_directory_assignment_supported(self) -> bool:
        return self.feature_level >= 17

    def is_elr_supported(self) -> bool:
        return self.feature_level >= 23

    def is_cordoned_log_dirs_supported(self) -> bool:
        return self.feature_level >= 30

    def is_cidr_acl_supported(self) -> bool:
        return self.feature_level >= 32

    def is_controller_unregistration_supported(self) -> bool:
        return self.feature_level >= 33

    def is_broker_static_configs_supported(self) -> bool:
        """Brokers report their static configs at registration (KIP-1294 companion draft, 4.4-IV1)."""
        return self.feature_level >= 32

    def register_broker_record_version(self) -> int:
        """RegisterBrokerRecord version: 0, then 1 (3.3-IV3), 2 (3.4-IV0), 3 (3.7-IV2), 4 (4.3-IV0),
        5 (4.4-IV1: StaticConfigs)."""
        if self.is_broker_static_configs_supported():
            return 5
        if self.is_cordoned_log_dirs_supported():
            return 4
        if self.is_directory_assignment_supported():
            return 3
        if self.is_migration_supported():
            return 2
        if self.is_in_controlled_shutdown_state_supported():
            return 1
        return 0

    def register_controller_record_version(self) -> int:
        """RegisterControllerRecord version; controllers register only from 3.7-IV0."""
        if self.is_controller_registration_supported():
            return 0
        raise UnsupportedAtVersionError(f"Controller registration is not supported in MetadataVersion {self}")

    def partition_record_version(self) -> int:
        """PartitionRecord version: 0, then 1 (directories, 3.7-IV2), 2 (ELR, 4.0-IV1)."""
        if self.is_elr_supported():
            return 2
        if self.is_directory_assignment_supported():
            return 1
        return 0

    def partition_change_record_version(self) -> int:
        """PartitionChangeRecord version; same steps as PartitionRecord."""
        return self.partition_record_version()

    def fetch_request_version(self) -> int:
        """The Fetch version a replica fetcher sends at this level."""
        level = self.feature_level
        for threshold, version in ((27, 18), (21, 17), (19, 16), (10, 15), (9, 14), (2, 13)):
            if level >= threshold:
                return version
        return 12

    def list_offsets_request_version(self) -> int:
        """The ListOffsets version a broker sends at this level."""
        level = self.feature_level
        for threshold, version in ((29, 11), (25, 10), (21, 9), (9, 8)):
            if level >= threshold:
                return version
        return 7

    # --- lookups with Kafka 4.x semantics ---------------------------------------------------------

    @classmethod
    def from_version_string(cls, version_string: str, unstable: bool = False) -> MetadataVersion:
        """Kafka 4.x ``fromVersionString(s, unstableFeatureVersionsEnabled)`` for 4.3 software."""
        return parse_version_string(version_string, unstable=unstable)

    @classmethod
    def from_feature_level(cls, level: int, *, allow_legacy: bool = False) -> MetadataVersion:
        """Kafka 4.x ``fromFeatureLevel``; ``allow_legacy`` also accepts levels 1-6 (old logs)."""
        minimum = MetadataVersion.IBP_3_0_IV1 if allow_legacy else MINIMUM_VERSION
        return lookup_feature_level(level, minimum=minimum)

    @classmethod
    def latest_production(cls) -> MetadataVersion:
        return LATEST_PRODUCTION

    @classmethod
    def latest_testing(cls) -> MetadataVersion:
        return LATEST_TESTING


VERSIONS: Final[tuple[MetadataVersion, ...]] = tuple(MetadataVersion)
MINIMUM_KRAFT_VERSION: Final = MetadataVersion.IBP_3_0_IV1
"""The first KRaft level; 3.x software accepted levels from here."""
MINIMUM_BOOTSTRAP_VERSION: Final = MetadataVersion.IBP_3_3_IV0
"""The first level that records metadata.version in the log (FeatureLevelRecord)."""
MINIMUM_VERSION: Final = MetadataVersion.IBP_3_3_IV3
"""The lowest level a 4.x node supports."""
LATEST_PRODUCTION: Final = MetadataVersion.IBP_4_3_IV0
LATEST_TESTING: Final = VERSIONS[-1]

_LAST_LEVEL: Final = 34
_MINIMUM_LEVEL: Final = 7
_LATEST_PRODUCTION_LEVEL: Final = 30


def metadata_versions_to_string(first: MetadataVersion, last: MetadataVersion) -> str:
    """Kafka's listing of a range: ``3.3-IV3, 3.4-IV0, ...`` (both ends included)."""
    return ", ".join(str(mv) for mv in VERSIONS if first <= mv <= last)


def _version_key(version_string: str) -> str:
    """The first two dot-segments, split the way Java's ``String.split`` does."""
    parts = version_string.split(".")
    while parts and parts[-1] == "":
        parts.pop()  # Java drops trailing empty strings
    if len(parts) <= 2:
        return version_string
    return ".".join(parts[:2])


def parse_version_string(
    version_string: str,
    *,
    unstable: bool = False,
    minimum: MetadataVersion = MINIMUM_VERSION,
    latest_production: MetadataVersion = LATEST_PRODUCTION,
    latest_testing: MetadataVersion = LATEST_TESTING,
) -> MetadataVersion:
    """Resolve ``X.Y``, ``X.Y.Z`` or ``X.Y-IVn`` within [minimum, latest_testing].

    A bare release maps to its highest production sub-version; a release with no production
    sub-version is unknown in bare form. Levels above ``latest_production`` resolve only with
    ``unstable``. The bounds default to 4.3 software; other releases pass their own.
    """
    key = _version_key(version_string)
    known = [mv for mv in VERSIONS if minimum <= mv <= latest_testing]
    found: MetadataVersion | None = None
    for mv in known:
        if mv.version == key or (mv.release == key and mv <= latest_production):
            found = mv  # the last production IV of a release wins, as in Kafka's map
    if found is None or (not unstable and found > latest_production):
        last = latest_testing if unstable else latest_production
        raise UnknownMetadataVersionError(
            f"Unknown metadata.version '{version_string}'. Supported metadata.version are: "
            f"{metadata_versions_to_string(minimum, last)}"
        )
    return found


def lookup_feature_level(
    level: int,
    *,
    minimum: MetadataVersion = MINIMUM_VERSION,
    latest_testing: MetadataVersion = LATEST_TESTING,
) -> MetadataVersion:
    """The entry with this feature level within [minimum, latest_testing] (Kafka's message)."""
    if minimum.feature_level <= level <= latest_testing.feature_level:
        return VERSIONS[level - 1]
    raise UnknownMetadataVersionError(
        f"No MetadataVersion with feature level {level}. Valid feature levels are from "
        f"{minimum.feature_level} to {latest_testing.feature_level}."
    )


def check_if_metadata_changed(source: MetadataVersion, target: MetadataVersion) -> bool:
    """Whether crossing between two levels (either direction) may lose metadata.

    Walk down from the higher level while ``did_metadata_change`` is false; it changed unless the
    walk reaches the lower level. The lower level's own flag is never examined.
    """
    if source is target:
        return False
    high, low = (source, target) if source > target else (target, source)
    current: MetadataVersion | None = high
    while current is not None and current is not low and not current.did_metadata_change:
        current = current.previous()
    return current is not low
