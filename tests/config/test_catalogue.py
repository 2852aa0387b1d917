# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""The config catalogue: declarations, synonyms, scopes and the KIP-1294 rules attached to them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config import (
    BROKER_CONFIGS,
    CONSTRAINT_CHANGES,
    TOPIC_CONFIGS,
    ConfigDef,
    ConfigKey,
    ConfigType,
    Importance,
    MissingConfigError,
    MvRule,
    Scope,
    Synonym,
    broker_config_type,
    broker_key,
    broker_synonyms,
    is_known_broker_config,
    log_dirs,
    parse_broker_config,
    topic_config_for,
    topic_config_type,
)
from kraftwerk.config.definition import REQUIRED, define
from kraftwerk.config.mv_rules import ConstraintChange, rules_by_config
from kraftwerk.config.validators import Range
from kraftwerk.versions.metadata_version import VERSIONS, MetadataVersion

ALL_KEYS = [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()]


@pytest.mark.parametrize("key", ALL_KEYS, ids=lambda k: k.name)
def test_every_default_obeys_every_rule_at_every_level(key: ConfigKey) -> None:
    """A config nobody set can never block a start, a format or an upgrade."""
    value = key.parse(key.default)
    for mv in VERSIONS:
        rule = key.rule_at(mv.feature_level)
        if rule is not None:
            rule.validator.ensure_valid(key.name, value)
    assert key.documentation and key.documentation[0].isupper() and key.documentation.endswith(".")


def test_what_kraftwerk_reads_is_declared() -> None:
    for name in ("process.roles", "node.id", "listeners", "advertised.listeners", "controller.listener.names",
                 "listener.security.protocol.map", "inter.broker.listener.name", "controller.quorum.voters",
                 "log.dirs", "log.dir", "metadata.log.dir", "broker.session.timeout.ms", "socket.request.max.bytes",
                 "metadata.max.idle.interval.ms", "unstable.feature.versions.enable", "kraftwerk.software.version",
                 "kraftwerk.log.file", "min.insync.replicas", "num.partitions", "default.replication.factor",
                 "metadata.version", "inter.broker.protocol.version", "auto.upgrade.metadata.version",
                 "auto.upgrade.metadata.version.interval.ms", "max.connections", "max.connections.per.ip",
                 "connections.max.idle.ms", "log.record.version.force.upgrade", "zookeeper.connect",
                 "zookeeper.metadata.migration.enable", "ssl.keystore.password", "sasl.jaas.config"):
        assert name in BROKER_CONFIGS, name
    assert {"segment.bytes", "retention.ms", "cleanup.policy", "min.insync.replicas"} <= set(TOPIC_CONFIGS)


def test_kip_920_declarations() -> None:
    auto = BROKER_CONFIGS["auto.upgrade.metadata.version"]
    assert (auto.type, auto.default, auto.scope) == (ConfigType.BOOLEAN, False, Scope.CLUSTER_WIDE)
    interval = BROKER_CONFIGS["auto.upgrade.metadata.version.interval.ms"]
    assert (interval.type, interval.default) == (ConfigType.LONG, 300_000)
    assert broker_synonyms("metadata.version") == ("metadata.version", "inter.broker.protocol.version")
    assert broker_synonyms("inter.broker.protocol.version")[0] == "metadata.version"


def test_passwords_and_unknown_types() -> None:
    passwords = {k.name for k in BROKER_CONFIGS.values() if k.type is ConfigType.PASSWORD}
    assert {"ssl.keystore.password", "ssl.key.password", "ssl.truststore.password", "sasl.jaas.config",
            "zookeeper.ssl.keystore.password"} <= passwords
    assert all(k.sensitive for k in BROKER_CONFIGS.values() if k.name in passwords)
    assert not any(k.mv_rules for k in ALL_KEYS if k.sensitive)  # never reported, so never audited
    assert broker_config_type("listener.name.external.ssl.keystore.password") is ConfigType.PASSWORD
    assert broker_config_type("listener.name.sasl_ssl.plain.sasl.jaas.config") is ConfigType.PASSWORD
    assert broker_config_type("my.plugin.secret") is ConfigType.UNKNOWN
    assert broker_config_type("listener.name.x") is ConfigType.UNKNOWN
    assert broker_config_type("listener.name.x.") is ConfigType.UNKNOWN
    assert topic_config_type("segment.bytes") is ConfigType.INT and topic_config_type("x") is ConfigType.UNKNOWN
    assert is_known_broker_config("listener.name.ext.ssl.keystore.location")
    assert not is_known_broker_config("listener.name.ext.nope") and broker_key("nope") is None


def test_broker_synonyms_as_dynamic_broker_config_test() -> None:
    """DynamicBrokerConfigTest.testSynonyms."""
    assert broker_synonyms("listener.name.secure.ssl.keystore.type") == (
        "listener.name.secure.ssl.keystore.type", "ssl.keystore.type")
    assert broker_synonyms("listener.name.sasl_ssl.plain.sasl.jaas.config") == (
        "listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config")
    assert broker_synonyms("some.config") == ("some.config",)
    assert broker_synonyms("log.roll.ms") == ("log.roll.ms", "log.roll.hours")
    assert broker_synonyms("log.retention.hours") == ("log.retention.ms", "log.retention.minutes",
                                                     "log.retention.hours")
    assert broker_synonyms("listener.name.x.ssl.keystore.type", match_listener_override=False) == (
        "listener.name.x.ssl.keystore.type",)


def test_topic_synonyms_point_at_dynamic_broker_configs() -> None:
    for key in TOPIC_CONFIGS.values():
        assert key.scope is Scope.TOPIC and key.importance is Importance.MEDIUM
        for i, synonym in enumerate(key.synonyms):
            broker = BROKER_CONFIGS[synonym.name]
            # only the first broker name is dynamic (DynamicLogConfig.ReconfigurableConfigs)
            assert (broker.scope is Scope.CLUSTER_WIDE) == (i == 0), synonym.name
            assert topic_config_for(synonym.name) == (key, synonym)
    retention = TOPIC_CONFIGS["retention.ms"].synonyms
    assert [(s.name, s.factor) for s in retention] == [
        ("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)]
    assert topic_config_for("log.dirs") is None


def test_synonym_conversion() -> None:
    hours = Synonym("log.roll.hours", 3_600_000)
    assert hours.convert(" 2 ") == "7200000" and hours.convert("x") == "0" and hours.convert("") == "0"
    assert Synonym("a").convert(" 2 ") == " 2 "


def test_kip_1030_and_kip_1294_rules_are_attached() -> None:
    for name in ("segment.bytes", "log.segment.bytes"):
        key = TOPIC_CONFIGS.get(name) or BROKER_CONFIGS[name]
        assert key.parse(key.default) == 1 << 30 and str(key.validator) == "[14,...]"
        assert [(r.level, str(r.validator)) for r in key.mv_rules] == [(22, "[1048576,...]"), (32, "[3145728,...]")]
    metadata = BROKER_CONFIGS["metadata.log.segment.bytes"]
    assert (str(metadata.validator), [r.level for r in metadata.mv_rules]) == ("[12,...]", [22])
    pool = BROKER_CONFIGS["remote.log.manager.copier.thread.pool.size"]
    assert (pool.default, str(pool.validator), str(pool.mv_rules[0].validator)) == (10, "[-1,1,...]", "[1,...]")
    assert all(c.source for c in CONSTRAINT_CHANGES)
    assert {c.level for c in CONSTRAINT_CHANGES} == {MetadataVersion.IBP_4_0_IV0.feature_level,
                                                     MetadataVersion.IBP_4_4_IV1.feature_level}


def _key_with_rules(*levels: int) -> ConfigKey:
    rules = tuple(MvRule(level, Range.at_least(level * 10), f"rule {level}") for level in levels)
    return ConfigKey("k", ConfigType.INT, 0, None, Importance.LOW, "K.", Scope.READ_ONLY, mv_rules=rules)


@given(st.lists(st.integers(1, 60), unique=True, max_size=6).map(sorted), st.integers(-5, 70))
def test_floor_entry_lookup(levels: list[int], level: int) -> None:
    key = _key_with_rules(*levels)
    rule = key.rule_at(level)
    below = [lv for lv in levels if lv <= level]
    if not below:
        assert rule is None
    else:
        assert rule is not None and rule.level == max(below) and rule.source == f"rule {max(below)}"


def test_floor_entry_at_between_and_below_registered_levels() -> None:
    key = _key_with_rules(22, 32)
    assert key.rule_at(21) is None and key.rule_at(0) is None
    assert [key.rule_at(lv).level for lv in (22, 23, 31, 32, 33, 99)] == [22, 22, 22, 32, 32, 32]  # type: ignore[union-attr]
    assert _key_with_rules().rule_at(50) is None
    with pytest.raises(ValueError, match="distinct levels in ascending order"):
        _key_with_rules(32, 22)
    with pytest.raises(ValueError, match="distinct levels in ascending order"):
        _key_with_rules(22, 22)


def test_rules_by_config_sorts_levels() -> None:
    changes = (ConstraintChange("x", 9, Range.at_least(2), "b"), ConstraintChange("x", 3, Range.at_least(1), "a"))
    assert [r.level for r in rules_by_config(changes)["x"]] == [3, 9]
    assert changes[0].rule() == MvRule(9, Range.at_least(2), "b")


def test_config_def_parse_order_required_and_unknown() -> None:
    catalogue = ConfigDef([define("a", ConfigType.INT, 1, Range.at_least(0), Importance.HIGH, "A."),
                           define("b", ConfigType.INT, REQUIRED, None, Importance.HIGH, "B."),
                           define("c", ConfigType.LIST, "x,y", None, Importance.LOW, "C.")])
    parsed = catalogue.parse({"b": "2", "zz": "?", "known": "1"}, known=["known"])
    assert dict(parsed.values) == {"a": 1, "b": 2, "c": ("x", "y")} and parsed.unknown == ("zz",)
    assert parsed.is_set("b") and not parsed.is_set("a") and parsed["c"] == ("x", "y")
    assert parsed.values_text("Test") == "Test values: \n\ta = 1\n\tb = 2\n\tc = [x, y]"
    with pytest.raises(MissingConfigError, match=r'^Missing required configuration "b" which has no default value\.$'):
        catalogue.parse({})
    with pytest.raises(Exception, match=r"^Invalid value -1 for configuration a: Value must be at least 0$"):
        catalogue.parse({"a": "-1", "b": "x"})  # declaration order: a is reported before b
    with pytest.raises(ValueError, match=r"^Configuration a is defined twice\.$"):
        ConfigDef([catalogue["a"], catalogue["a"]])
    assert len(catalogue) == 3 and list(catalogue) == ["a", "b", "c"] and catalogue["b"].required


def test_parse_broker_config() -> None:
    parsed = parse_broker_config({"log.segment.bytes": "1048576", "listener.name.x.ssl.key.password": "p",
                                  "custom.thing": "1"})
    assert parsed["log.segment.bytes"] == 1048576 and parsed.unknown == ("custom.thing",)
    assert parsed["num.recovery.threads.per.data.dir"] == 2  # KIP-1030 row 3: Kafka 4.0's default
    assert parsed["log.message.timestamp.after.max.ms"] == 3_600_000  # KIP-1030 row 7
    with pytest.raises(Exception, match=r"^Invalid value 1 for configuration log\.segment\.bytes: Value must be at least 14$"):
        parse_broker_config({"log.segment.bytes": "1"})


def test_typed_accessors_and_log_dirs() -> None:
    parsed = parse_broker_config({"log.dir": "/a, ,/b", "process.roles": "broker", "node.id": "3"})
    assert (parsed.integer("node.id"), parsed.text("broker.rack"), parsed.text("listeners")) == (3, "", "PLAINTEXT://:9092")
    assert parsed.elements("process.roles") == ("broker",) and parsed.elements("log.dirs") == ()
    assert parsed.flag("auto.create.topics.enable") and not parsed.flag("unstable.feature.versions.enable")
    assert log_dirs(parsed) == ("/a", "/b")
    assert log_dirs(parse_broker_config({})) == ("/tmp/kafka-logs",)
    assert log_dirs(parse_broker_config({"log.dirs": "", "log.dir": "/x"})) == ()  # a set log.dirs wins, even empty
    assert log_dirs(parse_broker_config({"log.dirs": "/c,/d", "log.dir": "/x"})) == ("/c", "/d")
