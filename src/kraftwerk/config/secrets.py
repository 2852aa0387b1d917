"""Which config values are secrets, and views of a config that never show them.

The rule is Kafka's ``maybeSensitive``: a PASSWORD-typed config, or a name whose type nobody
knows (it could hold anything). Broker loggers and client-metrics configs are never sensitive.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from kraftwerk.config.catalogue import broker_config_type, topic_config_type
from kraftwerk.config.types import HIDDEN, ConfigResourceType


def is_sensitive(resource_type: int, name: str) -> bool:
    """Whether ``name``'s value must never be shown for a resource of this type."""
    if resource_type == ConfigResourceType.BROKER:
        return broker_config_type(name).is_sensitive
    if resource_type == ConfigResourceType.TOPIC:
        return topic_config_type(name).is_sensitive
    return resource_type not in (ConfigResourceType.BROKER_LOGGER, ConfigResourceType.CLIENT_METRICS)


def redact(resource_type: int, name: str, value: str | None) -> str | None:
    """``value``, or ``[hidden]`` when it may be a secret (None stays None)."""
    return HIDDEN if value is not None and is_sensitive(resource_type, name) else value


def redacted(props: Mapping[str, str | None],
             resource_type: int = ConfigResourceType.BROKER) -> dict[str, str | None]:
    """A copy of ``props`` safe to log: every possibly secret value replaced by ``[hidden]``."""
    return {name: redact(resource_type, name, value) for name, value in props.items()}


class ConfigMap(Mapping[str, str]):
    """Raw config strings (``server.properties``) whose ``repr``/``str`` hide the secrets, so a
    config object can be logged or shown in a traceback without leaking a password."""

    __slots__ = ("_props", "_resource_type")

    def __init__(self, props: Mapping[str, str], resource_type: int = ConfigResourceType.BROKER) -> None:
        self._props = MappingProxyType(dict(props))
        self._resource_type = resource_type

    def __getitem__(self, name: str) -> str:
        return self._props[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._props)

    def __len__(self) -> int:
        return len(self._props)

    def __repr__(self) -> str:
        return f"ConfigMap({redacted(self._props, self._resource_type)!r})"

    __str__ = __repr__
