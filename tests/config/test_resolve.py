# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""Effective configs and DescribeConfigs entries, as ``ConfigHelper`` / ``DynamicBrokerConfig`` build them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfigLayers,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    describe_broker,
    describe_broker_config,
    describe_topic,
    describe_topic_config,
    effective_broker_props,
    topic_default,
)

S = ConfigSource
DEFAULT_HOURS = ConfigSynonym("log.retention.hours", "168", S.DEFAULT_CONFIG)


def _syn(entry_synonyms: tuple[ConfigSynonym, ...]) -> list[tuple[str, str | None, str]]:
    return [(s.name, s.value, s.source.name) for s in entry_synonyms]


def test_configs_md_worked_example() -> None:
    """A static log.retention.ms and log.retention.hours=168: broker key log.retention.ms lists
    [STATIC log.retention.ms, STATIC log.retention.hours, DEFAULT log.retention.hours]."""
    layers = BrokerConfigLayers(static={"log.retention.ms": "86400000", "log.retention.hours": "168"})
    entry = describe_broker_config("log.retention.ms", layers)
    assert (entry.value, entry.source, entry.read_only, entry.sensitive) == (
        "86400000", S.STATIC_BROKER_CONFIG, False, False)
    assert _syn(entry.synonyms) == [("log.retention.ms", "86400000", "STATIC_BROKER_CONFIG"),
                                    ("log.retention.hours", "168", "STATIC_BROKER_CONFIG"),
                                    ("log.retention.hours", "168", "DEFAULT_CONFIG")]
    assert entry.config_type is ConfigType.LONG and entry.documentation
    topic = describe_topic_config("retention.ms", {}, layers)
    assert (topic.value, topic.source) == ("86400000", S.STATIC_BROKER_CONFIG)
    assert topic.synonyms == entry.synonyms


def test_topic_value_from_a_later_synonym_has_no_synonyms() -> None:
    """Derived from ConfigHelper: when log.retention.ms is set nowhere, retention.ms has empty
    synonyms and source DEFAULT_CONFIG although its value comes from the minutes or hours."""
    nothing = describe_topic_config("retention.ms", {}, BrokerConfigLayers())
    assert (nothing.value, nothing.source, nothing.synonyms) == ("604800000", S.DEFAULT_CONFIG, ())
    minutes = BrokerConfigLayers(static={"log.retention.minutes": "1"})  # testDynamicLogConfigHandlesSynonyms
    entry = describe_topic_config("retention.ms", {}, minutes)
    assert (entry.value, entry.source, entry.synonyms) == ("60000", S.DEFAULT_CONFIG, ())
    assert topic_default("retention.ms", minutes) == "60000"


def test_dynamic_name_drops_the_whole_group_below() -> None:
    """overrideProps: a dynamic log.retention.hours beats a static log.retention.ms."""
    layers = BrokerConfigLayers(static={"log.retention.ms": "5000", "log.segment.bytes": "2097152"},
                                cluster_default={"log.retention.hours": "1"})
    assert effective_broker_props(layers) == {"log.segment.bytes": "2097152", "log.retention.hours": "1"}
    assert topic_default("retention.ms", layers) == "3600000"
    hours = describe_broker_config("log.retention.hours", layers)
    assert (hours.value, hours.source, hours.read_only) == ("1", S.DYNAMIC_DEFAULT_BROKER_CONFIG, True)
    assert _syn(hours.synonyms) == [("log.retention.hours", "1", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                                    ("log.retention.ms", "5000", "STATIC_BROKER_CONFIG"),
                                    ("log.retention.hours", "168", "DEFAULT_CONFIG")]
    millis = describe_broker_config("log.retention.ms", layers)
    # Kafka describes the value of the current config (now unset) but lists the raw layers
    assert (millis.value, millis.source) == (None, S.STATIC_BROKER_CONFIG)
    assert _syn(millis.synonyms)[0] == ("log.retention.ms", "5000", "STATIC_BROKER_CONFIG")


def test_broker_beats_cluster_default_beats_static_beats_default() -> None:
    layers = BrokerConfigLayers(static={"log.segment.bytes": " 1048576"},
                                cluster_default={"log.segment.bytes": "2097152"},
                                broker={"log.segment.bytes": "4194304"})
    entry = describe_broker_config("log.segment.bytes", layers)
    assert (entry.value, entry.source) == ("4194304", S.DYNAMIC_BROKER_CONFIG)
    assert _syn(entry.synonyms) == [("log.segment.bytes", "4194304", "DYNAMIC_BROKER_CONFIG"),
                                    ("log.segment.bytes", "2097152", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
                                    ("log.segment.bytes", " 1048576", "STATIC_BROKER_CONFIG"),
                                    ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")]
    static_only = BrokerConfigLayers(static={"log.segment.bytes": " 2097152 ", "num.io.threads": "0"})
    assert describe_broker_config("log.segment.bytes", static_only).value == "2097152"  # parsed, as Kafka
    assert describe_broker_config("num.io.threads", static_only).value == "0"  # invalid: shown as given
    default = describe_broker_config("log.segment.bytes", BrokerConfigLayers(cluster_default={"x": "1"}))
    assert (default.value, default.source) == ("1073741824", S.DEFAULT_CONFIG)


def test_topic_entries() -> None:
    layers = BrokerConfigLayers(static={"log.segment.bytes": "2097152", "log.roll.hours": "2"})
    entries = {e.name: e for e in describe_topic({"segment.bytes": "4194304", "cleanup.policy": "compact, delete"},
                                                 layers)}
    assert list(entries) == sorted(entries) and set(entries) == set(TOPIC_CONFIGS)
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source, segment.read_only) == ("4194304", S.DYNAMIC_TOPIC_CONFIG, False)
    assert _syn(segment.synonyms) == [("segment.bytes", "4194304", "DYNAMIC_TOPIC_CONFIG"),
                                      ("log.segment.bytes", "2097152", "STATIC_BROKER_CONFIG"),
                                      ("log.segment.bytes", "1073741824", "DEFAULT_CONFIG")]
    assert entries["cleanup.policy"].value == "compact,delete"
    roll = entries["segment.ms"]
    assert (roll.value, roll.source) == ("7200000", S.DEFAULT_CONFIG)  # log.roll.ms is set nowhere
    assert _syn(roll.synonyms) == []
    throttled = entries["leader.replication.throttled.replicas"]
    assert (throttled.value, throttled.source, throttled.synonyms) == ("", S.DEFAULT_CONFIG, ())
    assert entries["remote.storage.enable"].config_type is ConfigType.BOOLEAN
    assert topic_default("segment.ms", BrokerConfigLayers(static={"log.roll.ms": "5", "log.roll.hours": "2"})) == "5"
    assert topic_default("flush.ms", layers) == str(2**63 - 1)  # from log.flush.scheduler.interval.ms
    custom = describe_topic_config("custom.topic.key", {"custom.topic.key": "v"}, layers)
    assert (custom.value, custom.sensitive, custom.config_type, custom.documentation) == (
        None, True, ConfigType.UNKNOWN, None)
    assert _syn(custom.synonyms) == [("custom.topic.key", None, "DYNAMIC_TOPIC_CONFIG")]


def test_secrets_and_unknown_keys_are_never_described() -> None:
    layers = BrokerConfigLayers(static={"ssl.keystore.password": "s3cret", "my.plugin.token": "t0ken"},
                                broker={"listener.name.ext.ssl.key.password": "k3y"})
    entries = {e.name: e for e in describe_broker(layers)}
    for name in ("ssl.keystore.password", "my.plugin.token", "listener.name.ext.ssl.key.password"):
        entry = entries[name]
        assert entry.sensitive and entry.value is None and all(s.value is None for s in entry.synonyms)
    assert entries["my.plugin.token"].config_type is ConfigType.UNKNOWN and entries["my.plugin.token"].read_only
    assert entries["ssl.keystore.password"].config_type is ConfigType.PASSWORD
    assert entries["listener.name.ext.ssl.key.password"].source is S.DYNAMIC_BROKER_CONFIG
    assert entries["listener.name.ext.ssl.key.password"].read_only  # only base names are in AllDynamicConfigs
    assert not entries["ssl.key.password"].read_only and entries["ssl.key.password"].value is None
    assert "s3cret" not in repr(entries) and "t0ken" not in repr(entries) and "k3y" not in repr(entries)
    assert "unstable.feature.versions.enable" not in entries  # internal configs are not described
    assert set(entries) >= {n for n, k in BROKER_CONFIGS.items() if not k.internal}


def test_listener_overrides_keep_their_base_config() -> None:
    layers = BrokerConfigLayers(static={"ssl.keystore.type": "JKS"},
                                broker={"listener.name.ext.ssl.keystore.type": "PKCS12"})
    assert effective_broker_props(layers)["ssl.keystore.type"] == "JKS"
    entry = describe_broker_config("listener.name.ext.ssl.keystore.type", layers)
    assert entry.value == "PKCS12"
    assert _syn(entry.synonyms) == [("listener.name.ext.ssl.keystore.type", "PKCS12", "DYNAMIC_BROKER_CONFIG"),
                                    ("ssl.keystore.type", "JKS", "STATIC_BROKER_CONFIG"),
                                    ("ssl.keystore.type", "JKS", "DEFAULT_CONFIG")]
    base = describe_broker_config("ssl.keystore.type", layers)
    assert (base.value, _syn(base.synonyms)) == ("JKS", [("ssl.keystore.type", "JKS", "STATIC_BROKER_CONFIG"),
                                                         ("ssl.keystore.type", "JKS", "DEFAULT_CONFIG")])


def test_cluster_default_resource() -> None:
    layers = BrokerConfigLayers(static={"log.segment.bytes": "2097152"},
                                cluster_default={"log.segment.bytes": " 4194304", "log.retention.hours": "1"},
                                broker={"log.retention.ms": "5"})
    entries = describe_broker(layers, cluster_default=True)
    assert [e.name for e in entries] == ["log.retention.hours", "log.segment.bytes"]
    segment = entries[1]
    assert (segment.value, segment.source) == (" 4194304", S.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert _syn(segment.synonyms) == [("log.segment.bytes", " 4194304", "DYNAMIC_DEFAULT_BROKER_CONFIG")]
    # the per-broker log.retention.ms is not part of the cluster default's description
    assert _syn(entries[0].synonyms) == [("log.retention.hours", "1", "DYNAMIC_DEFAULT_BROKER_CONFIG")]
    assert describe_broker(BrokerConfigLayers(), cluster_default=True) == ()


_RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
_FACTOR = {"log.retention.ms": 1, "log.retention.minutes": 60_000, "log.retention.hours": 3_600_000}
_LAYER = st.dictionaries(st.sampled_from(_RETENTION), st.integers(0, 10_000).map(str), max_size=3)


@given(_LAYER, _LAYER, _LAYER)
def test_broker_merge_agrees_with_the_controllers_level_walk(static: dict[str, str], default: dict[str, str],
                                                            broker: dict[str, str]) -> None:
    """The broker's overrideProps merge and the controller's KafkaConfigSchema walk (each level
    in turn, the first group name set at a level wins) give the same retention.ms."""
    layers = BrokerConfigLayers(static=static, cluster_default=default, broker=broker)
    expected = str(168 * 3_600_000)
    for layer in (broker, default, static):
        name = next((n for n in _RETENTION if n in layer), None)
        if name is not None:
            expected = str(int(layer[name]) * _FACTOR[name])
            break
    assert topic_default("retention.ms", layers) == expected
    entry = describe_topic_config("retention.ms", {}, layers)
    assert entry.value == expected
    assert all(s.value is not None for s in entry.synonyms)
