# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""Checks of a config change: LogConfig.validate, DynamicBrokerConfig.validateConfigs, KIP-1294 at a level."""

from __future__ import annotations

import pytest

from kraftwerk.config import (
    BrokerConfigLayers,
    ConfigError,
    ConstraintViolationError,
    validate_broker_update,
    validate_topic_configs,
)
from kraftwerk.config.validate import CLUSTER_LEVEL_LISTENER_CONFIGS, LISTENER_ONLY_SECURITY_CONFIGS

MIB = 1 << 20


def _refused(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(ConfigError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return str(caught.value)


def test_topic_configs() -> None:
    assert validate_topic_configs({"segment.bytes": str(4 * MIB), "cleanup.policy": "compact"}, level=32) == {
        "segment.bytes": 4 * MIB, "cleanup.policy": ("compact",)}
    assert _refused(validate_topic_configs, {"a": None, "b": None}) == "Null value not supported for topic configs: a,b"
    assert _refused(validate_topic_configs, {"segment.bytes": "1", "log.segment.bytes": "1"}) == "Unknown topic config name: log.segment.bytes"
    assert _refused(validate_topic_configs, {"retention.ms": "-2"}) == "Invalid value -2 for configuration retention.ms: Value must be at least -1"
    assert _refused(validate_topic_configs, {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) == (
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)")
    layers = BrokerConfigLayers(static={"log.cleaner.max.compaction.lag.ms": "7"})
    assert _refused(validate_topic_configs, {"min.compaction.lag.ms": "8"}, layers=layers).endswith("(8) > max.compaction.lag.ms (7)")
    validate_topic_configs({"min.compaction.lag.ms": "7"}, layers=layers)
    assert _refused(validate_topic_configs, {"remote.storage.enable": "true"}).startswith("Tiered Storage functionality is disabled")
    validate_topic_configs({"remote.storage.enable": "false"})


def test_topic_configs_at_a_metadata_version() -> None:
    """KIP-1294's AlterConfigs scenario: at 4.4-IV1, segment.bytes=1048576 is refused, 4194304 passes."""
    validate_topic_configs({"segment.bytes": str(MIB)}, level=30)
    with pytest.raises(ConstraintViolationError, match=r"at least 3145728 \(since metadata.version 4.4-IV1\)$"):
        validate_topic_configs({"segment.bytes": str(MIB)}, level=32)
    validate_topic_configs({"segment.bytes": str(MIB)})  # no level: base rules only


def test_broker_updates() -> None:
    validate_broker_update({"log.segment.bytes": str(4 * MIB), "custom.key": "x"}, cluster_default=True, level=32)
    validate_broker_update({"listener.name.ext.ssl.keystore.location": "/ks", "max.connections": "5"}, cluster_default=False)
    assert _refused(validate_broker_update, {"log.retention.minutes": "3", "log.dirs": "/x"}, cluster_default=True) == (
        "Cannot update these configs dynamically: Set(log.dirs, log.retention.minutes)")
    assert _refused(validate_broker_update, {"ssl.keystore.password": "p"}, cluster_default=False) == (
        "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.password)")
    assert _refused(validate_broker_update, {"num.io.threads": "0"}, cluster_default=True) == (
        "Invalid value 0 for configuration num.io.threads: Value must be at least 1")
    assert _refused(validate_broker_update, {"listener.name.ext.ssl.keystore.location": "/ks", "listeners": "X://:1"},
                    cluster_default=True) == ("Cannot update these configs at default cluster level, broker id must be "
                                              "specified: Set(listener.name.ext.ssl.keystore.location, listeners)")
    validate_broker_update({"listener.name.ext.max.connections": "5"}, cluster_default=True)
    validate_broker_update({"log.segment.bytes": str(2 * MIB)}, cluster_default=True, level=30)
    with pytest.raises(ConstraintViolationError, match=r"^Invalid value 2097152 for configuration log\.segment\.bytes"):
        validate_broker_update({"log.segment.bytes": str(2 * MIB)}, cluster_default=True, level=32)


SSL_RECONFIGURABLE = ["ssl.key.password", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.keystore.location",
                      "ssl.keystore.password", "ssl.keystore.type", "ssl.truststore.certificates",
                      "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type"]
"""Kafka's ``SslConfigs.RECONFIGURABLE_CONFIGS``."""


@pytest.mark.parametrize("name", SSL_RECONFIGURABLE)
def test_ssl_stores_only_per_listener(name: str) -> None:
    assert sorted(LISTENER_ONLY_SECURITY_CONFIGS) == SSL_RECONFIGURABLE
    assert _refused(validate_broker_update, {name: "x"}, cluster_default=False).endswith(f"listener prefix: Set({name})")
    validate_broker_update({f"listener.name.ext.{name}": "x"}, cluster_default=False)


@pytest.mark.parametrize("base", sorted(CLUSTER_LEVEL_LISTENER_CONFIGS))
def test_listener_connection_limits_at_the_cluster_default(base: str) -> None:
    assert sorted(CLUSTER_LEVEL_LISTENER_CONFIGS) == ["max.connection.creation.rate", "max.connections", "num.network.threads"]
    validate_broker_update({f"listener.name.ext.{base}": "5"}, cluster_default=True)


def test_exact_texts_and_no_level() -> None:
    assert _refused(validate_topic_configs, {"a": "1", "b": None}) == "Null value not supported for topic configs: b"
    assert _refused(validate_topic_configs, {"remote.storage.enable": "true"}) == (
        "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
    validate_broker_update({"log.segment.bytes": str(2 * MIB)}, cluster_default=True)  # no level: base rules only
