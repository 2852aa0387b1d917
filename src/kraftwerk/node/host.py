"""NodeHost: one node's cores wired together once, so the runtime and the simulator run the same glue.

A node is a raft core plus a controller core, a broker core or both. Everything between them
lives here: replaying what raft commits into the cores (snapshot loads, KIP-778 fail-stop, the
kraft.version raft keeps), their effects (snapshots at a version change, closing client
connections), telling the cores who leads and activating this controller once its epoch has
committed, the controller's timers (session fencing, self-registration, KIP-835 NoOpRecords), a
standby's ControllerRegistration, the broker's registration and heartbeats, serving controller
RPCs (append, wait for the commit, answer or NOT_CONTROLLER) and deciding when the node is ready or
fenced.

The host is sans-I/O: it reads raft's state but changes raft, the network, the disk and the clock
only through :class:`HostIO`, which a driver supplies (``runtime/node.py`` over sockets, files and
the wall clock; ``sim/lifecycle.py`` over the simulated network, disk and clock). Every ``HostIO``
call returns at once; results come back through callbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from kraftwerk.broker.node import BrokerNode, ControllerCall
from kraftwerk.controller.effects import (
    AppendThenRespond,
    Body,
    CloseClientConnections,
    Effect,
    Forward,
    MetadataVersionChanged,
    Respond,
    WriteSnapshot,
)
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.controller.responses import not_controller_body
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.node.hosting import (
    LeaderWatch,
    activate,
    feed_kraft_version,
    snapshot_at_batch_end,
    timer_records,
)
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.protocol.messages.cluster import ControllerRegistrationResponse
from kraftwerk.raft import (
    Committed,
    CommittedBatch,
    KRaftVersionError,
    NotLeaderError,
    RaftNode,
    SnapshotLoad,
    VoterSet,
)

log = logging.getLogger("kraftwerk.node")

Answer = Callable[[Body], None]
"""Where a served request's response body goes."""


class HostIO(Protocol):
    """The I/O a driver gives a :class:`NodeHost`. Nothing here blocks."""

    def now_ms(self) -> int:
        """The driver's clock (wall or virtual)."""

    def later(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` soon, outside the current raft callback."""

    def append(self, values: list[bytes]) -> int:
        """Append one batch through raft (leader only; raises ``NotLeaderError``); the offset of its
        last record."""

    def upgrade_kraft_version(self, level: int) -> None:
        """Have raft write the KRaftVersion/Voters control batch (raises ``KRaftVersionError``)."""

    def wait_committed(self, offset: int, epoch: int, done: Callable[[bool], None]) -> None:
        """Call ``done(True)`` once the high watermark passes ``offset`` in ``epoch``, ``done(False)``
        when leadership moves or the wait times out."""

    def call_controller(
        self,
        leader: int,
        api_key: int,
        version: int,
        body: Body,
        on_response: Callable[[Body], None],
        on_failure: Callable[[], None],
    ) -> None:
        """Send a request to controller ``leader``; exactly one callback runs."""

    def write_snapshot(self, request: WriteSnapshot, place: Callable[[], WriteSnapshot]) -> None:
        """Store a snapshot a core asked for, after the batch that asked: ``place()`` then says where
        (a batch boundary) and with which image."""

    def close_client_connections(self, reason: str) -> None:
        """Close the client (non-controller) connections so clients renegotiate ApiVersions."""

    def mark_ready(self) -> None:
        """The node is up: a leader is known, the image has a metadata.version, the broker is unfenced."""

    def mark_fenced(self, reason: str | None) -> None:
        """The controller refused this broker's registration (``reason``), or stopped refusing (None)."""

    def fail_stop(self, fault: FatalFaultError) -> None:
        """KIP-778 fail-stop: send ``fault.cleanup`` (a broker's UnregisterBroker), then exit non-zero."""


class NodeHost:
    """A node's controller and/or broker core, driven by raft and a driver's :class:`HostIO`."""

    def __init__(
        self,
        node_id: int,
        raft: RaftNode,
        io: HostIO,
        *,
        controller: QuorumController | None = None,
        broker: BrokerNode | None = None,
        idle_interval_ms: int,
        registration_retry_ms: int,
    ) -> None:
        self.node_id = node_id
        self.raft = raft
        """Read here, changed only through ``io`` (the driver runs raft's I/O after each change)."""
        self.io = io
        self.controller = controller
        self.broker = broker
        self.idle_interval_ms = idle_interval_ms
        """KIP-835: the active controller appends a NoOpRecord after this long without a write."""
        self.registration_retry_ms = registration_retry_ms
        self.leader_watch = LeaderWatch()
        self.last_write_ms = io.now_ms()
        self.registration_sent_ms = -registration_retry_ms
        self._voter_set: VoterSet | None = None
        self.ready = False
        self.failed = False
        """A fatal fault stopped the cores: nothing more is applied."""
        self._held: list[tuple[int, Callable[[], None]]] = []
        """Committed replies waiting for this controller's own replay to reach their offset."""

    @property
    def cores(self) -> tuple[QuorumController | BrokerNode, ...]:
        return tuple(c for c in (self.controller, self.broker) if c is not None)

    # ------------------------------------------------------------------ raft → cores

    def on_committed(self, items: Sequence[Committed]) -> None:
        """Replay what raft handed out, in order; a fatal fault stops the node."""
        for item in items:
            if self.failed:
                return
            try:
                effects = self._apply(item)
            except FatalFaultError as fault:
                self.failed = True
                self.io.fail_stop(fault)
                return
            for effect, source in effects:
                self.effect(effect, source)
            end = item.end_offset if isinstance(item, SnapshotLoad) else item.last_offset + 1
            level = self.raft.kraft_version_at(end)
            if feed_kraft_version((self.controller, self.broker), level):
                log.info("kraft.version is now %d (committed below offset %d)", level, end)
            self.applied(item)
        self._release_held()
        self._check_ready()

    def _apply(self, item: Committed) -> list[tuple[Effect, str]]:
        out: list[tuple[Effect, str]] = []
        if isinstance(item, SnapshotLoad):
            records = list(item.records)
            if self.controller is not None:
                self.controller.load_snapshot(records, end_offset=item.end_offset, epoch=item.epoch)
            if self.broker is not None:
                out += [(e, "broker") for e in self.broker.load_snapshot(
                    records, end_offset=item.end_offset, epoch=item.epoch)]
            log.info("Loaded snapshot %020d-%010d (%d records)", item.end_offset, item.epoch, len(records))
            return out
        assert isinstance(item, CommittedBatch)
        records = self.records_to_replay(item)
        for source, core in (("broker", self.broker), ("controller", self.controller)):
            if core is not None:
                effects = core.replay(item.base_offset, records, epoch=item.epoch,
                                      append_time_ms=item.append_time_ms, last_offset=item.last_offset)
                out += [(e, source) for e in effects]
        return out

    def records_to_replay(self, item: CommittedBatch) -> list[Any]:
        """The records of a committed batch the cores replay (a control batch: none). The
        simulator's deliberate bugs override this; nothing else does."""
        return [] if item.is_control else list(item.records)

    def applied(self, item: Committed) -> None:
        """Called after each item is applied (the simulator checks every node's view here)."""

    def effect(self, effect: Effect, source: str) -> None:
        """Carry out one effect of replay (``source``: the core that asked)."""
        if isinstance(effect, MetadataVersionChanged):
            log.info("metadata.version changed at offset %d: %s -> %s%s", effect.offset, effect.previous,
                     effect.current, f" (lost: {'; '.join(effect.losses)})" if effect.losses else "")
        elif isinstance(effect, CloseClientConnections):
            self.io.close_client_connections(effect.reason)
        elif isinstance(effect, WriteSnapshot) and (source == "controller" or self.controller is None):
            # On a combined node both cores ask; the controller's request is the one written.
            self.io.write_snapshot(effect, lambda: self._place_snapshot(effect, source))

    def _place_snapshot(self, effect: WriteSnapshot, source: str) -> WriteSnapshot:
        """Where to store the snapshot now that raft has handed out its batch (``snapshot_at_batch_end``)."""
        if source == "controller" and self.controller is not None:
            return snapshot_at_batch_end(effect, self.controller.image, self.controller.last_committed_offset)
        if self.broker is not None:
            return snapshot_at_batch_end(effect, self.broker.image, self.broker.metadata_offset)
        return effect

    # ------------------------------------------------------------------ raft state

    def on_raft_event(self) -> None:
        """After every raft event: the voter set, the leader as the cores see it, activation."""
        if self.failed:
            return
        raft = self.raft
        if self.controller is not None and raft.voter_set is not self._voter_set:
            # the voter set of a dynamic quorum changes with AddRaftVoter / RemoveRaftVoter
            self._voter_set = raft.voter_set
            self.controller.voters = raft.voters
        epoch = self.leader_watch.observe(
            self.controller, self.broker, leader_id=raft.leader_id, epoch=raft.epoch,
            is_leader=raft.is_leader, high_watermark=raft.high_watermark,
            epoch_start_offset=raft.epoch_start_offset, now_ms=self.io.now_ms())
        if epoch is not None:
            self.io.later(lambda: self._activate(epoch))
        self._check_ready()

    def _activate(self, epoch: int) -> None:
        controller, raft = self.controller, self.raft
        if controller is None or self.failed or raft.epoch != epoch or not raft.is_leader:
            return
        try:
            activation = activate(controller, self.node_id, epoch, self.io.now_ms())
        except FatalFaultError as fault:
            # a migration flag the log's state forbids (KIP-866): Kafka's controller stops too
            self.failed = True
            self.io.fail_stop(fault)
            return
        if activation is not None:
            self.write(activation.encoded_records())

    def write(self, values: list[bytes], kraft_version_upgrade: int | None = None) -> int | None:
        """Append through raft; the last offset, or None when this node is not (or no longer) the
        leader or raft refused the kraft.version upgrade."""
        if not self.raft.is_leader:
            return None
        try:
            if kraft_version_upgrade is not None:
                # Kafka's FeatureControlManager: raft writes the KRaftVersion/Voters control batch
                # first; the metadata records after it commit it along with them.
                self.io.upgrade_kraft_version(kraft_version_upgrade)
            offset = self.io.append(values)
        except NotLeaderError:
            return None
        except KRaftVersionError as exc:
            log.warning("kraft.version upgrade to %s refused by raft: %s", kraft_version_upgrade, exc)
            return None
        self.last_write_ms = self.io.now_ms()
        return offset

    def _check_ready(self) -> None:
        if self.ready or self.raft.leader_id is None:
            return
        if self.controller is not None and self.controller.image.metadata_version is None:
            return
        if self.broker is not None and self.broker.fenced:
            return
        self.ready = True
        self.io.mark_ready()

    # ------------------------------------------------------------------ timers

    def tick(self) -> None:
        """Every timer of the node: the controller's, then the broker's."""
        self.controller_tick()
        self.broker_tick()

    def controller_tick(self) -> None:
        """Session fencing and self-registration (the core's ``tick``), the KIP-835 NoOpRecord on an
        idle log, and a standby's ControllerRegistration."""
        controller = self.controller
        if controller is None or self.failed:
            return
        if not controller.is_active or not self.raft.is_leader:
            self._maybe_register_controller(controller)
            return
        now = self.io.now_ms()
        records = timer_records(controller, now, self.last_write_ms, self.idle_interval_ms)
        if records:
            self.write([encode_metadata_record(r.spec, r.version, r.value) for r in records])

    def _maybe_register_controller(self, controller: QuorumController) -> None:
        leader = self.raft.leader_id
        now = self.io.now_ms()
        if (leader is None or leader == self.node_id or controller.is_active
                or not controller.needs_controller_registration()
                or now - self.registration_sent_ms < self.registration_retry_ms):
            return
        self.registration_sent_ms = now
        self.io.call_controller(leader, ApiKey.CONTROLLER_REGISTRATION, 0,
                                controller.controller_registration_body(),
                                self._controller_registration_answered, self._controller_registration_lost)

    def _controller_registration_answered(self, body: Body) -> None:
        response = cast(ControllerRegistrationResponse, body)
        code = int(response.get("errorCode", 0))
        if code == 0:
            log.info("[ControllerRegistrationManager id=%d] Our registration has been persisted to the "
                     "metadata log.", self.node_id)
        else:
            log.info("[ControllerRegistrationManager id=%d] Registration failed with error code %d: %s",
                     self.node_id, code, response.get("errorMessage"))

    def _controller_registration_lost(self) -> None:
        log.info("[ControllerRegistrationManager id=%d] RegistrationResponse failed: no response",
                 self.node_id)

    def broker_tick(self) -> None:
        """Registration and heartbeats with the active controller (the broker core's lifecycle)."""
        broker = self.broker
        if broker is None or self.failed:
            return
        for call in broker.poll(self.io.now_ms()):
            leader = self.raft.leader_id
            if leader is None:
                broker.handle_controller_failure(self.io.now_ms())
                continue
            self.io.call_controller(leader, call.api_key, call.max_version, call.body_for(call.max_version),
                                    self._broker_answer(call), self._broker_call_lost)

    def _broker_answer(self, call: ControllerCall) -> Callable[[Body], None]:
        def answered(response: Body) -> None:
            broker = self.broker
            if broker is None or self.failed:
                return
            now = self.io.now_ms()
            if call.api_key == ApiKey.BROKER_REGISTRATION:
                broker.handle_registration_response(response, now)
                self.io.mark_fenced(broker.last_refusal)
            elif call.api_key == ApiKey.BROKER_HEARTBEAT:
                broker.handle_heartbeat_response(response, now)
            self.broker_answered(call, response)
            self._check_ready()

        return answered

    def _broker_call_lost(self) -> None:
        if self.broker is not None and not self.failed:
            self.broker.handle_controller_failure(self.io.now_ms())

    def broker_answered(self, call: ControllerCall, response: Body) -> None:
        """Called after the broker core took a controller's response (the simulator counts them)."""

    # ------------------------------------------------------------------ requests

    def serve_controller(self, api_key: int, version: int, body: Body, respond: Answer) -> None:
        """A controller RPC: answer at once, or append its records and answer once they commit
        (NOT_CONTROLLER if leadership is lost first)."""
        controller = self.controller
        assert controller is not None
        now, end = self.io.now_ms(), self.raft.log.end_offset
        reply = controller.handle_request(api_key, version, body, now, next_offset=end)
        self.answer(self.controller_reply(reply, api_key, version, body), api_key, version, body, respond)

    def controller_reply(
        self, reply: Respond | AppendThenRespond, api_key: int, version: int, body: Body
    ) -> Respond | AppendThenRespond:
        """The controller's reply as the host carries it out (the simulator's deliberate bugs
        override this; nothing else does)."""
        return reply

    def answer(
        self, reply: Respond | AppendThenRespond, api_key: int, version: int, body: Body, respond: Answer
    ) -> None:
        if isinstance(reply, Respond):
            respond(reply.body)
            return
        if not reply.records:
            # Nothing to write (an idempotent re-registration): answer from the committed state.
            respond(reply.response_body)
            return
        fallback = reply.not_controller_body or not_controller_body(api_key, version, body)
        values = reply.encoded_records()
        offset = self.write(values, reply.kraft_version_upgrade)
        if offset is None:
            respond(fallback)
            return
        epoch, ok_body = self.raft.epoch, reply.response_body

        def committed(ok: bool) -> None:
            if not ok:
                respond(fallback)
                return
            self.acknowledged(offset, epoch, values)
            self._after_replay(offset, lambda: respond(ok_body))

        self.io.wait_committed(offset, epoch, committed)

    def _after_replay(self, offset: int, answer: Callable[[], None]) -> None:
        """Answer once this controller has replayed ``offset``, not merely once it committed: the
        high watermark can pass the leader's own unflushed end (two followers have it durably),
        and raft hands the leader its batch only after its own flush (the runtime flushes early
        then, ``RaftHost.deliver_committed_now``). Answering at the commit alone let a
        DescribeFeatures (ApiVersions) to the same controller, sent right after the response,
        still show the old level."""
        controller = self.controller
        if controller is None or controller.last_committed_offset >= offset:
            answer()
        else:
            self._held.append((offset, answer))

    def _release_held(self) -> None:
        controller = self.controller
        if not self._held or controller is None:
            return
        replayed = controller.last_committed_offset
        due = [answer for offset, answer in self._held if offset <= replayed]
        self._held = [(offset, answer) for offset, answer in self._held if offset > replayed]
        for answer in due:
            answer()

    def acknowledged(self, offset: int, epoch: int, values: list[bytes]) -> None:
        """Called when an appended reply committed and is answered (the simulator's raft checker then
        proves it stays committed)."""

    def serve_broker(self, api_key: int, version: int, body: Body, listener: str | None) -> Respond | Forward:
        """A client request on a broker listener: answered from the image, or to forward."""
        broker = self.broker
        assert broker is not None
        return broker.handle_request(api_key, version, body, self.io.now_ms(), listener_name=listener)
