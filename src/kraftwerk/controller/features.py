"""Feature-level control: the UpdateFeatures checks and registration feature checks, as pure functions.

Everything here reads a :class:`FeatureControlState` (what the controller knows: finalized
levels, its own supported ranges, the registered brokers and controllers, the voters) and
returns records and an error; nothing is mutated. The check order and every message text are
Kafka 4.x's ``FeatureControlManager`` / ``QuorumFeatures`` / ``ClusterControlManager``
(``upstream-kafka.md`` §3.2, §3.4), with two documented kraftwerk choices:

* **quorum rule** (KIP-778's majority): every *registered* controller must support the level,
  and a majority of the voters must be known (the local controller, or registered) to support
  it; an unregistered minority does not block (Kafka 4.x requires every voter registered);
* **unsafe downgrade** (KIP-778): UNSAFE_DOWNGRADE of metadata.version across a metadata change
  is accepted; the losses are reported (Kafka always refuses it).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kraftwerk.controller.errors import ApiError
from kraftwerk.image.errors import loss_message
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.versions import features as feature_catalogue
from kraftwerk.versions.errors import FeatureDependencyError, UnknownFeatureLevelError, VersionError
from kraftwerk.versions.features import KRAFT_VERSION, VersionRange
from kraftwerk.versions.metadata_version import (
    FEATURE_NAME,
    LATEST_TESTING,
    MINIMUM_VERSION,
    MetadataVersion,
    check_if_metadata_changed,
)

log = logging.getLogger(__name__)

DISABLED = VersionRange(0, 0)
"""Kafka's ``QuorumFeatures.DISABLED``: the range of a feature a node does not report."""

ATOMIC_FAILURE_PREFIX = "The update failed for all features since the following feature had an error: "


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1+ ``UpgradeType``; any other byte is UNKNOWN (rejected)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def from_code(cls, code: int) -> UpgradeType:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One requested change: feature name, target level, upgrade type."""

    feature: str
    level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True, slots=True)
class NodeSupport:
    """The supported ranges a registered node reported (absent feature = DISABLED)."""

    node_id: int
    ranges: Mapping[str, VersionRange]

    def range_of(self, feature: str) -> VersionRange:
        return self.ranges.get(feature, DISABLED)


@dataclass(frozen=True, slots=True)
class FeatureControlState:
    """What the feature checks read; built by the controller from its image."""

    node_id: int
    metadata_version: MetadataVersion
    finalized: Mapping[str, int]
    """Non-zero levels of features other than metadata.version and kraft.version."""
    local_supported: Mapping[str, VersionRange]
    """This controller's ranges (metadata.version and kraft.version included)."""
    brokers: tuple[NodeSupport, ...] = ()
    """Every registered broker, fenced or not, in id order."""
    controllers: tuple[NodeSupport, ...] = ()
    """Every registered controller, in id order."""
    voters: tuple[int, ...] = ()
    kraft_version: int = 0
    zk_migration_in_progress: bool = False
    """KIP-866 (3.x): PRE_MIGRATION or MIGRATION; metadata.version is frozen meanwhile."""

    def current_level(self, feature: str) -> int:
        if feature == FEATURE_NAME:
            return self.metadata_version.feature_level
        if feature == KRAFT_VERSION:
            return self.kraft_version
        return self.finalized.get(feature, 0)


def range_text(r: VersionRange) -> str:
    return f"{r.min}-{r.max}"


def reason_range_not_supported(level: int, what: str, supported: VersionRange) -> str | None:
    """Kafka's ``QuorumFeatures.reasonNotSupported`` for one node."""
    if supported.contains(level):
        return None
    if supported.max == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {range_text(supported)}"


def reason_not_supported(state: FeatureControlState, feature: str, level: int) -> str | None:
    """Why ``feature=level`` cannot be finalized, or None: local controller, every registered
    broker (fenced ones too), then the controller quorum (kraftwerk's majority rule)."""
    local = state.local_supported.get(feature, DISABLED)
    reason = reason_range_not_supported(level, f"Local controller {state.node_id}", local)
    if reason is not None:
        return reason
    for broker in state.brokers:
        reason = reason_range_not_supported(level, f"Broker {broker.node_id}", broker.range_of(feature))
        if reason is not None:
            return reason
    if not state.metadata_version.is_controller_registration_supported():
        log.info(
            "Verified that %d broker(s) and 1 controller(s) supported changing %s to feature level %d. "
            "Note: unable to verify controller support in the current MetadataVersion.",
            len(state.brokers),
            feature,
            level,
        )
        return None
    supporters = {state.node_id}
    for controller in state.controllers:
        if controller.node_id == state.node_id:
            continue  # checked above with the local ranges
        reason = reason_range_not_supported(
            level, f"Controller {controller.node_id}", controller.range_of(feature)
        )
        if reason is not None:
            return reason
        supporters.add(controller.node_id)
    return quorum_majority_reason(state.voters, supporters)


def quorum_majority_reason(voters: Sequence[int], supporters: Iterable[int]) -> str | None:
    """kraftwerk's quorum rule: a majority of ``voters`` must be known to support the level.

    ``supporters`` are the controllers known to support it (the local one and every registered
    controller that passed the range check). With no voter list there is nothing to check.
    """
    if not voters:
        return None
    known = set(supporters)
    supporting = [v for v in voters if v in known]
    needed = len(voters) // 2 + 1
    if len(supporting) >= needed:
        return None
    missing = [v for v in voters if v not in known]
    return (
        f"controller {missing[0]} has not registered, and may not support this feature; "
        f"only {len(supporting)} of {len(voters)} controller quorum voters are known to support it "
        f"and a majority ({needed}) is required"
    )


def invalid_update_version(feature: str, level: int, message: str) -> ApiError:
    text = f"Invalid update version {level} for feature {feature}. {message}"
    log.warning(text)
    return ApiError(Errors.INVALID_UPDATE_VERSION, text)


def feature_level_record(name: str, level: int) -> MetadataRecord:
    return MetadataRecord(lookup_record("FeatureLevelRecord"), 0, {"name": name, "featureLevel": level})


def noop_record() -> MetadataRecord:
    return MetadataRecord(lookup_record("NoOpRecord"), 0, {})


@dataclass(frozen=True, slots=True)
class MetadataVersionDowngrade:
    """An accepted metadata.version downgrade; ``lossy`` when it crosses a metadata change."""

    current: MetadataVersion
    target: MetadataVersion
    lossy: bool
    losses: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateFeaturesOutcome:
    """The result of a whole UpdateFeatures request (4.x: all or nothing)."""

    error: Errors
    message: str | None
    records: tuple[MetadataRecord, ...] = ()
    kraft_version_upgrade: int | None = None
    downgrade: MetadataVersionDowngrade | None = None
    feature_names: tuple[str, ...] = ()
    announcements: tuple[str, ...] = ()
    """Kafka's WARN lines for an accepted metadata.version change ("Upgrading metadata.version from
    ... to ..."): the caller logs them once every other check (KIP-1294's audit) has passed too."""

    @property
    def ok(self) -> bool:
        return self.error is Errors.NONE


LossProbe = Callable[[MetadataVersion], tuple[str, ...]]
"""Returns what writing the current image at a version would lose (``image_losses``)."""


@dataclass(slots=True)
class _Work:
    records: list[MetadataRecord] = field(default_factory=list)
    kraft_version_upgrade: int | None = None
    downgrade: MetadataVersionDowngrade | None = None
    announcements: list[str] = field(default_factory=list)


def check_update(
    state: FeatureControlState,
    update: FeatureUpdate,
    proposed: Mapping[str, int],
    work: _Work,
    losses_at: LossProbe | None = None,
) -> None:
    """Kafka's ``updateFeature`` for one feature; raises :class:`ApiError`, appends to ``work``."""
    name, level, utype = update.feature, update.level, update.upgrade_type
    if utype is UpgradeType.UNKNOWN:
        raise invalid_update_version(name, level, "The controller does not support the given upgrade type.")
    current = state.current_level(name)
    if level < 0:
        raise invalid_update_version(name, level, "A feature version cannot be less than 0.")
    reason = reason_not_supported(state, name, level)
    if reason is not None:
        raise invalid_update_version(name, level, reason)
    if level < current:
        if utype is UpgradeType.UPGRADE:
            raise invalid_update_version(
                name,
                level,
                "Can't downgrade the version of this feature without setting the upgrade type "
                "to either safe or unsafe downgrade.",
            )
    elif level > current and utype is not UpgradeType.UPGRADE:
        raise invalid_update_version(name, level, "Can't downgrade to a newer version.")
    if name == FEATURE_NAME:
        _update_metadata_version(state, level, utype, work, losses_at)
    elif name == KRAFT_VERSION:
        if level < current:
            raise invalid_update_version(name, level, "Can't downgrade the version of this feature.")
        if level > current:
            # kraft.version lives in KRaft control records; the metadata log gets a NoOpRecord.
            work.records.append(noop_record())
            work.kraft_version_upgrade = level
    else:
        if name not in state.local_supported and feature_catalogue.Feature.lookup(name) is None:
            # Level 0 of an unknown feature passes the support checks; Kafka's
            # Features.featureFromName then refuses it, so nothing is written for it.
            raise invalid_update_version(name, level, f"Feature {name} not found.")
        _validate_dependencies(name, level, proposed)
        work.records.append(feature_level_record(name, level))


def _validate_dependencies(name: str, level: int, proposed: Mapping[str, int]) -> None:
    feature = feature_catalogue.Feature.lookup(name)
    if feature is None:
        return  # a feature this software supports outside the catalogue (Kafka's test features)
    try:
        definition = feature.from_feature_level(level, allow_unstable=True)
    except UnknownFeatureLevelError as exc:
        raise invalid_update_version(name, level, str(exc)) from None
    try:
        feature_catalogue.validate_version(definition, proposed)
    except FeatureDependencyError as exc:
        raise invalid_update_version(name, level, str(exc)) from None


def _update_metadata_version(
    state: FeatureControlState, level: int, utype: UpgradeType, work: _Work, losses_at: LossProbe | None
) -> None:
    """Kafka's ``updateMetadataVersion`` (4.2 texts), with the unsafe downgrade accepted."""
    current = state.metadata_version
    try:
        target = MetadataVersion.from_feature_level(level)
    except VersionError:
        raise ApiError(
            Errors.INVALID_UPDATE_VERSION,
            f"Invalid metadata.version {level}. Valid versions are from "
            f"{MINIMUM_VERSION.feature_level} to {LATEST_TESTING.feature_level}.",
        ) from None
    if state.zk_migration_in_progress:
        raise ApiError(
            Errors.INVALID_UPDATE_VERSION,
            f"Invalid metadata.version {level}. Unable to modify "
            "metadata.version while a ZK migration is in progress.",
        )
    if target < current:
        changed = check_if_metadata_changed(current, target)
        prefix = f"Unsupported metadata.version downgrade from {current.feature_level} to {level}. "
        if not changed:
            work.announcements.append(f"Downgrading metadata.version from {current} to {target}.")
            work.downgrade = MetadataVersionDowngrade(current, target, lossy=False)
        elif utype is UpgradeType.UNSAFE_DOWNGRADE:
            losses = losses_at(target) if losses_at is not None else ()
            work.announcements.append(
                f"Downgrading metadata.version unsafely from {current} to {target}; {len(losses)} loss(es)."
            )
            work.downgrade = MetadataVersionDowngrade(current, target, lossy=True, losses=losses)
        else:
            message = (
                prefix + "Refusing to perform the requested downgrade because it might delete metadata "
                "information."
            )
            log.warning(message)
            raise ApiError(Errors.INVALID_UPDATE_VERSION, message)
    elif target > current:
        work.announcements.append(f"Upgrading metadata.version from {current} to {target}.")
    work.records.append(feature_level_record(FEATURE_NAME, level))


def refuse_unsafe_downgrade_text(current: MetadataVersion, target: MetadataVersion) -> str:
    """Kafka 4.2's refusal of UNSAFE_DOWNGRADE (kept for nodes configured to refuse it)."""
    return (
        f"Unsupported metadata.version downgrade from {current.feature_level} to {target.feature_level}. "
        "Unsafe metadata downgrade is not supported in this version."
    )


def update_features(
    state: FeatureControlState,
    updates: Sequence[FeatureUpdate],
    *,
    validate_only: bool = False,
    losses_at: LossProbe | None = None,
    allow_unsafe_downgrade: bool = True,
) -> UpdateFeaturesOutcome:
    """Kafka 4.x ``updateFeatures``: every feature is checked in the request map's order, the first
    error fails the whole request and no record is produced; ``validate_only`` produces none.

    ``updates`` must already be in the order Kafka iterates them (:func:`java_hash_map_order`).
    With ``allow_unsafe_downgrade=False`` the lossy downgrade is refused with Kafka's text.
    """
    names = tuple(u.feature for u in updates)
    proposed: dict[str, int] = dict(state.finalized)
    proposed[FEATURE_NAME] = state.metadata_version.feature_level
    for u in updates:
        proposed[u.feature] = u.level
    work = _Work()
    for u in updates:
        try:
            check_update(state, u, proposed, work, losses_at)
            down = work.downgrade
            if down is not None and down.lossy and not allow_unsafe_downgrade:
                raise ApiError(
                    Errors.INVALID_UPDATE_VERSION, refuse_unsafe_downgrade_text(down.current, down.target)
                )
        except ApiError as err:
            return UpdateFeaturesOutcome(
                err.error, ATOMIC_FAILURE_PREFIX + str(err), feature_names=names
            )
    message = None
    down = work.downgrade
    if down is not None and down.lossy and down.losses:
        message = loss_message(down.target, down.losses)
    said = tuple(work.announcements)
    if validate_only:
        return UpdateFeaturesOutcome(Errors.NONE, message, (), None, down, names, said)
    return UpdateFeaturesOutcome(
        Errors.NONE, message, tuple(work.records), work.kraft_version_upgrade, down, names, said
    )


# --------------------------------------------------------------------------- request order


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units), as a signed-free 32-bit value."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` filled with ``keys`` in this order.

    Kafka's controller keeps UpdateFeatures' updates in a HashMap and stops at the first failing
    feature, so which error a multi-feature request reports depends on this order (e.g.
    ``downgrade --release-version 3.9`` reports kraft.version before metadata.version).
    Buckets are ``spread(hash) & (capacity - 1)``; a bucket keeps insertion order; the table
    doubles from 16 whenever the size passes 0.75 of the capacity. (Tree bins only appear past 8
    collisions in one bucket, impossible for a request of a few features.)
    """
    unique: list[str] = []
    for k in keys:
        if k not in unique:
            unique.append(k)
    capacity = 16
    while len(unique) > capacity * 3 // 4:
        capacity *= 2

    def bucket(k: str) -> int:
        h = java_string_hash(k)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(unique, key=lambda k: (bucket(k), unique.index(k)))


# --------------------------------------------------------------------------- registration


def registration_feature_error(
    broker_ranges: Mapping[str, VersionRange], metadata_version: MetadataVersion, finalized: Mapping[str, int]
) -> ApiError | None:
    """Kafka's ``ClusterControlManager`` feature checks of a BrokerRegistration.

    Missing metadata.version → INVALID_REGISTRATION; a finalized level outside the broker's range
    (a feature the broker did not report counts as [0, 0]) → UNSUPPORTED_VERSION with Kafka's
    ``UnsupportedVersionException`` text. ``finalized`` holds non-MV levels (kraft.version included
    when the controller knows it).
    """
    if FEATURE_NAME not in broker_ranges:
        return ApiError(Errors.INVALID_REGISTRATION, f"Request features do not contain '{FEATURE_NAME}'")
    checks: list[tuple[str, int]] = [(FEATURE_NAME, metadata_version.feature_level)]
    for name in broker_ranges:
        if name != FEATURE_NAME:
            checks.append((name, finalized.get(name, 0)))
    for name, level in sorted(finalized.items()):
        if name not in broker_ranges and level != 0:
            checks.append((name, level))
    for name, level in checks:
        rng = broker_ranges.get(name, DISABLED)
        if not rng.contains(level):
            return ApiError(
                Errors.UNSUPPORTED_VERSION,
                "Unable to register because the broker does not support finalized version "
                f"{level} of {name}. The broker wants a version between {rng.min} and {rng.max}, inclusive.",
            )
    return None
