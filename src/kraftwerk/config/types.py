"""Kafka's nine config types: parsing a value with ``ConfigDef.parseType``'s rules and texts, and
printing one back as ``ConfigDef.convertToString`` and Java's ``toString`` do.

Values arrive as strings (``server.properties``, ConfigRecords, AlterConfigs) or already typed
(defaults, tests); both are accepted, as in Java. Parsed forms: BOOLEAN ``bool``, STRING and
CLASS ``str``, INT/SHORT/LONG ``int``, DOUBLE ``float``, LIST ``tuple[str, ...]``, PASSWORD
:class:`Password` (whose ``repr`` and ``str`` never show the secret).
"""

from __future__ import annotations

import enum
import math
import re
from decimal import Decimal

from kraftwerk.config.errors import ConfigValueError

HIDDEN = "[hidden]"
"""What Kafka prints instead of a secret (``Password.HIDDEN``)."""


class ConfigType(enum.Enum):
    """``ConfigDef.Type``; the value is DescribeConfigs' ConfigType id (v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9

    @property
    def is_sensitive(self) -> bool:
        """Kafka's ``maybeSensitive``: a password, or a type nobody knows (could be anything)."""
        return self in (ConfigType.PASSWORD, ConfigType.UNKNOWN)


class ConfigResourceType(enum.IntEnum):
    """``ConfigResource.Type``: what a config belongs to (the wire byte)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class Password:
    """A secret config value: compares by value, prints as ``[hidden]`` (Kafka's ``Password``)."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other.value == self.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return HIDDEN

    __str__ = __repr__


_INT_RANGES = {ConfigType.SHORT: 16, ConfigType.INT: 32, ConfigType.LONG: 64}
_EXPECTED = {
    ConfigType.BOOLEAN: "Expected value to be either true or false",
    ConfigType.STRING: "Expected value to be a string, but it was a {}",
    ConfigType.PASSWORD: "Expected value to be a string, but it was a {}",
    ConfigType.INT: "Expected value to be a 32-bit integer, but it was a {}",
    ConfigType.SHORT: "Expected value to be a 16-bit integer (short), but it was a {}",
    ConfigType.LONG: "Expected value to be a 64-bit integer (long), but it was a {}",
    ConfigType.DOUBLE: "Expected value to be a double, but it was a {}",
    ConfigType.LIST: "Expected a comma separated list.",
    ConfigType.CLASS: "Expected a Class instance or class name.",
}
_JAVA_INT = re.compile(r"[+-]?\d+")  # Character.digit accepts any Unicode decimal digit, as \d does
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)", re.ASCII)
_HEX_PREFIX = re.compile(r"[+-]?0[xX]")
_JAVA_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_CLASS_NAME = re.compile(r"(?:[^\W\d]|\$)[\w$]*(?:[.$](?:[^\W\d]|\$)[\w$]*)*")


def java_trim(s: str) -> str:
    """``String.trim()``: strips every character up to U+0020 (not Unicode spaces)."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    return s[start:end]


def parse_value(name: str, value: object, config_type: ConfigType) -> object:
    """``ConfigDef.parseType``: the typed value, or :class:`ConfigValueError` with Kafka's text.

    None stays None (a config without a value); a string is trimmed first.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return _parse_string(name, value, java_trim(value), config_type)
    return _check_typed(name, value, config_type)


def _parse_string(name: str, raw: str, text: str, config_type: ConfigType) -> object:
    if config_type is ConfigType.BOOLEAN:
        for word in ("true", "false"):
            if _equals_ignore_case(text, word):
                return word == "true"
        raise ConfigValueError(name, raw, _EXPECTED[config_type])
    if config_type is ConfigType.PASSWORD:
        return Password(text)
    if config_type in (ConfigType.STRING, ConfigType.UNKNOWN):
        return text
    if config_type in _INT_RANGES:
        bits = _INT_RANGES[config_type]
        if _JAVA_INT.fullmatch(text) and -(1 << (bits - 1)) <= int(text) < 1 << (bits - 1):
            return int(text)
        raise ConfigValueError(name, raw, f"Not a number of type {config_type.name}")
    if config_type is ConfigType.DOUBLE:
        return _parse_double(name, raw, text)
    if config_type is ConfigType.LIST:
        return tuple(_JAVA_LIST_SEPARATOR.split(text)) if text else ()
    if not _JAVA_CLASS_NAME.fullmatch(text):  # CLASS: the JVM would fail to load anything else
        raise ConfigValueError(name, raw, f"Class {raw} could not be found.")
    return text


def _equals_ignore_case(text: str, word: str) -> bool:
    """``String.equalsIgnoreCase``: char by char, equal after upper-casing (or lower-casing that)."""
    return len(text) == len(word) and all(
        a == b or a.upper() == b.upper() or a.upper().lower() == b.upper().lower()
        for a, b in zip(text, word, strict=True))


def _parse_double(name: str, raw: str, text: str) -> float:
    """``Double.parseDouble``: decimal or hex digits, ``NaN``, ``Infinity``, a ``f``/``d`` suffix."""
    if not _JAVA_DOUBLE.fullmatch(text):
        raise ConfigValueError(name, raw, "Not a number of type DOUBLE")
    if text.endswith(("NaN", "Infinity")):
        return float(text.replace("Infinity", "inf"))
    body = text[:-1] if text[-1] in "fFdD" else text  # both forms end in a digit or a suffix
    if not _HEX_PREFIX.match(body):
        return float(body)
    try:
        return float.fromhex(body)
    except OverflowError:  # Java rounds an out-of-range hex literal to infinity
        return -math.inf if body.startswith("-") else math.inf


def _check_typed(name: str, value: object, config_type: ConfigType) -> object:
    """A value that is not a string must already have the type's Java class."""
    if config_type is ConfigType.BOOLEAN and isinstance(value, bool):
        return value
    if config_type is ConfigType.PASSWORD and isinstance(value, Password):
        return value
    if config_type in _INT_RANGES and isinstance(value, int) and not isinstance(value, bool):
        bits = _INT_RANGES[config_type]
        if -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            return value
    if config_type is ConfigType.DOUBLE and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if config_type is ConfigType.LIST and isinstance(value, list | tuple):
        return tuple(value)
    if config_type is ConfigType.UNKNOWN:
        return value
    template = _EXPECTED.get(config_type, "Expected value to be a string, but it was a {}")
    raise ConfigValueError(name, java_str(value), template.format(java_class_name(value)))


def java_class_name(value: object) -> str:
    """The Java class a Python value stands for, as Kafka's messages name it."""
    if isinstance(value, bool):
        return "java.lang.Boolean"
    if isinstance(value, int):
        return "java.lang.Integer" if -(1 << 31) <= value < 1 << 31 else "java.lang.Long"
    if isinstance(value, float):
        return "java.lang.Double"
    if isinstance(value, str):
        return "java.lang.String"
    if isinstance(value, list | tuple):
        return "java.util.ArrayList"
    if isinstance(value, Password):
        return "org.apache.kafka.common.config.types.Password"
    return type(value).__name__


def java_double(value: float) -> str:
    """``Double.toString``: plain digits in [1e-3, 1e7), else ``d.dddE±n``; shortest digits."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's repr is plain (with ".0") throughout this range
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) - 1 + exponent
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def java_str(value: object) -> str:
    """``String.valueOf`` of a parsed value: how ``ConfigException`` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(java_str(v) for v in value) + "]"
    return str(value)  # a Password prints as [hidden]


def to_config_string(value: object, config_type: ConfigType) -> str | None:
    """``ConfigDef.convertToString``: how a parsed value is stored and described (a LIST joins with
    ``,``; a password stays ``[hidden]`` -- callers that need the secret use ``.value``)."""
    if value is None:
        return None
    if config_type is ConfigType.LIST and isinstance(value, list | tuple):
        return ",".join(java_str(v) for v in value)
    return java_str(value)
