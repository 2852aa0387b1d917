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

from collections.abc import Mapping
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


def audit_image(image: MetadataImage, level: int) -> list[ConfigFinding]:
    """Every effective config value of ``image`` that is not valid at feature level ``level``,
    sorted by resource and config name."""
    found: dict[tuple[int, str, str], ConfigFinding] = {}

    def add(rtype: ConfigResourceType, name: str, violations: list[Violation]) -> None:
        for v in violations:
            where = CLUSTER_DEFAULT if rtype is ConfigResourceType.BROKER and v.origin in _SHARED else name
            found.setdefault((int(rtype), where, v.config), ConfigFinding(rtype, where, v))

    brokers = image.cluster.brokers
    for broker in brokers.values():
        static = {n: v for n, v in broker.static_configs if v is not None}
        add(ConfigResourceType.BROKER, str(broker.id), violations_at(level, _broker_entries(
            image, str(broker.id), static)))
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
