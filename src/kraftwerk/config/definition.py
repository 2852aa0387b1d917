"""One config's declaration (``ConfigDef.ConfigKey``) and a catalogue of them (``ConfigDef``).

A key carries what Kafka's carries (name, type, default, validator, importance, documentation)
plus what kraftwerk needs in the same place: its dynamic update mode, the broker configs a topic
config falls back to (with their unit conversions), and KIP-1294's MV validators -- rules that
hold only from a metadata.version feature level on, looked up by floor entry.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from kraftwerk.config.errors import MissingConfigError
from kraftwerk.config.types import ConfigType, java_str, parse_value
from kraftwerk.config.validators import Validator


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Scope(enum.Enum):
    """How a config may change without a restart (Kafka's "Dynamic update mode")."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    """Only for one broker id, never at the cluster default ``""``."""
    CLUSTER_WIDE = "cluster-wide"
    """At the cluster default or for one broker id."""
    TOPIC = "topic"
    """A topic config: set per topic."""


class _Required:
    """The default of a config that must be given (Kafka's ``NO_DEFAULT_VALUE``)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()

MS_PER_MINUTE: Final = 60_000
MS_PER_HOUR: Final = 3_600_000


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker config a topic config takes its value from, and the factor that turns its unit
    into the topic config's (``log.retention.hours`` * 3600000 -> ``retention.ms``)."""

    name: str
    factor: int = 1

    def convert(self, value: str) -> str:
        """Kafka's ``ConfigSynonym`` converters: an unparsable or empty number counts as 0."""
        if self.factor == 1:
            return value
        text = value.strip()
        try:
            number = int(text)
        except ValueError:
            number = 0
        return str(number * self.factor)


@dataclass(frozen=True, slots=True)
class MvRule:
    """A constraint that holds from metadata.version feature level ``level`` on (KIP-1294).

    ``source`` cites where the constraint comes from (KIP, JIRA, PR), for the audit's report.
    """

    level: int
    validator: Validator
    source: str


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One config's declaration."""

    name: str
    type: ConfigType
    default: object
    """The parsed default (None: no value; :data:`REQUIRED`: must be given)."""
    validator: Validator | None
    importance: Importance
    documentation: str
    scope: Scope
    synonyms: tuple[Synonym, ...] = ()
    """For a topic config: the broker configs that supply its value, first one wins."""
    mv_rules: tuple[MvRule, ...] = ()
    """Sorted by level, at most one per level."""
    internal: bool = False
    """Left out of describe output and documentation, as Kafka's ``defineInternal``."""
    _levels: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        levels = tuple(r.level for r in self.mv_rules)
        if list(levels) != sorted(set(levels)):
            raise ValueError(f"{self.name}: MV rules must have distinct levels in ascending order")
        object.__setattr__(self, "_levels", levels)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def sensitive(self) -> bool:
        return self.type.is_sensitive

    def rule_at(self, level: int) -> MvRule | None:
        """The MV rule in force at feature level ``level``: the floor entry, or None below all."""
        index = bisect.bisect_right(self._levels, level)
        return self.mv_rules[index - 1] if index else None

    def parse(self, value: object) -> object:
        """The typed value after Kafka's type parsing and the base validator (not the MV rules)."""
        parsed = parse_value(self.name, value, self.type)
        if self.validator is not None:
            self.validator.ensure_valid(self.name, parsed)
        return parsed

    def default_value(self) -> object:
        """The default, or :class:`MissingConfigError` for a required config."""
        if self.required:
            raise MissingConfigError(self.name)
        return self.default


def define(name: str, config_type: ConfigType, default: object, validator: Validator | None,
           importance: Importance, documentation: str, scope: Scope = Scope.READ_ONLY, *,
           synonyms: Iterable[Synonym | str] = (), internal: bool = False) -> ConfigKey:
    """A :class:`ConfigKey` in the order Kafka's ``ConfigDef.define`` takes its arguments."""
    return ConfigKey(name, config_type, default, validator, importance, documentation, scope,
                     tuple(s if isinstance(s, Synonym) else Synonym(s) for s in synonyms),
                     internal=internal)


@dataclass(frozen=True, slots=True)
class ParsedConfig:
    """A properties map parsed against a catalogue: every declared config's typed value (given
    or default), the originals as given, and the given names the catalogue does not know."""

    values: Mapping[str, object]
    originals: Mapping[str, str]
    unknown: tuple[str, ...]

    def __getitem__(self, name: str) -> object:
        return self.values[name]

    def is_set(self, name: str) -> bool:
        return name in self.originals

    def integer(self, name: str) -> int:
        """An INT, SHORT or LONG config's value (those with a default always have one)."""
        value = self.values[name]
        assert isinstance(value, int)
        return value

    def text(self, name: str) -> str:
        """A STRING config's value, "" when it has none."""
        value = self.values[name]
        return "" if value is None else str(value)

    def elements(self, name: str) -> tuple[str, ...]:
        """A LIST config's elements, () when it has none."""
        value = self.values[name]
        assert value is None or isinstance(value, tuple)
        return value or ()

    def flag(self, name: str) -> bool:
        return self.values[name] is True

    def values_text(self, title: str) -> str:
        """Kafka's ``logAll``: ``<title> values:`` then a tab-indented ``name = value`` line per
        config, sorted; passwords print as ``[hidden]``."""
        lines = [f"{title} values: "] + [f"\t{n} = {java_str(self.values[n])}" for n in sorted(self.values)]
        return "\n".join(lines)


class ConfigDef(Mapping[str, ConfigKey]):
    """An ordered, immutable catalogue of keys (Kafka's ``ConfigDef``)."""

    def __init__(self, keys: Iterable[ConfigKey]) -> None:
        table: dict[str, ConfigKey] = {}
        for key in keys:
            if key.name in table:
                raise ValueError(f"Configuration {key.name} is defined twice.")
            table[key.name] = key
        self._keys = MappingProxyType(table)

    def __getitem__(self, name: str) -> ConfigKey:
        return self._keys[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def parse(self, props: Mapping[str, str], *, known: Iterable[str] = ()) -> ParsedConfig:
        """``ConfigDef.parse``: every key in declaration order, so the first bad one is the one
        Kafka reports. Names neither declared nor in ``known`` are reported as unknown."""
        values = {name: key.parse(props[name]) if name in props else key.parse(key.default_value())
                  for name, key in self._keys.items()}
        accepted = set(known)
        unknown = tuple(sorted(n for n in props if n not in self._keys and n not in accepted))
        return ParsedConfig(MappingProxyType(values), MappingProxyType(dict(props)), unknown)
