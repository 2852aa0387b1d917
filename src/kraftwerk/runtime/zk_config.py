"""``server.properties`` of a ZooKeeper-mode broker: ``zookeeper.connect`` and no ``process.roles``.

The ZooKeeper-era names (``broker.id``, ``inter.broker.protocol.version``,
``zookeeper.metadata.migration.enable``) typed through the config catalogue with Kafka's texts;
listeners as in KRaft mode. ZooKeeper mode ended with Kafka 4.0, so the node's software
(``kraftwerk.software.version``) must be a 3.x release, and its IBP no newer than that release.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kraftwerk.config import ConfigMap, log_dirs, parse_broker_config
from kraftwerk.config.catalogue.controller import LOG_FILE_CONFIG, SOFTWARE_VERSION_CONFIG
from kraftwerk.config.errors import ConfigError, ConfigValueError, MissingConfigError
from kraftwerk.errors import KraftwerkError
from kraftwerk.migration.reader import parse_connect
from kraftwerk.runtime.config import (
    Endpoint,
    _parse_bootstrap_servers,
    _parse_endpoints,
    _parse_protocol_map,
    _parse_voters,
)
from kraftwerk.runtime.security import ListenerSecurity, listener_security
from kraftwerk.versions.metadata_version import MetadataVersion, parse_version_string
from kraftwerk.versions.software import SoftwareVersion

IBP_CONFIG = "inter.broker.protocol.version"
MIGRATION_CONFIG = "zookeeper.metadata.migration.enable"
CONTROLLER_LISTENERS_CONFIG = "controller.listener.names"


def is_zookeeper_mode(props: Mapping[str, str]) -> bool:
    """Kafka 3.x's rule: no ``process.roles`` means a ZooKeeper-mode broker."""
    return not props.get("process.roles", "").strip() and bool(props.get("zookeeper.connect", "").strip())


@dataclass(frozen=True, slots=True)
class ZkServerConfig:
    broker_id: int
    zookeeper_connect: str
    session_timeout_ms: int
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    security_protocol_map: Mapping[str, str]
    inter_broker_listener_name: str
    log_dirs: tuple[str, ...]
    software: SoftwareVersion
    ibp: MetadataVersion
    migration_enabled: bool
    rack: str | None
    log_file: str | None = None
    raw: Mapping[str, str] = field(default_factory=lambda: ConfigMap({}))
    security: Mapping[str, ListenerSecurity] = field(default_factory=dict, repr=False)
    controller_quorum: tuple[tuple[str, int], ...] = ()
    """The KRaft controllers' addresses (``controller.quorum.voters`` or ``.bootstrap.servers``) a
    broker in migration registers with (KIP-866); empty before the migration."""

    @property
    def effective_advertised_listeners(self) -> tuple[Endpoint, ...]:
        return self.advertised_listeners or self.listeners

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ZkServerConfig:
        parsed = parse_broker_config(props)
        connect = parsed.text("zookeeper.connect")
        if not connect:
            raise MissingConfigError("zookeeper.connect")
        try:
            parse_connect(connect)
        except ValueError as exc:
            raise ConfigValueError("zookeeper.connect", connect, str(exc)) from None
        id_name = "broker.id" if parsed.is_set("broker.id") else "node.id"
        broker_id = parsed.integer(id_name)
        if not parsed.is_set(id_name) or broker_id < 0:
            raise ConfigError("broker.id must be set to a non-negative integer (kraftwerk does not generate "
                              "broker ids: a KIP-866 migration forbids them)")
        software_text = parsed.text(SOFTWARE_VERSION_CONFIG)
        try:
            software = SoftwareVersion.for_release(software_text or "3.9")
        except KraftwerkError as exc:
            raise ConfigValueError(SOFTWARE_VERSION_CONFIG, software_text, str(exc)) from None
        if not software.release.startswith("3."):
            raise ConfigError(f"ZooKeeper mode was removed in Kafka 4.0: software {software.release} cannot "
                              "run with zookeeper.connect (set process.roles for KRaft mode)")
        release_mv = parse_version_string(software.release)
        ibp_text = parsed.text(IBP_CONFIG)
        try:
            ibp = parse_version_string(ibp_text) if ibp_text else release_mv
        except KraftwerkError as exc:
            raise ConfigValueError(IBP_CONFIG, ibp_text, str(exc)) from None
        if ibp > release_mv:
            raise ConfigValueError(IBP_CONFIG, ibp_text,
                                   f"software {software.release} supports at most {release_mv}")
        listeners = _parse_endpoints(parsed.text("listeners") or "PLAINTEXT://:9092", "listeners")
        advertised_text = parsed.text("advertised.listeners")
        advertised = _parse_endpoints(advertised_text, "advertised.listeners") if advertised_text else ()
        map_name = "listener.security.protocol.map"
        protocols = _parse_protocol_map(parsed.text(map_name), (), explicit=parsed.is_set(map_name))
        for e in listeners:
            if e.listener not in protocols:
                raise ConfigError(f"No security protocol defined for listener {e.listener}")
        inter_broker = parsed.text("inter.broker.listener.name").strip().upper() or (
            "PLAINTEXT" if any(e.listener == "PLAINTEXT" for e in listeners) else listeners[0].listener)
        if inter_broker not in {e.listener for e in listeners}:
            raise ConfigError(f"inter.broker.listener.name must be a listener name defined in listeners; "
                              f"{inter_broker} is not")
        directories = log_dirs(parsed)
        if not directories:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        config = cls(broker_id, connect, parsed.integer("zookeeper.session.timeout.ms"), listeners,
                     advertised, MappingProxyType(protocols), inter_broker, directories, software, ibp,
                     parsed.flag(MIGRATION_CONFIG), parsed.text("broker.rack") or None,
                     parsed.text(LOG_FILE_CONFIG) or None, ConfigMap(props))
        security = {e.listener: listener_security(props, e.listener, protocols[e.listener])
                    for e in listeners}
        voters = _parse_voters(",".join(parsed.elements("controller.quorum.voters")))
        quorum = tuple((v.host, v.port) for v in voters) or _parse_bootstrap_servers(
            ",".join(parsed.elements("controller.quorum.bootstrap.servers")))
        names = [n.strip() for n in parsed.text(CONTROLLER_LISTENERS_CONFIG).split(",") if n.strip()]
        _check_migration(config.migration_enabled, quorum, names, ibp, len(directories))
        return dataclasses.replace(config, security=MappingProxyType(security), controller_quorum=quorum)


def _check_migration(enabled: bool, quorum: tuple[tuple[str, int], ...], controller_listeners: list[str],
                     ibp: MetadataVersion, log_dir_count: int) -> None:
    """Kafka 3.9's ``KafkaConfig`` checks of a ZooKeeper-mode broker, in its order: in a migration the
    broker must reach the KRaft quorum (else it would sit in ``/brokers/ids`` while the controllers
    wait for it forever); outside one it must not name controller listeners."""
    if not enabled:
        if controller_listeners:
            raise ConfigError(f"{CONTROLLER_LISTENERS_CONFIG} must be empty when not running in KRaft mode: "
                              f"[{', '.join(controller_listeners)}]")
        return
    if not quorum:
        raise ConfigError(f"If using {MIGRATION_CONFIG}, either controller.quorum.bootstrap.servers must "
                          "contain the set of bootstrap controllers or controller.quorum.voters must contain "
                          "a parseable set of controllers.")
    if not controller_listeners:
        raise ConfigError(f"{CONTROLLER_LISTENERS_CONFIG} must not be empty when running in ZooKeeper "
                          "migration mode: []")
    if not ibp.is_migration_supported():
        raise ConfigError(f"Cannot enable ZooKeeper migration without setting '{IBP_CONFIG}' to 3.4 or "
                          "higher")
    if log_dir_count > 1 and not ibp.is_directory_assignment_supported():
        raise ConfigError("Cannot enable ZooKeeper migration with multiple log directories (aka JBOD) "
                          f"without setting '{IBP_CONFIG}' to {MetadataVersion.IBP_3_7_IV2} or higher")
