"""An async Kafka-protocol client: one connection, pipelined requests matched by correlation id.

:class:`Connection` is one TCP connection; a closed or timed-out connection fails every pending
request with a :class:`NetworkError` and is not reused. :class:`ReconnectingClient` owns the
address of one node and opens a new connection when needed, waiting an exponential backoff with
jitter between failed attempts (Kafka's ``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import random
from dataclasses import dataclass

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.protocol import codec
from kraftwerk.protocol.sasl_mechanisms import SaslAuthenticationError
from kraftwerk.runtime import framing
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity
from kraftwerk.runtime.errors import ConnectionClosedError, NetworkError, RequestTimeoutError

log = logging.getLogger(__name__)

DEFAULT_REQUEST_TIMEOUT_S = 30.0


@dataclass(slots=True)
class _Pending:
    api_key: int
    api_version: int
    future: asyncio.Future[codec.Value]


class Connection:
    """One open connection to a Kafka-protocol server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                 client_id: str | None, max_frame_bytes: int) -> None:
        self._reader = reader
        self._writer = writer
        self.client_id = client_id
        self.max_frame_bytes = max_frame_bytes
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(0)
        self._closed: NetworkError | None = None
        self._read_task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str | None = "kraftwerk",
                   connect_timeout_s: float = 10.0,
                   max_frame_bytes: int = framing.DEFAULT_MAX_FRAME_BYTES,
                   security: ClientSecurity = PLAINTEXT) -> Connection:
        """A connection, TLS-wrapped and SASL-authenticated as ``security`` says."""
        hostname = None if security.context is None else host
        try:
            async with asyncio.timeout(connect_timeout_s):  # not wait_for: see request()
                reader, writer = await asyncio.open_connection(host, port, ssl=security.context,
                                                               server_hostname=hostname)
        except TimeoutError:
            raise NetworkError(f"Connection to {host}:{port} timed out after {connect_timeout_s:g}s"
                               ) from None
        except OSError as exc:
            # asyncio's own text for a refusal ("Connect call failed (...)") does not say refused
            detail = os.strerror(exc.errno) if isinstance(exc, ConnectionError) and exc.errno else exc
            raise NetworkError(f"Connection to {host}:{port} failed: {detail}") from None
        conn = cls(reader, writer, client_id=client_id, max_frame_bytes=max_frame_bytes)
        if security.sasl:
            try:
                await security.authenticate_async(lambda key, version, body: conn.request(key, version, body))
            except SaslAuthenticationError as exc:
                await conn.close()
                raise NetworkError(f"SASL authentication to {host}:{port} failed: {exc}") from None
        return conn

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def send(self, api_key: int, api_version: int, body: codec.Value
             ) -> tuple[int, asyncio.Future[codec.Value]]:
        """Write a request now; returns its correlation id and a future of the response body."""
        if self._closed is not None:
            raise self._closed
        correlation_id = next(self._ids) & 0x7FFFFFFF
        frame = framing.encode_request(api_key, api_version, correlation_id, self.client_id, body)
        future: asyncio.Future[codec.Value] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = _Pending(api_key, api_version, future)
        self._writer.write(frame)
        return correlation_id, future

    async def request(self, api_key: int, api_version: int, body: codec.Value, *,
                      timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> codec.Value:
        """Send a request and wait for its response body."""
        _, future = self.send(api_key, api_version, body)
        try:
            await self._writer.drain()
        except ConnectionError as exc:
            self._fail(ConnectionClosedError(f"Connection lost: {exc}"))
        try:
            # Python 3.11's wait_for returns the result when the response lands in the same loop
            # turn as a cancellation, swallowing it: a fetcher loop cancelled at shutdown then ran on
            # forever and the broker never closed its ZooKeeper session. asyncio.timeout keeps it.
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(future)
        except TimeoutError:
            self._fail(RequestTimeoutError(f"Request (api key {api_key} v{api_version}) timed out "
                                           f"after {timeout_s:g}s"))
            raise self._closed or RequestTimeoutError("timed out") from None

    async def _read_loop(self) -> None:
        try:
            while True:
                size = framing.SIZE.unpack(await self._reader.readexactly(4))[0]
                framing.check_frame_size(size, self.max_frame_bytes)
                frame = await self._reader.readexactly(size)
                correlation_id = framing.peek_correlation_id(frame)
                pending = self._pending.pop(correlation_id, None)
                if pending is None:
                    raise NetworkError(f"Response with unknown correlation id {correlation_id}")
                try:
                    _, body = framing.parse_response(frame, pending.api_key, pending.api_version)
                except NetworkError as exc:
                    if not pending.future.done():
                        pending.future.set_exception(exc)
                    raise
                if not pending.future.done():
                    pending.future.set_result(body)
        except asyncio.IncompleteReadError:
            self._fail(ConnectionClosedError("Connection closed by the server"))
        except (ConnectionError, OSError) as exc:
            self._fail(ConnectionClosedError(f"Connection lost: {exc}"))
        except NetworkError as exc:
            self._fail(exc)
        except asyncio.CancelledError:
            self._fail(ConnectionClosedError("Connection closed"))
            raise

    def _fail(self, error: NetworkError) -> None:
        if self._closed is None:
            self._closed = error
        for pending in self._pending.values():
            if not pending.future.done():
                pending.future.set_exception(error)
                pending.future.exception()  # mark retrieved: nobody may be awaiting it
        self._pending.clear()
        self._writer.close()

    async def close(self) -> None:
        self._fail(ConnectionClosedError("Connection closed"))
        self._read_task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._read_task
        with contextlib.suppress(Exception):
            await self._writer.wait_closed()


class ReconnectingClient:
    """Requests to one node, reconnecting with exponential backoff and jitter after failures."""

    def __init__(self, host: str, port: int, *, client_id: str | None = "kraftwerk",
                 backoff_ms: int = 50, backoff_max_ms: int = 1000, rng: random.Random | None = None,
                 connect_timeout_s: float = 5.0, security: ClientSecurity = PLAINTEXT) -> None:
        self.host = host
        self.security = security
        self.port = port
        self.client_id = client_id
        self.backoff_ms = backoff_ms
        self.backoff_max_ms = backoff_max_ms
        self.connect_timeout_s = connect_timeout_s
        self._rng = rng or random.Random()
        self._conn: Connection | None = None
        self._failures = 0
        self._next_attempt = 0.0
        self._lock = asyncio.Lock()

    def next_backoff_s(self) -> float:
        """Kafka's exponential backoff: base * 2^(failures - 1), capped, with ±20% jitter."""
        if self._failures == 0:
            return 0.0
        backoff = ExponentialBackoff(self.backoff_ms, self.backoff_max_ms, jitter=0.2)
        return backoff.jittered_ms(self._failures - 1, self._rng) / 1000.0

    async def connection(self) -> Connection:
        async with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            loop = asyncio.get_running_loop()
            wait = self._next_attempt - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                self._conn = await Connection.open(self.host, self.port, client_id=self.client_id,
                                                   connect_timeout_s=self.connect_timeout_s,
                                                   security=self.security)
            except NetworkError:
                self._failures += 1
                self._next_attempt = loop.time() + self.next_backoff_s()
                raise
            self._failures = 0
            return self._conn

    async def request(self, api_key: int, api_version: int, body: codec.Value, *,
                      timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> codec.Value:
        conn = await self.connection()
        try:
            return await conn.request(api_key, api_version, body, timeout_s=timeout_s)
        except NetworkError:
            self._failures += 1
            self._next_attempt = asyncio.get_running_loop().time() + self.next_backoff_s()
            raise

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None
