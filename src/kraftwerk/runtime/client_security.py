"""How kraftwerk's own clients reach a secured listener, from the client configs Kafka's tools read
(``--command-config``): ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config`` and the
``ssl.*`` trust and key stores (PEM), and the SASL exchange (SaslHandshake v1 + SaslAuthenticate)
run on a fresh connection as Kafka's client runs it."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.config.errors import ConfigError
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.sasl_mechanisms import (
    MECHANISMS,
    SaslAuthenticationError,
    ScramClient,
    parse_jaas_options,
    plain_token,
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: A request on the connection being set up (api key, version, body) and its sender.
Request = tuple[int, int, dict[str, Any]]
Roundtrip = Callable[[int, int, dict[str, Any]], Mapping[str, Any]]
AsyncRoundtrip = Callable[[int, int, dict[str, Any]], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """A client's side of a listener's security protocol."""

    protocol: str = "PLAINTEXT"
    context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    def __repr__(self) -> str:  # the password never reaches a log line or a traceback
        return (f"ClientSecurity(protocol={self.protocol!r}, mechanism={self.mechanism!r}, "
                f"user={self.username!r})")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def exchange(self) -> Generator[Request, Mapping[str, Any], None]:
        """The SASL exchange as the requests to send, each answered by the response sent back in
        (sans-I/O: a blocking and an asyncio client drive the same steps). SaslAuthenticationError
        with the broker's text when it refuses."""
        assert self.mechanism is not None
        handshake = yield ApiKey.SASL_HANDSHAKE, 1, {"mechanism": self.mechanism}
        if handshake["errorCode"]:
            offered = ", ".join(str(m) for m in handshake.get("mechanisms") or ())
            raise SaslAuthenticationError(f"Unsupported SASL mechanism {self.mechanism} (the broker offers "
                                          f"{offered or 'none'})")
        tokens: list[bytes] = []
        if self.mechanism == "PLAIN":
            yield from _authenticate(plain_token(self.username, self.password), tokens)
            return
        scram = ScramClient(self.mechanism, self.username, self.password)
        yield from _authenticate(scram.first(), tokens)
        yield from _authenticate(scram.final(tokens[-1]), tokens)
        scram.verify(tokens[-1])

    def authenticate(self, roundtrip: Roundtrip) -> None:
        """Runs :meth:`exchange` over a blocking ``roundtrip``."""
        steps = self.exchange()
        try:
            request = next(steps)
            while True:
                request = steps.send(roundtrip(*request))
        except StopIteration:
            return

    async def authenticate_async(self, roundtrip: AsyncRoundtrip) -> None:
        """Runs :meth:`exchange` over an asyncio ``roundtrip``."""
        steps = self.exchange()
        try:
            request = next(steps)
            while True:
                request = steps.send(await roundtrip(*request))
        except StopIteration:
            return


def _authenticate(token: bytes, tokens: list[bytes]) -> Generator[Request, Mapping[str, Any], None]:
    """One SaslAuthenticate round: the server's token is appended to ``tokens``."""
    answer = yield ApiKey.SASL_AUTHENTICATE, 1, {"authBytes": token}
    if answer["errorCode"]:
        raise SaslAuthenticationError(str(answer.get("errorMessage") or "SASL authentication failed"))
    tokens.append(bytes(answer["authBytes"]))


PLAINTEXT = ClientSecurity()


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """The client security ``props`` configure (ConfigError, Kafka's texts where it has them)."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"Invalid value {protocol} for configuration security.protocol: String must be "
                          f"one of: {', '.join(PROTOCOLS)}")
    context = _ssl_context(props) if protocol in ("SSL", "SASL_SSL") else None
    if context is not None:  # Kafka's default "https" checks the server's name; "" turns that off
        algorithm = props.get("ssl.endpoint.identification.algorithm", "https").strip().lower()
        context.check_hostname = algorithm == "https"
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol, context)
    mechanism = props.get("sasl.mechanism", "GSSAPI").strip()
    if mechanism not in MECHANISMS:
        raise ConfigError(f"sasl.mechanism={mechanism} is not supported; kraftwerk's clients speak "
                          f"{', '.join(MECHANISMS)}")
    jaas = props.get("sasl.jaas.config")
    if not jaas:
        raise ConfigError("sasl.jaas.config is required with security.protocol=" + protocol)
    try:
        options = parse_jaas_options(jaas)
    except ProtocolError as exc:
        raise ConfigError(f"Invalid sasl.jaas.config: {exc}") from None
    if "username" not in options or "password" not in options:
        raise ConfigError("sasl.jaas.config needs username and password options")
    return ClientSecurity(protocol, context, mechanism, options["username"], options["password"])


def inter_node_security(props: Mapping[str, str], listener: str, protocol: str,
                        mechanism_config: str) -> ClientSecurity:
    """How this node reaches ``listener`` of another node (the controller quorum, the broker to
    controller channel, replication), as Kafka reads it: the listener's protocol, the mechanism of
    ``mechanism_config`` (``sasl.mechanism.controller.protocol``,
    ``sasl.mechanism.inter.broker.protocol``), the username and password of the listener's JAAS
    config, its trust store and key store."""
    prefix = f"listener.name.{listener.lower()}."

    def get(name: str) -> str | None:
        return props.get(prefix + name, props.get(name))

    mechanism = props.get(mechanism_config, "GSSAPI").strip()
    flat = {"security.protocol": protocol, "sasl.mechanism": mechanism}
    jaas = props.get(f"{prefix}{mechanism.lower()}.sasl.jaas.config") or get("sasl.jaas.config")
    if jaas:
        flat["sasl.jaas.config"] = jaas
    for name in ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.certificates",
                 "ssl.keystore.location", "ssl.keystore.type", "ssl.key.password", "ssl.keystore.password",
                 "ssl.endpoint.identification.algorithm"):
        if (value := get(name)) is not None:
            flat[name] = value
    try:
        return client_security(flat)
    except ConfigError as exc:
        raise ConfigError(f"Listener {listener} ({mechanism_config}): {exc}") from None


def _ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    trust, certificates = props.get("ssl.truststore.location"), props.get("ssl.truststore.certificates")
    if (trust or certificates) and props.get("ssl.truststore.type", "JKS").strip().upper() != "PEM":
        raise ConfigError("kraftwerk's clients read PEM trust stores only; set ssl.truststore.type=PEM")
    try:
        if trust:
            context.load_verify_locations(cafile=trust)
        if certificates:
            context.load_verify_locations(cadata=certificates)
        if not trust and not certificates:
            context.load_default_certs()
        if keystore := props.get("ssl.keystore.location"):
            if props.get("ssl.keystore.type", "JKS").strip().upper() != "PEM":
                raise ConfigError("kraftwerk's clients read PEM key stores only; set ssl.keystore.type=PEM")
            password = props.get("ssl.key.password") or props.get("ssl.keystore.password")
            context.load_cert_chain(keystore, password=password)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"Unable to load the client's SSL stores ({type(exc).__name__}: a missing file, "
                          "a bad certificate or key, or a wrong password)") from None
    return context
