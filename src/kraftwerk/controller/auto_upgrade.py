"""KIP-920: metadata.version follows a static config, upgraded by the active controller.

A controller's ``metadata.version`` (or its deprecated synonym ``inter.broker.protocol.version``)
in ``server.properties`` is its target. While ``auto.upgrade.metadata.version`` is true -- as the
active controller's effective config says: its own dynamic value, else the cluster default, else
``server.properties`` -- the active controller checks every
``auto.upgrade.metadata.version.interval.ms`` and raises a lower finalized level to its target
through the UpdateFeatures checks; it never lowers it, so controllers with different targets
failing over cannot flip-flop. Meanwhile a manual metadata.version change is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kraftwerk.config import (
    BROKER_CONFIGS,
    BrokerConfigLayers,
    ConfigError,
    ConfigResourceType,
    effective_broker_props,
)
from kraftwerk.image.model import ConfigResource, MetadataImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

AUTO_UPGRADE = "auto.upgrade.metadata.version"
INTERVAL = "auto.upgrade.metadata.version.interval.ms"
STATIC_METADATA_VERSION = "metadata.version"
DEPRECATED_STATIC_METADATA_VERSION = "inter.broker.protocol.version"
MANUAL_DISABLED_SINCE = 3
"""The UpdateFeatures version that may answer MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED; older
versions get INVALID_REQUEST (the KIP)."""


def static_metadata_version(static: Mapping[str, str], software: SoftwareVersion) -> MetadataVersion | None:
    """This node's static ``metadata.version`` (a release such as ``4.0`` or a version such as
    ``4.0-IV3``), or None; a value its software cannot run is a :class:`ConfigError`."""
    name = (
        STATIC_METADATA_VERSION if STATIC_METADATA_VERSION in static else DEPRECATED_STATIC_METADATA_VERSION
    )
    text = static.get(name, "").strip()
    if not text:
        return None
    try:
        mv = MetadataVersion.from_version_string(text, unstable=True)
    except VersionError as exc:
        raise ConfigError(f"Invalid value {text} for configuration {name}: {exc}") from None
    supported = software.supported_features().get(FEATURE_NAME)
    if supported is None or not supported.min <= mv.feature_level <= supported.max:
        low = (
            "none"
            if supported is None
            else MetadataVersion.from_feature_level(supported.min, allow_legacy=True)
        )
        high = (
            "none"
            if supported is None
            else MetadataVersion.from_feature_level(supported.max, allow_legacy=True)
        )
        raise ConfigError(
            f"Invalid value {text} for configuration {name}: this node's software "
            f"({software.release}) supports metadata.version {low} to {high}"
        )
    return mv


@dataclass(frozen=True, slots=True)
class AutoUpgrade:
    """The effective KIP-920 settings of one controller."""

    enabled: bool
    interval_ms: int
    target: MetadataVersion | None

    def manual_change_error(
        self, version: int, current: MetadataVersion, levels: Mapping[str, int]
    ) -> tuple[Errors, str] | None:
        """The refusal of an UpdateFeatures that would change metadata.version while the level is
        managed automatically (``levels`` are the requested feature levels), or None."""
        wanted = levels.get(FEATURE_NAME)
        if not self.enabled or wanted is None or wanted == current.feature_level:
            return None
        error = (
            Errors.MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED
            if version >= MANUAL_DISABLED_SINCE
            else Errors.INVALID_REQUEST
        )
        target = (
            f"its static metadata.version {self.target}"
            if self.target is not None
            else "its static metadata.version (none is set)"
        )
        return error, (
            f"metadata.version cannot be changed manually while {AUTO_UPGRADE} is true: the active "
            f"controller upgrades it to {target}. Set {AUTO_UPGRADE}=false to change it manually."
        )


def auto_upgrade_settings(
    image: MetadataImage, node_id: int, static: Mapping[str, str], target: MetadataVersion | None
) -> AutoUpgrade:
    """The settings in force on controller ``node_id``: its dynamic config over the cluster
    default over its ``server.properties``. A dynamic value that does not parse counts as unset
    (AlterConfigs refuses such values; an old log could hold one)."""
    layers = BrokerConfigLayers(
        static=static,
        cluster_default=image.configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {}),
        broker=image.configs.get(ConfigResource(ConfigResourceType.BROKER, str(node_id)), {}),
    )
    props = effective_broker_props(layers)

    def value(name: str) -> object:
        key = BROKER_CONFIGS[name]
        try:
            return key.parse(props[name]) if name in props else key.default
        except ConfigError:
            return key.default

    enabled, interval = value(AUTO_UPGRADE), value(INTERVAL)
    assert isinstance(interval, int)
    return AutoUpgrade(enabled is True, interval, target)


class AutoUpgradeTimer:
    """When the active controller next checks (every interval while enabled; the first check one
    interval after it became active or the setting turned on)."""

    def __init__(self) -> None:
        self.next_check_ms: int | None = None

    def reset(self) -> None:
        self.next_check_ms = None

    def due(self, settings: AutoUpgrade, now_ms: int) -> bool:
        if not settings.enabled:
            self.next_check_ms = None
            return False
        if self.next_check_ms is None:
            self.next_check_ms = now_ms + settings.interval_ms
            return False
        if now_ms < self.next_check_ms:
            return False
        self.next_check_ms = now_ms + settings.interval_ms
        return True
