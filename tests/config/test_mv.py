# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""KIP-1294: validating at a metadata.version, the violations an audit reports, what brokers report."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config import (
    BrokerConfigLayers,
    ConfigResourceType,
    ConfigSource,
    ConfigValueError,
    ConstraintViolationError,
    Violation,
    describe_broker,
    describe_topic,
    static_configs_to_report,
    validate_at,
    violations_at,
)
from kraftwerk.versions.metadata_version import MetadataVersion

MIB = 1 << 20
L39, L40, L43, L44_IV1 = 21, 22, 30, 32
TOPIC = ConfigResourceType.TOPIC


def test_validate_at_applies_base_and_floor_rule() -> None:
    for name, kind in (("log.segment.bytes", ConfigResourceType.BROKER), ("segment.bytes", TOPIC)):
        assert validate_at(L39, name, "1000", resource_type=kind) == 1000  # 3.x rule only: >= 14
        assert validate_at(L43, name, str(MIB), resource_type=kind) == MIB  # 4.0's rule: >= 1 MiB
        assert validate_at(L44_IV1, name, str(3 * MIB), resource_type=kind) == 3 * MIB
        with pytest.raises(ConstraintViolationError) as caught:
            validate_at(L44_IV1, name, str(MIB), resource_type=kind)
        assert str(caught.value) == (f"Invalid value 1048576 for configuration {name}: Value must be at least "
                                     "3145728 (since metadata.version 4.4-IV1)")
        violation = caught.value.violation
        assert (violation.config, violation.value, violation.level, violation.rule) == (
            name, "1048576", L44_IV1, "[3145728,...]")
        assert violation.metadata_version == "4.4-IV1" and "KIP-1294" in (violation.citation or "")
        with pytest.raises(ConstraintViolationError, match=r"at least 1048576 \(since metadata.version 4.0-IV0\)"):
            validate_at(L40, name, "1000", resource_type=kind)
    with pytest.raises(ConfigValueError, match=r"^Invalid value 13 for configuration log\.segment\.bytes: Value "
                                               r"must be at least 14$") as base:
        validate_at(L39, "log.segment.bytes", "13")
    assert not isinstance(base.value, ConstraintViolationError)
    assert validate_at(L44_IV1, "not.a.config", "x") == "x"
    assert validate_at(L44_IV1, "segment.bytes", "1") == "1"  # a broker resource has no segment.bytes


@given(st.integers(1, 40), st.integers(0, 8 * MIB))
def test_validate_at_matches_the_rule_table(level: int, value: int) -> None:
    minimum = 3 * MIB if level >= L44_IV1 else MIB if level >= L40 else 14
    try:
        validate_at(level, "log.segment.bytes", str(value))
        assert value >= minimum
    except ConfigValueError:
        assert value < minimum


def test_violations_at_lists_every_broken_value_sorted() -> None:
    configs = {"metadata.log.segment.bytes": "100", "log.segment.bytes": str(2 * MIB), "num.io.threads": "0",
               "log.retention.ms": None, "custom": "x", "log.cleanup.policy": "delete"}
    found = violations_at(L44_IV1, configs)
    assert [(v.config, v.value, v.level) for v in found] == [
        ("log.segment.bytes", "2097152", L44_IV1), ("metadata.log.segment.bytes", "100", L40),
        ("num.io.threads", "0", None)]
    assert found[2].rule == "[1,...]" and found[2].reason == "Value must be at least 1"
    assert found[2].message() == "Invalid value 0 for configuration num.io.threads: Value must be at least 1"
    assert found[2].metadata_version is None and found[0].origin is None
    assert violations_at(L39, {"log.segment.bytes": "1000", "metadata.log.segment.bytes": "100"}) == []
    assert violations_at(L40, {"log.record.version.force.upgrade": "x"})[0].rule == "[null, 2]"
    assert violations_at(L40, {"log.dirs": "/a"}) == []
    unparsable = violations_at(L40, {"log.segment.bytes": "big"})
    assert [(v.reason, v.rule) for v in unparsable] == [("Not a number of type INT", "[14,...]")]
    typed = violations_at(L40, {"default.replication.factor": "x"})
    assert typed[0].rule == ""  # no validator: only the type was broken


def test_the_audit_of_a_broker_from_its_described_entries() -> None:
    """KIP-1294's upgrade scenario: node-3's static value, then a cluster-default override fixes it."""
    static = {"log.segment.bytes": str(2 * MIB), "ssl.keystore.password": "s3cret"}
    layers = BrokerConfigLayers(static=static)
    found = violations_at(L44_IV1, describe_broker(layers))
    assert [(v.config, v.value, v.origin) for v in found] == [
        ("log.segment.bytes", "2097152", ConfigSource.STATIC_BROKER_CONFIG)]
    fixed = BrokerConfigLayers(static=static, cluster_default={"log.segment.bytes": str(4 * MIB)})
    assert violations_at(L44_IV1, describe_broker(fixed)) == []
    topic = violations_at(L44_IV1, describe_topic({"segment.bytes": str(MIB)}, fixed), resource_type=TOPIC)
    assert [(v.config, v.origin) for v in topic] == [("segment.bytes", ConfigSource.DYNAMIC_TOPIC_CONFIG)]


def test_violation_message_without_a_known_level() -> None:
    odd = Violation("k", "1", "Value must be at least 2", "[2,...]", level=99)
    assert odd.metadata_version == "feature level 99"
    assert odd.message().endswith("(since metadata.version feature level 99)")
    assert Violation("k", "1", "r", "x", level=MetadataVersion.IBP_4_0_IV0.feature_level).metadata_version == "4.0-IV0"


def test_static_configs_to_report() -> None:
    """BrokerRegistration v6: configs with an MV rule, their static value or default, no secrets."""
    reported = dict(static_configs_to_report({"log.segment.bytes": "2097152", "ssl.keystore.password": "p",
                                              "num.io.threads": "4"}))
    assert reported == {"log.segment.bytes": "2097152", "metadata.log.segment.bytes": "1073741824",
                        "remote.log.manager.copier.thread.pool.size": "10",
                        "remote.log.manager.expiration.thread.pool.size": "10"}
