"""A Kafka-protocol TCP server over asyncio.

One server per listener. Each connection reads size-prefixed frames, decodes the request header
and body, and hands the request to a :class:`RequestHandler`. Requests on one connection may be
pipelined and are handled concurrently (a raft Fetch may wait for new data), but responses are
written in request order, which is what Kafka guarantees and what its clients rely on.

As Kafka's ``SocketServer``: a frame above ``max_frame_bytes`` (``socket.request.max.bytes``), an
unknown api key, an unsupported version, or a body that does not decode closes the connection; an
ApiVersions request at a version we do not know gets a v0 UNSUPPORTED_VERSION answer instead.
Every such refusal is one WARN line naming the peer, the listener, the api and version and the
reason (rate-limited, where Kafka logs an ERROR with a stack trace each time). The size prefix is
checked before the frame is read, so a bad prefix never allocates. :class:`ConnectionLimits` bounds
what one peer can hold: ``max.connections``, ``max.connections.per.ip`` (with its overrides) and
``connections.max.idle.ms``. A listener's :class:`ListenerSecurity` adds TLS and, on SASL
listeners, Kafka's SaslHandshake + SaslAuthenticate exchange: until it succeeds only ApiVersions
and those two are served; a failure is answered, logged (rate-limited) and closes the connection.
Once the server closes (the node stops), a request still in a connection's buffer or not yet
started is dropped with the connection, as Kafka's stopped socket server does, rather than handed to
a node whose raft host and cores are closing. At DEBUG, the ``kraftwerk.request`` logger writes
one "Completed request:" JSON line per answered request, as Kafka's ``kafka.request.logger`` does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from kraftwerk.controller.authorizer import ANONYMOUS
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.sasl_mechanisms import PlainServer, SaslAuthenticationError, ScramServer
from kraftwerk.runtime import framing
from kraftwerk.runtime.errors import FrameTooLargeError, NetworkError
from kraftwerk.runtime.ratelimit import RateLimitedLog
from kraftwerk.runtime.security import ListenerSecurity

log = logging.getLogger(__name__)
request_log = logging.getLogger("kraftwerk.request")

#: What a SASL listener serves besides the node's APIs. SaslHandshake v0 (raw tokens on the socket,
#: before KIP-152) is not served: every client since Kafka 1.0 sends v1.
SASL_APIS: Mapping[int, tuple[int, int]] = {ApiKey.SASL_HANDSHAKE: (1, 1), ApiKey.SASL_AUTHENTICATE: (0, 2)}

#: Requests a single connection may have in flight before we stop reading from it (Kafka mutes a
#: channel after one; we allow pipelining but keep memory bounded).
MAX_IN_FLIGHT_PER_CONNECTION = 64


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Kafka's connection quotas for one listener (unbounded by default, idle after 10 minutes)."""

    max_connections: int = 2**31 - 1
    max_connections_per_ip: int = 2**31 - 1
    per_ip_overrides: Mapping[str, int] = field(default_factory=dict)
    idle_ms: int = 600_000
    #: ``connection.failed.authentication.delay.ms``: the refusal is answered, then the close waits
    failed_authentication_delay_ms: int = 100

    def for_ip(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    connection_id: int
    listener: str
    peer: str
    #: ``User:<name>`` once SASL authenticated the connection (Kafka's KafkaPrincipal)
    principal: str = ANONYMOUS


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request as the handler sees it."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: codec.Value
    connection: ConnectionInfo


class RequestHandler(Protocol):
    """What a node exposes to the network layer."""

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        """api key → (min, max) version served on this listener."""
        ...

    async def handle(self, request: Request) -> codec.Value | None:
        """The response body (None: no response, as for Produce with acks=0)."""
        ...


class _Connection:
    def __init__(self, server: KafkaServer, connection_id: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.info = ConnectionInfo(connection_id, server.listener, f"{peer[0]}:{peer[1]}" if peer else "?")
        self.pending: asyncio.Queue[tuple[framing.ParsedRequest, asyncio.Task[codec.Value | None]] | None]
        self.pending = asyncio.Queue(MAX_IN_FLIGHT_PER_CONNECTION)
        self.tasks: set[asyncio.Task[codec.Value | None]] = set()
        self.authenticated = not server.security.sasl
        self.mechanism: PlainServer | ScramServer | None = None
        self.closing = False
        """Closed by the server (it is stopping): requests still in the buffer are dropped, not served."""

    async def run(self) -> None:
        sender = asyncio.create_task(self._send_loop())
        try:
            await self._read_loop()
        except (NetworkError, ConnectionError, asyncio.IncompleteReadError) as exc:
            log.debug("closing connection %s from %s: %s", self.info.connection_id, self.info.peer, exc)
            sender.cancel()
        finally:
            with contextlib.suppress(asyncio.QueueFull):
                self.pending.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            for task in self.tasks:
                task.cancel()
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()

    async def _read(self, size: int) -> bytes | None:
        """``size`` bytes, or None once the connection has been idle (no byte read and no request
        in flight) for ``connections.max.idle.ms``; a request still being answered (a raft Fetch
        waiting for data) keeps the connection alive, as Kafka counts it as activity."""
        idle_s = self.server.limits.idle_ms / 1000
        while True:
            try:
                return await asyncio.wait_for(self.reader.readexactly(size), idle_s)
            except TimeoutError:
                if not self.tasks and self.pending.empty():
                    return None

    async def _read_loop(self) -> None:
        while True:
            try:
                size_bytes = await self._read(4)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise
                return  # clean close between frames
            if size_bytes is None:
                log.debug("Closing idle connection %d from %s on listener %s", self.info.connection_id,
                          self.info.peer, self.info.listener)
                return
            size = framing.SIZE.unpack(size_bytes)[0]
            try:
                framing.check_frame_size(size, self.server.max_frame_bytes)
            except FrameTooLargeError as exc:
                self._refused(None, None, str(exc))
                raise
            frame = await self._read(size)
            if frame is None:
                raise NetworkError("idle in the middle of a frame")
            supported = self.server.handler.supported_apis(self.server.listener)
            if not self.authenticated:
                supported = {ApiKey.API_VERSIONS: supported[ApiKey.API_VERSIONS], **SASL_APIS}
            try:
                parsed = framing.parse_request(frame, supported)
            except framing.InvalidRequestError as exc:
                self._refused(exc.api_key, exc.api_version, str(exc))
                raise
            if parsed.header.api_key in SASL_APIS:
                body, keep_open = self._sasl_step(parsed)
                await self.pending.put((parsed, asyncio.create_task(_answer(body))))
                if not keep_open:  # answered; the close waits, as Kafka's does (KIP-306)
                    await asyncio.sleep(self.server.limits.failed_authentication_delay_ms / 1000)
                    return
                continue
            task = asyncio.create_task(self._dispatch(parsed))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
            await self.pending.put((parsed, task))

    def _sasl_step(self, parsed: framing.ParsedRequest) -> tuple[codec.Value, bool]:
        """Answer a SaslHandshake or SaslAuthenticate (Kafka's ``SaslServerAuthenticator``): the
        response body, and whether the connection stays open."""
        security = self.server.security
        if parsed.header.api_key == ApiKey.SASL_HANDSHAKE:
            mechanism = parsed.body["mechanism"]
            self.mechanism = security.authenticator(mechanism)
            if self.mechanism is None:
                self._auth_failed(f"unsupported SASL mechanism {mechanism}")
                return {"errorCode": Errors.UNSUPPORTED_SASL_MECHANISM.code,
                        "mechanisms": list(security.mechanisms)}, False
            return {"errorCode": 0, "mechanisms": list(security.mechanisms)}, True
        if self.mechanism is None:
            self._auth_failed("SaslAuthenticate before SaslHandshake")
            return {"errorCode": Errors.ILLEGAL_SASL_STATE.code,
                    "errorMessage": "Unexpected SaslAuthenticate request before SaslHandshake",
                    "authBytes": b""}, False
        try:
            outcome = self.mechanism.step(parsed.body["authBytes"])
        except SaslAuthenticationError as exc:
            self._auth_failed(f"{self.mechanism.mechanism}: {exc}")
            return {"errorCode": Errors.SASL_AUTHENTICATION_FAILED.code, "errorMessage": str(exc),
                    "authBytes": b""}, False
        if outcome.user is not None:
            self.authenticated = True
            self.info = dataclasses.replace(self.info, principal=f"User:{outcome.user}")
            log.debug("Connection %d from %s authenticated as %s with %s", self.info.connection_id,
                      self.info.peer, self.info.principal, self.mechanism.mechanism)
        return {"errorCode": 0, "errorMessage": None, "authBytes": outcome.token,
                "sessionLifetimeMs": 0}, True

    def _auth_failed(self, reason: str) -> None:
        self.server.refusals.warning("Failed authentication with %s on listener %s (%s)", self.info.peer,
                                     self.info.listener, reason)

    def _refused(self, api_key: int | None, api_version: int | None, reason: str) -> None:
        what = "a frame" if api_key is None else f"api key {api_key} v{api_version}"
        self.server.refusals.warning("Closing connection %d from %s on listener %s: refused %s: %s",
                                     self.info.connection_id, self.info.peer, self.info.listener, what,
                                     reason)

    async def _dispatch(self, parsed: framing.ParsedRequest) -> codec.Value | None:
        head = parsed.header
        if self.closing:
            # Kafka's stopped socket server closes its connections: a request read after that (it
            # was in the buffer, or its task had not started) is not handed to a node that is
            # shutting down its raft host and cores
            log.debug("Dropping api key %s v%s on connection %d from %s: the listener is closing",
                      head.api_key, head.api_version, self.info.connection_id, self.info.peer)
            return None
        if parsed.unsupported_api_versions:
            high = self.server.handler.supported_apis(self.server.listener)[ApiKey.API_VERSIONS][1]
            return framing.unsupported_api_versions_response(high)
        request = Request(head.api_key, head.api_version, head.correlation_id, head.client_id, parsed.body,
                          self.info)
        body = await self.server.handler.handle(request)
        if head.api_key == ApiKey.API_VERSIONS and self.server.security.sasl and body is not None:
            sasl = [{"apiKey": k, "minVersion": lo, "maxVersion": hi} for k, (lo, hi) in SASL_APIS.items()]
            body = {**body, "apiKeys": [*body["apiKeys"], *sasl]}
        return body

    async def _send_loop(self) -> None:
        while True:
            item = await self.pending.get()
            if item is None:
                self.writer.close()  # after every response queued before the close was asked for
                return
            parsed, task = item
            head = parsed.header
            try:
                body = await task
                if body is None:
                    continue
                # An ApiVersions request at a version we do not know is answered at v0 (see framing).
                version = 0 if parsed.unsupported_api_versions else head.api_version
                frame = framing.encode_response(head.api_key, version, head.correlation_id, body)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("handler failed on api key %s v%s; closing connection %s",
                              head.api_key, head.api_version, self.info.connection_id)
                self.writer.close()
                return
            self.writer.write(frame)
            if request_log.isEnabledFor(logging.DEBUG):
                request_log.debug("Completed request:%s", json.dumps({
                    "requestHeader": {"requestApiKey": head.api_key, "requestApiVersion": head.api_version,
                                      "correlationId": head.correlation_id, "clientId": head.client_id},
                    "connection": self.info.peer, "listener": self.info.listener,
                    "errorCode": body.get("errorCode")}, separators=(",", ":")))
            await self.writer.drain()

    def close(self) -> None:
        self.closing = True
        self.writer.close()

    def close_after_pending(self) -> None:
        """Close once the responses to the requests already read are sent (a client whose request
        caused the close, e.g. the UpdateFeatures that changed metadata.version, gets its answer)."""
        try:
            self.pending.put_nowait(None)
        except asyncio.QueueFull:
            self.writer.close()


PLAINTEXT = ListenerSecurity()


async def _answer(body: codec.Value) -> codec.Value:
    return body


class KafkaServer:
    """Listens on one listener and serves requests with ``handler``."""

    def __init__(self, handler: RequestHandler, host: str, port: int, *, listener: str = "PLAINTEXT",
                 max_frame_bytes: int = framing.DEFAULT_MAX_FRAME_BYTES,
                 limits: ConnectionLimits = ConnectionLimits(),
                 security: ListenerSecurity = PLAINTEXT) -> None:
        self.handler = handler
        self.security = security
        self.limits = limits
        self._per_ip: collections.Counter[str] = collections.Counter()
        self.host = host
        self.requested_port = port
        self.listener = listener
        self.max_frame_bytes = max_frame_bytes
        self._server: asyncio.Server | None = None
        self._connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.refusals = RateLimitedLog(log)
        self._closing = False

    async def start(self) -> None:
        self._closing = False
        self._server = await asyncio.start_server(self._accept, self.host, self.requested_port,
                                                  reuse_address=True, ssl=self.security.ssl_context)

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        if self._server is None or not self._server.sockets:
            raise NetworkError(f"listener {self.listener} is not started")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:  # accepted as the listener closed: nothing will serve it
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        ip = str(peer[0]) if peer else "?"
        refusal = self._over_limit(ip)
        if refusal is not None:
            self.refusals.warning("Rejected connection from /%s on listener %s, %s", ip, self.listener,
                                  refusal)
            writer.close()
            return
        self._per_ip[ip] += 1
        conn = _Connection(self, next(self._ids), reader, writer)
        self._connections[conn.info.connection_id] = conn
        try:
            await conn.run()
        finally:
            self._connections.pop(conn.info.connection_id, None)
            self._per_ip[ip] -= 1
            if not self._per_ip[ip]:
                del self._per_ip[ip]

    def _over_limit(self, ip: str) -> str | None:
        """Why a new connection from ``ip`` is refused (Kafka's ``ConnectionQuotas``), or None."""
        per_ip = self.limits.for_ip(ip)
        if self._per_ip[ip] >= per_ip:
            return f"address already has the configured maximum of {per_ip} connections."
        if len(self._connections) >= self.limits.max_connections:
            return f"the listener already has the configured maximum of {self.limits.max_connections} " \
                   "connections (max.connections)."
        return None

    def close_connections(self, *, graceful: bool = False) -> int:
        """Close every client connection; returns how many. ``graceful`` lets each connection send
        the responses it owes first (used after a metadata.version change)."""
        conns = list(self._connections.values())
        for conn in conns:
            if graceful:
                conn.close_after_pending()
            else:
                conn.close()
        return len(conns)

    async def close(self) -> None:
        self._closing = True
        if self._server is not None:
            self._server.close()
            self.close_connections()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
            self._server = None
