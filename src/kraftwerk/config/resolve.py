"""Effective configs as Kafka resolves and describes them (``DynamicBrokerConfig``, ``ConfigHelper``).

Pure functions over the layers a broker's configs are made of. Precedence, highest first:
the topic's own dynamic config, the broker's dynamic config, the cluster-default dynamic config
(broker ``""``), ``server.properties``, the catalogue default. A name set at a higher level hides
every name of its synonym group at the lower ones (a dynamic ``log.retention.hours`` beats a static
``log.retention.ms``). The entries returned carry everything a DescribeConfigs response needs:
value (None when sensitive), source, read-only, sensitive, synonyms, type and documentation.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kraftwerk.config.catalogue import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    broker_config_type,
    broker_key,
    broker_synonyms,
    topic_config_type,
)
from kraftwerk.config.definition import ConfigKey, Scope
from kraftwerk.config.errors import ConfigError
from kraftwerk.config.types import ConfigType, Password, to_config_string


class ConfigSource(enum.IntEnum):
    """Where an effective value comes from (the DescribeConfigs ``ConfigSource`` byte; the names
    are the admin API's, which ``kafka-configs`` prints)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    DYNAMIC_CLIENT_METRICS_CONFIG = 7
    DYNAMIC_GROUP_CONFIG = 8


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config; ``value`` and every synonym value are None when ``sensitive``."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    config_type: ConfigType
    documentation: str | None


def _frozen(props: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(props or {}))


@dataclass(frozen=True, slots=True)
class BrokerConfigLayers:
    """The config sources of one broker: its ``server.properties``, the cluster-default dynamic
    configs and its own dynamic configs."""

    static: Mapping[str, str] = field(default_factory=_frozen)
    cluster_default: Mapping[str, str] = field(default_factory=_frozen)
    broker: Mapping[str, str] = field(default_factory=_frozen)

    def sources(self) -> tuple[tuple[Mapping[str, str], ConfigSource], ...]:
        """The layers with their sources, highest priority first, the catalogue defaults last."""
        return ((self.broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                (self.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (self.static, ConfigSource.STATIC_BROKER_CONFIG),
                (BROKER_DEFAULTS, ConfigSource.DEFAULT_CONFIG))


def _default_strings(keys: Iterable[ConfigKey]) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for key in keys:
        if not key.required:
            text = _to_string(key, key.parse(key.default))
            if text is not None:
                out[key.name] = text
    return MappingProxyType(out)


def _to_string(key: ConfigKey, parsed: object) -> str | None:
    if isinstance(parsed, Password):  # a value is stored as the secret itself, never "[hidden]"
        return parsed.value
    return to_config_string(parsed, key.type)


BROKER_DEFAULTS = _default_strings(BROKER_CONFIGS.values())
"""Every broker config's default as a string; null defaults are absent (never listed)."""


def effective_broker_props(layers: BrokerConfigLayers) -> dict[str, str]:
    """The broker's current properties (``DynamicBrokerConfig.overrideProps``): each dynamic level
    replaces the whole synonym group of every name it sets."""
    props = dict(layers.static)
    for overrides in (layers.cluster_default, layers.broker):
        for name in overrides:  # drop the lower levels' names first, so names of one level all stay
            for synonym in broker_synonyms(name, match_listener_override=False):
                props.pop(synonym, None)
        props.update(overrides)
    return props


def _normalised(key: ConfigKey | None, raw: str) -> str | None:
    """A raw value as Kafka describes it once parsed (``" 5 "`` → ``"5"``); a value the key does
    not accept (never in a running config) is shown as given."""
    if key is None:
        return raw
    try:
        return _to_string(key, key.parse(raw))
    except ConfigError:
        return raw


def _synonyms(name: str, names: tuple[str, ...], layers: BrokerConfigLayers,
              sensitive: bool) -> list[ConfigSynonym]:
    """``ConfigHelper.configSynonyms``: grouped by source, in group order within a source, from
    the first entry named ``name`` on."""
    found = [ConfigSynonym(n, None if sensitive else layer[n], source)
             for layer, source in layers.sources() for n in names if n in layer]
    first = next((i for i, s in enumerate(found) if s.name == name), len(found))
    return found[first:]


def describe_broker_config(name: str, layers: BrokerConfigLayers, *,
                           cluster_default: bool = False) -> ConfigEntry:
    """The entry of broker config ``name`` for this broker, or -- with ``cluster_default`` -- for
    the cluster default resource ``""`` (only its own dynamic entries count then)."""
    key = broker_key(name)
    config_type = broker_config_type(name)
    sensitive = config_type.is_sensitive
    if cluster_default:
        raw: str | None = layers.cluster_default.get(name)
        value = raw
    else:
        raw = effective_broker_props(layers).get(name)
        value = _normalised(key, raw) if raw is not None else BROKER_DEFAULTS.get(name)
    synonyms = _synonyms(name, broker_synonyms(name), layers, sensitive)
    if cluster_default:
        synonyms = [s for s in synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    exact = BROKER_CONFIGS.get(name)
    return ConfigEntry(
        name=name,
        value=None if sensitive else value,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=exact is None or exact.scope is Scope.READ_ONLY,
        sensitive=sensitive,
        synonyms=tuple(synonyms),
        config_type=config_type,
        documentation=None if key is None else key.documentation,
    )


def describe_broker(layers: BrokerConfigLayers, *, cluster_default: bool = False) -> tuple[ConfigEntry, ...]:
    """Every entry of this broker (catalogue configs and every name set anywhere), sorted by name;
    with ``cluster_default``, the names set at the cluster default only."""
    if cluster_default:
        names = set(layers.cluster_default)
    else:
        names = {n for n, k in BROKER_CONFIGS.items() if not k.internal} | set(effective_broker_props(layers))
    return tuple(describe_broker_config(n, layers, cluster_default=cluster_default) for n in sorted(names))


def topic_default(name: str, layers: BrokerConfigLayers) -> str | None:
    """The value topic config ``name`` takes when the topic does not set it: the first of its
    broker synonyms set in the broker's effective properties (converted to the topic's unit),
    else the first synonym default, else the topic config's own default."""
    key = TOPIC_CONFIGS[name]
    props = effective_broker_props(layers)
    for candidates in (props, BROKER_DEFAULTS):
        for synonym in key.synonyms:
            if synonym.name in candidates:
                return _normalised(key, synonym.convert(candidates[synonym.name]))
    return _to_string(key, key.parse(key.default))


def describe_topic_config(name: str, topic_configs: Mapping[str, str],
                          layers: BrokerConfigLayers) -> ConfigEntry:
    """The entry of topic config ``name`` for a topic whose dynamic configs are ``topic_configs``."""
    key = TOPIC_CONFIGS.get(name)
    config_type = topic_config_type(name)
    sensitive = config_type.is_sensitive
    synonyms: list[ConfigSynonym] = []
    if name in topic_configs:
        value: str | None = _normalised(key, topic_configs[name])
        synonyms.append(ConfigSynonym(name, None if sensitive else value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
    else:
        value = None if key is None else topic_default(name, layers)
    if key is not None and key.synonyms:
        first = key.synonyms[0].name
        synonyms += _synonyms(first, broker_synonyms(first), layers, sensitive)
    return ConfigEntry(
        name=name,
        value=None if sensitive else value,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=False,
        sensitive=sensitive,
        synonyms=tuple(synonyms),
        config_type=config_type,
        documentation=None if key is None else key.documentation,
    )


def describe_topic(topic_configs: Mapping[str, str], layers: BrokerConfigLayers) -> tuple[ConfigEntry, ...]:
    """Every topic config of a topic, sorted by name (the catalogue's and any it sets)."""
    names = {n for n, k in TOPIC_CONFIGS.items() if not k.internal} | set(topic_configs)
    return tuple(describe_topic_config(n, topic_configs, layers) for n in sorted(names))
