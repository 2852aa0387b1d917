"""KIP-1294: checking config values against the rules in force at a metadata.version.

At feature level L a value must pass its config's base validator and the MV rule in force at L
(the floor entry: the rule registered at the highest level ≤ L; none below the lowest one). This
is what ``storage format --release-version``, AlterConfigs and the pre-flight audit of a
metadata.version change call: :func:`validate_at` for one value, :func:`violations_at` for a
whole effective config.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kraftwerk.config.catalogue import BROKER_CONFIGS, TOPIC_CONFIGS, broker_key
from kraftwerk.config.definition import ConfigKey
from kraftwerk.config.errors import ConfigValueError
from kraftwerk.config.resolve import (
    BROKER_DEFAULTS,
    BrokerConfigLayers,
    ConfigEntry,
    ConfigSource,
    describe_broker_config,
)
from kraftwerk.config.types import ConfigResourceType
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import MetadataVersion


def _version_text(level: int) -> str:
    try:
        return str(MetadataVersion.from_feature_level(level, allow_legacy=True))
    except VersionError:
        return f"feature level {level}"


@dataclass(frozen=True, slots=True)
class Violation:
    """A value that breaks a rule: which config, its value, the rule, and where both come from.

    ``level`` is the feature level whose MV rule it breaks (None: the base validator);
    ``origin`` is where the value comes from when the caller knows (an effective config's source).
    """

    config: str
    value: str
    reason: str
    rule: str
    level: int | None = None
    citation: str | None = None
    origin: ConfigSource | None = None

    @property
    def metadata_version(self) -> str | None:
        """The metadata.version that introduced the rule, e.g. ``4.4-IV1``."""
        return None if self.level is None else _version_text(self.level)

    def message(self) -> str:
        """Kafka's ``Invalid value ... for configuration ...: <reason>``, plus the level of an MV rule."""
        text = f"Invalid value {self.value} for configuration {self.config}: {self.reason}"
        return text if self.level is None else f"{text} (since metadata.version {self.metadata_version})"

    def sourced_message(self) -> str:
        """:meth:`message` and where the value comes from, when known."""
        return self.message() + ("" if self.origin is None else f", from {self.origin.name}")


class ConstraintViolationError(ConfigValueError):
    """A value that breaks an MV rule; carries the :class:`Violation`."""

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.config, violation.value, violation.reason)
        self.args = (violation.message(),)
        self.violation = violation


def _key(name: str, resource_type: int) -> ConfigKey | None:
    if resource_type == ConfigResourceType.TOPIC:
        return TOPIC_CONFIGS.get(name)
    return broker_key(name)


def validate_at(level: int, name: str, value: object, *,
                resource_type: int = ConfigResourceType.BROKER) -> object:
    """The parsed value if it is valid at feature level ``level``; else :class:`ConfigValueError`
    (type or base rule) or :class:`ConstraintViolationError` (the MV rule in force)."""
    key = _key(name, resource_type)
    if key is None:
        return value
    parsed = key.parse(value)
    rule = key.rule_at(level)
    if rule is not None:
        try:
            rule.validator.ensure_valid(name, parsed)
        except ConfigValueError as exc:
            raise ConstraintViolationError(Violation(
                name, exc.value, exc.reason, str(rule.validator), rule.level, rule.source)) from None
    return parsed


def _items(configs: Mapping[str, str | None] | Iterable[ConfigEntry]
           ) -> Iterable[tuple[str, str | None, ConfigSource | None]]:
    if isinstance(configs, Mapping):
        return ((name, value, None) for name, value in configs.items())
    return ((e.name, e.value, e.source) for e in configs)


def violations_at(level: int, configs: Mapping[str, str | None] | Iterable[ConfigEntry], *,
                  resource_type: int = ConfigResourceType.BROKER) -> list[Violation]:
    """Every value in ``configs`` (name → value, or described entries) that is not valid at
    feature level ``level``, sorted by config name. Unset (None) values and names the catalogue
    does not know are skipped."""
    found: list[Violation] = []
    for name, value, origin in _items(configs):
        if value is None:
            continue
        try:
            validate_at(level, name, value, resource_type=resource_type)
        except ConstraintViolationError as exc:
            v = exc.violation
            found.append(Violation(v.config, v.value, v.reason, v.rule, v.level, v.citation, origin))
        except ConfigValueError as exc:
            key = _key(name, resource_type)
            rule = "" if key is None or key.validator is None else str(key.validator)
            found.append(Violation(name, exc.value, exc.reason, rule, origin=origin))
    return sorted(found, key=lambda v: v.config)


def broker_rule_violations(level: int, static: Mapping[str, str], cluster_default: Mapping[str, str],
                           own: Mapping[str, str], names: Iterable[str]) -> list[Violation]:
    """The effective values of ``names`` for one broker (its dynamic configs over the cluster
    default over its ``server.properties``) that break a metadata.version rule at ``level``."""
    layers = BrokerConfigLayers(static=static, cluster_default=cluster_default, broker=own)
    entries = [describe_broker_config(n, layers) for n in sorted(names)]
    return [v for v in violations_at(level, entries) if v.level is not None]


def static_configs_to_report(static: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """What a broker reports in BrokerRegistration v6 (KIP-1294): every broker config that has an
    MV rule, never a sensitive one, with its ``server.properties`` value or else its default."""
    out: list[tuple[str, str | None]] = []
    for name, key in BROKER_CONFIGS.items():
        if key.mv_rules and not key.sensitive:
            out.append((name, static[name] if name in static else BROKER_DEFAULTS.get(name)))
    return out
