"""Errors of the config layer: Kafka's ``ConfigException`` family, with its texts.

Every message is safe to print or log: a value that may be a secret (a PASSWORD-type config)
is rendered as ``[hidden]`` before the error is built, so no caller can leak it by accident.
"""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError


class ConfigError(KraftwerkError, ValueError):
    """Base of every config-layer failure (Kafka's ``ConfigException``)."""


class ConfigValueError(ConfigError):
    """A value a config does not accept: ``Invalid value <v> for configuration <k>: <reason>``.

    ``value`` is the value as Kafka prints it (``[hidden]`` for a password); ``reason`` is the
    validator's or parser's own text, kept apart so an audit can quote the rule alone.
    """

    def __init__(self, name: str, value: str, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {name}: {reason}")
        self.name = name
        self.value = value
        self.reason = reason


class MissingConfigError(ConfigError):
    """A required config (no default) was not given."""

    def __init__(self, name: str) -> None:
        super().__init__(f'Missing required configuration "{name}" which has no default value.')
        self.name = name


class PropertiesSyntaxError(ConfigError):
    """A properties file Java's ``Properties.load`` would refuse (a malformed ``\\uNNNN``)."""

    def __init__(self, source: str, line: int, message: str) -> None:
        super().__init__(f"{source} line {line}: {message}")
        self.source = source
        self.line = line
        self.detail = message
