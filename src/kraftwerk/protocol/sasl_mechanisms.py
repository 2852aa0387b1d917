"""The server side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677), as pure
state machines over the tokens that SaslAuthenticate carries, so that they are tested without a
socket and the network layer only moves bytes. Credentials are Kafka's: PLAIN users from the JAAS
``user_<name>="<password>"`` options, SCRAM users from UserScramCredentialRecord (salted keys only;
no password is ever kept)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kraftwerk.protocol.errors import ProtocolError

#: SCRAM mechanism name → (the mechanism byte of UserScramCredentialRecord, hash name).
SCRAM_MECHANISMS: Mapping[str, tuple[int, str]] = {"SCRAM-SHA-256": (1, "sha256"),
                                                   "SCRAM-SHA-512": (2, "sha512")}
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)
#: Kafka's bounds on SCRAM iterations (``ScramMechanism.minIterations`` and the alter limit).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
#: What Kafka's SaslServerAuthenticator tells a client whose SCRAM exchange failed.
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism {}"


class SaslAuthenticationError(ProtocolError):
    """The client's credentials or tokens were refused; the text is what the client is told."""


@dataclass(frozen=True, slots=True)
class SaltedCredential:
    """What UserScramCredentialRecord stores for one user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def scram_credential(mechanism: str, password: str, *, iterations: int = MIN_ITERATIONS,
                     salt: bytes | None = None) -> SaltedCredential:
    """RFC 5802's SaltedPassword, StoredKey and ServerKey for ``password``."""
    digest = SCRAM_MECHANISMS[mechanism][1]
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ProtocolError(f"Iterations {iterations} is out of range [{MIN_ITERATIONS}, {MAX_ITERATIONS}]")
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    return salted_credential(mechanism, salted, salt, iterations)


def salted_credential(mechanism: str, salted_password: bytes, salt: bytes,
                      iterations: int) -> SaltedCredential:
    """The stored form of a SaltedPassword (what AlterUserScramCredentials and ``--add-scram``'s
    ``saltedpassword`` carry): StoredKey = H(HMAC(salted, "Client Key")), ServerKey."""
    digest = SCRAM_MECHANISMS[mechanism][1]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    return SaltedCredential(salt, hashlib.new(digest, client_key).digest(),
                            hmac.digest(salted_password, b"Server Key", digest), iterations)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One step of an exchange: the token to answer with; ``user`` once authentication succeeded."""

    token: bytes
    user: str | None = None


class PlainServer:
    """RFC 4616: one token ``authzid NUL authcid NUL password``, checked against the JAAS users."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users

    def step(self, token: bytes) -> Outcome:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: expected 3 tokens, got "
                                          f"{len(parts)}")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that "
                                          "is different from username")
        return Outcome(b"", user)


_CLIENT_FIRST = re.compile(rb"n,(?:a=(?P<authzid>[^,]*))?,n=(?P<user>[^,]+),"
                           rb"r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<extensions>(?:,[A-Za-z]+=[^,]*)*)")
_CLIENT_FINAL = re.compile(rb"c=(?P<binding>[A-Za-z0-9+/=]+),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)"
                           rb"(?:,[A-Za-z]+=[^,]*)*,p=(?P<proof>[A-Za-z0-9+/=]+)")


def _sasl_name(raw: bytes) -> str:
    """RFC 5802's saslname: ``=2C`` is a comma and ``=3D`` an equals sign; any other ``=`` is bad."""
    text = raw.decode("utf-8", "replace")
    if re.search(r"=(?!2C|3D)", text):
        raise SaslAuthenticationError("Invalid SCRAM client first message: bad username encoding")
    return text.replace("=2C", ",").replace("=3D", "=")


class ScramServer:
    """RFC 5802 server: client-first → server-first (nonce, salt, iterations); client-final (proof)
    → server-final (signature). ``lookup(user)`` is the user's credential for this mechanism."""

    def __init__(self, mechanism: str, lookup: Callable[[str], SaltedCredential | None],
                 nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24)) -> None:
        self.mechanism = mechanism
        self._digest = SCRAM_MECHANISMS[mechanism][1]
        self._lookup = lookup
        self._nonce = nonce
        self._state: tuple[str, SaltedCredential, bytes, bytes] | None = None  # user, cred, first, nonce

    def _failed(self) -> SaslAuthenticationError:
        return SaslAuthenticationError(SCRAM_FAILED.format(self.mechanism))

    def step(self, token: bytes) -> Outcome:
        if self._state is None:
            return self._first(token)
        return self._final(token)

    def _first(self, token: bytes) -> Outcome:
        match = _CLIENT_FIRST.fullmatch(token)
        if match is None:
            raise SaslAuthenticationError("Invalid SCRAM client first message")
        user = _sasl_name(match["user"])
        authzid = match["authzid"]
        if authzid and _sasl_name(authzid) != user:
            raise SaslAuthenticationError("Authentication failed: Client requested an authorization id that "
                                          "is different from username")
        credential = self._lookup(user)
        if credential is None:
            raise self._failed()
        nonce = match["nonce"] + self._nonce().encode()
        server_first = b"r=%s,s=%s,i=%d" % (nonce, base64.b64encode(credential.salt), credential.iterations)
        client_first_bare = token[token.index(b"n=", 2):]
        self._state = (user, credential, client_first_bare + b"," + server_first, nonce)
        return Outcome(server_first)

    def _final(self, token: bytes) -> Outcome:
        assert self._state is not None
        user, credential, first_messages, nonce = self._state
        match = _CLIENT_FINAL.fullmatch(token)
        if match is None or match["nonce"] != nonce:
            raise self._failed()
        without_proof = token[: token.rindex(b",p=")]
        auth_message = first_messages + b"," + without_proof
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except ValueError:
            raise self._failed() from None
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        if len(proof) != len(signature):
            raise self._failed()
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), credential.stored_key):
            raise self._failed()
        server_signature = hmac.digest(credential.server_key, auth_message, self._digest)
        return Outcome(b"v=" + base64.b64encode(server_signature), user)


class ScramClient:
    """RFC 5802 client, the other side of :class:`ScramServer` (kraftwerk's own admin client logs in
    with it): client-first, then client-final with the proof, then the server's signature checked."""

    def __init__(self, mechanism: str, user: str, password: str,
                 nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24)) -> None:
        self._digest = SCRAM_MECHANISMS[mechanism][1]
        self.mechanism = mechanism
        self._password = password
        name = user.replace("=", "=3D").replace(",", "=2C")
        self._first_bare = b"n=%s,r=%s" % (name.encode(), nonce().encode())
        self._server_key: bytes | None = None
        self._auth_message = b""

    def first(self) -> bytes:
        return b"n,," + self._first_bare

    def final(self, server_first: bytes) -> bytes:
        fields = dict(item.split(b"=", 1) for item in server_first.split(b",") if b"=" in item)
        nonce = fields.get(b"r", b"")
        client_nonce = self._first_bare.rsplit(b"r=", 1)[1]
        if not nonce.startswith(client_nonce):
            raise SaslAuthenticationError("Invalid SCRAM server first message: nonce mismatch")
        try:
            salt, iterations = base64.b64decode(fields[b"s"], validate=True), int(fields[b"i"])
        except (KeyError, ValueError):
            raise SaslAuthenticationError("Invalid SCRAM server first message") from None
        if iterations < MIN_ITERATIONS:
            raise SaslAuthenticationError(f"Requested iterations {iterations} is less than the minimum "
                                          f"{MIN_ITERATIONS} for {self.mechanism}")
        salted = hashlib.pbkdf2_hmac(self._digest, self._password.encode(), salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._digest)
        stored_key = hashlib.new(self._digest, client_key).digest()
        without_proof = b"c=biws,r=" + nonce
        self._auth_message = self._first_bare + b"," + server_first + b"," + without_proof
        signature = hmac.digest(stored_key, self._auth_message, self._digest)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_key = hmac.digest(salted, b"Server Key", self._digest)
        return without_proof + b",p=" + base64.b64encode(proof)

    def verify(self, server_final: bytes) -> None:
        assert self._server_key is not None
        expected = b"v=" + base64.b64encode(hmac.digest(self._server_key, self._auth_message, self._digest))
        if not hmac.compare_digest(server_final, expected):
            raise SaslAuthenticationError("Invalid server signature in the SCRAM server final message")


def plain_token(user: str, password: str) -> bytes:
    """RFC 4616's PLAIN message (no authorization id)."""
    return b"\0" + user.encode() + b"\0" + password.encode()


def parse_jaas_options(text: str) -> dict[str, str]:
    """The options of a JAAS login module entry (``Module required key="value" ...;``), as Kafka's
    ``JaasConfig`` reads them: quoted or bare values, one module, a closing semicolon."""
    match = re.fullmatch(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?);\s*", text, re.S)
    if match is None:
        raise ProtocolError("JAAS config entry must be '<LoginModule> <flag> [key=value ...];'")
    options: dict[str, str] = {}
    rest = match[3]
    for item in re.finditer(r'\s*([^\s=]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^\s"]+)', rest):
        options[item[1]] = item[3].replace('\\"', '"') if item[3] is not None else item[2]
    leftover = re.sub(r'\s*([^\s=]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^\s"]+)', "", rest).strip()
    if leftover:
        raise ProtocolError("JAAS config entry has text that is not a key=value option")
    return options
