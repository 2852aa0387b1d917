"""One KRaft node process: the asyncio driver of a :class:`~kraftwerk.node.NodeHost`.

The node checks that its directories are formatted (``meta.properties``), locks them, opens
``__cluster_metadata-0`` through the raft log files, and runs a :class:`RaftHost` (voter when
``node.id`` is in ``controller.quorum.voters``, else observer), one :class:`KafkaServer` per
listener and the node host, which holds every decision between raft and the cores (replay,
fail-stop, activation, the controller's timers and KIP-835 NoOpRecords, registration, serving
controller RPCs, readiness). This module supplies only the I/O the host asks for (``HostIO``):
appends and commit waits through raft, requests to the active controller, snapshot files, closing
client connections, the marker files and the exit.

Readiness: once the listeners are bound, a leader is known and (on a controller) the image holds
a metadata.version, the node logs ``Kafka Server started`` and writes ``kraftwerk.ready``
(its pid, listeners and roles) into the metadata log dir; shutting down removes it. A broker whose
registration the controller refuses (its software cannot support a finalized feature level) stays
fenced and writes ``kraftwerk.fenced`` (its pid and Kafka's UnsupportedVersionException text) so
that ``kraftwerk cluster up|roll|status`` can report it instead of waiting for it.

Brokers forward admin requests (UpdateFeatures) to the active controller inside an
EnvelopeRequest (KIP-590, :mod:`kraftwerk.runtime.forwarding`).

A fatal fault (an unsupported FeatureLevelRecord, KIP-778 fail-stop) logs one line and makes the
process exit with code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import random
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kraftwerk.broker.node import BROKER_API_KEYS, BrokerNode
from kraftwerk.config.catalogue.controller import METRICS_HOST_CONFIG, METRICS_PORT_CONFIG
from kraftwerk.controller.authorizer import Session
from kraftwerk.controller.common import declared_api_ranges
from kraftwerk.controller.effects import Body, Forward, WriteSnapshot
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS, RAFT_API_KEYS, QuorumController
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.errors import KraftwerkError
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.image.model import Endpoint as ImageEndpoint
from kraftwerk.node import NodeHost
from kraftwerk.node.authorization import authorize_request
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.raft import Committed, RaftConfig, RaftNode, VoterEndpoint
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.config import ServerConfig
from kraftwerk.runtime.data_plane import DATA_API_KEYS, DataPlane
from kraftwerk.runtime.errors import NetworkError, NodeError
from kraftwerk.runtime.forwarding import ForwardingError, client_host, envelope_body, unwrap_response
from kraftwerk.runtime.metrics import Cores, MetricsServer
from kraftwerk.runtime.migration_io import MigrationRunner, ZkMigrationClient
from kraftwerk.runtime.raft_host import RaftHost, wall_clock_ms
from kraftwerk.runtime.raft_log_files import open_metadata_log
from kraftwerk.runtime.security import ListenerSecurity, scram_lookup_from
from kraftwerk.runtime.server import KafkaServer, Request
from kraftwerk.storage.lock import LogDirLock
from kraftwerk.storage.metadata_log import read_bootstrap
from kraftwerk.storage.properties import read_meta_properties
from kraftwerk.versions.features import KRAFT_VERSION

log = logging.getLogger("kraftwerk.node")

READY_FILE = "kraftwerk.ready"
FENCED_FILE = "kraftwerk.fenced"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
APPEND_COMMIT_TIMEOUT_S = 10.0
CONTROLLED_SHUTDOWN_TIMEOUT_S = 5.0
RESIGN_TIMEOUT_S = 1.0
"""How long a stopping leader waits for the voters to answer its EndQuorumEpoch."""
CONTROLLER_REGISTRATION_RETRY_MS = 1000
CLUSTER_ID_PROBE_INTERVAL_MS = 30_000
ZK_MIGRATION_TIMEOUT_S = 5.0
"""How long a migrating controller waits to connect to ZooKeeper before an action fails (and retries)."""


def check_formatted(config: ServerConfig) -> str:
    """The cluster id every directory agrees on; Kafka's texts when a directory is not formatted
    or belongs to another node or cluster."""
    cluster_ids: dict[str, str] = {}
    for directory in sorted({*config.log_dirs, config.metadata_log_dir}):
        path = Path(directory) / "meta.properties"
        if not path.exists():
            raise NodeError(f"No `meta.properties` found in {directory} (have you run `kafka-storage.sh` to "
                            "format the directory?)")
        try:
            meta = read_meta_properties(path)
        except (KraftwerkError, ValueError) as exc:
            raise NodeError(f"Unable to read {path}: {exc}") from None
        if meta.node_id != config.node_id:
            raise NodeError(
                f"Stored node id {meta.node_id} doesn't match previous node id {config.node_id} in {path}. "
                "If you moved your data, make sure your configured node id matches. If you intend to create "
                "a new node, you should remove all data in your data directories.")
        cluster_ids[directory] = meta.cluster_id or ""
    distinct = set(cluster_ids.values())
    if len(distinct) != 1:
        raise NodeError(f"Invalid cluster.id in meta.properties: found {sorted(distinct)} across "
                        f"{sorted(cluster_ids)}")
    return distinct.pop()


class Node:
    """One node process (controller, broker or both)."""

    def __init__(self, config: ServerConfig, *, seed: int | None = None) -> None:
        self.config = config
        self.seed = seed if seed is not None else random.SystemRandom().getrandbits(32)
        self.cluster_id = ""
        self.metadata_dir = Path(config.metadata_log_dir)
        self.exit_code = 0
        self.stopped = asyncio.Event()
        self.raft: RaftHost | None = None
        self.controller: QuorumController | None = None
        self.broker: BrokerNode | None = None
        self.data_plane: DataPlane | None = None
        self._controller_clients: dict[int, ReconnectingClient] = {}
        self._broker_apis = DataPlane.advertised_ranges(declared_api_ranges(BROKER_API_KEYS), config.software)
        self._broker_accepted = DataPlane.accepted_ranges(self._broker_apis, config.software)
        self.servers: list[KafkaServer] = []
        self._locks: list[LogDirLock] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self.host: NodeHost | None = None
        self._controller_apis = declared_api_ranges(CONTROLLER_API_KEYS + RAFT_API_KEYS)
        self._shutdown_done = asyncio.Event()
        self._cluster_refusal: str | None = None
        self._cluster_probe_ms = -CLUSTER_ID_PROBE_INTERVAL_MS
        self.metrics: MetricsServer | None = None

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        config.log_values(log)
        self.cluster_id = check_formatted(config)
        self._remove_ready_file()
        for directory in sorted({*config.log_dirs, config.metadata_log_dir}):
            lock = LogDirLock(Path(directory))
            try:
                lock.acquire()
            except KraftwerkError as exc:
                raise NodeError(str(exc)) from None
            self._locks.append(lock)
        raft_log, state_store = open_metadata_log(self.metadata_dir, config.voter_ids)
        listener = config.controller_listener_names[0] if config.controller_listener_names else None
        meta = read_meta_properties(self.metadata_dir / "meta.properties")
        supported = config.software.supported_features().get(KRAFT_VERSION)
        kraft_range = (supported.min, supported.max) if supported is not None else (0, 0)
        raft_config = RaftConfig(
            node_id=config.node_id, voters=config.voter_ids, cluster_id=self.cluster_id,
            election_timeout_ms=config.election_timeout_ms, fetch_timeout_ms=config.fetch_timeout_ms,
            election_backoff_max_ms=config.election_backoff_max_ms,
            request_timeout_ms=config.quorum_request_timeout_ms, retry_backoff_ms=config.retry_backoff_ms,
            voter_endpoints=tuple(VoterEndpoint(v.node_id, listener, v.host, v.port)
                                  for v in config.quorum_voters if listener is not None),
            bootstrap_servers=config.quorum_bootstrap_servers, directory_id=meta.directory_id,
            listener_name=listener, kraft_version_range=kraft_range,
            clean_log_behind_snapshot=not config.metadata_log_retained,
        )
        raft_node = RaftNode(raft_config, raft_log, state_store, now_ms=wall_clock_ms(), seed=self.seed)
        if config.is_controller:
            self.controller = self._make_controller(raft_node.voters)
        if config.is_broker:
            self.broker = self._make_broker()
            self.data_plane = self._make_data_plane(self.broker)
        self.raft = RaftHost(raft_node, on_committed=self._on_committed,
                             client_id=f"raft-client-{config.node_id}",
                             request_timeout_ms=config.quorum_request_timeout_ms,
                             rng=random.Random(self.seed), on_cluster_id_refused=self._on_cluster_id_refused,
                             security=config.controller_client)
        self.host = NodeHost(config.node_id, raft_node, self, controller=self.controller, broker=self.broker,
                             idle_interval_ms=config.metadata_max_idle_interval_ms,
                             registration_retry_ms=CONTROLLER_REGISTRATION_RETRY_MS)
        self.raft.add_state_listener(self.host.on_raft_event)
        for endpoint in config.listeners:
            server = KafkaServer(_ListenerHandler(self, endpoint.listener), endpoint.host or "0.0.0.0",
                                 endpoint.port, listener=endpoint.listener,
                                 max_frame_bytes=config.socket_request_max_bytes,
                                 limits=config.connection_limits(),
                                 security=self._listener_security(endpoint.listener))
            await server.start()
            self.servers.append(server)
            log.info("Awaiting socket connections on %s:%d (listener %s).", endpoint.host or "0.0.0.0",
                     server.port, endpoint.listener)
        parsed = config.parsed
        if parsed is not None and parsed.integer(METRICS_PORT_CONFIG) >= 0:
            self.metrics = MetricsServer(self._metric_cores, parsed.text(METRICS_HOST_CONFIG),
                                         parsed.integer(METRICS_PORT_CONFIG))
        self.raft.start()
        self._spawn(self._controller_loop(), "controller-loop")
        driver = self.controller.migration if self.controller is not None else None
        if driver is not None:
            zk = ZkMigrationClient(config.raw.get("zookeeper.connect", ""), node_id=config.node_id,
                                   cluster_id=self.cluster_id, timeout_s=ZK_MIGRATION_TIMEOUT_S)
            controller = self.controller
            assert controller is not None
            self._spawn(MigrationRunner(driver, zk, self.host, self.raft, lambda: controller.image).run(),
                        "migration-driver")
        if self.broker is not None:
            self._spawn(self._broker_loop(), "broker-lifecycle")
        if self.data_plane is not None:
            self._spawn(self.data_plane.housekeeping(), "log-housekeeping")

    def _make_data_plane(self, broker: BrokerNode) -> DataPlane:
        listeners = self.config.effective_advertised_listeners
        listener = self.config.inter_broker_listener_name if listeners else None
        return DataPlane(self.config.node_id, self.config.log_dirs, self.config.software, self.config.raw,
                         self._controller_request, lambda: broker.broker_epoch, listener,
                         self.config.inter_broker_client)

    def _listener_security(self, listener: str) -> ListenerSecurity:
        """The listener's security, SCRAM users read from this node's current image."""
        def image() -> MetadataImage | None:
            core = self.broker or self.controller
            return None if core is None else core.image

        security = self.config.security.get(listener, ListenerSecurity())
        return dataclasses.replace(security, scram_lookup=scram_lookup_from(image))

    def _make_broker(self) -> BrokerNode:
        dir_ids = []
        for directory in self.config.log_dirs:
            meta = read_meta_properties(Path(directory) / "meta.properties")
            if meta.directory_id is not None:
                dir_ids.append(meta.directory_id)
        listeners = [ImageEndpoint(e.listener, e.connect_host(), e.port, 0)
                     for e in self.config.effective_advertised_listeners]
        return BrokerNode(self.config.node_id, self.cluster_id, self.config.software, listeners, dir_ids,
                          incarnation_id=uuid.uuid4(),
                          heartbeat_interval_ms=self.config.broker_heartbeat_interval_ms,
                          static_configs=self.config.raw, api_versions=self._broker_apis)

    async def _controller_request(self, api_key: int, version: int, body: codec.Value,
                                  leader: int | None = None) -> codec.Value:
        """Send a request to controller ``leader`` (by default the active one as raft knows it) over
        the controller listener."""
        if leader is None:
            leader = self.raft.node.leader_id if self.raft is not None else None
        client = None if leader is None else self._controller_client(leader)
        if client is None:
            raise NetworkError("no active controller known")
        return await client.request(api_key, version, body, timeout_s=10)

    def _controller_client(self, node_id: int) -> ReconnectingClient | None:
        """A connection to a controller at the address raft knows for it (a voter's endpoint, a
        bootstrap server, or what a response named); None while that address is unknown."""
        address = self.raft.node.address_of(node_id) if self.raft is not None else None
        if address is None:
            return None
        client = self._controller_clients.get(node_id)
        if client is None or (client.host, client.port) != address:
            role = "broker" if self.config.is_broker else "controller"
            client = ReconnectingClient(address[0], address[1], client_id=f"{role}-{self.config.node_id}",
                                        security=self.config.controller_client)
            self._controller_clients[node_id] = client
        return client

    async def _broker_loop(self) -> None:
        """The broker core's registration and heartbeats (the host's broker timer)."""
        broker, host = self.broker, self.host
        assert broker is not None and host is not None
        while True:
            host.broker_tick()
            if broker.is_shutdown_complete:
                self._shutdown_done.set()
            await asyncio.sleep(0.05)

    def _write_fenced_file(self, reason: str | None) -> None:
        path = self.metadata_dir / FENCED_FILE
        if reason is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        info = {"pid": os.getpid(), "nodeId": self.config.node_id, "reason": reason,
                "softwareVersion": self.config.software.release}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info) + "\n")
        tmp.replace(path)

    def _on_cluster_id_refused(self, peer_id: int) -> None:
        """The quorum refused this node's raft request with INCONSISTENT_CLUSTER_ID (Kafka's raft
        logs only the error): find out the quorum's cluster id and report both, at most every 30 s."""
        now = wall_clock_ms()
        if now - self._cluster_probe_ms < CLUSTER_ID_PROBE_INTERVAL_MS:
            return
        self._cluster_probe_ms = now
        self._spawn(self._report_foreign_cluster(peer_id), "cluster-id-probe")

    async def _report_foreign_cluster(self, peer_id: int) -> None:
        theirs = "unknown"
        client = self._controller_client(peer_id)
        if client is not None:
            with contextlib.suppress(NetworkError):
                body = await client.request(ApiKey.DESCRIBE_CLUSTER, 1, {"endpointType": 2}, timeout_s=5)
                theirs = str(body.get("clusterId") or "unknown")
        reason = (f"Controller {peer_id} refused this node with INCONSISTENT_CLUSTER_ID: the quorum's "
                  f"cluster id is {theirs}, but this node's meta.properties say {self.cluster_id}. The "
                  "node was formatted for another cluster; it cannot join this quorum.")
        if reason != self._cluster_refusal:
            log.error("[KafkaRaftServer nodeId=%d] %s", self.config.node_id, reason)
            self._cluster_refusal = reason
            self._write_fenced_file(reason)

    def _make_controller(self, voters: tuple[int, ...]) -> QuorumController:
        bootstrap_path = self.metadata_dir / BOOTSTRAP_FILE
        records: list[Any] = []
        if bootstrap_path.exists():
            records = list(read_bootstrap(bootstrap_path).records)
        listeners = [ImageEndpoint(e.listener, e.connect_host(), e.port, 0)
                     for e in self.config.controller_listeners]
        return QuorumController(
            self.config.node_id, self.cluster_id, self.config.software, voters, records,
            bootstrap_source=f"the binary bootstrap metadata file: {bootstrap_path}",
            session_timeout_ms=self.config.broker_session_timeout_ms, listeners=listeners,
            incarnation_id=uuid.uuid4(),
            api_versions=self._controller_apis,
            static_configs=self.config.raw,
        )

    async def stop(self) -> None:
        log.info("[KafkaRaftServer nodeId=%d] shutting down", self.config.node_id)
        broker = self.broker
        if broker is not None and self.exit_code == 0 and broker.broker_epoch >= 0:
            # Kafka's controlled shutdown: the next heartbeat asks to be fenced and let go.
            broker.begin_controlled_shutdown(wall_clock_ms())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._shutdown_done.wait(), CONTROLLED_SHUTDOWN_TIMEOUT_S)
            log.info("[BrokerServer id=%d] Controlled shutdown %s.", self.config.node_id,
                     "complete" if broker.is_shutdown_complete else "timed out")
        if self.raft is not None and self.exit_code == 0:
            await self.raft.resign(RESIGN_TIMEOUT_S)
        for task in list(self._tasks):
            task.cancel()
        for server in self.servers:
            await server.close()
        if self.metrics is not None:
            self.metrics.close()
        if self.data_plane is not None:
            await self.data_plane.close()
        if self.raft is not None:
            await self.raft.close()
            raft_log: Any = self.raft.node.log
            closer = getattr(raft_log, "close", None) or raft_log.flush
            try:
                closer()
            except Exception:
                log.exception("closing the metadata log failed")
        self._remove_ready_file()
        with contextlib.suppress(FileNotFoundError):
            (self.metadata_dir / FENCED_FILE).unlink()
        for lock in self._locks:
            lock.release()
        log.info("[KafkaRaftServer nodeId=%d] shut down completed", self.config.node_id)

    def fail(self, message: str) -> None:
        """A fatal fault: one log line, then stop with exit code 1."""
        log.error("Encountered fatal fault: %s", message)
        self.exit_code = 1
        self.stopped.set()

    async def _send_cleanup_then_fail(self, calls: tuple[Any, ...], message: str) -> None:
        """KIP-778 fail-stop of a registered broker: unregister first, then exit."""
        for call in calls:
            try:
                await asyncio.wait_for(self._controller_request(call.api_key, call.max_version,
                                                                call.body_for(call.max_version)), 3.0)
            except (NetworkError, TimeoutError) as exc:
                log.warning("could not send %s before exiting: %s", call.api_key, exc)
        self.fail(message)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("task %s failed", task.get_name(), exc_info=exc)
            self.fail(f"{task.get_name()}: {exc}")

    # --- readiness --------------------------------------------------------------------------

    def _ready_path(self) -> Path:
        return self.metadata_dir / READY_FILE

    def _remove_ready_file(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._ready_path().unlink()
        with contextlib.suppress(FileNotFoundError):
            (self.metadata_dir / FENCED_FILE).unlink()

    def _metric_cores(self) -> Cores:
        return Cores(self.controller, self.broker, wall_clock_ms())

    # --- HostIO: what the node host asks of this process ------------------------------------

    def now_ms(self) -> int:
        return wall_clock_ms()

    def later(self, fn: Any) -> None:
        asyncio.get_running_loop().call_soon(fn)

    def append(self, values: list[bytes]) -> int:
        assert self.raft is not None
        return self.raft.append(values)

    def upgrade_kraft_version(self, level: int) -> None:
        assert self.raft is not None
        self.raft.upgrade_kraft_version(level)

    def wait_committed(self, offset: int, epoch: int, done: Any) -> None:
        raft = self.raft
        assert raft is not None

        async def wait() -> None:
            ok = raft.node.epoch == epoch and await raft.wait_committed(offset, APPEND_COMMIT_TIMEOUT_S)
            if ok:
                raft.deliver_committed_now()  # the reply waits for this controller's own replay
            done(ok)

        self._spawn(wait(), "wait-committed")

    def call_controller(self, leader: int, api_key: int, version: int, body: Body, on_response: Any,
                        on_failure: Any) -> None:
        async def call() -> None:
            try:
                response = await self._controller_request(api_key, version, body, leader)
            except NetworkError as exc:
                log.debug("controller call %d failed: %s", api_key, exc)
                on_failure()
                return
            on_response(response)

        self._spawn(call(), f"controller-call-{api_key}")

    def write_snapshot(self, request: WriteSnapshot, place: Any) -> None:
        # The snapshot can only be stored once raft has handed out the batch it ends at.
        asyncio.get_running_loop().call_soon(self._write_snapshot, place)

    def _write_snapshot(self, place: Any) -> None:
        if self.raft is None:
            return
        effect: WriteSnapshot = place()
        try:
            result = effect.render()
            snapshot_id = self.raft.create_snapshot(effect.end_offset, result.encoded())
        except KraftwerkError as exc:
            log.info("snapshot at %d (%s) not written: %s", effect.end_offset, effect.reason, exc)
            return
        log.info("Wrote snapshot %s (%s)%s", snapshot_id, effect.reason,
                 f"; lost: {'; '.join(effect.losses)}" if effect.losses else "")

    def close_client_connections(self, reason: str) -> None:
        closed = sum(s.close_connections(graceful=True) for s in self.servers
                     if s.listener not in self.config.controller_listener_names)
        log.info("Closed %d client connections: %s", closed, reason)

    def mark_ready(self) -> None:
        info = {"pid": os.getpid(), "nodeId": self.config.node_id, "roles": self.config.roles_text,
                "clusterId": self.cluster_id, "softwareVersion": self.config.software.release,
                "listeners": {s.listener: s.port for s in self.servers},
                "metricsPort": None if self.metrics is None else self.metrics.port}
        tmp = self._ready_path().with_suffix(".tmp")
        tmp.write_text(json.dumps(info) + "\n")
        tmp.replace(self._ready_path())
        log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", self.config.node_id)

    def mark_fenced(self, reason: str | None) -> None:
        self._write_fenced_file(self._cluster_refusal or reason)

    def fail_stop(self, fault: FatalFaultError) -> None:
        cleanup = tuple(fault.cleanup)
        if cleanup:
            self._spawn(self._send_cleanup_then_fail(cleanup, str(fault)), "fatal-fault-cleanup")
        else:
            self.fail(str(fault))

    # --- raft → host ------------------------------------------------------------------------

    def _on_committed(self, batches: list[Committed]) -> None:
        if self.host is not None:
            self.host.on_committed(batches)
        if self.data_plane is not None and self.broker is not None:
            self.data_plane.on_image(self.broker.image)

    async def _controller_loop(self) -> None:
        """The controller's timers (the host's controller timer)."""
        while True:
            await asyncio.sleep(0.1)
            if self.host is not None:
                self.host.controller_tick()

    # --- requests ---------------------------------------------------------------------------

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        if listener in self.config.controller_listener_names:
            return self._controller_apis
        return self._broker_accepted

    async def handle(self, listener: str, request: Request) -> codec.Value | None:
        """Authorized once here (the connection's principal, the node's image), then served."""
        core = self.broker or self.controller
        image = core.image if core is not None else EMPTY_IMAGE
        session = Session(request.connection.principal, client_host(request.connection.peer))
        verdict = authorize_request(self.config.authorizer, image, session, request.api_key,
                                    request.api_version, request.body)
        if verdict.body is None:
            return verdict.finish(None)
        if verdict.body is not request.body:
            request = dataclasses.replace(request, body=verdict.body)
        return verdict.finish(await self._serve(listener, request))

    async def _serve(self, listener: str, request: Request) -> codec.Value | None:
        raft = self.raft
        assert raft is not None
        if listener not in self.config.controller_listener_names and self.broker is not None:
            return await self._broker_handle(listener, request)
        if request.api_key in RAFT_API_KEYS:
            return await raft.handle(request)
        if self.controller is None or self.host is None:
            raise NodeError(f"api key {request.api_key} is not served on listener {listener}")
        answer: asyncio.Future[Body] = asyncio.get_running_loop().create_future()

        def respond(body: Body) -> None:
            if not answer.done():  # the connection may have gone meanwhile
                answer.set_result(body)

        self.host.serve_controller(request.api_key, request.api_version, request.body, respond)
        return await answer

    async def _broker_handle(self, listener: str, request: Request) -> codec.Value | None:
        assert self.host is not None
        if request.api_key in DATA_API_KEYS and self.data_plane is not None:
            return await self.data_plane.handle(request.api_key, request.api_version, request.body)
        reply = self.host.serve_broker(request.api_key, request.api_version, request.body, listener)
        if isinstance(reply, Forward):
            return await self._forward(request, reply)
        return reply.body

    async def _forward(self, request: Request, reply: Forward) -> codec.Value:
        """KIP-590: wrap the client's request in an EnvelopeRequest to the active controller and
        relay the embedded response; NOT_CONTROLLER when no controller answers (clients retry)."""
        envelope = envelope_body(reply.api_key, reply.version, request.correlation_id, request.client_id,
                                 reply.body, request.connection.peer, request.connection.principal)
        try:
            response = await self._controller_request(ApiKey.ENVELOPE, 0, envelope)
            return unwrap_response(reply.api_key, reply.version, response).body
        except ForwardingError as exc:
            log.info("Forwarded %s request failed: %s", reply.api_key, exc)
        except NetworkError as exc:
            log.info("Forwarding %s to the active controller failed: %s", reply.api_key, exc)
        return not_controller_body(request.api_key, request.api_version, request.body)


class _ListenerHandler:
    """The network layer's view of a node on one listener."""

    def __init__(self, node: Node, listener: str) -> None:
        self.node = node
        self.listener = listener

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return self.node.supported_apis(self.listener)

    async def handle(self, request: Request) -> codec.Value | None:
        return await self.node.handle(self.listener, request)
