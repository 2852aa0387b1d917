"""``server.properties`` for a KRaft node, with Kafka's config names, defaults and validation texts.

Only what the node uses is interpreted; every other key is kept (``ServerConfig.raw``) so a broker
can report its static configs. ``kraftwerk.software.version`` (ours) names the Kafka release whose
feature ranges the node advertises (``SoftwareVersion.for_release``), so a rolling upgrade of
binaries can be rehearsed on one machine; it defaults to this software.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from kraftwerk.errors import KraftwerkError
from kraftwerk.runtime.errors import ConfigError
from kraftwerk.storage.properties import parse_properties, properties_dict
from kraftwerk.versions.software import SoftwareVersion

SOFTWARE_VERSION_CONFIG = "kraftwerk.software.version"
LOG_FILE_CONFIG = "kraftwerk.log.file"
DEFAULT_SECURITY_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"


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
    #: ``metadata.max.retention.ms`` and ``metadata.max.retention.bytes`` both -1 (Kafka's
    #: unlimited retention): the metadata log keeps every segment behind its snapshots
    metadata_log_retained: bool = False
    unstable_feature_versions_enable: bool = False
    log_file: str | None = None
    raw: Mapping[str, str] = field(default_factory=dict)

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

    # --- loading --------------------------------------------------------------------------

    @classmethod
    def load(cls, path: Path | str) -> ServerConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="latin-1")
        except OSError as exc:
            raise ConfigError(f"Unable to read {path}: {exc.strerror or exc}") from None
        try:
            entries = properties_dict(parse_properties(text, path))
        except KraftwerkError as exc:
            raise ConfigError(str(exc)) from None
        return cls.from_properties({k: e.value.strip() for k, e in entries.items()})

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ServerConfig:
        roles = _parse_roles(props.get("process.roles"))
        node_id = _int(props, "node.id", None)
        if node_id < 0:
            raise ConfigError(f"Invalid value {node_id} for configuration node.id: Value must be at least 0")
        listeners = _parse_endpoints(props.get("listeners", "PLAINTEXT://:9092"), "listeners")
        advertised_text = props.get("advertised.listeners")
        advertised = _parse_endpoints(advertised_text, "advertised.listeners") if advertised_text else ()
        names_text = props.get("controller.listener.names", "")
        controller_names = tuple(n.strip().upper() for n in names_text.split(",") if n.strip())
        protocol_map = _parse_protocol_map(props.get("listener.security.protocol.map"), controller_names)
        voters = _parse_voters(props.get("controller.quorum.voters", ""))
        bootstrap = _parse_bootstrap_servers(props.get("controller.quorum.bootstrap.servers", ""))
        dirs_text = props.get("log.dirs") or props.get("log.dir") or "/tmp/kafka-logs"
        log_dirs = tuple(d.strip() for d in dirs_text.split(",") if d.strip())
        if not log_dirs:
            raise ConfigError("At least one log directory must be defined via log.dirs or log.dir.")
        metadata_dir = props.get("metadata.log.dir") or log_dirs[0]
        unstable = _bool(props, "unstable.feature.versions.enable", False)
        software_text = props.get(SOFTWARE_VERSION_CONFIG)
        try:
            software = (SoftwareVersion.for_release(software_text, unstable=unstable) if software_text
                        else SoftwareVersion.latest(unstable=unstable))
        except KraftwerkError as exc:
            raise ConfigError(f"Invalid value {software_text} for configuration {SOFTWARE_VERSION_CONFIG}: "
                              f"{exc}") from None
        inter_broker = props.get("inter.broker.listener.name", "").strip().upper()
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
            log_dirs=log_dirs,
            metadata_log_dir=metadata_dir,
            software=software,
            broker_session_timeout_ms=_int(props, "broker.session.timeout.ms", 9000, minimum=1),
            broker_heartbeat_interval_ms=_int(props, "broker.heartbeat.interval.ms", 2000, minimum=1),
            initial_broker_registration_timeout_ms=_int(
                props, "initial.broker.registration.timeout.ms", 60000),
            election_timeout_ms=_int(props, "controller.quorum.election.timeout.ms", 1000, minimum=1),
            fetch_timeout_ms=_int(props, "controller.quorum.fetch.timeout.ms", 2000, minimum=1),
            election_backoff_max_ms=_int(props, "controller.quorum.election.backoff.max.ms", 1000, minimum=1),
            quorum_request_timeout_ms=_int(props, "controller.quorum.request.timeout.ms", 2000, minimum=1),
            retry_backoff_ms=_int(props, "controller.quorum.retry.backoff.ms", 20, minimum=0),
            socket_request_max_bytes=_int(props, "socket.request.max.bytes", 104_857_600, minimum=1),
            metadata_log_retained=(_long(props, "metadata.max.retention.ms", 604_800_000),
                                   _long(props, "metadata.max.retention.bytes", 104_857_600)) == (-1, -1),
            unstable_feature_versions_enable=unstable,
            log_file=props.get(LOG_FILE_CONFIG) or None,
            raw=MappingProxyType(dict(props)),
        )
        config.validate()
        return config

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
            if protocol != "PLAINTEXT":
                raise _E(f"Listener {endpoint.listener} uses security protocol {protocol}; kraftwerk nodes "
                         "serve PLAINTEXT only")
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


def _missing(name: str) -> ConfigError:
    return ConfigError(f'Missing required configuration "{name}" which has no default value.')


def _int(props: Mapping[str, str], name: str, default: int | None, *, minimum: int | None = None) -> int:
    text = props.get(name)
    if text is None or text == "":
        if default is None:
            raise _missing(name)
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type "
                          "INT") from None
    if not -(2**31) <= value < 2**31:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type INT")
    if minimum is not None and value < minimum:
        raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {minimum}")
    return value


def _long(props: Mapping[str, str], name: str, default: int) -> int:
    text = props.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type "
                          "LONG") from None
    if not -(2**63) <= value < 2**63:
        raise ConfigError(f"Invalid value {text} for configuration {name}: Not a number of type LONG")
    return value


def _bool(props: Mapping[str, str], name: str, default: bool) -> bool:
    text = props.get(name)
    if text is None or text == "":
        return default
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    raise ConfigError(f"Invalid value {text} for configuration {name}: Expected value to be either true or "
                      "false")


def _parse_roles(text: str | None) -> frozenset[ProcessRole]:
    if text is None or not text.strip():
        raise _missing("process.roles")
    names = [r.strip() for r in text.split(",") if r.strip()]
    roles: list[ProcessRole] = []
    for name in names:
        try:
            roles.append(ProcessRole(name))
        except ValueError:
            raise ConfigError(f"Unknown process role '{name}' (only 'broker' and 'controller' are allowed "
                              "roles)") from None
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


def _parse_protocol_map(text: str | None, controller_names: tuple[str, ...]) -> dict[str, str]:
    explicit = text is not None and text.strip() != ""
    result: dict[str, str] = {}
    source = text if explicit and text else DEFAULT_SECURITY_PROTOCOL_MAP
    for item in (p.strip() for p in source.split(",")):
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
