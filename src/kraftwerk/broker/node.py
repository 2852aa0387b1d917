"""BrokerNode: the sans-I/O broker core (lifecycle, metadata follower, client RPCs).

Kafka's BrokerLifecycleManager + metadata publishers + the read-only half of KafkaApis, as one
state machine. The runtime:

* calls ``poll(now_ms)`` and sends each returned :class:`ControllerCall` to the active
  controller (at ``min(call.max_version, the controller's max)``, body from ``body_for(v)``),
  then feeds the response to ``handle_registration_response`` / ``handle_heartbeat_response``
  (or ``handle_controller_failure`` if it could not be delivered);
* feeds committed metadata through ``replay`` / ``load_snapshot`` (the broker is a raft observer)
  and performs the effects (:class:`CloseClientConnections`, :class:`WriteSnapshot`);
* answers client requests with ``handle_request``: a :class:`Respond` body, or :class:`Forward`
  (send the request to the controller in an Envelope and relay its response).
"""

from __future__ import annotations

import enum
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.broker.admin import alter_broker_loggers, describe_topic_partitions_body, logger_levels
from kraftwerk.config import ConfigResourceType, broker_rule_violations, static_configs_to_report
from kraftwerk.controller import features as fc
from kraftwerk.controller.acl_control import describe_acls
from kraftwerk.controller.common import (
    api_versions_body,
    declared_api_ranges,
    finalized_levels,
    shape_response,
)
from kraftwerk.controller.configs import describe_configs
from kraftwerk.controller.effects import (
    Body,
    CloseClientConnections,
    Effect,
    Forward,
    MetadataVersionChanged,
    Respond,
)
from kraftwerk.controller.responses import (
    BROKER_ENDPOINT,
    describe_cluster_brokers,
    describe_cluster_endpoint_error,
    pick_listener,
)
from kraftwerk.controller.scram_control import describe_scram
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import ConfigResource, Endpoint, MetadataImage
from kraftwerk.image.replay import ImageReplayer
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages.cluster import BrokerHeartbeatResponse, BrokerRegistrationResponse
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.routing import Request
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.features import KRAFT_VERSION
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)



class BrokerState(enum.Enum):
    """Kafka's ``BrokerState`` (the value is Kafka's byte)."""

    NOT_RUNNING = 0
    STARTING = 1
    """Not registered yet (or registration refused: stays fenced and retries)."""
    RECOVERY = 2
    """Registered, fenced, catching up with the metadata log."""
    RUNNING = 3
    PENDING_CONTROLLED_SHUTDOWN = 6
    SHUTTING_DOWN = 7


@dataclass(frozen=True, slots=True)
class ControllerCall:
    """A request the broker wants sent to the active controller."""

    api_key: int
    max_version: int
    body: Body

    def body_for(self, version: int) -> Body:
        """The body with only the fields ``version`` has (the runtime negotiated it)."""
        spec = by_api_key(Kind.REQUEST, self.api_key)
        return {
            f.json_name: self.body[f.json_name]
            for f in spec.fields
            if f.json_name in self.body and version in f.versions
        }


@dataclass(slots=True)
class _Timers:
    next_registration_ms: int = 0
    registration_failures: int = 0
    next_heartbeat_ms: int = 0
    in_flight: int | None = None
    in_flight_since: int = 0
    refusals: list[str] = field(default_factory=list)
    restate_static_configs: bool = False
    """Re-send the registration: a new active controller lost the static configs held in memory."""


class BrokerNode:
    """One broker's core. See the module docstring for how the runtime drives it."""

    def __init__(
        self,
        node_id: int,
        cluster_id: str,
        software: SoftwareVersion,
        listeners: Sequence[Endpoint],
        log_dirs: Sequence[uuid.UUID] = (),
        *,
        incarnation_id: uuid.UUID,
        rack: str | None = None,
        heartbeat_interval_ms: int = 2000,
        initial_backoff_ms: int = 100,
        max_backoff_ms: int = 10_000,
        request_timeout_ms: int = 30_000,
        static_configs: Mapping[str, str] | None = None,
        snapshot_on_version_change: bool = True,
        api_versions: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.software = software
        self.listeners = tuple(listeners)
        self.log_dirs = tuple(log_dirs)
        self.incarnation_id = incarnation_id
        """New for every process start (Kafka's random Uuid), so the controller tells a restarted
        broker from a retried registration, and a second process with this node.id from either."""
        self.rack = rack
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.initial_backoff_ms = initial_backoff_ms
        self.max_backoff_ms = max_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self.static_configs = dict(static_configs or {})
        self._api_ranges = (
            dict(api_versions) if api_versions is not None else declared_api_ranges(BROKER_API_KEYS)
        )
        self._replayer = ImageReplayer(node_id, "broker", software, snapshots=snapshot_on_version_change)
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.fenced = True
        self.caught_up = False
        self.controller_id: int | None = None
        self._last_controller_id: int | None = None
        self.kraft_version = 0
        self._t = _Timers()
        self._stalled: FatalFaultError | None = None
        self.last_refusal: str | None = None
        """Kafka's UnsupportedVersionException text of the last refused registration, if any."""

    # ------------------------------------------------------------------ state

    @property
    def image(self) -> MetadataImage:
        return self._replayer.image

    @property
    def metadata_offset(self) -> int:
        """The last committed offset replayed (what heartbeats report)."""
        return self._replayer.last_offset

    @property
    def is_shutdown_complete(self) -> bool:
        return self.state is BrokerState.SHUTTING_DOWN

    def set_kraft_version(self, level: int) -> None:
        self.kraft_version = level

    def set_controller(self, controller_id: int | None) -> None:
        """The active controller as raft reports it (for logs and DescribeCluster). A new one
        holds none of the static configs (KIP-1294) the old one kept in memory below 4.4-IV1: the
        registration is re-sent (amending, same incarnation) so the next audit knows them."""
        self.controller_id = controller_id
        if controller_id is None or controller_id == self._last_controller_id:
            return
        failover = self._last_controller_id is not None
        self._last_controller_id = controller_id
        if failover and self.broker_epoch >= 0 and self._static_configs_unpersisted():
            self._t.restate_static_configs = True

    def _static_configs_unpersisted(self) -> bool:
        own = self.image.cluster.brokers.get(self.node_id)
        return bool(self.static_configs) and (own is None or not own.static_configs)

    # ------------------------------------------------------------------ metadata

    def replay(
        self,
        base_offset: int,
        records: Sequence[MetadataRecord | bytes],
        *,
        epoch: int = -1,
        append_time_ms: int = -1,
        last_offset: int | None = None,
    ) -> list[Effect]:
        """Replay a committed batch. A metadata.version change adds :class:`CloseClientConnections`.

        An unsupported FeatureLevelRecord raises :class:`FatalFaultError` whose ``cleanup`` holds
        the UnregisterBroker call to send before exiting (KIP-778: the broker unregisters).
        """
        if self._stalled is not None:
            return []
        try:
            effects = self._replayer.replay(
                base_offset, records, epoch=epoch, append_time_ms=append_time_ms, last_offset=last_offset
            )
        except FatalFaultError as fault:
            if self._stall(fault, "apply the metadata log"):
                return []
            self._fail(fault)
            raise
        return self._with_close(effects)

    def load_snapshot(
        self, records: Sequence[MetadataRecord | bytes], *, end_offset: int, epoch: int = -1
    ) -> list[Effect]:
        """Load a snapshot; a changed metadata.version closes client connections."""
        before = self.image.metadata_version
        try:
            image = self._replayer.load_snapshot(records, end_offset=end_offset, epoch=epoch)
        except FatalFaultError as fault:
            if self._stall(fault, "load the metadata snapshot"):
                return []
            self._fail(fault)
            raise
        if image.metadata_version is not None and before is not None and image.metadata_version is not before:
            return [
                MetadataVersionChanged(end_offset - 1, before, image.metadata_version),
                CloseClientConnections(f"metadata.version changed from {before} to {image.metadata_version}"),
            ]
        return []

    def _stall(self, fault: FatalFaultError, what: str) -> bool:
        """A never-registered broker stays fenced instead of dying (the controller refuses its
        registration with Kafka's message) and stops applying the log; True if it stalled. This
        covers a broker restarted on older software loading its last snapshot before it registers."""
        if self.broker_epoch >= 0 or self.state is not BrokerState.STARTING:
            return False
        self._stalled = fault
        log.error(
            "[BrokerServer id=%d] Cannot %s: %s. The broker stays fenced until it runs software that "
            "supports it.",
            self.node_id,
            what,
            fault,
        )
        return True

    def _fail(self, fault: FatalFaultError) -> None:
        log.error("[BrokerServer id=%d] %s; unregistering and shutting down", self.node_id, fault)
        if self.broker_epoch >= 0:
            fault.cleanup = (ControllerCall(ApiKey.UNREGISTER_BROKER, 0, {"brokerId": self.node_id}),)
        self.state = BrokerState.SHUTTING_DOWN

    @staticmethod
    def _with_close(effects: Sequence[Effect]) -> list[Effect]:
        out: list[Effect] = []
        for e in effects:
            out.append(e)
            if isinstance(e, MetadataVersionChanged) and e.previous is not None:
                out.append(
                    CloseClientConnections(f"metadata.version changed from {e.previous} to {e.current}")
                )
        return out

    # ------------------------------------------------------------------ lifecycle

    def registration_body(self) -> Body:
        """BrokerRegistration request (v6 shape; ``ControllerCall.body_for`` trims it)."""
        return {
            "brokerId": self.node_id,
            "clusterId": self.cluster_id,
            "incarnationId": self.incarnation_id,
            "listeners": [
                {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
                for e in self.listeners
            ],
            "features": [
                {"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in self.software.supported_features().items()
            ],
            "rack": self.rack,
            "isMigratingZkBroker": False,
            "logDirs": list(self.log_dirs),
            "previousBrokerEpoch": self.broker_epoch,
            "cordonedLogDirs": [],
            "staticConfigs": [
                {"name": k, "value": v}
                for k, v in (static_configs_to_report(self.static_configs) if self.static_configs else ())
            ],
        }

    def heartbeat_body(self) -> Body:
        return {
            "brokerId": self.node_id,
            "brokerEpoch": self.broker_epoch,
            "currentMetadataOffset": self.metadata_offset,
            "wantFence": False,
            "wantShutDown": self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN,
            "offlineLogDirs": [],
            "cordonedLogDirs": None,
        }

    def poll(self, now_ms: int) -> list[ControllerCall]:
        """The controller calls due now (one at a time: nothing while one is in flight)."""
        t = self._t
        if self.state in (BrokerState.SHUTTING_DOWN, BrokerState.NOT_RUNNING):
            return []
        if t.in_flight is not None:
            if now_ms - t.in_flight_since < self.request_timeout_ms:
                return []
            self.handle_controller_failure(now_ms)  # timed out: treat as lost
        if self.broker_epoch < 0:
            if self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
                self.state = BrokerState.SHUTTING_DOWN
                return []
            if now_ms < t.next_registration_ms:
                return []
            t.in_flight, t.in_flight_since = ApiKey.BROKER_REGISTRATION, now_ms
            max_version = 6 if self.static_configs else 5
            return [ControllerCall(ApiKey.BROKER_REGISTRATION, max_version, self.registration_body())]
        if t.restate_static_configs and now_ms >= t.next_registration_ms:
            t.restate_static_configs = False
            t.in_flight, t.in_flight_since = ApiKey.BROKER_REGISTRATION, now_ms
            return [ControllerCall(ApiKey.BROKER_REGISTRATION, 6, self.registration_body())]
        if now_ms < t.next_heartbeat_ms and self.state is not BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            return []
        t.in_flight, t.in_flight_since = ApiKey.BROKER_HEARTBEAT, now_ms
        return [ControllerCall(ApiKey.BROKER_HEARTBEAT, 2, self.heartbeat_body())]

    def next_deadline_ms(self) -> int | None:
        """When :meth:`poll` next has something to send."""
        t = self._t
        if self.state is BrokerState.SHUTTING_DOWN:
            return None
        if t.in_flight is not None:
            return t.in_flight_since + self.request_timeout_ms
        return t.next_registration_ms if self.broker_epoch < 0 else t.next_heartbeat_ms

    def _backoff(self, now_ms: int) -> None:
        t = self._t
        backoff = ExponentialBackoff(self.initial_backoff_ms, self.max_backoff_ms)
        delay = backoff.delay_ms(t.registration_failures)
        t.registration_failures += 1
        t.next_registration_ms = now_ms + delay

    def handle_controller_failure(self, now_ms: int) -> None:
        """The in-flight call got no response (no controller, disconnect, timeout): retry later."""
        t = self._t
        was = t.in_flight
        t.in_flight = None
        if was == ApiKey.BROKER_REGISTRATION:
            # a registered broker's re-sent registration (KIP-1294 static configs) is retried too
            t.restate_static_configs = self.broker_epoch >= 0
            self._backoff(now_ms)
        else:
            t.next_heartbeat_ms = now_ms + min(self.heartbeat_interval_ms, self.initial_backoff_ms * 5)

    def handle_registration_response(self, response: Mapping[str, Any], now_ms: int) -> None:
        """Adopt the broker epoch, or stay fenced and retry with backoff (logging Kafka's text)."""
        body = cast(BrokerRegistrationResponse, response)
        self._t.in_flight = None
        error = Errors.for_code(body.get("errorCode", 0))
        if error is Errors.NONE:
            self.broker_epoch = body["brokerEpoch"]
            self._t.registration_failures = 0
            self._t.next_heartbeat_ms = now_ms
            self.last_refusal = None
            if self.state is BrokerState.STARTING:
                self.state = BrokerState.RECOVERY
            log.info(
                "[BrokerLifecycleManager id=%d] Successfully registered broker %d with broker epoch %d",
                self.node_id,
                self.node_id,
                self.broker_epoch,
            )
            return
        if error in (Errors.UNSUPPORTED_VERSION, Errors.INVALID_CONFIG):
            self.last_refusal = self.explain_refusal() if error is Errors.UNSUPPORTED_VERSION \
                else self.explain_config_refusal()
            log.error(
                "[BrokerLifecycleManager id=%d] Unable to register broker %d because the controller "
                "returned error %s: %s",
                self.node_id,
                self.node_id,
                error.name,
                self.last_refusal or error.describe(),
            )
        else:
            log.info(
                "[BrokerLifecycleManager id=%d] Unable to register broker %d because the controller "
                "returned error %s",
                self.node_id,
                self.node_id,
                error.name,
            )
        self._t.restate_static_configs = self.broker_epoch >= 0
        self._backoff(now_ms)

    def explain_config_refusal(self) -> str | None:
        """KIP-1294: why the controller refused this broker's ``server.properties`` at the level of
        its image (the registration response has no message field either)."""
        mv = self.image.metadata_version
        if mv is None:
            return None
        configs = self.image.configs
        default = configs.get(ConfigResource(ConfigResourceType.BROKER, ""), {})
        own = configs.get(ConfigResource(ConfigResourceType.BROKER, str(self.node_id)), {})
        static = self.static_configs
        found = broker_rule_violations(mv.feature_level, static, default, own, static)
        if not found:
            return None
        return (f"{found[0].sourced_message()}. Set a dynamic override (cluster default or this broker) "
                "that the rule allows, or fix server.properties.")

    def explain_refusal(self) -> str | None:
        """Kafka's UnsupportedVersionException text for this broker against its own image (the
        registration response has no message field, so the broker rebuilds it)."""
        stalled = self._stalled
        if stalled is not None and stalled.level >= 0:
            lo, hi = max(stalled.supported_min, 0), max(stalled.supported_max, 0)
            return (
                "Unable to register because the broker does not support finalized version "
                f"{stalled.level} of {stalled.feature}. The broker wants a version between {lo} and {hi}, "
                "inclusive."
            )
        mv = self.image.metadata_version
        if mv is None:
            return None
        finalized = dict(self.image.features.finalized)
        if self.kraft_version > 0:
            finalized[KRAFT_VERSION] = self.kraft_version
        err = fc.registration_feature_error(dict(self.software.supported_features()), mv, finalized)
        return None if err is None else str(err)

    def handle_heartbeat_response(self, response: Mapping[str, Any], now_ms: int) -> None:
        body = cast(BrokerHeartbeatResponse, response)
        self._t.in_flight = None
        error = Errors.for_code(body.get("errorCode", 0))
        self._t.next_heartbeat_ms = now_ms + self.heartbeat_interval_ms
        if error in (Errors.STALE_BROKER_EPOCH, Errors.BROKER_ID_NOT_REGISTERED):
            log.info(
                "[BrokerLifecycleManager id=%d] Broker heartbeat failed with %s; registering again",
                self.node_id,
                error.name,
            )
            self.broker_epoch = -1
            self.fenced = True
            if self.state is BrokerState.RUNNING:
                self.state = BrokerState.RECOVERY
            self._t.next_registration_ms = now_ms
            return
        if error is not Errors.NONE:
            self._t.next_heartbeat_ms = now_ms + self.initial_backoff_ms
            return
        self.caught_up = bool(body.get("isCaughtUp", False))
        self.fenced = bool(body.get("isFenced", True))
        if body.get("shouldShutDown", False):
            log.info(
                "[BrokerLifecycleManager id=%d] The controller has asked us to exit controlled shutdown.",
                self.node_id,
            )
            self.state = BrokerState.SHUTTING_DOWN
            return
        if self.state is BrokerState.RECOVERY and not self.fenced:
            log.info(
                "[BrokerLifecycleManager id=%d] The broker has been unfenced. Transitioning from RECOVERY "
                "to RUNNING.",
                self.node_id,
            )
            self.state = BrokerState.RUNNING
        elif self.state is BrokerState.RUNNING and self.fenced:
            self.state = BrokerState.RECOVERY

    def begin_controlled_shutdown(self, now_ms: int) -> None:
        """SIGTERM: ask the controller for a controlled shutdown on the next heartbeat."""
        if self.state is BrokerState.SHUTTING_DOWN:
            return
        if self.broker_epoch < 0:
            self.state = BrokerState.SHUTTING_DOWN
            return
        self.state = BrokerState.PENDING_CONTROLLED_SHUTDOWN
        self._t.next_heartbeat_ms = now_ms

    # ------------------------------------------------------------------ client requests

    def handle_request(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        now_ms: int,
        *,
        listener_name: str | None = None,
    ) -> Respond | Forward:
        """Answer a client request from the image (body trimmed to ``version``), or forward it."""
        reply = self._handle(api_key, version, body, now_ms, listener_name=listener_name)
        if isinstance(reply, Respond):
            return Respond(shape_response(api_key, version, reply.body))
        return reply

    def _handle(
        self,
        api_key: int,
        version: int,
        body: Mapping[str, Any],
        now_ms: int,
        *,
        listener_name: str | None = None,
    ) -> Respond | Forward:
        """Answer a client request from the image, or forward it to the controller."""
        handler = ROUTES.get(api_key)
        if handler is not None:
            return handler(self, Request(api_key, version, body, now_ms, listener_name))
        out = codec.default_value(by_api_key(Kind.RESPONSE, api_key))
        if "errorCode" in out:
            out["errorCode"] = Errors.UNSUPPORTED_VERSION.code
        return Respond(out)

    def forward(self, request: Request) -> Forward:
        """Sent on to the active controller in an Envelope (KIP-590)."""
        return Forward(request.api_key, request.version, dict(request.body))

    def describe_user_scram_credentials(self, request: Request) -> Respond:
        return Respond(describe_scram(self.image, request.body))

    def describe_acls(self, request: Request) -> Respond:
        return Respond(describe_acls(self.image, request.body))

    def api_versions(self, request: Request) -> Respond:
        levels, epoch = finalized_levels(self.image, self.kraft_version), self.image.features_epoch
        return Respond(api_versions_body(request.version, self._api_ranges, self.software, levels, epoch))

    def metadata(self, request: Request) -> Respond:
        return Respond(self.metadata_body(request.version, request.body, request.listener_name))

    def describe_cluster(self, request: Request) -> Respond:
        return Respond(self.describe_cluster_body(request.version, request.body, request.listener_name))

    def describe_configs(self, request: Request) -> Respond:
        """From the config catalogue, this broker's ``server.properties`` and the image."""
        return Respond(describe_configs(self.image, self.node_id, self.static_configs, request.version,
                                        request.body, logger_levels()))

    def describe_topic_partitions(self, request: Request) -> Respond:
        alive = set(self._alive_broker_ids())
        return Respond(describe_topic_partitions_body(self.image, request.body, alive))

    def alter_configs(self, request: Request) -> Respond | Forward:
        """BROKER_LOGGER resources alone are this broker's own (live log levels, never persisted);
        anything else is the controller's."""
        if only_broker_loggers(request.body):
            incremental = request.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS
            return Respond(alter_broker_loggers(self.node_id, request.body, incremental=incremental))
        return self.forward(request)

    def _alive_broker_ids(self) -> list[int]:
        return [b.id for b in self.image.cluster.brokers.values() if not b.fenced]

    def _client_controller_id(self) -> int:
        """Kafka brokers hand clients an alive broker as "controller" (clients cannot reach the
        KRaft controllers): this one when alive, else the lowest alive id."""
        alive = self._alive_broker_ids()
        if self.node_id in alive:
            return self.node_id
        return alive[0] if alive else -1

    def metadata_body(self, version: int, body: Mapping[str, Any], listener_name: str | None = None) -> Body:
        image = self.image
        name = listener_name or (self.listeners[0].name if self.listeners else None)
        brokers = []
        alive = set()
        for b in image.cluster.brokers.values():
            if b.fenced:
                continue
            alive.add(b.id)
            endpoint = pick_listener(b.listeners, name)
            if endpoint is not None:
                brokers.append({"nodeId": b.id, "host": endpoint.host, "port": endpoint.port, "rack": b.rack})
        requested = body.get("topics")
        topics_out: list[dict[str, Any]] = []
        if requested is None or (version == 0 and not requested):
            wanted: list[tuple[str | None, uuid.UUID | None]] = [
                (n, None) for n in sorted(image.topics.by_name)
            ]
        else:
            wanted = [(t.get("name"), t.get("topicId")) for t in requested]
        for tname, tid in wanted:
            topic = None
            if tname is not None:
                topic = image.topics.by_name.get(tname)
            elif tid is not None and tid.int != 0:
                topic = image.topics.by_id.get(tid)
            if topic is None:
                code = Errors.UNKNOWN_TOPIC_OR_PARTITION if tname is not None else Errors.UNKNOWN_TOPIC_ID
                topics_out.append({"errorCode": code.code, "name": tname, "topicId": tid or uuid.UUID(int=0),
                                   "isInternal": False, "partitions": [],
                                   "topicAuthorizedOperations": -2147483648})
                continue
            parts = []
            for pid in sorted(topic.partitions):
                p = topic.partitions[pid]
                offline = [r for r in p.replicas if r not in alive]
                err = Errors.NONE if p.leader in alive else Errors.LEADER_NOT_AVAILABLE
                parts.append({"errorCode": err.code, "partitionIndex": pid, "leaderId": p.leader,
                              "leaderEpoch": p.leader_epoch, "replicaNodes": list(p.replicas),
                              "isrNodes": list(p.isr), "offlineReplicas": offline})
            topics_out.append(
                {
                    "errorCode": 0,
                    "name": topic.name,
                    "topicId": topic.id,
                    "isInternal": topic.name.startswith("__"),
                    "partitions": parts,
                    "topicAuthorizedOperations": -2147483648,
                }
            )
        return {
            "throttleTimeMs": 0,
            "brokers": brokers,
            "clusterId": self.cluster_id,
            "controllerId": self._client_controller_id(),
            "topics": topics_out,
            "clusterAuthorizedOperations": -2147483648,
            "errorCode": 0,
        }

    def describe_cluster_body(
        self, version: int, body: Mapping[str, Any], listener_name: str | None = None
    ) -> Body:
        refused = describe_cluster_endpoint_error(version, body, BROKER_ENDPOINT)
        if refused is not None:
            return refused
        name = listener_name or (self.listeners[0].name if self.listeners else None)
        return describe_cluster_brokers(
            self.image,
            self.cluster_id,
            self._client_controller_id(),
            bool(body.get("includeFencedBrokers", False)),
            name,
        )


ROUTES: Mapping[int, Callable[[BrokerNode, Request], Respond | Forward]] = {
    ApiKey.METADATA: BrokerNode.metadata,
    ApiKey.API_VERSIONS: BrokerNode.api_versions,
    ApiKey.DESCRIBE_CONFIGS: BrokerNode.describe_configs,
    ApiKey.UPDATE_FEATURES: BrokerNode.forward,
    ApiKey.DESCRIBE_CLUSTER: BrokerNode.describe_cluster,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: BrokerNode.describe_topic_partitions,
    ApiKey.CREATE_TOPICS: BrokerNode.forward,
    ApiKey.DELETE_TOPICS: BrokerNode.forward,
    ApiKey.CREATE_PARTITIONS: BrokerNode.forward,
    ApiKey.ALTER_CONFIGS: BrokerNode.alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: BrokerNode.alter_configs,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: BrokerNode.forward,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: BrokerNode.describe_user_scram_credentials,
    ApiKey.CREATE_ACLS: BrokerNode.forward,
    ApiKey.DELETE_ACLS: BrokerNode.forward,
    ApiKey.DESCRIBE_ACLS: BrokerNode.describe_acls,
}
"""Api key → handler: adding a broker RPC is one handler method and one line here."""

DATA_PLANE_API_KEYS = (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID,
                       ApiKey.OFFSET_FOR_LEADER_EPOCH)
"""Answered by the runtime's data plane (partition logs), not by this core."""

BROKER_API_KEYS = (*ROUTES, *DATA_PLANE_API_KEYS)
"""What :meth:`BrokerNode.handle_request` answers (UpdateFeatures and the topic and config writes by
forwarding)."""


def only_broker_loggers(body: Mapping[str, Any]) -> bool:
    """Whether a config change names BROKER_LOGGER resources only."""
    resources = body.get("resources") or ()
    return bool(resources) and all(r["resourceType"] == ConfigResourceType.BROKER_LOGGER for r in resources)
