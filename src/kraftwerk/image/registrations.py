"""Kafka's fromRecord conversions of node registration records, shared by broker and controller replay."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kraftwerk.image.model import BrokerRegistration, Endpoint, SupportedRange, sorted_dirs

Value = Mapping[str, Any]


def endpoints_from(value: Iterable[Mapping[str, Any]] | None) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(e["name"], e["host"], e["port"], e.get("securityProtocol", 0)) for e in (value or ())
    )


def features_from(value: Iterable[Mapping[str, Any]] | None) -> tuple[tuple[str, SupportedRange], ...]:
    """Supported ranges sorted by name: Kafka keeps them in a map, so order carries no meaning."""
    pairs = {f["name"]: SupportedRange(f["minSupportedVersion"], f["maxSupportedVersion"])
             for f in value or ()}
    return tuple(sorted(pairs.items()))


def _static_configs(value: Value) -> tuple[tuple[str, str | None], ...]:
    raw = value.get("staticConfigs")
    if not raw:
        return ()
    return tuple(sorted((c["name"], c.get("value")) for c in raw))


def broker_from_record(value: Value) -> BrokerRegistration:
    """Kafka's BrokerRegistration.fromRecord."""
    return BrokerRegistration(
        id=value["brokerId"],
        epoch=value["brokerEpoch"],
        incarnation_id=value["incarnationId"],
        listeners=endpoints_from(value.get("endPoints")),
        supported_features=features_from(value.get("features")),
        rack=value.get("rack"),
        fenced=bool(value.get("fenced", True)),
        in_controlled_shutdown=bool(value.get("inControlledShutdown", False)),
        is_migrating_zk_broker=bool(value.get("isMigratingZkBroker", False)),
        directories=sorted_dirs(value.get("logDirs") or ()),
        cordoned_directories=sorted_dirs(value.get("cordonedLogDirs") or ()),
        static_configs=_static_configs(value),
    )

