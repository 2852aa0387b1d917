"""KIP-1294's audit of an image: every effective config value checked against the rules in force at
a metadata.version, before the cluster is moved to it.

The values are the ones a controller holds (KIP-1294): the static configs each broker reported in
its registration (RegisterBrokerRecord v5), the dynamic configs of ConfigRecords (a broker's own,
the cluster default, each topic's), and the catalogue defaults behind them, resolved with Kafka's
precedence (:mod:`kraftwerk.config.resolve`). A broker's effective config covers every name set
anywhere for it and every config that has a metadata.version rule; a default of a config without
such a rule is valid at every level and is not re-checked. A bad value that comes from the cluster
default (or a catalogue default) is reported once, on the cluster default, not once per broker.
Sensitive values are never read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.config.catalogue import BROKER_CONFIGS
from kraftwerk.config.mv import Violation, violations_at
from kraftwerk.config.resolve import (
    BrokerConfigLayers,
    ConfigEntry,
    ConfigSource,
    describe_broker_config,
    describe_topic_config,
)
from kraftwerk.config.types import ConfigResourceType
from kraftwerk.image.model import ConfigResource, MetadataImage
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion

#: the resource name of the cluster-default broker configs
CLUSTER_DEFAULT = ""
_RULED = tuple(sorted(n for n, k in BROKER_CONFIGS.items() if k.mv_rules and not k.sensitive))
_SHARED = (ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)


@dataclass(frozen=True, slots=True)
class ConfigFinding:
    """A value of one config resource that breaks a rule at the audited level."""

    resource_type: ConfigResourceType
    resource_name: str
    violation: Violation

    @property
    def subject(self) -> str:
        """``broker 3 log.segment.bytes``, ``topic orders segment.bytes``, ``cluster default ...``."""
        what = ("cluster default" if self.resource_type is ConfigResourceType.BROKER
                and self.resource_name == CLUSTER_DEFAULT
                else f"{self.resource_type.name.lower()} {self.resource_name}")
        return f"{what} {self.violation.config}"

    def to_json(self) -> dict[str, Any]:
        v = self.violation
        return {"resourceType": self.resource_type.name, "resourceName": self.resource_name,
                "config": v.config, "value": v.value, "source": None if v.origin is None else v.origin.name,
                "rule": v.rule, "sinceMetadataVersion": v.metadata_version, "citation": v.citation,
                "reason": v.reason, "message": v.message()}


def _resource_type(code: int) -> ConfigResourceType | None:
    try:
        return ConfigResourceType(code)
    except ValueError:
        return None


def _configs(image: MetadataImage, rtype: ConfigResourceType, name: str) -> Mapping[str, str]:
    return image.configs.get(ConfigResource(int(rtype), name)) or {}


def _broker_entries(image: MetadataImage, name: str, static: Mapping[str, str]) -> list[ConfigEntry]:
    default = _configs(image, ConfigResourceType.BROKER, CLUSTER_DEFAULT)
    own = _configs(image, ConfigResourceType.BROKER, name)
    layers = BrokerConfigLayers(static=static, cluster_default=default, broker=own)
    names = set(_RULED) | set(default) | set(own) | set(static)
    return [describe_broker_config(n, layers) for n in sorted(names)]


def unreported_brokers(image: MetadataImage,
                       reported: Mapping[int, tuple[tuple[str, str | None], ...]] | None = None
                       ) -> list[int]:
    """Registered brokers whose static configs the controller does not know (older software)."""
    reported = reported or {}
    return sorted(b.id for b in image.cluster.brokers.values()
                  if not b.static_configs and not reported.get(b.id))


def audit_image(image: MetadataImage, level: int,
                reported: Mapping[int, tuple[tuple[str, str | None], ...]] | None = None,
                pending: Iterable[int] = ()) -> list[ConfigFinding]:
    """Every effective config value of ``image`` that is not valid at feature level ``level``,
    sorted by resource and config name. ``reported`` holds static configs a controller keeps in
    memory for brokers whose registration record could not carry them yet; ``pending`` are
    brokers whose registration is appended but not committed (audited with what they reported)."""
    found: dict[tuple[int, str, str], ConfigFinding] = {}

    def add(rtype: ConfigResourceType, name: str, violations: list[Violation]) -> None:
        for v in violations:
            where = CLUSTER_DEFAULT if rtype is ConfigResourceType.BROKER and v.origin in _SHARED else name
            found.setdefault((int(rtype), where, v.config), ConfigFinding(rtype, where, v))

    brokers = image.cluster.brokers
    for bid in sorted(set(brokers) | set(pending)):
        registered = brokers.get(bid)
        pairs = (registered.static_configs if registered else ()) or (reported or {}).get(bid, ())
        static = {n: v for n, v in pairs if v is not None}
        entries = _broker_entries(image, str(bid), static)
        add(ConfigResourceType.BROKER, str(bid), violations_at(level, entries))
    for resource in sorted(image.configs):
        rtype = _resource_type(resource.type)
        if rtype is ConfigResourceType.TOPIC:
            own = _configs(image, rtype, resource.name)
            entries = [describe_topic_config(n, own, BrokerConfigLayers()) for n in sorted(own)]
            add(rtype, resource.name, violations_at(level, entries, resource_type=int(rtype)))
        elif rtype is ConfigResourceType.BROKER and not (resource.name.isdigit()
                                                           and int(resource.name) in brokers):
            # a broker that is not registered, or the cluster default with no broker to apply it to
            add(rtype, resource.name, violations_at(level, _broker_entries(image, resource.name, {})))
    return [found[k] for k in sorted(found)]


def rules_tighten(current: int, target: int) -> bool:
    """Whether moving from feature level ``current`` up to ``target`` brings a broker config rule
    that ``current`` does not have: only then can an unknown static value break the target."""
    return target > current and any(
        k.rule_at(current) is not k.rule_at(target) for n, k in BROKER_CONFIGS.items() if n in _RULED)


@dataclass(frozen=True, slots=True)
class MetadataVersionAudit:
    """KIP-1294's pre-flight audit of one metadata.version change."""

    target: str
    findings: tuple[ConfigFinding, ...]
    unknown_brokers: tuple[int, ...]
    """Brokers whose static configs are unknown, when the change brings a rule they could break."""
    reports_expected: bool = False
    """The target has static config reporting (4.4-IV1+), so every broker can report: an unknown
    one refuses the change. Below it no 4.3-or-older broker can, and unknowns are only named."""
    skipped: bool = False
    awaited_brokers: tuple[int, ...] = ()
    """Unknown brokers whose software reports static configs (their registration reaches 4.4-IV1):
    this controller has not heard them yet (it took over after they registered; they re-send their
    registration), so the change waits for them at any level."""

    @property
    def refused(self) -> bool:
        return not self.skipped and bool(
            self.findings or self.awaited_brokers or (self.unknown_brokers and self.reports_expected))

    def message(self) -> str:
        """One line naming every violation (resource, config, value, source, rule) and unknown broker."""
        parts = []
        for f in self.findings:
            v = f.violation
            origin = "" if v.origin is None else f" from {v.origin.name}"
            since = "" if v.level is None else f" since metadata.version {v.metadata_version}"
            rule = v.rule or "its validator"
            parts.append(f"{f.subject}={v.value}{origin} breaks {rule}{since} ({v.reason})")
        if self.awaited_brokers and not self.reports_expected:
            parts.append("broker(s) " + ", ".join(map(str, self.awaited_brokers)) + " have not reported "
                         "their static configs to this controller yet (they re-send them after a "
                         "controller failover; retry)")
        if self.unknown_brokers and self.reports_expected:
            parts.append("broker(s) " + ", ".join(map(str, self.unknown_brokers)) + " never reported "
                         "their static configs (older software; --skip-config-audit overrides)")
        return (f"The config audit for metadata.version {self.target} refused the change: "
                + "; ".join(parts) + ".")

    def to_json(self) -> dict[str, Any]:
        return {"metadataVersion": self.target, "refused": self.refused, "skipped": self.skipped,
                "violations": [f.to_json() for f in self.findings],
                "unknownBrokers": list(self.unknown_brokers)}


def audit_metadata_version_change(
    image: MetadataImage, current: int, target: int, *,
    reported: Mapping[int, tuple[tuple[str, str | None], ...]] | None = None, skip: bool = False,
    pending: Iterable[int] = (),
) -> MetadataVersionAudit:
    """The audit of moving ``image`` from level ``current`` to ``target`` (up or down)."""
    unknown = unreported_brokers(image, reported) if rules_tighten(current, target) else []
    try:
        mv = MetadataVersion.from_feature_level(target, allow_legacy=True)
    except VersionError:
        return MetadataVersionAudit(f"feature level {target}", (), (), skipped=skip)
    awaited = tuple(b for b in unknown if reports_static_configs(image, b))
    findings = audit_image(image, target, reported, pending)
    return MetadataVersionAudit(str(mv), tuple(findings), tuple(unknown),
                                mv.is_broker_static_configs_supported(), skip, awaited)


def reports_static_configs(image: MetadataImage, broker_id: int) -> bool:
    """Whether a registered broker's software reports static configs: its registration supports 4.4-IV1."""
    supported = image.cluster.brokers[broker_id].feature_range(FEATURE_NAME)
    return supported is not None and supported.max >= MetadataVersion.IBP_4_4_IV1.feature_level
