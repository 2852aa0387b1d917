# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""Kafka's type parsing (``ConfigDef.parseType``) and printing, with its texts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.config.errors import ConfigValueError
from kraftwerk.config.types import (
    ConfigType,
    Password,
    java_class_name,
    java_double,
    java_str,
    java_trim,
    parse_value,
    to_config_string,
)

T = ConfigType


@pytest.mark.parametrize(("config_type", "text", "expected"), [
    (T.BOOLEAN, " TRUE ", True), (T.BOOLEAN, "false", False), (T.BOOLEAN, "FalSe", False),
    (T.BOOLEAN, "fal\u017fe", False),  # equalsIgnoreCase: LATIN SMALL LETTER LONG S upper-cases to S
    (T.STRING, "  a b \t", "a b"), (T.STRING, "", ""),
    (T.INT, "+42", 42), (T.INT, "-2147483648", -(2**31)), (T.INT, "2147483647", 2**31 - 1),
    (T.INT, "\u0661\u0662", 12),  # Integer.parseInt reads any Unicode decimal digit
    (T.SHORT, "-32768", -32768), (T.SHORT, "32767", 32767),
    (T.LONG, "9223372036854775807", 2**63 - 1), (T.LONG, "-9223372036854775808", -(2**63)),
    (T.DOUBLE, "0.5", 0.5), (T.DOUBLE, "1.", 1.0), (T.DOUBLE, ".5", 0.5), (T.DOUBLE, "1e3", 1000.0),
    (T.DOUBLE, "2.5f", 2.5), (T.DOUBLE, "-3D", -3.0), (T.DOUBLE, "0x1.8p1", 3.0), (T.DOUBLE, "0X1P-1d", 0.5),
    (T.DOUBLE, "Infinity", math.inf), (T.DOUBLE, "-Infinity", -math.inf), (T.DOUBLE, "1e999", math.inf),
    (T.DOUBLE, "0x1p99999", math.inf), (T.DOUBLE, "-0x1p99999", -math.inf),
    (T.LIST, "", ()), (T.LIST, "  ", ()), (T.LIST, "a", ("a",)), (T.LIST, " a , b ,,c, ", ("a", "b", "", "c", "")),
    (T.LIST, "a\t,\nb", ("a", "b")),
    (T.CLASS, " org.example.My$Inner ", "org.example.My$Inner"), (T.CLASS, "\u00e9t\u00e9.X", "\u00e9t\u00e9.X"),
])
def test_parse_strings(config_type: ConfigType, text: str, expected: object) -> None:
    assert parse_value("k", text, config_type) == expected


def test_parse_nan_and_password() -> None:
    assert math.isnan(parse_value("k", "NaN", T.DOUBLE))  # type: ignore[arg-type]
    secret = parse_value("k", " s3cret ", T.PASSWORD)
    assert secret == Password("s3cret") and repr(secret) == str(secret) == "[hidden]"
    assert secret != Password("other") and secret != "s3cret" and hash(secret) == hash(Password("s3cret"))
    assert parse_value("k", None, T.INT) is None


@pytest.mark.parametrize(("config_type", "text", "message"), [
    (T.BOOLEAN, "yes", "Invalid value yes for configuration k: Expected value to be either true or false"),
    (T.BOOLEAN, "truee", "Invalid value truee for configuration k: Expected value to be either true or false"),
    (T.INT, "x", "Invalid value x for configuration k: Not a number of type INT"),
    (T.INT, " 1_000 ", "Invalid value  1_000  for configuration k: Not a number of type INT"),
    (T.INT, "", "Invalid value  for configuration k: Not a number of type INT"),
    (T.INT, "2147483648", "Invalid value 2147483648 for configuration k: Not a number of type INT"),
    (T.INT, "-2147483649", "Invalid value -2147483649 for configuration k: Not a number of type INT"),
    (T.SHORT, "32768", "Invalid value 32768 for configuration k: Not a number of type SHORT"),
    (T.SHORT, "-32769", "Invalid value -32769 for configuration k: Not a number of type SHORT"),
    (T.LONG, "9223372036854775808", "Invalid value 9223372036854775808 for configuration k: Not a number of type LONG"),
    (T.LONG, "-9223372036854775809", "Invalid value -9223372036854775809 for configuration k: Not a number of type LONG"),
    (T.LONG, "1.0", "Invalid value 1.0 for configuration k: Not a number of type LONG"),
    (T.DOUBLE, "1e", "Invalid value 1e for configuration k: Not a number of type DOUBLE"),
    (T.DOUBLE, "inf", "Invalid value inf for configuration k: Not a number of type DOUBLE"),
    (T.DOUBLE, "0x1", "Invalid value 0x1 for configuration k: Not a number of type DOUBLE"),
    (T.DOUBLE, "1_0", "Invalid value 1_0 for configuration k: Not a number of type DOUBLE"),
    (T.DOUBLE, "1.5dd", "Invalid value 1.5dd for configuration k: Not a number of type DOUBLE"),
    (T.DOUBLE, "\u0661", "Invalid value \u0661 for configuration k: Not a number of type DOUBLE"),
    (T.CLASS, "not a class", "Invalid value not a class for configuration k: Class not a class could not be found."),
    (T.CLASS, "1abc", "Invalid value 1abc for configuration k: Class 1abc could not be found."),
])
def test_parse_errors(config_type: ConfigType, text: str, message: str) -> None:
    with pytest.raises(ConfigValueError) as caught:
        parse_value("k", text, config_type)
    assert str(caught.value) == message
    assert caught.value.name == "k" and caught.value.value == text


@pytest.mark.parametrize(("config_type", "value", "expected"), [
    (T.BOOLEAN, True, True), (T.INT, 5, 5), (T.SHORT, -3, -3), (T.LONG, 2**40, 2**40), (T.DOUBLE, 3, 3.0),
    (T.DOUBLE, 0.25, 0.25), (T.LIST, ["a", "b"], ("a", "b")), (T.PASSWORD, Password("p"), Password("p")),
    (T.UNKNOWN, 7, 7),
])
def test_typed_values_pass(config_type: ConfigType, value: object, expected: object) -> None:
    assert parse_value("k", value, config_type) == expected


@pytest.mark.parametrize(("config_type", "value", "message"), [
    (T.INT, 2**31, "Invalid value 2147483648 for configuration k: Expected value to be a 32-bit integer, but it "
                   "was a java.lang.Long"),
    (T.INT, True, "Invalid value true for configuration k: Expected value to be a 32-bit integer, but it was a "
                  "java.lang.Boolean"),
    (T.SHORT, 1.5, "Invalid value 1.5 for configuration k: Expected value to be a 16-bit integer (short), but it "
                   "was a java.lang.Double"),
    (T.LONG, 2**63, "Invalid value 9223372036854775808 for configuration k: Expected value to be a 64-bit integer "
                    "(long), but it was a java.lang.Long"),
    (T.DOUBLE, False, "Invalid value false for configuration k: Expected value to be a double, but it was a "
                      "java.lang.Boolean"),
    (T.STRING, 5, "Invalid value 5 for configuration k: Expected value to be a string, but it was a "
                  "java.lang.Integer"),
    (T.PASSWORD, ["x"], "Invalid value [x] for configuration k: Expected value to be a string, but it was a "
                        "java.util.ArrayList"),
    (T.BOOLEAN, 1, "Invalid value 1 for configuration k: Expected value to be either true or false"),
    (T.LIST, 3, "Invalid value 3 for configuration k: Expected a comma separated list."),
    (T.CLASS, 3, "Invalid value 3 for configuration k: Expected a Class instance or class name."),
])
def test_typed_values_of_the_wrong_class(config_type: ConfigType, value: object, message: str) -> None:
    with pytest.raises(ConfigValueError) as caught:
        parse_value("k", value, config_type)
    assert str(caught.value) == message


def test_a_wrong_typed_password_is_never_printed() -> None:
    with pytest.raises(ConfigValueError) as caught:
        parse_value("k", Password("s3cret"), T.INT)
    assert "s3cret" not in str(caught.value) and "[hidden]" in str(caught.value)
    assert "org.apache.kafka.common.config.types.Password" in str(caught.value)


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0.0"), (-0.0, "-0.0"), (0.5, "0.5"), (1.0, "1.0"), (100.0, "100.0"), (0.001, "0.001"),
    (9999999.0, "9999999.0"), (1e7, "1.0E7"), (1.5e-5, "1.5E-5"), (0.0001, "1.0E-4"), (-1234.5, "-1234.5"),
    (1e100, "1.0E100"), (-2.5e-10, "-2.5E-10"), (1.7976931348623157e308, "1.7976931348623157E308"),
    (math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN"), (12345678.9, "1.23456789E7"),
])
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text


def test_java_str_and_to_config_string() -> None:
    assert java_str(None) == "null" and java_str(True) == "true" and java_str(False) == "false"
    assert java_str(("a", 1, 0.5)) == "[a, 1, 0.5]" and java_str(Password("x")) == "[hidden]"
    assert to_config_string(("a", "b"), T.LIST) == "a,b" and to_config_string((), T.LIST) == ""
    assert to_config_string(None, T.INT) is None and to_config_string(1e7, T.DOUBLE) == "1.0E7"
    assert to_config_string(False, T.BOOLEAN) == "false" and to_config_string("s", T.STRING) == "s"
    assert java_class_name(object()) == "object"
    assert java_trim("\x00\x1f a b \x20\t") == "a b" and java_trim("\u00a0x\u00a0") == "\u00a0x\u00a0"


def test_sensitive_types() -> None:
    assert [t for t in ConfigType if t.is_sensitive] == [T.UNKNOWN, T.PASSWORD]
    assert [t.value for t in ConfigType] == list(range(10))  # DescribeConfigs' ConfigType ids


@given(st.sampled_from(list(ConfigType)), st.text())
def test_any_string_parses_or_raises_config_value_error(config_type: ConfigType, text: str) -> None:
    try:
        parse_value("k", text, config_type)
    except ConfigValueError as exc:
        assert str(exc).startswith(f"Invalid value {text} for configuration k: ")


@given(st.integers(-(2**63), 2**63 - 1))
def test_integers_round_trip(number: int) -> None:
    for config_type, bits in ((T.SHORT, 16), (T.INT, 32), (T.LONG, 64)):
        fits = -(2 ** (bits - 1)) <= number < 2 ** (bits - 1)
        if fits:
            assert parse_value("k", f" {number} ", config_type) == number
            assert to_config_string(number, config_type) == str(number)
        else:
            with pytest.raises(ConfigValueError, match=f"Not a number of type {config_type.name}$"):
                parse_value("k", str(number), config_type)


@given(st.floats(allow_nan=False))
def test_doubles_round_trip_through_java_text(value: float) -> None:
    assert parse_value("k", java_double(value), T.DOUBLE) == value
    assert parse_value("k", repr(value).replace("inf", "Infinity"), T.DOUBLE) == value


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters=",", blacklist_categories=("Cc", "Zs"))),
                min_size=1))
def test_lists_round_trip(items: list[str]) -> None:
    text = to_config_string(tuple(items), T.LIST)
    assert text is not None
    if text:
        assert parse_value("k", text, T.LIST) == tuple(items)
