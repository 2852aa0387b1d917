# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""Kafka's validators: their reason texts and "Valid Values" strings."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config.errors import ConfigValueError
from kraftwerk.config.types import Password
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


def _error(validator: Validator, value: object) -> str:
    with pytest.raises(ConfigValueError) as caught:
        validator.ensure_valid("k", value)
    return str(caught.value)


def test_range_texts() -> None:
    at_least = Range.at_least(14)
    at_least.ensure_valid("k", 14)
    assert _error(at_least, 13) == "Invalid value 13 for configuration k: Value must be at least 14"
    assert _error(at_least, None) == "Invalid value null for configuration k: Value must be non-null"
    between = Range.between(0, 1)
    between.ensure_valid("k", 0.0)
    between.ensure_valid("k", 1.0)
    assert _error(between, 1.5) == "Invalid value 1.5 for configuration k: Value must be no more than 1"
    assert _error(between, -0.5) == "Invalid value -0.5 for configuration k: Value must be at least 0"
    assert _error(Range.between(0.5, 2.5), 3) == "Invalid value 3 for configuration k: Value must be no more than 2.5"
    assert (str(at_least), str(between), str(Range(None, 5)), str(Range(None))) == (
        "[14,...]", "[0,...,1]", "[...,5]", "[...]")
    Range(None).ensure_valid("k", -(2**63))


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(-60, 60))
def test_range_is_inclusive(low: int, high: int, value: int) -> None:
    validator = Range.between(low, high)
    try:
        validator.ensure_valid("k", value)
        assert low <= value <= high
    except ConfigValueError:
        assert not low <= value <= high


def test_strings_and_lists() -> None:
    valid = ValidString.of("CreateTime", "LogAppendTime")
    valid.ensure_valid("k", "CreateTime")
    assert _error(valid, "createtime") == ("Invalid value createtime for configuration k: String must be one of: "
                                           "CreateTime, LogAppendTime")
    assert _error(valid, None) == ("Invalid value null for configuration k: String must be one of: CreateTime, "
                                   "LogAppendTime")
    assert str(valid) == "[CreateTime, LogAppendTime]"
    policies = ValidList.of("compact", "delete")
    policies.ensure_valid("k", ("compact", "delete"))
    policies.ensure_valid("k", ())
    policies.ensure_valid("k", None)
    assert _error(policies, ("delete", "zap")) == ("Invalid value zap for configuration k: String must be one of: "
                                                   "compact, delete")
    assert str(policies) == "[compact, delete]"


def test_small_validators() -> None:
    NonEmptyString().ensure_valid("k", None)
    NonEmptyString().ensure_valid("k", "x")
    assert _error(NonEmptyString(), "") == "Invalid value  for configuration k: String must be non-empty"
    NonNull().ensure_valid("k", "")
    assert _error(NonNull(), None) == "Invalid value null for configuration k: entry must be non null"
    ListSize(2).ensure_valid("k", ("a", "b"))
    assert _error(ListSize(2), ("a", "b", "c")) == ("Invalid value [a, b, c] for configuration k: exceeds maximum "
                                                    "list size of [2].")
    assert (str(NonEmptyString()), str(NonNull()), str(ListSize(2))) == (
        "non-empty string", "non-null string", "List containing maximum of 2 elements")


def test_composite_runs_every_validator_in_order() -> None:
    both = Composite.of(NonNull(), Range.at_least(1), Range(None, 3))
    both.ensure_valid("k", 2)
    assert _error(both, None).endswith("entry must be non null")
    assert _error(both, 0).endswith("Value must be at least 1")
    assert _error(both, 4).endswith("Value must be no more than 3")
    assert str(both) == "non-null string, [1,...], [...,3]"


def test_predicate_never_prints_a_password() -> None:
    rule = Predicate(lambda v: isinstance(v, int) and (v == -1 or v > 0), "Value can be -1 or greater than 0",
                     "[-1,1,...]")
    rule.ensure_valid("k", -1)
    rule.ensure_valid("k", 1)
    assert _error(rule, 0) == "Invalid value 0 for configuration k: Value can be -1 or greater than 0"
    assert str(rule) == "[-1,1,...]"
    hidden = Predicate(lambda v: False, "nope", "never")
    assert _error(hidden, Password("s3cret")) == "Invalid value [hidden] for configuration k: nope"


def test_throttled_replica_list() -> None:
    rule = ThrottledReplicaList()
    for ok in ((), ("*",), (" * ",), ("0:1", " 1:2 "), ("",), ("*", ""), ("", "*")):  # "*," joins to "*"
        rule.ensure_valid("x", ok)
    assert _error(rule, ("0:1", "*")) == (
        "Invalid value [0:1, *] for configuration k: k must be the literal '*' or a list of replicas in the "
        "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    assert _error(rule, ("0-1",)).startswith("Invalid value [0-1] for configuration k: k must be the literal")
    assert _error(rule, ("\u0661:1",)).startswith("Invalid value")  # ASCII digits only, as Java's [0-9]
    assert str(rule) == "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


def test_metadata_version_string() -> None:
    rule = MetadataVersionString()
    for ok in (None, "3.3-IV3", "4.0", "4.0.1", "4.4-IV1", "4.5-IV0"):
        rule.ensure_valid("metadata.version", ok)
    assert _error(rule, "3.2") == ("Invalid value 3.2 for configuration k: Unknown metadata.version '3.2'. Supported "
                                   "metadata.version are: " + str(rule)[1:-1])
    assert str(rule).startswith("[3.3-IV3, 3.4-IV0, ") and str(rule).endswith(", 4.4-IV2, 4.5-IV0]")
