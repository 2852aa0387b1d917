"""Kafka's ``ConfigDef`` validators with their reason texts and "Valid Values" strings.

A validator checks a *parsed* value (see :mod:`kraftwerk.config.types`) and raises
:class:`ConfigValueError` with Kafka's reason; ``str(validator)`` is the column Kafka's config
documentation prints (``[1,...]``, ``[compact, delete]``). Validators are frozen values, so the
same one can sit in a catalogue entry and in an MV rule.
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable
from dataclasses import dataclass

from kraftwerk.config.errors import ConfigValueError
from kraftwerk.config.types import java_str, java_trim
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import VersionError


def _fail(name: str, value: object, reason: str) -> ConfigValueError:
    return ConfigValueError(name, java_str(value), reason)


class Validator(abc.ABC):
    """``ConfigDef.Validator``."""

    __slots__ = ()

    @abc.abstractmethod
    def ensure_valid(self, name: str, value: object) -> None:
        """Raise :class:`ConfigValueError` if ``value`` (parsed, maybe None) is not allowed."""

    @abc.abstractmethod
    def __str__(self) -> str:
        """Kafka's "Valid Values" text."""


@dataclass(frozen=True, slots=True)
class Range(Validator):
    """Inclusive numeric bounds, compared as doubles like Kafka's ``Range``."""

    min: int | float | None
    max: int | float | None = None

    @classmethod
    def at_least(cls, minimum: int | float) -> Range:
        return cls(minimum)

    @classmethod
    def between(cls, minimum: int | float, maximum: int | float) -> Range:
        return cls(minimum, maximum)

    def ensure_valid(self, name: str, value: object) -> None:
        if value is None:
            raise _fail(name, None, "Value must be non-null")
        assert isinstance(value, int | float)
        if self.min is not None and float(value) < float(self.min):
            raise _fail(name, value, f"Value must be at least {java_str(self.min)}")
        if self.max is not None and float(value) > float(self.max):
            raise _fail(name, value, f"Value must be no more than {java_str(self.max)}")

    def __str__(self) -> str:
        low = "" if self.min is None else java_str(self.min) + ","
        high = "" if self.max is None else "," + java_str(self.max)
        return f"[{low}...{high}]"


@dataclass(frozen=True, slots=True)
class ValidString(Validator):
    """One of a fixed set of strings, case-sensitive (``ValidString.in``)."""

    valid: tuple[str, ...]

    @classmethod
    def of(cls, *valid: str) -> ValidString:
        return cls(valid)

    def ensure_valid(self, name: str, value: object) -> None:
        if value not in self.valid:
            raise _fail(name, value, "String must be one of: " + ", ".join(self.valid))

    def __str__(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


@dataclass(frozen=True, slots=True)
class ValidList(Validator):
    """Every element of a LIST is one of a fixed set (``ValidList.in``; an empty list passes)."""

    valid: tuple[str, ...]

    @classmethod
    def of(cls, *valid: str) -> ValidList:
        return cls(valid)

    def ensure_valid(self, name: str, value: object) -> None:
        assert value is None or isinstance(value, tuple | list)
        for element in value or ():
            ValidString(self.valid).ensure_valid(name, element)

    def __str__(self) -> str:
        return str(ValidString(self.valid))


@dataclass(frozen=True, slots=True)
class NonEmptyString(Validator):
    """Null or a non-empty string."""

    def ensure_valid(self, name: str, value: object) -> None:
        if value == "":
            raise _fail(name, value, "String must be non-empty")

    def __str__(self) -> str:
        return "non-empty string"


@dataclass(frozen=True, slots=True)
class NonNull(Validator):
    """Any value but null (``NonNullValidator``)."""

    def ensure_valid(self, name: str, value: object) -> None:
        if value is None:
            raise _fail(name, None, "entry must be non null")

    def __str__(self) -> str:
        return "non-null string"


@dataclass(frozen=True, slots=True)
class ListSize(Validator):
    """A LIST of at most ``max_size`` elements (``ListSize.atMostOfSize``)."""

    max_size: int

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, tuple | list)
        if len(value) > self.max_size:
            raise _fail(name, value, f"exceeds maximum list size of [{self.max_size}].")

    def __str__(self) -> str:
        return f"List containing maximum of {self.max_size} elements"


@dataclass(frozen=True, slots=True)
class Composite(Validator):
    """Every validator in turn (``CompositeValidator.of``)."""

    validators: tuple[Validator, ...]

    @classmethod
    def of(cls, *validators: Validator) -> Composite:
        return cls(validators)

    def ensure_valid(self, name: str, value: object) -> None:
        for validator in self.validators:
            validator.ensure_valid(name, value)

    def __str__(self) -> str:
        return ", ".join(str(v) for v in self.validators)


@dataclass(frozen=True, slots=True)
class Predicate(Validator):
    """A rule Kafka writes as a ``LambdaValidator``: a test, its reason and its valid-values text."""

    test: Callable[[object], bool]
    reason: str
    text: str

    def ensure_valid(self, name: str, value: object) -> None:
        if not self.test(value):
            raise _fail(name, value, self.reason)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class MetadataVersionString(Validator):
    """A metadata.version this software knows, stable or not (Kafka's ``MetadataVersionValidator``).

    Whether a node may use it (its software's range) is the node's check, not the catalogue's.
    """

    def ensure_valid(self, name: str, value: object) -> None:
        if value is None:
            return
        try:
            mvs.parse_version_string(str(value), unstable=True)
        except VersionError as exc:
            raise _fail(name, value, str(exc)) from None

    def __str__(self) -> str:
        return "[" + mvs.metadata_versions_to_string(mvs.MINIMUM_VERSION, mvs.LATEST_TESTING) + "]"


@dataclass(frozen=True, slots=True)
class ThrottledReplicaList(Validator):
    """``*`` or ``partition:broker`` pairs (Kafka's ``ThrottledReplicaListValidator``)."""

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, tuple | list)
        entries = [java_trim(str(v)) for v in value]
        if not (all(_REPLICA.fullmatch(e) for e in entries) or "".join(entries) == "*"):
            raise _fail(name, value, f"{name} must be the literal '*' or a list of replicas in the following "
                                     "format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")

    def __str__(self) -> str:
        return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."


_REPLICA = re.compile(r"(?:[0-9]+:[0-9]+)?")
