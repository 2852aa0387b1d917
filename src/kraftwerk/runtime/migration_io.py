"""The runtime side of a KRaft controller in migration mode: the driver's ZooKeeper actions
(:mod:`kraftwerk.node.migration_zk`) run through a kazoo session, and the loop that feeds their
outcomes back to the driver.

ZooKeeper calls block, so each action runs on a worker thread; the driver itself is only touched on
the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from kraftwerk.controller.migration_driver import (
    Action,
    ClaimZkController,
    MigrateMetadata,
    MigrationDriver,
    ReadZkBrokers,
    RecoverMigrationState,
)
from kraftwerk.controller.zk_controller import BrokerRequest
from kraftwerk.image.model import Endpoint, MetadataImage
from kraftwerk.migration.errors import MigrationError, ZooKeeperError
from kraftwerk.migration.reader import connect
from kraftwerk.node.host import NodeHost
from kraftwerk.node.migration_zk import ControllerEpochMovedError, MigrationZk
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.errors import NetworkError

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.1
COMMIT_TIMEOUT_S = 30.0
BROKER_REQUEST_ATTEMPTS = 10


class ZkMigrationClient(MigrationZk):
    """One controller's ZooKeeper session for the migration (opened on first use, reopened after an
    error: a stopped ZooKeeper shows up as failed actions until it returns)."""

    def __init__(self, connect_text: str, *, node_id: int, cluster_id: str, timeout_s: float) -> None:
        super().__init__(node_id=node_id, cluster_id=cluster_id, now_ms=_now_ms)
        self.connect_text = connect_text
        self.timeout_s = timeout_s
        self._stack: contextlib.ExitStack | None = None
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            stack = contextlib.ExitStack()
            self._client = stack.enter_context(connect(self.connect_text, self.timeout_s))
            self._stack = stack
        return self._client

    def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            with contextlib.suppress(Exception):
                stack.close()


class ZkBrokerChannel:
    """Sends the driver's requests to the ZooKeeper brokers (Kafka's controller channel manager):
    one queue and sender per broker, so each gets its requests in order; a request is retried while
    the broker stays registered with the same epoch."""

    def __init__(self, image: Callable[[], MetadataImage], client_id: str) -> None:
        self._image = image
        self._client_id = client_id
        self._queues: dict[int, asyncio.Queue[BrokerRequest]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: dict[int, ReconnectingClient] = {}

    def send(self, requests: Sequence[BrokerRequest]) -> None:
        for r in requests:
            queue = self._queues.get(r.broker_id)
            if queue is None:
                queue = self._queues[r.broker_id] = asyncio.Queue()
                self._tasks.append(asyncio.ensure_future(self._sender(r.broker_id, queue)))
            queue.put_nowait(r)

    async def _sender(self, broker_id: int, queue: asyncio.Queue[BrokerRequest]) -> None:
        while True:
            r = await queue.get()
            for attempt in range(BROKER_REQUEST_ATTEMPTS):
                registration = self._image().cluster.brokers.get(broker_id)
                if registration is None or registration.epoch != r.body.get("brokerEpoch"):
                    break  # gone or re-registered: a newer request (a full one) follows
                client = self._client(broker_id, registration.listeners)
                try:
                    response = await client.request(r.api_key, r.version, r.body, timeout_s=10)
                except NetworkError as exc:
                    log.debug("%s to ZooKeeper broker %d failed (attempt %d): %s", ApiKey(r.api_key).name,
                              broker_id, attempt, exc)
                    await asyncio.sleep(min(0.2 * (attempt + 1), 2.0))
                    continue
                if response.get("errorCode", 0):
                    log.info("%s to ZooKeeper broker %d: %s", ApiKey(r.api_key).name, broker_id,
                             Errors.for_code(response["errorCode"]).name)
                break

    def _client(self, broker_id: int, listeners: Sequence[Endpoint]) -> ReconnectingClient:
        host, port = listeners[0].host, listeners[0].port
        client = self._clients.get(broker_id)
        if client is None or (client.host, client.port) != (host, port):
            client = self._clients[broker_id] = ReconnectingClient(host, port, client_id=self._client_id)
        return client

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for client in self._clients.values():
            await client.close()


class MigrationRunner:
    """Runs the driver's actions on a controller process (one at a time, on a worker thread) and
    sends its requests to the ZooKeeper brokers."""

    def __init__(self, driver: MigrationDriver, zk: ZkMigrationClient, host: NodeHost, raft: Any,
                 image: Callable[[], MetadataImage]) -> None:
        self.driver = driver
        self.zk = zk
        self.host = host
        self.raft = raft
        self.brokers = ZkBrokerChannel(image, f"controller-{driver.node_id}")

    async def run(self) -> None:
        try:
            while True:
                action = self.driver.poll(_now_ms())
                if action is not None:
                    await self._run(action)
                if self.driver.broker_requests:
                    self.brokers.send(self.driver.broker_requests)
                    self.driver.broker_requests.clear()
                if action is None:
                    await asyncio.sleep(POLL_INTERVAL_S)
        finally:
            await self.brokers.close()
            await asyncio.to_thread(self.zk.close)

    async def _run(self, action: Action) -> None:
        driver = self.driver
        try:
            if isinstance(action, RecoverMigrationState):
                driver.recovered(await asyncio.to_thread(self.zk.recover))
            elif isinstance(action, ReadZkBrokers):
                ids = await asyncio.to_thread(self.zk.broker_ids)
                driver.zk_brokers(ids, await asyncio.to_thread(self.zk.unready_reasons, ids))
            elif isinstance(action, ClaimZkController):
                driver.claimed(await asyncio.to_thread(self.zk.claim, action.leadership))
            elif isinstance(action, MigrateMetadata):
                await self._migrate(action)
            else:
                start = time.monotonic()
                version = await asyncio.to_thread(self.zk.write, action)
                driver.zk_written(action, version, int((time.monotonic() - start) * 1000))
        except ControllerEpochMovedError as exc:
            driver.zk_failed(action, str(exc), _now_ms(), fenced=True)
        except (MigrationError, OSError) as exc:
            await asyncio.to_thread(self.zk.close)
            driver.zk_failed(action, str(exc), _now_ms())
        except Exception as exc:  # kazoo's session and connection errors
            if type(exc).__module__.split(".")[0] != "kazoo":
                raise
            await asyncio.to_thread(self.zk.close)
            driver.zk_failed(action, f"{type(exc).__name__}: {exc}", _now_ms())

    async def _migrate(self, action: MigrateMetadata) -> None:
        """Append the translated tree as one metadata transaction and wait for it to commit (a failover
        in between leaves an open transaction, which the next active controller aborts)."""
        batches = await asyncio.to_thread(self.zk.translation_batches, action)
        epoch = self.raft.node.epoch
        offset = None
        for batch in batches:
            offset = self.host.write(batch)
            if offset is None or self.raft.node.epoch != epoch:
                offset = None
                break
        if offset is None or not await self.raft.wait_committed(offset, COMMIT_TIMEOUT_S):
            raise ZooKeeperError("the migration records did not commit (leadership moved)")
        self.driver.migrated(offset, epoch)


def _now_ms() -> int:
    return int(time.time() * 1000)
