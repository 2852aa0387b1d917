"""What a listener's security protocol asks of a connection: a TLS context from Kafka's PEM key
store configs, and the SASL mechanisms (with PLAIN's JAAS users) the listener accepts.

Kafka's lookup order holds: ``listener.name.<listener>.<config>`` first, then ``<config>``; a SASL
JAAS config is looked up as ``listener.name.<listener>.<mechanism>.sasl.jaas.config``, then
``listener.name.<listener>.sasl.jaas.config``, then ``sasl.jaas.config``. Only PEM key stores are
read (``ssl.keystore.type=PEM``), as files or inline. No error text here ever quotes a value: the
configs involved are passwords and private keys.
"""

from __future__ import annotations

import contextlib
import os
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kraftwerk.config.errors import ConfigError
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.sasl_mechanisms import (
    MECHANISMS,
    SCRAM_MECHANISMS,
    PlainServer,
    SaltedCredential,
    ScramServer,
    parse_jaas_options,
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}

#: Looks up the SCRAM credential of (mechanism, user) in the node's metadata image.
ScramLookup = Callable[[str, str], SaltedCredential | None]


@dataclass(frozen=True)
class ListenerSecurity:
    """One listener's protocol, TLS context (SSL, SASL_SSL) and SASL mechanisms (SASL_*)."""

    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    mechanisms: tuple[str, ...] = ()
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    scram_lookup: ScramLookup | None = field(default=None, repr=False)

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def authenticator(self, mechanism: str) -> PlainServer | ScramServer | None:
        """A fresh server for ``mechanism``, or None when this listener does not enable it."""
        if mechanism not in self.mechanisms:
            return None
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users)
        lookup = self.scram_lookup
        return ScramServer(mechanism, lambda user: None if lookup is None else lookup(mechanism, user))


def listener_security(props: Mapping[str, str], listener: str, protocol: str,
                      scram_lookup: ScramLookup | None = None) -> ListenerSecurity:
    """The security of ``listener`` from ``server.properties`` (ConfigError on anything unusable)."""
    if protocol not in PROTOCOLS:
        raise ConfigError(f"Unknown security protocol {protocol} for listener {listener}; expected one of "
                          f"{', '.join(PROTOCOLS)}")
    prefix = f"listener.name.{listener.lower()}."

    def get(name: str, default: str | None = None) -> str | None:
        return props.get(prefix + name, props.get(name, default))

    context = _ssl_context(get, listener) if protocol in ("SSL", "SASL_SSL") else None
    if not protocol.startswith("SASL_"):
        return ListenerSecurity(protocol, context)
    mechanisms = tuple(m.strip() for m in (get("sasl.enabled.mechanisms", "GSSAPI") or "").split(",")
                       if m.strip())
    unsupported = [m for m in mechanisms if m not in MECHANISMS]
    if unsupported or not mechanisms:
        raise ConfigError(f"Listener {listener}: SASL mechanism(s) {', '.join(unsupported) or '(none)'} "
                          f"are not supported; kraftwerk serves {', '.join(MECHANISMS)} "
                          "(sasl.enabled.mechanisms)")
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        jaas = props.get(prefix + "plain.sasl.jaas.config") or get("sasl.jaas.config")
        if not jaas:
            raise ConfigError(f"Listener {listener} enables SASL PLAIN but has no JAAS config "
                              f"({prefix}plain.sasl.jaas.config)")
        try:
            options = parse_jaas_options(jaas)
        except ProtocolError as exc:
            raise ConfigError(f"Invalid JAAS config for listener {listener}: {exc}") from None
        users = {k[len("user_"):]: v for k, v in options.items() if k.startswith("user_")}
    return ListenerSecurity(protocol, context, mechanisms, MappingProxyType(users), scram_lookup)


def _ssl_context(get: Callable[..., str | None], listener: str) -> ssl.SSLContext:
    def fail(reason: str) -> ConfigError:
        return ConfigError(f"Listener {listener}: {reason}")

    if get("ssl.keystore.type", "JKS") != "PEM":
        raise fail("kraftwerk reads PEM key stores only; set ssl.keystore.type=PEM")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in (get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3") or "").split(",")]
    versions = sorted(_TLS_VERSIONS[p] for p in enabled if p in _TLS_VERSIONS)
    if not versions:
        raise fail("ssl.enabled.protocols names no protocol kraftwerk serves (TLSv1.2, TLSv1.3)")
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    password = get("ssl.key.password") or get("ssl.keystore.password")
    location, chain, key = get("ssl.keystore.location"), get("ssl.keystore.certificate.chain"), \
        get("ssl.keystore.key")
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            with _in_memory_file(chain + "\n" + key) as path:
                context.load_cert_chain(path, password=password)
        else:
            raise fail("an SSL listener needs ssl.keystore.location or ssl.keystore.certificate.chain and "
                       "ssl.keystore.key")
    except (OSError, ssl.SSLError) as exc:
        raise fail(f"unable to load the key store ({type(exc).__name__}: a missing file, a bad key or "
                   "certificate, or a wrong ssl.key.password)") from None
    client_auth = get("ssl.client.auth", "none") or "none"
    if client_auth not in _CLIENT_AUTH:
        raise fail("ssl.client.auth must be one of required, requested, none")
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if get("ssl.truststore.type", "JKS") != "PEM" and (get("ssl.truststore.location")
                                                       or get("ssl.truststore.certificates")):
        raise fail("kraftwerk reads PEM trust stores only; set ssl.truststore.type=PEM")
    try:
        if trust := get("ssl.truststore.location"):
            context.load_verify_locations(cafile=trust)
        if certificates := get("ssl.truststore.certificates"):
            context.load_verify_locations(cadata=certificates)
    except (OSError, ssl.SSLError) as exc:
        raise fail(f"unable to load the trust store ({type(exc).__name__})") from None
    if client_auth != "none" and not context.get_ca_certs():
        raise fail(f"ssl.client.auth={client_auth} needs a trust store (ssl.truststore.*)")
    return context


@contextlib.contextmanager
def _in_memory_file(text: str) -> Iterator[str]:
    """A path to ``text`` that never touches a disk (a memfd): the inline key must not be written out."""
    fd = os.memfd_create("kraftwerk-keystore", os.MFD_CLOEXEC)
    try:
        os.write(fd, text.encode())
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def scram_lookup_from(image: Callable[[], MetadataImage | None]) -> ScramLookup:
    """A lookup in the UserScramCredentialRecords of the node's current image (read on each call,
    so a user added while the node runs can log in)."""

    def lookup(mechanism: str, user: str) -> SaltedCredential | None:
        current = image()
        found = None if current is None else current.scram.get((SCRAM_MECHANISMS[mechanism][0], user))
        if found is None:
            return None
        return SaltedCredential(found.salt, found.stored_key, found.server_key, found.iterations)

    return lookup
