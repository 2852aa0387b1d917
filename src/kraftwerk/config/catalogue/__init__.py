"""The config catalogue: every broker, controller and topic config kraftwerk knows, and lookups.

``BROKER_CONFIGS`` holds what Kafka's ``KafkaConfig`` would (broker and controller keys in one
catalogue, as Kafka has one config class for both roles); ``TOPIC_CONFIGS`` holds ``LogConfig``.
The MV rules of :mod:`kraftwerk.config.mv_rules` are attached here, to a topic config and to the
broker configs that supply its default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from kraftwerk.config.catalogue.broker import LOG_KEYS, SECURITY_KEYS, SERVER_KEYS, ZOOKEEPER_KEYS
from kraftwerk.config.catalogue.controller import CONTROLLER_KEYS
from kraftwerk.config.catalogue.topic import TOPIC_KEYS
from kraftwerk.config.definition import ConfigDef, ConfigKey, MvRule, ParsedConfig, Synonym
from kraftwerk.config.mv_rules import rules_by_config
from kraftwerk.config.types import ConfigType

LISTENER_PREFIX = "listener.name."
_LISTENER_MECHANISM_CONFIGS = ("sasl.jaas.config",)


def _with_rules(keys: Iterable[ConfigKey], rules: Mapping[str, tuple[MvRule, ...]]) -> list[ConfigKey]:
    return [dataclasses.replace(k, mv_rules=rules[k.name]) if k.name in rules else k for k in keys]


def _build() -> tuple[ConfigDef, ConfigDef]:
    rules = dict(rules_by_config())
    for key in TOPIC_KEYS:  # a topic config's rules bind the broker configs behind it too
        if key.name in rules:
            for synonym in key.synonyms:
                if synonym.factor != 1:
                    raise ValueError(f"MV rules of {key.name} cannot bind {synonym.name}: its unit differs")
                rules.setdefault(synonym.name, rules[key.name])
    topic = ConfigDef(_with_rules(TOPIC_KEYS, rules))
    keys = (*LOG_KEYS, *SERVER_KEYS, *CONTROLLER_KEYS, *SECURITY_KEYS, *ZOOKEEPER_KEYS)
    broker = ConfigDef(_with_rules(keys, rules))
    unknown = set(rules) - set(topic) - set(broker)
    if unknown:
        raise ValueError(f"MV rules for configs that are not in the catalogue: {sorted(unknown)}")
    return topic, broker


TOPIC_CONFIGS, BROKER_CONFIGS = _build()


def _broker_groups() -> Mapping[str, tuple[str, ...]]:
    """Broker name → the names that set the same value, highest priority first (Kafka's
    ``brokerConfigSynonyms``): the multi-name defaults of topic configs, and KIP-920's pair."""
    groups = [tuple(s.name for s in k.synonyms) for k in TOPIC_KEYS if len(k.synonyms) > 1]
    groups += [(k.name, *(s.name for s in k.synonyms)) for k in BROKER_CONFIGS.values() if k.synonyms]
    return MappingProxyType({name: group for group in groups for name in group})


_GROUPS = _broker_groups()
_TOPIC_OF_BROKER: Mapping[str, tuple[ConfigKey, Synonym]] = MappingProxyType(
    {s.name: (k, s) for k in TOPIC_CONFIGS.values() for s in k.synonyms})


def listener_base_name(name: str) -> str | None:
    """``listener.name.<l>.<cfg>`` → ``<cfg>`` (or the SASL mechanism config it ends with)."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    _, dot, base = name[len(LISTENER_PREFIX):].partition(".")
    if not dot or not base:
        return None
    return next((m for m in _LISTENER_MECHANISM_CONFIGS if base.endswith(m)), base)


def broker_key(name: str) -> ConfigKey | None:
    """The declaration of a broker config, a listener override resolving to its base config."""
    key = BROKER_CONFIGS.get(name)
    if key is None:
        base = listener_base_name(name)
        key = None if base is None else BROKER_CONFIGS.get(base)
    return key


def broker_config_type(name: str) -> ConfigType:
    key = broker_key(name)
    return ConfigType.UNKNOWN if key is None else key.type


def topic_config_type(name: str) -> ConfigType:
    key = TOPIC_CONFIGS.get(name)
    return ConfigType.UNKNOWN if key is None else key.type


def broker_synonyms(name: str, *, match_listener_override: bool = True) -> tuple[str, ...]:
    """Kafka's ``brokerConfigSynonyms``: the names that set ``name``'s value, in priority order
    (``name`` itself included); a listener override lists its base config after itself."""
    group = _GROUPS.get(name)
    if group is not None:
        return group
    base = listener_base_name(name) if match_listener_override else None
    return (name,) if base is None else (name, base)


def topic_config_for(broker_name: str) -> tuple[ConfigKey, Synonym] | None:
    """The topic config a broker config supplies the default of, and how its unit converts."""
    return _TOPIC_OF_BROKER.get(broker_name)


def is_known_broker_config(name: str) -> bool:
    return broker_key(name) is not None


def parse_broker_config(props: Mapping[str, str]) -> ParsedConfig:
    """``server.properties`` parsed as ``KafkaConfig`` does: every catalogue config typed and checked
    against its base validator (Kafka's first error wins); listener overrides of known configs
    count as known, any other name is kept and reported in ``unknown``."""
    return BROKER_CONFIGS.parse(props, known=[n for n in props if broker_key(n) is not None])


def log_dirs(parsed: ParsedConfig) -> tuple[str, ...]:
    """Kafka's ``KafkaConfig.logDirs``: ``log.dirs`` when set (even empty), else ``log.dir``;
    blank entries are dropped."""
    given = parsed["log.dirs"] is not None
    entries = parsed.elements("log.dirs") if given else tuple(parsed.text("log.dir").split(","))
    return tuple(d.strip() for d in entries if d.strip())
