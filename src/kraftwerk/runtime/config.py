"""``server.properties`` for a KRaft node, read through the config catalogue.

Every config the catalogue knows is typed and checked against its base validator with Kafka's
texts (the first bad one fails the start, as in Kafka); then Kafka's KRaft cross-checks run.
Names the catalogue does not know are kept (``ServerConfig.raw``, whose ``repr`` hides secrets)
and logged at start as Kafka does. ``kraftwerk.software.version`` (ours) names the Kafka release
whose feature ranges the node advertises (``SoftwareVersion.for_release``), so a rolling upgrade
of binaries can be rehearsed on one machine; it defaults to this software.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from kraftwerk.config import ConfigMap, ParsedConfig, log_dirs, parse_broker_config, properties_values
from kraftwerk.config.catalogue.controller import LOG_FILE_CONFIG, SOFTWARE_VERSION_CONFIG
from kraftwerk.config.errors import ConfigError, ConfigValueError, MissingConfigError
from kraftwerk.controller.authorizer import AuthorizerConfigError, StandardAuthorizer
from kraftwerk.errors import KraftwerkError
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity, inter_node_security
from kraftwerk.runtime.security import ListenerSecurity, listener_security
from kraftwerk.runtime.server import ConnectionLimits
from kraftwerk.versions.software import SoftwareVersion


class ProcessRole(enum.Enum):
    BROKER = "broker"
    CONTROLLER = "controller"


@dataclass(frozen=True, slots=True)
class Endpoint:
    """``NAME://host:port``; an empty host means every interface (``host`` None)."""

    listener: str
    host: str | None
    port: int

    def connect_host(self) -> str:
        return self.host or "localhost"

    def __str__(self) -> str:
        return f"{self.listener}://{self.host or ''}:{self.port}"


@dataclass(frozen=True, slots=True)
class Voter:
    """One ``id@host:port`` of ``controller.quorum.voters``."""

    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class ServerConfig:
    node_id: int
    process_roles: frozenset[ProcessRole]
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    security_protocol_map: Mapping[str, str]
    inter_broker_listener_name: str
    quorum_voters: tuple[Voter, ...]
    #: ``controller.quorum.bootstrap.servers`` (host, port): a dynamic quorum (KIP-853) names these
    #: instead of ``controller.quorum.voters``; the voters then come from the metadata log.
    quorum_bootstrap_servers: tuple[tuple[str, int], ...]
    log_dirs: tuple[str, ...]
    metadata_log_dir: str
    software: SoftwareVersion
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    initial_broker_registration_timeout_ms: int = 60000
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    quorum_request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    socket_request_max_bytes: int = 104_857_600
    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    #: ``max.connections.per.ip.overrides``: IP address → its own limit
    max_connections_per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    connections_max_idle_ms: int = 600_000
    failed_authentication_delay_ms: int = 100
    #: listener name → its TLS context and SASL mechanisms (built at load: a bad key store fails the start)
    security: Mapping[str, ListenerSecurity] = field(default_factory=dict, repr=False)
    #: ``authorizer.class.name`` (StandardAuthorizer with ``super.users``...); None: everything allowed
    authorizer: StandardAuthorizer | None = None
    #: how this node reaches the controllers' listener and other brokers' inter-broker listener
    controller_client: ClientSecurity = field(default=PLAINTEXT, repr=False)
    inter_broker_client: ClientSecurity = field(default=PLAINTEXT, repr=False)
    #: ``metadata.max.retention.ms`` and ``metadata.max.retention.bytes`` both -1 (Kafka's
    #: unlimited retention): the metadata log keeps every segment behind its snapshots
    metadata_log_retained: bool = False
    unstable_feature_versions_enable: bool = False
    metadata_max_idle_interval_ms: int = 500
    log_file: str | None = None
    raw: Mapping[str, str] = field(default_factory=lambda: ConfigMap({}))
    """Every key as given (unknown ones included); its ``repr`` hides secrets."""
    parsed: ParsedConfig | None = field(default=None, repr=False, compare=False)
    """Every catalogue config, typed (defaults included), and the unknown names."""

    # --- derived --------------------------------------------------------------------------

    @property
    def is_broker(self) -> bool:
        return ProcessRole.BROKER in self.process_roles

    @property
    def is_controller(self) -> bool:
        return ProcessRole.CONTROLLER in self.process_roles

    @property
    def roles_text(self) -> str:
        return ",".join(r.value for r in ProcessRole if r in self.process_roles)

    @property
    def voter_ids(self) -> tuple[int, ...]:
        return tuple(v.node_id for v in self.quorum_voters)

    @property
    def is_dynamic_quorum(self) -> bool:
        """No static ``controller.quorum.voters``: the voters come from the VotersRecord."""
        return not self.quorum_voters

    def voter(self, node_id: int) -> Voter | None:
        return next((v for v in self.quorum_voters if v.node_id == node_id), None)

    @property
    def controller_listeners(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.listeners if e.listener in self.controller_listener_names)

    @property
    def broker_listeners(self) -> tuple[Endpoint, ...]:
        return tuple(e for e in self.listeners if e.listener not in self.controller_listener_names)

    @property
    def effective_advertised_listeners(self) -> tuple[Endpoint, ...]:
        """``advertised.listeners`` or, when unset, the non-controller ``listeners`` (Kafka's rule)."""
        if self.advertised_listeners:
            names = self.controller_listener_names
            return tuple(e for e in self.advertised_listeners if e.listener not in names)
        return self.broker_listeners

    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(self.max_connections, self.max_connections_per_ip,
                                self.max_connections_per_ip_overrides, self.connections_max_idle_ms,
                                self.failed_authentication_delay_ms)

    # --- the values as given ---------------------------------------------------------------

    @property
    def unknown_configs(self) -> tuple[str, ...]:
        """Names given that the catalogue does not know (logged at start, kept in ``raw``)."""
        return () if self.parsed is None else self.parsed.unknown

    def log_values(self, logger: logging.Logger) -> None:
        """What Kafka logs at start: every config value (passwords hidden) and the unknown names."""
        if self.parsed is None:
            return
        logger.info("%s", self.parsed.values_text("KafkaConfig"))
        if self.parsed.unknown:
            logger.warning("These configurations '[%s]' were supplied but are not used yet.",
                           ", ".join(self.parsed.unknown))

    # --- loading --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str) -> ServerConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="latin-1")
        except OSError as exc:
            raise ConfigError(f"Unable to read {path}: {exc.strerror or exc}") from None
        return cls.from_properties(properties_values(text, str(path)))

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ServerConfig:
        parsed = parse_broker_config(props)
        roles = _parse_roles(parsed)
        node_id = parsed.integer("node.id")
        if not parsed.is_set("node.id"):
            raise MissingConfigError("node.id")
        if node_id < 0:
            raise ConfigValueError("node.id", str(node_id), "Value must be at least 0")
        listeners = _parse_endpoints(parsed.text("listeners"), "listeners")
        advertised_text = parsed.text("advertised.listeners")
        advertised = _parse_endpoints(advertised_text, "advertised.listeners") if advertised_text else ()
        names_text = parsed.text("controller.listener.names")
        controller_names = tuple(n.strip().upper() for n in names_text.split(",") if n.strip())
        map_name = "listener.security.protocol.map"
        protocol_map = _parse_protocol_map(parsed.text(map_name), controller_names,
                                           explicit=parsed.is_set(map_name))
        voters = _parse_voters(",".join(parsed.elements("controller.quorum.voters")))
        bootstrap = _parse_bootstrap_servers(",".join(parsed.elements("controller.quorum.bootstrap.servers")))
        directories = log_dirs(parsed)
        if not directories:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        metadata_dir = parsed.text("metadata.log.dir") or directories[0]
        unstable = parsed.flag("unstable.feature.versions.enable")
        software_text = parsed.text(SOFTWARE_VERSION_CONFIG)
        try:
            software = (SoftwareVersion.for_release(software_text, unstable=unstable) if software_text
                        else SoftwareVersion.latest(unstable=unstable))
        except KraftwerkError as exc:
            raise ConfigValueError(SOFTWARE_VERSION_CONFIG, software_text, str(exc)) from None
        inter_broker = parsed.text("inter.broker.listener.name").strip().upper()
        if not inter_broker:
            non_controller = [e.listener for e in listeners if e.listener not in controller_names]
            use_default = "PLAINTEXT" in non_controller or not non_controller
            inter_broker = "PLAINTEXT" if use_default else non_controller[0]
        config = cls(
            node_id=node_id,
            process_roles=roles,
            listeners=listeners,
            advertised_listeners=advertised,
            controller_listener_names=controller_names,
            security_protocol_map=MappingProxyType(protocol_map),
            inter_broker_listener_name=inter_broker,
            quorum_voters=voters,
            quorum_bootstrap_servers=bootstrap,
            log_dirs=directories,
            metadata_log_dir=metadata_dir,
            software=software,
            broker_session_timeout_ms=parsed.integer("broker.session.timeout.ms"),
            broker_heartbeat_interval_ms=parsed.integer("broker.heartbeat.interval.ms"),
            initial_broker_registration_timeout_ms=parsed.integer("initial.broker.registration.timeout.ms"),
            election_timeout_ms=parsed.integer("controller.quorum.election.timeout.ms"),
            fetch_timeout_ms=parsed.integer("controller.quorum.fetch.timeout.ms"),
            election_backoff_max_ms=parsed.integer("controller.quorum.election.backoff.max.ms"),
            quorum_request_timeout_ms=parsed.integer("controller.quorum.request.timeout.ms"),
            retry_backoff_ms=parsed.integer("controller.quorum.retry.backoff.ms"),
            socket_request_max_bytes=parsed.integer("socket.request.max.bytes"),
            max_connections=parsed.integer("max.connections"),
            max_connections_per_ip=parsed.integer("max.connections.per.ip"),
            max_connections_per_ip_overrides=MappingProxyType(
                _parse_ip_overrides(parsed.text("max.connections.per.ip.overrides"))),
            connections_max_idle_ms=parsed.integer("connections.max.idle.ms"),
            failed_authentication_delay_ms=parsed.integer("connection.failed.authentication.delay.ms"),
            metadata_log_retained=(parsed.integer("metadata.max.retention.ms"),
                                   parsed.integer("metadata.max.retention.bytes")) == (-1, -1),
            unstable_feature_versions_enable=unstable,
            metadata_max_idle_interval_ms=parsed.integer("metadata.max.idle.interval.ms"),
            log_file=parsed.text(LOG_FILE_CONFIG) or None,
            raw=ConfigMap(props),
            parsed=parsed,
        )
        config.validate()
        security = {e.listener: listener_security(props, e.listener, protocol_map[e.listener])
                    for e in listeners}
        try:
            authorizer = StandardAuthorizer.from_config(props)
        except AuthorizerConfigError as exc:
            raise ConfigError(str(exc)) from None
        def reach(listener: str | None, mechanism_config: str) -> ClientSecurity:
            if listener is None:
                return PLAINTEXT
            protocol = protocol_map.get(listener, "PLAINTEXT")
            return inter_node_security(props, listener, protocol, mechanism_config)

        return dataclasses.replace(
            config, security=MappingProxyType(security), authorizer=authorizer,
            controller_client=reach(controller_names[0] if controller_names else None,
                                    "sasl.mechanism.controller.protocol"),
            inter_broker_client=reach(inter_broker if config.is_broker else None,
                                      "sasl.mechanism.inter.broker.protocol"))

    def validate(self) -> None:
        """Kafka's ``KafkaConfig`` KRaft checks, with its texts."""
        voter_ids = set(self.voter_ids)
        voters = "{" + ", ".join(str(v) for v in sorted(voter_ids)) + "}"
        cln = "controller.listener.names"
        if not voter_ids and not self.quorum_bootstrap_servers:
            raise _E("If using process.roles, either controller.quorum.bootstrap.servers must contain the "
                     "set of bootstrap controllers or controller.quorum.voters must contain a parseable set "
                     "of controllers.")
        listener_names = {e.listener for e in self.listeners}
        if self.is_controller:
            if voter_ids and self.node_id not in voter_ids:
                raise _E(f"If process.roles contains the 'controller' role, the node id {self.node_id} "
                         f"must be included in the set of voters controller.quorum.voters={voters}")
            if not self.controller_listeners:
                raise _E(f"{cln} must contain at least one value appearing in the 'listeners' configuration "
                         "when running the KRaft controller role")
            if not set(self.controller_listener_names) <= listener_names:
                raise _E(f"{cln} must only contain values appearing in the 'listeners' configuration when "
                         "running the KRaft controller role")
        if self.is_controller and not self.is_broker:
            if self.advertised_listeners:
                raise _E("The advertised.listeners config must be empty when process.roles=controller")
            if self.broker_listeners:
                raise _E(f"The listeners config must only contain KRaft controller listeners from {cln} when "
                         "process.roles=controller")
        if self.is_broker:
            self._validate_broker(voter_ids, voters)
        for endpoint in (*self.listeners, *self.advertised_listeners):
            protocol = self.security_protocol_map.get(endpoint.listener)
            if protocol is None:
                raise _E(f"No security protocol defined for listener {endpoint.listener}")
        migration = self.raw.get("zookeeper.metadata.migration.enable", "false").strip().lower() == "true"
        if migration and not self.raw.get("zookeeper.connect", "").strip():
            raise _E("If using zookeeper.metadata.migration.enable in KRaft mode, zookeeper.connect must "
                     "also be set.")
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise _E("broker.heartbeat.interval.ms must be less than broker.session.timeout.ms")

    def _validate_broker(self, voter_ids: set[int], voters: str) -> None:
        cln = "controller.listener.names"
        if not self.is_controller:
            if self.node_id in voter_ids:
                raise _E(f"If process.roles contains just the 'broker' role, the node id {self.node_id} must "
                         f"not be included in the set of voters controller.quorum.voters={voters}")
            if not self.controller_listener_names:
                raise _E(f"{cln} must contain at least one value when running KRaft with just the broker "
                         "role")
            if self.controller_listeners:
                raise _E(f"{cln} must not contain a value appearing in the 'listeners' configuration when "
                         "running KRaft with just the broker role")
        if any(e.listener in self.controller_listener_names for e in self.advertised_listeners):
            raise _E("The advertised.listeners config must not contain KRaft controller listeners from "
                     f"{cln} when process.roles contains the broker role because Kafka clients that send "
                     "requests via advertised listeners do not send requests to KRaft controllers -- they "
                     "only send requests to KRaft brokers.")
        if not self.effective_advertised_listeners:
            raise _E("There must be at least one advertised listener. Perhaps all listeners appear in "
                     f"{cln}?")
        if any(e.host == "0.0.0.0" for e in self.effective_advertised_listeners):
            raise _E("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a "
                     "routable IP address.")


_E = ConfigError


def _parse_roles(parsed: ParsedConfig) -> frozenset[ProcessRole]:
    names = [r for r in parsed.elements("process.roles") if r]
    if not names:
        raise MissingConfigError("process.roles")
    roles = [ProcessRole(name) for name in names]  # the catalogue's validator allowed only these
    if len(set(roles)) != len(roles):
        raise ConfigError(f"Duplicate role names found in `process.roles`: {names}")
    return frozenset(roles)


def _parse_endpoints(text: str | None, name: str) -> tuple[Endpoint, ...]:
    out: list[Endpoint] = []
    for item in (p.strip() for p in (text or "").split(",")):
        if not item:
            continue
        listener, sep, rest = item.partition("://")
        host, colon, port_text = rest.rpartition(":")
        if not sep or not colon or not listener:
            raise ConfigError(f"Invalid value {text} for configuration {name}: Unable to parse {item} to a "
                              "broker endpoint")
        try:
            port = int(port_text)
        except ValueError:
            raise ConfigError(f"Invalid value {text} for configuration {name}: Unable to parse {item} to a "
                              "broker endpoint") from None
        if not 0 <= port <= 65535:
            raise ConfigError(f"Invalid value {text} for configuration {name}: Invalid port in {item}")
        out.append(Endpoint(listener.upper(), host.strip("[]") or None, port))
    names = [e.listener for e in out]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise ConfigError(f"Each listener must have a different name, listeners: {text}")
    return tuple(out)


def _parse_protocol_map(text: str, controller_names: tuple[str, ...], *, explicit: bool) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, colon, protocol = item.partition(":")
        if not colon or not name.strip() or not protocol.strip():
            raise ConfigError(f"Invalid value {text} for configuration listener.security.protocol.map: Map "
                              f"entry '{item}' is not of the form 'key:value'")
        result[name.strip().upper()] = protocol.strip().upper()
    if not explicit:
        # Kafka maps unmapped controller listeners to PLAINTEXT when the map is left at its default.
        for name in controller_names:
            result.setdefault(name, "PLAINTEXT")
    return result


def _parse_ip_overrides(text: str) -> dict[str, int]:
    """``host:count,...`` (Kafka's ``max.connections.per.ip.overrides``)."""
    name = "max.connections.per.ip.overrides"
    out: dict[str, int] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        host, colon, count = item.rpartition(":")
        try:
            if not colon or not host or int(count) < 0:
                raise ValueError
            out[host.strip("[]")] = int(count)
        except ValueError:
            raise ConfigError(f"Invalid value {text} for configuration {name}: Map entry '{item}' is not of "
                              "the form 'host:count' with a count of at least 0") from None
    return out


def _parse_bootstrap_servers(text: str) -> tuple[tuple[str, int], ...]:
    """``host:port,...`` with the checks and texts of Kafka's ``QuorumConfig.parseBootstrapServers``."""
    out: list[tuple[str, int]] = []
    name = "controller.quorum.bootstrap.servers"
    for entry in (p.strip() for p in text.split(",")):
        if not entry:
            continue
        host, colon, port_text = entry.rpartition(":")
        host = host.strip("[]")
        if not colon or not host:
            raise ConfigError(f"Failed to parse host name from {entry} for the configuration {name}. Each "
                              'entry should be in the form "{host}:{port}"')
        try:
            port = int(port_text)
        except ValueError:
            raise ConfigError(f"Failed to parse host port from {entry} for the configuration {name}. Each "
                              'entry should be in the form "{host}:{port}"') from None
        out.append((host, port))
    return tuple(out)


def _parse_voters(text: str) -> tuple[Voter, ...]:
    voters: list[Voter] = []
    for entry in (p.strip() for p in text.split(",")):
        if not entry:
            continue
        id_text, at, address = entry.partition("@")
        host, colon, port_text = address.rpartition(":")
        try:
            if not at or not colon or not host:
                raise ValueError
            node_id, port = int(id_text), int(port_text)
        except ValueError:
            raise ConfigError(f"Invalid value {text} for configuration controller.quorum.voters: Failed to "
                              f"parse voter entry '{entry}', expected '{{id}}@{{host}}:{{port}}'") from None
        if any(v.node_id == node_id for v in voters):
            raise ConfigError(f"Invalid value {text} for configuration controller.quorum.voters: Duplicate "
                              f"voter id {node_id}")
        voters.append(Voter(node_id, host.strip("[]"), port))
    return tuple(voters)
