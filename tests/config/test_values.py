"""The config layer's values are immutable, slotted, and carry Kafka's wire ids and names."""

from __future__ import annotations

import dataclasses

import pytest

from kraftwerk.config import (
    REQUIRED,
    BrokerConfigLayers,
    ConfigEntry,
    ConfigKey,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    Importance,
    MvRule,
    ParsedConfig,
    Scope,
    Synonym,
    Violation,
)
from kraftwerk.config.mv_rules import ConstraintChange
from kraftwerk.config.validators import (
    Composite,
    ListSize,
    MetadataVersionString,
    NonEmptyString,
    NonNull,
    Predicate,
    Range,
    ThrottledReplicaList,
    Validator,
    ValidList,
    ValidString,
)

KEY = ConfigKey("k", ConfigType.INT, 1, None, Importance.LOW, "K.", Scope.READ_ONLY,
                mv_rules=(MvRule(5, Range.at_least(2), "s"),))
VALUES = [Range.at_least(1), ValidString.of("a"), ValidList.of("a"), NonEmptyString(), NonNull(), ListSize(1),
          Composite.of(NonNull()), Predicate(bool, "r", "t"), MetadataVersionString(), ThrottledReplicaList(),
          Synonym("a"), MvRule(1, NonNull(), "s"), KEY, ConfigSynonym("a", "1", ConfigSource.DEFAULT_CONFIG),
          ConfigEntry("a", None, ConfigSource.DEFAULT_CONFIG, True, False, (), ConfigType.INT, None),
          BrokerConfigLayers(), Violation("a", "1", "r", "t"), ConstraintChange("a", 1, NonNull(), "s"),
          ParsedConfig({}, {}, ())]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_values_are_frozen_and_slotted(value: object) -> None:
    fields = dataclasses.fields(value)  # type: ignore[arg-type]
    if fields:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, fields[0].name, None)
    assert type(value).__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert not hasattr(value, "__dict__")


def test_validator_is_abstract() -> None:
    with pytest.raises(TypeError):
        Validator()  # type: ignore[abstract]


def test_wire_ids_and_names() -> None:
    assert [(s.name, s.value) for s in ConfigSource] == [
        ("UNKNOWN", 0), ("DYNAMIC_TOPIC_CONFIG", 1), ("DYNAMIC_BROKER_CONFIG", 2),
        ("DYNAMIC_DEFAULT_BROKER_CONFIG", 3), ("STATIC_BROKER_CONFIG", 4), ("DEFAULT_CONFIG", 5),
        ("DYNAMIC_BROKER_LOGGER_CONFIG", 6), ("DYNAMIC_CLIENT_METRICS_CONFIG", 7),
        ("DYNAMIC_GROUP_CONFIG", 8)]
    assert [i.value for i in Importance] == ["high", "medium", "low"]
    assert [s.value for s in Scope] == ["read-only", "per-broker", "cluster-wide", "topic"]
    assert repr(REQUIRED) == "REQUIRED"


def test_key_and_violation_defaults() -> None:
    plain = ConfigKey("p", ConfigType.INT, 1, None, Importance.LOW, "P.", Scope.READ_ONLY)
    assert (plain.synonyms, plain.mv_rules, plain.internal) == ((), (), False)
    assert not plain.required and not plain.sensitive
    assert "_levels" not in repr(KEY) and dataclasses.replace(KEY) == KEY
    violation = Violation("a", "1", "r", "t")
    assert (violation.level, violation.citation, violation.origin) == (None, None, None)
    with pytest.raises(ValueError, match=r"^k: MV rules must have distinct levels in ascending order$"):
        dataclasses.replace(KEY, mv_rules=(MvRule(5, NonNull(), "a"), MvRule(5, NonNull(), "b")))
    # levels below 4.x's minimum are named too
    assert Violation("a", "1", "r", "t", level=1).metadata_version == "3.0-IV1"
