"""One ZooKeeper-mode broker process (Kafka 3.x's ``KafkaServer``): registration, controller
election, the ZK controller's I/O, and the client listeners.

ZooKeeper is the cluster's truth; this module is the only glue to it (kazoo, whose callbacks run on
its own threads and are handed to the asyncio loop). The broker creates Kafka's top-level paths,
the cluster id and its ephemeral ``/brokers/ids/<id>`` (its czxid is the broker epoch), then
contends for the ephemeral ``/controller``. The winner bumps ``/controller_epoch`` in the same
transaction, reads the tree consistently, runs :class:`~kraftwerk.controller.zk_controller.ZkController`
and watches ``/brokers/ids``, ``/brokers/topics`` (and each topic) and ``/admin/delete_topics``;
every decision's znode writes go in one transaction checked against the ``/controller_epoch``
version, then its LeaderAndIsr / UpdateMetadata / StopReplica go out to the brokers. Every broker
feeds those to its :class:`~kraftwerk.broker.zk_broker.ZkBrokerCore` and its data plane, and reloads
``/config/topics`` and ``/config/brokers`` on each ``/config/changes`` notification.

In a KIP-866 migration (the flag and the controllers' quorum set) the broker also registers with the
KRaft quorum (:mod:`~kraftwerk.runtime.zk_migration_link`); once ``/controller`` names a KRaft
controller, it takes that controller's requests and forwards admin requests and AlterPartition to it.

Readiness: once this broker is in its own metadata cache (the controller's UpdateMetadata reached
it), it writes ``kraftwerk.ready`` into its first log dir, as a KRaft node does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kraftwerk.broker.node import only_broker_loggers
from kraftwerk.broker.zk_broker import ZK_BROKER_API_KEYS, MigratingZkBrokerLifecycle, ZkBrokerCore
from kraftwerk.controller.common import declared_api_ranges, shape_response
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.controller.zk_controller import Decisions, ZkController, ZkOp
from kraftwerk.image.model import Endpoint
from kraftwerk.migration import encode
from kraftwerk.migration.reader import parse_connect, read_tree
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.znodes import (
    KRaftMigrationInfo,
    parse_controller,
)
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.data_plane import DATA_API_KEYS, DataPlane
from kraftwerk.runtime.errors import NetworkError, NodeError
from kraftwerk.runtime.forwarding import envelope_body, unwrap_response
from kraftwerk.runtime.node import READY_FILE
from kraftwerk.runtime.raft_host import wall_clock_ms
from kraftwerk.runtime.server import KafkaServer, Request
from kraftwerk.runtime.zk_config import ZkServerConfig
from kraftwerk.runtime.zk_migration_link import KRaftQuorumLink
from kraftwerk.runtime.zk_store import ZkWriteError, ZooKeeperStore
from kraftwerk.storage.lock import LogDirLock
from kraftwerk.storage.properties import MetaProperties, read_meta_properties, write_meta_properties

log = logging.getLogger("kraftwerk.zk_node")

FORWARDED_KEYS = frozenset({ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS,
                            ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS})
"""What a broker in migration forwards to the KRaft controller (the rest it answers itself)."""
ADMIN_WAIT_S = 30.0
"""How long CreateTopics / DeleteTopics wait for the controller's decision to reach this broker."""
STOP_STEP_TIMEOUT_S = 3.0
"""How long one shutdown step may take: the steps before the ZooKeeper session's close stay well
inside the 10 s a roll waits before it kills the broker."""


class ZkNode:
    """One ZooKeeper-mode broker process (and the controller while it holds ``/controller``)."""

    def __init__(self, config: ZkServerConfig) -> None:
        self.config = config
        self.node_id = config.broker_id
        self.exit_code = 0
        self.stopped = asyncio.Event()
        self.cluster_id = ""
        self.broker_epoch = -1
        self.servers: list[KafkaServer] = []
        self._locks: list[LogDirLock] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._client: Any = None
        self.zk: ZooKeeperStore | None = None
        self.core: ZkBrokerCore | None = None
        self.data_plane: DataPlane | None = None
        self.controller: ZkController | None = None
        self.kraft_link: KRaftQuorumLink | None = None
        self.kraft_controller_id: int | None = None
        """KIP-866: the KRaft controller ``/controller`` names (admin requests are forwarded to it)."""
        self._epoch_version = -1
        self._events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._watched_topics: set[str] = set()
        self._pending: set[str] = set()
        self._watching = False
        self._peers: dict[int, ReconnectingClient] = {}
        self._ready = False
        declared = declared_api_ranges((*ZK_BROKER_API_KEYS, *DATA_API_KEYS))
        self._advertised = DataPlane.advertised_ranges(declared, config.software)
        self._accepted = DataPlane.accepted_ranges(self._advertised, config.software)
        self._loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for directory in self.config.log_dirs:
            Path(directory).mkdir(parents=True, exist_ok=True)
            lock = LogDirLock(Path(directory))
            lock.acquire()
            self._locks.append(lock)
        self._ready_path().unlink(missing_ok=True)
        await asyncio.to_thread(self._connect)
        await asyncio.to_thread(self._check_meta_properties)
        self.broker_epoch = await asyncio.to_thread(self._register)
        log.info("[KafkaServer id=%d] Registered broker %d at path /brokers/ids/%d with broker epoch %d",
                 self.node_id, self.node_id, self.node_id, self.broker_epoch)
        endpoints = [Endpoint(e.listener, e.connect_host(), e.port, 0)
                     for e in self.config.effective_advertised_listeners]
        self.core = ZkBrokerCore(self.node_id, self.cluster_id, self.config.ibp,
                                 broker_epoch=self.broker_epoch, static_configs=self.config.raw,
                                 api_versions=self._advertised, listeners=endpoints,
                                 software=self.config.software)
        self.data_plane = DataPlane(self.node_id, self.config.log_dirs, self.config.software, self.config.raw,
                                    self._controller_request, self._controller_broker_epoch,
                                    self.config.inter_broker_listener_name)
        for endpoint in self.config.listeners:
            server = KafkaServer(_Listener(self, endpoint.listener), endpoint.host or "0.0.0.0",
                                 endpoint.port, listener=endpoint.listener,
                                 security=self.config.security[endpoint.listener])
            await server.start()
            self.servers.append(server)
            log.info("Awaiting socket connections on %s:%d (listener %s).", endpoint.host or "0.0.0.0",
                     server.port, endpoint.listener)
        await self._reload_configs()
        if self.config.migration_enabled and self.config.controller_quorum:
            self.kraft_link = KRaftQuorumLink(self._kraft_lifecycle(endpoints), self.config.controller_quorum)
            self.core.kraft_lifecycle = self.kraft_link.lifecycle
            self._spawn(self.kraft_link.run(), "kraft-registration")
        self._spawn(self._controller_events(), "zk-controller-events")
        self._spawn(self.data_plane.housekeeping(), "log-housekeeping")
        self._watch_children("/config/changes", "config")
        self._client.DataWatch("/controller", self._on_controller_znode)

    def _kraft_lifecycle(self, endpoints: Sequence[Endpoint]) -> MigratingZkBrokerLifecycle:
        dir_ids = [meta.directory_id for d in self.config.log_dirs
                   if (meta := read_meta_properties(Path(d) / "meta.properties")).directory_id is not None]
        return MigratingZkBrokerLifecycle(self.node_id, self.cluster_id, self.config.software, endpoints,
                                          dir_ids, incarnation_id=uuid.uuid4(), rack=self.config.rack,
                                          api_versions=self._advertised)

    def _connect(self) -> None:
        from kazoo.client import KazooClient, KazooState
        from kazoo.handlers.threading import KazooTimeoutError

        servers, chroot = parse_connect(self.config.zookeeper_connect)
        timeout = self.config.session_timeout_ms / 1000
        client = KazooClient(hosts=",".join(f"{h}:{p}" for h, p in servers), timeout=timeout, logger=log)
        try:
            client.start(timeout=timeout)
        except KazooTimeoutError:
            client.close()
            raise NodeError("Timed out waiting for connection to ZooKeeper at "
                            f"{self.config.zookeeper_connect}") from None
        if chroot:
            client.ensure_path(chroot)
            client.chroot = chroot
        self._client = client
        self.zk = ZooKeeperStore(client)
        for path in encode.PERSISTENT_PATHS:
            client.ensure_path(path)

        def on_state(state: str) -> None:
            if state == KazooState.LOST and not self.stopped.is_set():
                self._from_thread(lambda: self.fail("the ZooKeeper session expired; the broker's "
                                                    "registration is gone"))

        client.add_listener(on_state)

    def _check_meta_properties(self) -> None:
        """``/cluster/id`` (created by the first broker), checked against each log dir's
        ``meta.properties`` v0, written where missing (Kafka's ZK-mode brokers format nothing)."""
        assert self.zk is not None
        with contextlib.suppress(self.zk.node_exists):
            self._client.create("/cluster/id", encode.encode_cluster_id(encode.kafka_uuid(uuid.uuid4())),
                                makepath=True)
        got = self.zk.get("/cluster/id")
        assert got is not None
        self.cluster_id = json.loads(got[0])["id"]
        for directory in self.config.log_dirs:
            path = Path(directory) / "meta.properties"
            if path.exists():
                meta = read_meta_properties(path)
                if meta.cluster_id not in (None, self.cluster_id):
                    raise NodeError(f"The Cluster ID {self.cluster_id} doesn't match stored clusterId "
                                    f"Some({meta.cluster_id}) in meta.properties. The broker is trying to "
                                    "join the wrong cluster. Configured zookeeper.connect may be wrong.")
                if meta.node_id not in (None, self.node_id):
                    raise NodeError(f"Stored node id {meta.node_id} doesn't match previous node id "
                                    f"{self.node_id} in {path}.")
            else:
                write_meta_properties(path, MetaProperties(0, self.cluster_id, self.node_id, None))

    def _register(self) -> int:
        """The ephemeral ``/brokers/ids/<id>`` (v5 as Kafka writes it; v6 with KIP-866's
        ``kraftMigration`` when ``zookeeper.metadata.migration.enable``); returns its czxid."""
        c = self.config
        endpoints = tuple(encode.ZkEndpoint(e.listener, e.host, e.port, c.security_protocol_map[e.listener])
                          for e in c.effective_advertised_listeners)
        migration = KRaftMigrationInfo(True, self.cluster_id, str(c.ibp)) if c.migration_enabled else None
        info = encode.BrokerInfo(self.node_id, endpoints, wall_clock_ms(), rack=c.rack,
                                 version=encode.broker_registration_version(True, migration is not None),
                                 migration=migration)
        path = f"/brokers/ids/{self.node_id}"
        assert self.zk is not None
        while True:
            try:
                _, stat = self._client.create(path, encode.encode_broker(info), ephemeral=True,
                                              include_data=True)
                return int(stat.czxid)
            except self.zk.node_exists:
                held = self._client.exists(path)
                if held is None:
                    continue  # it went away while we looked (Kafka creates it again)
                # another broker with this id, or this broker's previous session not yet expired
                raise NodeError(f"Error while creating ephemeral at {path}, node already exists and owner "
                                f"'0x{held.ephemeralOwner:x}' does not match current session "
                                f"'0x{self._client.client_id[0]:x}'") from None

    async def stop(self) -> None:
        """Kafka's order (controlled shutdown, listeners, replicas, controller, ZooKeeper last), each
        step bounded: whatever hangs, the ZooKeeper session is closed, so ``/brokers/ids/<id>`` (and
        ``/controller``) vanish at once instead of when ZooKeeper expires the session."""
        log.info("[KafkaServer id=%d] shutting down", self.node_id)
        self.stopped.set()
        for task in list(self._tasks):
            task.cancel()
        if self.kraft_link is not None:
            await self.kraft_link.controlled_shutdown()
        for server in self.servers:
            await server.close()
        if self.data_plane is not None:
            await self._bounded("closing the replicas and logs", self.data_plane.close())
        await self._bounded("closing the connections to brokers", self._close_peers())
        if self._client is not None:
            await asyncio.to_thread(self._close_client)
        self._ready_path().unlink(missing_ok=True)
        for lock in self._locks:
            lock.release()
        log.info("[KafkaServer id=%d] shut down completed", self.node_id)

    async def _close_peers(self) -> None:
        for peer in self._peers.values():
            await peer.close()

    async def _bounded(self, step: str, work: Awaitable[None]) -> None:
        """One shutdown step, abandoned after :data:`STOP_STEP_TIMEOUT_S` (``asyncio.wait`` does not
        wait for the abandoned work to finish cancelling, as ``wait_for`` would)."""
        task = asyncio.ensure_future(work)
        done, _ = await asyncio.wait({task}, timeout=STOP_STEP_TIMEOUT_S)
        if not done:
            task.cancel()
            log.warning("[KafkaServer id=%d] %s did not finish within %gs; shutting down anyway",
                        self.node_id, step, STOP_STEP_TIMEOUT_S)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("[KafkaServer id=%d] %s failed: %s", self.node_id, step, task.exception())

    def _close_client(self) -> None:
        with contextlib.suppress(Exception):
            self._client.stop()
            self._client.close()

    def fail(self, message: str) -> None:
        log.error("Encountered fatal fault: %s", message)
        self.exit_code = 1
        self.stopped.set()

    def _spawn(self, coro: Awaitable[Any], name: str) -> None:
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("task %s failed", task.get_name(), exc_info=task.exception())
            self.fail(f"{task.get_name()}: {task.exception()}")

    def _from_thread(self, fn: Callable[[], None]) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn)

    def _ready_path(self) -> Path:
        return Path(self.config.log_dirs[0]) / READY_FILE

    def _maybe_ready(self) -> None:
        if self._ready or self.core is None or self.node_id not in self.core.image.cluster.brokers:
            return
        self._ready = True
        info = {"pid": os.getpid(), "nodeId": self.node_id, "roles": "zk-broker",
                "clusterId": self.cluster_id, "softwareVersion": self.config.software.release,
                "zookeeper": self.config.zookeeper_connect,
                "listeners": {s.listener: s.port for s in self.servers}}
        tmp = self._ready_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(info) + "\n")
        tmp.replace(self._ready_path())
        log.info("[KafkaServer id=%d] started", self.node_id)

    # ------------------------------------------------------------------ watches → events

    def _watch_children(self, path: str, event: str) -> None:
        def changed(_children: list[str]) -> None:
            self._from_thread(lambda: self._post(event))

        self._client.ChildrenWatch(path, changed)

    def _post(self, kind: str) -> None:
        """A re-read of what changed; one pending re-read of a kind covers every change before it
        (a controller failover fires a watch per topic)."""
        if kind not in self._pending:
            self._pending.add(kind)
            self._events.put_nowait((kind, None))

    def _on_controller_znode(self, data: bytes | None, _stat: Any) -> None:
        self._from_thread(lambda: self._events.put_nowait(("controller", data)))

    def _watch_topic(self, name: str) -> None:
        if name in self._watched_topics:
            return
        self._watched_topics.add(name)

        def changed(data: bytes | None, _stat: Any) -> bool:
            if data is None:
                self._from_thread(lambda: self._watched_topics.discard(name))
                return False
            self._from_thread(lambda: self._post("topics"))
            return True

        self._client.DataWatch(encode.topic_path(name), changed)

    async def _controller_events(self) -> None:
        """Every ZooKeeper event and AlterPartition, one at a time (Kafka's controller event thread)."""
        while True:
            kind, arg = await self._events.get()
            self._pending.discard(kind)
            if kind == "config":
                await self._reload_configs()
            elif kind == "controller":
                await self._on_controller_change(arg)
            elif self.controller is not None:
                await self._controller_event(kind, arg)
            elif kind == "alter_partition":
                arg[1].set_result(not_controller_body(ApiKey.ALTER_PARTITION, arg[2], arg[0]))

    async def _controller_event(self, kind: str, arg: Any) -> None:
        assert self.controller is not None and self.zk is not None
        if kind == "brokers":
            decisions = self.controller.brokers_changed(await asyncio.to_thread(self.zk.brokers))
        elif kind == "topics":
            topics = await asyncio.to_thread(self.zk.topics)
            for name in topics:
                self._watch_topic(name)
            decisions = self.controller.topics_changed(topics)
        elif kind == "deletions":
            decisions = self.controller.deletions_requested(await asyncio.to_thread(
                self.zk.children, "/admin/delete_topics"))
        else:  # alter_partition
            body, answer, version = arg
            response, decisions = self.controller.alter_partition(body, version)
            if not await self._carry_out(decisions):
                response = not_controller_body(ApiKey.ALTER_PARTITION, version, body)
            answer.set_result(response)
            return
        await self._carry_out(decisions)

    # ------------------------------------------------------------------ the controller

    async def _on_controller_change(self, data: bytes | None) -> None:
        if data is not None:
            holder = parse_controller("/controller", data)
            current = holder.broker_id
            self.kraft_controller_id = current if holder.kraft_controller_epoch >= 0 else None
            if current != self.node_id and self.controller is not None:
                log.info("[Controller id=%d] Resigning: broker %d is the controller now", self.node_id,
                         current)
                self.controller = None
            return
        self.controller = None
        self.kraft_controller_id = None  # a rollback deleted the KRaft controller's /controller
        won = await asyncio.to_thread(self._claim_controller)
        if won is None:
            return
        epoch, self._epoch_version = won
        assert self.zk is not None
        state = parse_cluster(await asyncio.to_thread(read_tree, self._client))
        for bad in state.invalid:
            log.warning("[Controller id=%d] skipping %s", self.node_id, bad)
        self.controller = ZkController(self.node_id, epoch, state)
        log.info("[Controller id=%d] %d successfully elected as the controller. Epoch incremented to %d and "
                 "epoch zk version is now %d", self.node_id, self.node_id, epoch, self._epoch_version)
        for name in state.topics:
            self._watch_topic(name)
        await self._carry_out(self.controller.become_controller())
        if not self._watching:  # once: events are dropped while this broker is not the controller
            self._watching = True
            self._watch_children("/brokers/ids", "brokers")
            self._watch_children("/brokers/topics", "topics")
            self._watch_children("/admin/delete_topics", "deletions")

    def _claim_controller(self) -> tuple[int, int] | None:
        """Kafka's ``registerControllerAndIncrementControllerEpoch``: create the ephemeral
        ``/controller`` and bump ``/controller_epoch`` in one transaction; None if another won."""
        assert self.zk is not None
        with contextlib.suppress(self.zk.node_exists):
            initial = encode.encode_controller_epoch(encode.INITIAL_CONTROLLER_EPOCH)
            self._client.create("/controller_epoch", initial)
        got = self.zk.get("/controller_epoch")
        assert got is not None
        epoch, version = int(got[0]), got[1].version
        txn = self._client.transaction()
        txn.create("/controller", encode.encode_controller(self.node_id, wall_clock_ms()), ephemeral=True)
        txn.set_data("/controller_epoch", encode.encode_controller_epoch(epoch + 1), version=version)
        if any(isinstance(r, Exception) for r in txn.commit()):
            return None
        return epoch + 1, version + 1

    def _release_controller(self) -> None:
        assert self.zk is not None
        got = self.zk.get("/controller")
        if got is not None and parse_controller("/controller", got[0]).broker_id == self.node_id:
            with contextlib.suppress(self.zk.no_node):
                self._client.delete("/controller", version=got[1].version)

    async def _carry_out(self, decisions: Decisions) -> bool:
        """The writes (guarded by the controller epoch's znode version), then the requests; a failed
        write means another controller took over: this one resigns."""
        assert self.zk is not None and self.controller is not None
        if decisions.writes:
            try:
                guard = ("/controller_epoch", self._epoch_version)
                await asyncio.to_thread(self.zk.apply, decisions.writes, guard)
            except ZkWriteError as exc:
                # The tree is not what this controller believes: hand the election back, so that the
                # next controller (maybe this broker again) starts from a fresh read.
                log.warning("[Controller id=%d] %s; resigning", self.node_id, exc)
                self.controller = None
                await asyncio.to_thread(self._release_controller)
                return False
        brokers = self.controller.brokers
        sends = []
        for r in decisions.requests:
            peer = self._peer(r.broker_id, brokers[r.broker_id].endpoints if r.broker_id in brokers else ())
            if peer is not None:
                sends.append(self._send(peer, r.broker_id, r.api_key, r.version, r.body))
        await asyncio.gather(*sends)
        return True

    def _peer(self, broker_id: int, endpoints: Sequence[tuple[str, str, int, int]]
              ) -> ReconnectingClient | None:
        listener = self.config.inter_broker_listener_name
        endpoint = next((e for e in endpoints if e[0] == listener), endpoints[0] if endpoints else None)
        if endpoint is None:
            return None
        client = self._peers.get(broker_id)
        if client is None or (client.host, client.port) != (endpoint[1], endpoint[2]):
            client = ReconnectingClient(endpoint[1], endpoint[2], client_id=f"controller-{self.node_id}")
            self._peers[broker_id] = client
        return client

    async def _send(self, peer: ReconnectingClient, broker_id: int, api_key: int, version: int,
                    body: dict[str, Any]) -> None:
        """Kafka's RequestSendThread: retried while the broker is live."""
        for attempt in range(5):
            try:
                response = await peer.request(api_key, version, body, timeout_s=10)
                if response.get("errorCode", 0):
                    log.info("[Controller id=%d] %s to broker %d: %s", self.node_id, ApiKey(api_key).name,
                             broker_id, Errors.for_code(response["errorCode"]).name)
                return
            except NetworkError as exc:
                log.debug("request %d to broker %d failed (attempt %d): %s", api_key, broker_id, attempt, exc)
                await asyncio.sleep(0.2 * (attempt + 1))

    def _kraft(self) -> KRaftQuorumLink | None:
        """The link to the KRaft quorum once a KRaft controller holds ``/controller``, else None."""
        return self.kraft_link if self.kraft_controller_id is not None else None

    def _controller_broker_epoch(self) -> int:
        """The broker epoch the current controller knows: the KRaft registration's under a KRaft one."""
        link = self._kraft()
        return link.broker_epoch if link is not None else self.broker_epoch

    async def _controller_request(self, api_key: int, version: int, body: codec.Value) -> codec.Value:
        """The data plane's AlterPartition: to this process's controller, the current one's broker, or
        the KRaft controller in a migration."""
        link = self._kraft()
        if link is not None:
            return await link.request(api_key, version, body)
        if self.controller is not None:
            answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._events.put_nowait(("alter_partition", (body, answer, version)))
            return await answer
        assert self.core is not None
        controller_id = self.core.controller_id
        broker = self.core.image.cluster.brokers.get(controller_id) if controller_id is not None else None
        if broker is None:
            raise NetworkError("no controller known")
        endpoints = [(e.name, e.host, e.port, e.security_protocol) for e in broker.listeners]
        peer = self._peer(broker.id, endpoints)
        if peer is None:
            raise NetworkError(f"no endpoint for controller {broker.id}")
        return await peer.request(api_key, version, body, timeout_s=10)

    # ------------------------------------------------------------------ requests

    async def _reload_configs(self) -> None:
        assert self.zk is not None and self.core is not None
        self.core.set_configs(await asyncio.to_thread(self.zk.configs))
        self._image_changed()

    def _image_changed(self) -> None:
        assert self.core is not None and self.data_plane is not None
        self.data_plane.on_image(self.core.image)
        self._maybe_ready()

    def supported_apis(self) -> Mapping[int, tuple[int, int]]:
        return self._accepted

    async def handle(self, listener: str, request: Request) -> codec.Value | None:
        core, plane = self.core, self.data_plane
        assert core is not None and plane is not None
        key, version, body = request.api_key, request.api_version, request.body
        if key in DATA_API_KEYS:
            return await plane.handle(key, version, body)
        if key in (ApiKey.LEADER_AND_ISR, ApiKey.UPDATE_METADATA, ApiKey.STOP_REPLICA):
            apply = {ApiKey.LEADER_AND_ISR: core.leader_and_isr, ApiKey.UPDATE_METADATA: core.update_metadata,
                     ApiKey.STOP_REPLICA: core.stop_replica}[ApiKey(key)]
            known = set(core.image.topics.by_name)
            response = apply(body)
            if not set(core.image.topics.by_name) <= known:
                await self._reload_configs()  # a new topic's config znode (written without a notification)
            self._image_changed()
            return shape_response(key, version, response)
        if key == ApiKey.ALTER_PARTITION:
            if self.controller is None:
                return not_controller_body(key, version, body)
            return shape_response(key, version, await self._controller_request(key, version, body))
        if key in FORWARDED_KEYS and self._kraft() is not None and not only_broker_loggers(body):
            return await self._forward(request)
        if key == ApiKey.CREATE_TOPICS:
            return shape_response(key, version, await self._create_topics(body))
        if key == ApiKey.CREATE_PARTITIONS:
            response, writes = core.create_partitions(body)
            await self._admin_write(writes)
            counts = {t["name"]: t["count"] for t in body.get("topics") or ()}
            done = [r["name"] for r in response["results"] if r["errorCode"] == 0 and writes]
            await self._wait(lambda: all(len(core.image.topics.by_name[n].partitions) >= counts[n]
                                         for n in done if n in core.image.topics.by_name), body)
            return shape_response(key, version, response)
        if key == ApiKey.DELETE_TOPICS:
            response, writes = core.delete_topics(version, body)
            await self._admin_write(writes)
            names = [r["name"] for r in response["responses"] if r["errorCode"] == 0]
            await self._wait(lambda: all(n not in core.image.topics.by_name for n in names), body)
            return shape_response(key, version, response)
        if key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS) and not only_broker_loggers(body):
            response, writes = core.config_writes(body, incremental=key == ApiKey.INCREMENTAL_ALTER_CONFIGS)
            await self._admin_write(writes)
            await self._reload_configs()
            return shape_response(key, version, response)
        reply = core.handle_read(key, version, body, wall_clock_ms(), listener)
        return getattr(reply, "body", None)

    async def _forward(self, request: Request) -> codec.Value:
        """KIP-866: admin requests go to the KRaft controller in an EnvelopeRequest (KIP-590), as a
        KRaft broker forwards them; NOT_CONTROLLER (retriable) when none answers."""
        link = self._kraft()
        assert link is not None
        key, version = request.api_key, request.api_version
        envelope = envelope_body(key, version, request.correlation_id, request.client_id, request.body,
                                 request.connection.peer)
        try:
            return unwrap_response(key, version, await link.request(ApiKey.ENVELOPE, 0, envelope)).body
        except NetworkError as exc:  # ForwardingError included
            log.info("Forwarding %s to the KRaft controller failed: %s", ApiKey(key).name, exc)
        return not_controller_body(key, version, request.body)

    async def _create_topics(self, body: Mapping[str, Any]) -> dict[str, Any]:
        assert self.core is not None and self.zk is not None
        core = self.core
        response, writes = core.create_topics(body)
        for name, ops in writes.items():
            try:
                await asyncio.to_thread(self.zk.apply, ops)
            except ZkWriteError:
                core.topic_exists(response, name)
        created = [t["name"] for t in response["topics"] if t["errorCode"] == 0 and t["name"] in writes]
        def led(name: str) -> bool:
            topic = core.image.topics.by_name.get(name)
            return topic is not None and all(p.leader >= 0 for p in topic.partitions.values())

        await self._wait(lambda: all(led(n) for n in created), body)
        return response

    async def _admin_write(self, writes: Sequence[ZkOp]) -> None:
        assert self.zk is not None
        if writes:
            await asyncio.to_thread(self.zk.apply, writes)

    @staticmethod
    async def _wait(done: Callable[[], bool], body: Mapping[str, Any]) -> None:
        """Kafka's purgatory for topic RPCs: answer once this broker's cache shows the outcome, or
        when the request's timeout passes."""
        deadline = time.monotonic() + min(ADMIN_WAIT_S, max(body.get("timeoutMs", 0), 0) / 1000)
        while not done() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)


class _Listener:
    """The network layer's view of the node on one listener."""

    def __init__(self, node: ZkNode, listener: str) -> None:
        self.node = node
        self.listener = listener

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return self.node.supported_apis()

    async def handle(self, request: Request) -> codec.Value | None:
        return await self.node.handle(self.listener, request)
