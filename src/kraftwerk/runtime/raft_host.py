"""Runs the sans-I/O :class:`~kraftwerk.raft.RaftNode` over asyncio TCP.

The host is the raft core's only window on the world:

- requests from peers arrive through the node's :class:`~kraftwerk.runtime.server.KafkaServer`
  (:meth:`RaftHost.handle`); each gets a host-unique correlation id, so that a response the core
  defers (a long-poll Fetch) can be matched to the connection waiting for it;
- :class:`~kraftwerk.raft.SendRequest` effects go out on one :class:`ReconnectingClient` per
  peer, and their responses (or failures) go back into the core; a peer's address comes from
  ``peers`` or, for a dynamic quorum, from the core (``RaftNode.address_of``: the VotersRecord's
  endpoints, the bootstrap servers, the leader endpoints responses name);
- timers: one task sleeps until ``next_deadline_ms()`` or until something wakes it, then polls;
- time is the wall clock in milliseconds, as Kafka's raft client uses (batch timestamps are
  wall-clock times);
- committed batches are drained after every event and handed to the state machine callback,
  and appends can wait for their commit (:meth:`RaftHost.wait_committed`);
- a request refused with INCONSISTENT_CLUSTER_ID is logged on the refusing side (one rate-limited
  WARN naming the peer and both cluster ids), and a refusal of this node's own requests is handed
  to ``on_cluster_id_refused`` (the node finds out the quorum's id and reports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.raft import (
    Committed,
    NotLeaderError,
    RaftNode,
    SendRequest,
    SendResponse,
    SnapshotId,
)
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity
from kraftwerk.runtime.errors import NetworkError
from kraftwerk.runtime.ratelimit import RateLimitedLog
from kraftwerk.runtime.server import Request

log = logging.getLogger(__name__)

_INCONSISTENT_CLUSTER_ID = Errors.INCONSISTENT_CLUSTER_ID.code

#: The raft RPCs a controller listener serves: (min, max) versions we accept from peers and tools.
RAFT_APIS: dict[int, tuple[int, int]] = {
    ApiKey.FETCH: (17, 17),
    ApiKey.VOTE: (0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
    ApiKey.END_QUORUM_EPOCH: (0, 1),
    ApiKey.DESCRIBE_QUORUM: (0, 2),
    ApiKey.FETCH_SNAPSHOT: (0, 1),
    ApiKey.ADD_RAFT_VOTER: (0, 1),
    ApiKey.REMOVE_RAFT_VOTER: (0, 0),
}


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


def source_of(api_key: int, body: codec.Value) -> int:
    """The sending replica's id as the request body names it (-1 when it names none: tools)."""
    try:
        if api_key == ApiKey.FETCH:
            state: dict[str, Any] = body.get("replicaState") or {}
            replica: Any = state.get("replicaId", body.get("replicaId", -1))
            return int(replica)
        if api_key == ApiKey.FETCH_SNAPSHOT:
            return int(body.get("replicaId", -1))
        partition = body["topics"][0]["partitions"][0]
        if api_key == ApiKey.VOTE:
            return int(partition.get("replicaId", partition.get("candidateId", -1)))
        if api_key in (ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH):
            return int(partition.get("leaderId", -1))
    except (KeyError, IndexError, TypeError, ValueError):
        pass
    return -1


@dataclass(slots=True)
class _CommitWaiter:
    offset: int
    epoch: int
    future: asyncio.Future[bool]


class RaftHost:
    """Drives one RaftNode: network, timers, commit notifications."""

    def __init__(self, node: RaftNode, peers: Mapping[int, tuple[str, int]] | None = None, *,
                 on_committed: Callable[[list[Committed]], None] | None = None,
                 clock: Callable[[], int] = wall_clock_ms, client_id: str = "raft-client",
                 request_timeout_ms: int = 2000, rng: random.Random | None = None,
                 on_cluster_id_refused: Callable[[int], None] | None = None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.node = node
        self.security = security
        """How this node reaches the controllers' listener (TLS, SASL)."""
        self.clock = clock
        self.on_committed = on_committed
        self.on_cluster_id_refused = on_cluster_id_refused
        self._refusals = RateLimitedLog(log)
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self._rng = rng or random.Random()
        self._peers = dict(peers or {})
        self._clients: dict[int, ReconnectingClient] = {}
        self._inbound: dict[int, asyncio.Future[codec.Value]] = {}
        self._ids = itertools.count(1)
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.Task[None] | None = None
        self._waiters: list[_CommitWaiter] = []
        self._listeners: list[Callable[[], None]] = []
        self._last_leader: tuple[int | None, int] = (None, -1)
        self.closed = False

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._timer = asyncio.create_task(self._timer_loop(), name="raft-timer")

    async def resign(self, timeout_s: float) -> None:
        """Hand leadership over before a clean stop: EndQuorumEpoch to every other voter, then
        wait (at most ``timeout_s``) until each has answered."""
        if not self.node.resign(self.clock()):
            return
        self._apply(self.node.take_effects())
        deadline = time.monotonic() + timeout_s
        while self.node.resigning and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def close(self) -> None:
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._timer
        for task in list(self._tasks):
            task.cancel()
        for future in self._inbound.values():
            if not future.done():
                future.cancel()
        for waiter in self._waiters:
            if not waiter.future.done():
                waiter.future.set_result(False)
        for client in self._clients.values():
            await client.close()

    def add_state_listener(self, listener: Callable[[], None]) -> None:
        """Called after every event that may have changed leader, epoch or high watermark."""
        self._listeners.append(listener)

    # --- inbound --------------------------------------------------------------------------

    async def handle(self, request: Request) -> codec.Value | None:
        """Serve a raft RPC from a peer (or DescribeQuorum from a tool)."""
        if self.closed:
            raise NetworkError("raft host is closed")
        correlation_id = next(self._ids)
        future: asyncio.Future[codec.Value] = asyncio.get_running_loop().create_future()
        self._inbound[correlation_id] = future
        source = source_of(request.api_key, request.body)
        try:
            self._apply(self.node.handle_request(source, request.api_key, request.api_version, request.body,
                                                 correlation_id, self.clock()))
            response = await future
        finally:
            self._inbound.pop(correlation_id, None)
        if response.get("errorCode") == _INCONSISTENT_CLUSTER_ID:
            self._refusals.warning(
                "Refused %s from %s (replica %d): its cluster id %s is not this quorum's cluster id %s "
                "(INCONSISTENT_CLUSTER_ID)", by_api_key(Kind.REQUEST, request.api_key).api_name,
                request.connection.peer, source, request.body.get("clusterId"), self.node.config.cluster_id)
        return response

    # --- writes ---------------------------------------------------------------------------

    def append(self, records: Sequence[bytes]) -> int:
        """Append one batch (leader only); returns the offset of its last record.

        Raises :class:`~kraftwerk.raft.NotLeaderError` when this node is not the leader."""
        offset = self.node.append(list(records), self.clock())
        self._apply(self.node.take_effects())
        self._wake.set()
        return offset

    def upgrade_kraft_version(self, level: int, validate_only: bool = False) -> bool:
        """Raise kraft.version (leader only, see :meth:`RaftNode.upgrade_kraft_version`)."""
        written = self.node.upgrade_kraft_version(level, self.clock(), validate_only)
        self._apply(self.node.take_effects())
        self._wake.set()
        return written

    async def wait_committed(self, offset: int, timeout_s: float | None = None) -> bool:
        """Wait until the high watermark passes ``offset``; False if leadership (the epoch) changes
        first or the timeout expires: the append may then be lost and must not be acknowledged."""
        hw = self.node.high_watermark
        if hw is not None and hw > offset:
            return True
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append(_CommitWaiter(offset, self.node.epoch, future))
        try:
            # Not wait_for: Python 3.11's returns the result when the commit lands in the same loop
            # turn as a cancellation, and a waiter cancelled at shutdown went on to act on it.
            async with asyncio.timeout(timeout_s):
                return await future
        except TimeoutError:
            return False

    def deliver_committed_now(self) -> None:
        """Flush this node's log ahead of the append linger, then hand out what is committed.

        The high watermark can pass the leader's own unflushed end (two followers have the batch
        durably), but raft hands a batch to the state machine only once it is durable here too. A
        reply waiting for its write to reach this controller's state (read-your-writes) would wait
        out the linger; an fsync now costs less, and flushing early is always safe."""
        log = self.node.log
        if log.flushed_offset < log.end_offset:
            log.flush()
        self._after_event()

    def create_snapshot(self, end_offset: int, records: Sequence[bytes]) -> SnapshotId:
        """Store the state machine's snapshot below ``end_offset`` (and clean the log behind it)."""
        snapshot_id = self.node.create_snapshot(end_offset, list(records), self.clock())
        self._apply(self.node.take_effects())
        return snapshot_id

    # --- core driving ---------------------------------------------------------------------

    def _apply(self, effects: Iterable[Any] | None) -> None:
        for effect in effects or ():
            if isinstance(effect, SendResponse):
                future = self._inbound.get(effect.correlation_id)
                if future is not None and not future.done():
                    future.set_result(effect.body)
            elif isinstance(effect, SendRequest):
                task = asyncio.create_task(self._send(effect))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        self._after_event()

    def _after_event(self) -> None:
        committed = self.node.drain_committed()
        if committed and self.on_committed is not None:
            self.on_committed(committed)
        hw = self.node.high_watermark
        epoch = self.node.epoch
        if self._waiters:
            keep: list[_CommitWaiter] = []
            for waiter in self._waiters:
                if waiter.future.done():
                    continue
                if hw is not None and hw > waiter.offset:
                    waiter.future.set_result(True)
                elif epoch != waiter.epoch:
                    waiter.future.set_result(False)
                else:
                    keep.append(waiter)
            self._waiters = keep
        leader = (self.node.leader_id, epoch)
        if leader != self._last_leader:
            self._last_leader = leader
            log.info("raft: leader %s in epoch %d (this node %d is %s)", leader[0], epoch,
                     self.node.config.node_id, self.node.role.value)
        for listener in self._listeners:
            listener()
        self._wake.set()

    def _client(self, destination: int) -> ReconnectingClient | None:
        """The connection to ``destination`` at its current address (a new one if it moved)."""
        address = self._peers.get(destination) or self.node.address_of(destination)
        if address is None or destination == self.node.config.node_id:
            return None
        client = self._clients.get(destination)
        if client is None or (client.host, client.port) != address:
            if client is not None:
                task = asyncio.create_task(client.close())
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            client = ReconnectingClient(address[0], address[1], client_id=self.client_id, backoff_ms=20,
                                        backoff_max_ms=500, rng=random.Random(self._rng.getrandbits(32)),
                                        connect_timeout_s=self.request_timeout_ms / 1000,
                                        security=self.security)
            self._clients[destination] = client
        return client

    async def _send(self, effect: SendRequest) -> None:
        client = self._client(effect.destination)
        if client is None:
            log.warning("raft: no address for node %d", effect.destination)
            self._send_failed(effect)
            return
        try:
            body = await client.request(effect.api_key, effect.version, effect.body,
                                        timeout_s=self.request_timeout_ms / 1000 + 1.0)
        except NetworkError as exc:
            log.debug("raft: %s to node %d failed: %s", effect.api_key, effect.destination, exc)
            self._send_failed(effect)
            return
        if self.closed:
            return
        if body.get("errorCode") == _INCONSISTENT_CLUSTER_ID and self.on_cluster_id_refused is not None:
            self.on_cluster_id_refused(effect.destination)
        self._apply(self.node.handle_response(effect.destination, effect.api_key, effect.version, body,
                                              effect.correlation_id, self.clock()))

    def _send_failed(self, effect: SendRequest) -> None:
        if self.closed:
            return
        self._apply(self.node.handle_send_failure(effect.destination, effect.correlation_id, self.clock()))

    async def _timer_loop(self) -> None:
        while not self.closed:
            self._apply(self.node.poll(self.clock()))
            delay = max(0.0, (self.node.next_deadline_ms() - self.clock()) / 1000)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(delay, 1.0))

    # --- views ----------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.node.is_leader


__all__ = ["RAFT_APIS", "NotLeaderError", "RaftHost", "source_of", "wall_clock_ms"]
