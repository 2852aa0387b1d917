"""A Kafka cluster in the test process: real frames on loopback, production cores behind them.

Every request goes through :class:`~kraftwerk.runtime.server.KafkaServer` (the node's own framing)
to the production :class:`~kraftwerk.broker.BrokerNode` (on a broker listener) or
:class:`~kraftwerk.controller.QuorumController` (on a controller listener). A broker forwards
admin requests to the active controller inside an EnvelopeRequest, as the node does. What the
cores want appended goes into one in-memory log that every node replays at once (a raft that
commits instantly, ``tests.controller.harness.Log``). Nothing here decides a request: the answers
and their texts are the cores' own. The test side only chooses the cluster (releases, finalized
levels, which controller leads) and reads what was sent.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.broker import BrokerNode
from kraftwerk.broker.node import BROKER_API_KEYS
from kraftwerk.controller import AppendThenRespond, QuorumController, Respond
from kraftwerk.controller.common import declared_api_ranges
from kraftwerk.controller.effects import Forward
from kraftwerk.controller.features import feature_level_record, noop_record
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS, RAFT_API_KEYS
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.image.model import Endpoint
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.runtime.forwarding import ForwardingError, envelope_body, unwrap_response
from kraftwerk.runtime.server import KafkaServer, Request
from kraftwerk.versions import SoftwareVersion
from tests.controller.harness import Log, drive_broker

CLUSTER_ID = "co8Lz5qWSCe6yEg4UfbcVw"
NOW_MS = 0
"""The cores' clock: frozen, so no broker session ever expires during a test."""

#: What the cluster behind ``cli/kafka-features-behaviour.txt`` had finalized (Kafka 4.3, MV 4.3-IV0).
GOLDEN_FINALIZED = {
    "metadata.version": 30, "eligible.leader.replicas.version": 1, "group.version": 1,
    "share.version": 1, "streams.version": 1, "transaction.version": 2,
}
GOLDEN_NEXT_OFFSET = 99
"""Where that cluster's next metadata record landed (the transcript's describe shows Epoch 99 after
one feature write)."""


@dataclass
class Recorded:
    """One request as a node received it."""

    api_key: int
    version: int
    body: dict[str, Any]
    client_id: str | None


@dataclass
class NodeServer:
    """One node's listeners and what arrived on them."""

    node_id: int
    controller: QuorumController | None = None
    broker: BrokerNode | None = None
    servers: dict[str, KafkaServer] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)

    @property
    def address(self) -> str:
        """The client-facing listener: the broker's when there is one, else the controller's."""
        name = "PLAINTEXT" if "PLAINTEXT" in self.ports else "CONTROLLER"
        return f"127.0.0.1:{self.ports[name]}"

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    def of(self, api_key: int) -> list[Recorded]:
        return [r for r in self.requests if r.api_key == api_key]


class _Listener:
    """The network layer's view of one node on one listener (``RequestHandler``)."""

    def __init__(self, cluster: InProcessKafka, node: NodeServer, name: str) -> None:
        self.cluster = cluster
        self.node = node
        self.name = name

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return self.cluster.api_ranges(self.name)

    async def handle(self, request: Request) -> codec.Value | None:
        self.node.requests.append(
            Recorded(request.api_key, request.api_version, dict(request.body), request.client_id))
        return self.cluster.serve(self.node, self.name, request)


SERVER_LOGGERS = ("kraftwerk.controller", "kraftwerk.broker", "kraftwerk.image", "kraftwerk.runtime.server")
"""What the cores and the server log: the server's log, not the tool's stderr (the CLI under test runs
in this process and sends the root logger to its stderr)."""


class _ServerLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class InProcessKafka:
    """``with InProcessKafka() as cluster: cluster.node(1).address`` — a combined node 1 of Kafka
    4.3 at the golden transcript's levels, unless told otherwise.

    ``controllers``/``brokers`` are node ids (a node in both is combined); ``leader`` is the active
    controller (None: no controller is active); ``finalized`` the levels bootstrapped (metadata.version
    included, kraft.version separately); ``api_versions`` narrows what every listener serves.
    """

    def __init__(
        self,
        *,
        controllers: tuple[int, ...] = (1,),
        brokers: tuple[int, ...] = (1,),
        leader: int | None = 1,
        release: str = "4.3",
        finalized: Mapping[str, int] = GOLDEN_FINALIZED,
        kraft_version: int = 1,
        next_offset: int = GOLDEN_NEXT_OFFSET,
        api_versions: Mapping[int, tuple[int, int]] | None = None,
        allow_unsafe_downgrade: bool = False,
    ) -> None:
        self.log = Log()
        self.software = SoftwareVersion.for_release(release)
        self.kraft_version = kraft_version
        self._api_versions = dict(api_versions) if api_versions is not None else None
        self.nodes = {i: NodeServer(i) for i in sorted({*controllers, *brokers})}
        self._controllers, self._brokers = controllers, brokers
        self._leader = leader
        self._finalized = dict(finalized)
        self._next_offset = next_offset
        self._allow_unsafe = allow_unsafe_downgrade
        self.server_log = _ServerLog()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> InProcessKafka:
        for name in SERVER_LOGGERS:
            logger = logging.getLogger(name)
            logger.propagate = False
            logger.addHandler(self.server_log)
        self._thread.start()
        self._run(self._bind())
        self._run(self._start_cluster())
        return self

    def __exit__(self, *exc: object) -> None:
        self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
        for name in SERVER_LOGGERS:
            logger = logging.getLogger(name)
            logger.removeHandler(self.server_log)
            logger.propagate = True

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=30)

    async def _bind(self) -> None:
        for node in self.nodes.values():
            names = (["PLAINTEXT"] if node.node_id in self._brokers else []) + (
                ["CONTROLLER"] if node.node_id in self._controllers else [])
            for name in names:
                server = KafkaServer(_Listener(self, node, name), "127.0.0.1", 0, listener=name)
                await server.start()
                node.servers[name] = server
                node.ports[name] = server.port

    async def _close(self) -> None:
        for node in self.nodes.values():
            for server in node.servers.values():
                await server.close()

    async def _start_cluster(self) -> None:
        """Bootstrap the cores as a freshly formatted cluster would: activation, controller and
        broker registrations, then the log up to ``next_offset``."""
        bootstrap = [feature_level_record(n, v) for n, v in self._finalized.items()]
        bootstrap.sort(key=lambda r: r.value["name"] != "metadata.version")
        voters = tuple(self._controllers)
        for node in self.nodes.values():
            if node.node_id in self._controllers:
                node.controller = QuorumController(
                    node.node_id, CLUSTER_ID, self.software, voters, bootstrap,
                    listeners=[self._endpoint(node, "CONTROLLER")], kraft_version=self.kraft_version,
                    incarnation_id=uuid.UUID(int=node.node_id << 8 | 0xC0),
                    allow_unsafe_downgrade=self._allow_unsafe,
                    api_versions=self.api_ranges("CONTROLLER"))
                self.log.join(node.controller)
            if node.node_id in self._brokers:
                node.broker = BrokerNode(
                    node.node_id, CLUSTER_ID, self.software, [self._endpoint(node, "PLAINTEXT")],
                    [uuid.UUID(int=node.node_id * 1000 + 7)], api_versions=self.api_ranges("PLAINTEXT"),
                    incarnation_id=uuid.UUID(int=node.node_id << 8 | 0xB0))
                node.broker.set_kraft_version(self.kraft_version)
                self.log.join(node.broker)
        first = self.nodes[self._controllers[0]].controller
        assert first is not None
        self.elect(first.node_id)
        active = self.active_controller()
        assert active is not None
        self.log.append(active.tick(NOW_MS))  # the active controller registers itself
        for node in self.nodes.values():
            standby = node.controller
            if standby is not None and standby is not active and standby.needs_controller_registration():
                body = standby.controller_registration_body()
                self._append(active.handle_request(ApiKey.CONTROLLER_REGISTRATION, 0, body, NOW_MS))
        for node in self.nodes.values():
            if node.broker is not None:
                for _ in range(3):  # register, heartbeat (caught up), heartbeat (unfenced)
                    drive_broker(self.log, active, node.broker, NOW_MS)
                assert not node.broker.fenced, node.broker.last_refusal
        assert self.log.end <= self._next_offset, self.log.end
        self.log.append([noop_record()] * (self._next_offset - self.log.end))
        self.elect(self._leader)

    # ------------------------------------------------------------------ the cluster

    def node(self, node_id: int) -> NodeServer:
        return self.nodes[node_id]

    def elect(self, leader: int | None) -> None:
        """Raft elected ``leader`` (None: the quorum has no leader) in a new epoch."""
        self.log.epoch += 1
        for node in self.nodes.values():
            if node.controller is not None:
                reply = node.controller.on_leader_change(leader, self.log.epoch, NOW_MS, self.log.end == 0)
                if reply is not None:
                    self._append(reply)
            if node.broker is not None:
                node.broker.set_controller(leader)

    def active_controller(self) -> QuorumController | None:
        return next((n.controller for n in self.nodes.values()
                     if n.controller is not None and n.controller.is_active), None)

    def finalized(self) -> dict[str, int]:
        """The levels the active controller's image holds (kraft.version included)."""
        controller = self.active_controller() or self.nodes[self._controllers[0]].controller
        assert controller is not None
        return controller.finalized_features()[0]

    def api_ranges(self, listener: str) -> dict[int, tuple[int, int]]:
        keys = BROKER_API_KEYS if listener == "PLAINTEXT" else CONTROLLER_API_KEYS + RAFT_API_KEYS
        declared = declared_api_ranges(keys)
        if self._api_versions is None:
            return declared
        return {k: v for k, v in self._api_versions.items() if k in declared}

    @staticmethod
    def _endpoint(node: NodeServer, name: str) -> Endpoint:
        return Endpoint(name, "127.0.0.1", node.ports[name], 0)

    # ------------------------------------------------------------------ serving

    def _append(self, reply: AppendThenRespond | Respond) -> codec.Value:
        """Commit what a core asked to append (instantly); the response it then owes."""
        if isinstance(reply, Respond):
            return reply.body
        if reply.kraft_version_upgrade is not None:
            self.kraft_version = reply.kraft_version_upgrade
            for node in self.nodes.values():
                for core in (node.controller, node.broker):
                    if core is not None:
                        core.set_kraft_version(self.kraft_version)
        self.log.append(reply.records)
        return reply.response_body

    def serve(self, node: NodeServer, listener: str, request: Request) -> codec.Value:
        if listener == "CONTROLLER":
            assert node.controller is not None
            return self._append(node.controller.handle_request(
                request.api_key, request.api_version, request.body, NOW_MS))
        assert node.broker is not None
        reply = node.broker.handle_request(request.api_key, request.api_version, request.body, NOW_MS,
                                           listener_name=listener)
        if isinstance(reply, Forward):
            return self._forward(request, reply)
        return reply.body

    def _forward(self, request: Request, reply: Forward) -> codec.Value:
        """KIP-590, as the node forwards: an EnvelopeRequest to the active controller (or to any
        controller when none is active, which answers NOT_CONTROLLER), the embedded answer back."""
        controller = self.active_controller() or self.nodes[self._controllers[0]].controller
        assert controller is not None
        envelope = envelope_body(reply.api_key, reply.version, request.correlation_id, request.client_id,
                                 reply.body, request.connection.peer)
        response = self._append(controller.handle_request(ApiKey.ENVELOPE, 0, envelope, NOW_MS))
        try:
            return unwrap_response(reply.api_key, reply.version, response).body
        except ForwardingError:
            return not_controller_body(request.api_key, request.api_version, request.body)

