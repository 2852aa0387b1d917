"""The checks a config change must pass before it is accepted, with Kafka's texts.

Topic configs (CreateTopics, AlterConfigs on a topic) follow ``ControllerConfigurationValidator``
and ``LogConfig.validate``; dynamic broker configs follow ``DynamicBrokerConfig.validateConfigs``.
With ``level`` (the cluster's finalized metadata.version), KIP-1294's rules in force there apply
too. Every failure is a :class:`ConfigError`; the handler maps it to Kafka's error code
(INVALID_CONFIG for topics; INVALID_REQUEST for broker configs on the broker path).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kraftwerk.config.catalogue import BROKER_CONFIGS, TOPIC_CONFIGS, broker_key, listener_base_name
from kraftwerk.config.definition import Scope
from kraftwerk.config.errors import ConfigError
from kraftwerk.config.mv import validate_at
from kraftwerk.config.resolve import BrokerConfigLayers, topic_default
from kraftwerk.config.types import ConfigResourceType

LISTENER_ONLY_SECURITY_CONFIGS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
"""``SslConfigs.RECONFIGURABLE_CONFIGS``: dynamic only with a ``listener.name.<l>.`` prefix."""
CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset({"max.connections", "max.connection.creation.rate",
                                            "num.network.threads"})
"""Listener-prefixed configs that may still be set at the cluster default."""


def _scala_set(names: Iterable[str]) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


def validate_topic_configs(configs: Mapping[str, str | None], *, level: int | None = None,
                           layers: BrokerConfigLayers | None = None) -> dict[str, object]:
    """The typed values of a topic's configs, or :class:`ConfigError`: a null value, an unknown
    name, a value its config refuses, ``min.compaction.lag.ms`` above ``max.compaction.lag.ms``
    (the topic's value or the broker default from ``layers``), tiered storage (kraftwerk has none),
    or a KIP-1294 rule in force at ``level``."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise ConfigError(f"Unknown topic config name: {name}")
    parsed = {name: TOPIC_CONFIGS[name].parse(value) for name, value in configs.items()}
    layers = layers or BrokerConfigLayers()

    def effective(name: str) -> object:
        return parsed[name] if name in parsed else TOPIC_CONFIGS[name].parse(topic_default(name, layers))

    low, high = effective("min.compaction.lag.ms"), effective("max.compaction.lag.ms")
    assert isinstance(low, int) and isinstance(high, int)
    if low > high:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                          f"max.compaction.lag.ms ({high})")
    if parsed.get("remote.storage.enable") is True:
        raise ConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be "
                          "configured with remote log storage.")
    if level is not None:
        for name, value in configs.items():
            validate_at(level, name, value, resource_type=ConfigResourceType.TOPIC)
    return parsed


def validate_broker_update(configs: Mapping[str, str], *, cluster_default: bool,
                           level: int | None = None) -> None:
    """Check dynamic broker configs about to be set for one broker or (``cluster_default``) for
    all of them, as ``DynamicBrokerConfig.validateConfigs`` does, then KIP-1294's rules at
    ``level``. Names the catalogue does not know are custom configs and are allowed."""
    read_only = [n for n in configs if n in BROKER_CONFIGS and BROKER_CONFIGS[n].scope is Scope.READ_ONLY]
    if read_only:
        raise ConfigError(f"Cannot update these configs dynamically: {_scala_set(read_only)}")
    bare = [n for n in configs if n in LISTENER_ONLY_SECURITY_CONFIGS]
    if bare:
        raise ConfigError("These security configs can be dynamically updated only per-listener using the "
                          f"listener prefix: {_scala_set(bare)}")
    for name, value in configs.items():
        key = broker_key(name)
        if key is not None:
            key.parse(value)
    if cluster_default:
        per_broker = [n for n in configs if _per_broker_only(n)]
        if per_broker:
            raise ConfigError("Cannot update these configs at default cluster level, broker id must be "
                              f"specified: {_scala_set(per_broker)}")
    if level is not None:
        for name, value in configs.items():
            validate_at(level, name, value)


def _per_broker_only(name: str) -> bool:
    base = listener_base_name(name)
    if base is not None:
        return base not in CLUSTER_LEVEL_LISTENER_CONFIGS
    key = BROKER_CONFIGS.get(name)
    return key is not None and key.scope is Scope.PER_BROKER
