"""ClusterControlManager: who is in the cluster. Broker registration, heartbeats, session-timeout
fencing and unfencing, unregistration, controller registration (KIP-919) and DescribeCluster, as
Kafka's ``ClusterControlManager`` and ``BrokerHeartbeatManager`` do them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from kraftwerk.controller import partitions as pc
from kraftwerk.controller.common import features_from_request, ranges_of, rec
from kraftwerk.controller.effects import AppendThenRespond, Body, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.responses import CONTROLLER_ENDPOINT, describe_cluster_endpoint_error
from kraftwerk.image.model import BrokerRegistration, SupportedRange
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages.cluster import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    UnregisterBrokerRequest,
)
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.protocol.routing import Request
from kraftwerk.versions.features import VersionRange
from kraftwerk.versions.metadata_version import MetadataVersion

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)


class ClusterControlManager:
    """Registrations and broker sessions of the active controller."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller
        self.last_contact: dict[int, int] = {}
        """Broker id → when its session was last refreshed (registration or heartbeat)."""
        self.inflight_brokers: dict[int, dict[str, VersionRange]] = {}
        """Registrations appended but not yet replayed. Kafka's controller applies its own records
        before they commit, so a registration and a feature update racing each other are judged
        against each other; the image alone is the committed state."""
        self._fencing: set[int] = set()
        self._self_registration_sent_offset = -2
        self._own_ranges_for: object = None
        self._own_ranges_cache: dict[str, SupportedRange] = {}
        self.reported_static_configs: dict[int, tuple[tuple[str, str | None], ...]] = {}
        """Broker id → the StaticConfigs of its last registration (KIP-1294), kept in memory while
        the metadata.version is too low to persist them; written at the upgrade that allows it."""

    def on_committed(self, record: MetadataRecord) -> None:
        """A replayed record settles a fencing or a registration this controller appended."""
        name = record.spec.name
        if name in ("BrokerRegistrationChangeRecord", "FenceBrokerRecord"):
            self._fencing.discard(record.value.get("brokerId", record.value.get("id", -1)))
        elif name == "RegisterBrokerRecord":
            self.inflight_brokers.pop(record.value["brokerId"], None)

    def on_snapshot(self) -> None:
        self._fencing.clear()

    def on_leader_change(self, active: bool, now_ms: int) -> None:
        """Forget in-flight work; a new active controller gives every registered broker a fresh
        session (Kafka touches them all)."""
        self.inflight_brokers.clear()
        if active:
            self.last_contact = {b: now_ms for b in self._c.image.cluster.brokers}
        else:
            self.last_contact.clear()
            self._fencing.clear()

    # ------------------------------------------------------------------ sessions

    def next_deadline_ms(self) -> int | None:
        """When :meth:`tick` next has work (a broker session expiring), or None."""
        deadlines = [
            t + self._c.session_timeout_ms
            for b, t in self.last_contact.items()
            if self._unfenced(b) and b not in self._fencing
        ]
        return min(deadlines) if deadlines else None

    def tick(self, now_ms: int) -> list[MetadataRecord]:
        """Records to append now: fence brokers whose session expired; register this controller
        when the metadata.version allows it and the image lacks (or has stale) registration."""
        out: list[MetadataRecord] = []
        timed_out: set[int] = set()
        for broker_id, last in sorted(self.last_contact.items()):
            if broker_id in self._fencing or not self._unfenced(broker_id):
                continue
            if now_ms - last > self._c.session_timeout_ms:
                broker = self._c.image.cluster.brokers[broker_id]
                log.info(
                    "[QuorumController id=%d] Fencing broker %d because its session has timed out.",
                    self._c.node_id,
                    broker_id,
                )
                out.append(self._fence_record(broker, in_controlled_shutdown=False))
                timed_out.add(broker_id)
                self._fencing.add(broker_id)
        if timed_out:
            out.extend(pc.on_brokers_fenced(self._c.topics.live_image(), self._mv(), timed_out))
        out.extend(self._self_registration())
        return out

    def _mv(self) -> MetadataVersion:
        mv = self._c.latest_metadata_version
        assert mv is not None
        return mv

    def _unfenced(self, broker_id: int) -> bool:
        broker = self._c.image.cluster.brokers.get(broker_id)
        return broker is not None and not broker.fenced

    def _self_registration(self) -> list[MetadataRecord]:
        mv = self._c.latest_metadata_version
        if mv is None or not mv.is_controller_registration_supported():
            return []
        current = self._c.image.cluster.controllers.get(self._c.node_id)
        wanted = self.controller_registration_body()
        if (
            current is not None
            and current.incarnation_id == self._c.incarnation_id
            and dict(current.supported_features) == {f["name"]: _srange(f) for f in wanted["features"]}
            and current.zk_migration_ready == wanted["zkMigrationReady"]
        ):
            return []
        if self._self_registration_sent_offset == self._c.last_committed_offset:
            return []  # already appended; wait for it to commit
        self._self_registration_sent_offset = self._c.last_committed_offset
        return [self._controller_record(wanted)]

    def describe_cluster(self, request: Request) -> Respond:
        return Respond(self.describe_cluster_body(request.version, request.body))

    def describe_cluster_body(self, version: int, body: Mapping[str, Any]) -> Body:
        """DescribeCluster as a controller answers it: EndpointType CONTROLLER lists the controllers
        (KIP-919); anything else is refused as Kafka's ControllerApis does."""
        refused = describe_cluster_endpoint_error(version, body, CONTROLLER_ENDPOINT)
        if refused is not None:
            return refused
        nodes = []
        for cid in sorted(set(self._c.voters) | set(self._c.image.cluster.controllers)):
            reg = self._c.image.cluster.controllers.get(cid)
            listener = (
                reg.listeners[0]
                if reg is not None and reg.listeners
                else (self._c.listeners[0] if cid == self._c.node_id and self._c.listeners else None)
            )
            if listener is None:
                continue
            nodes.append({"brokerId": cid, "host": listener.host, "port": listener.port, "rack": None,
                          "isFenced": False})
        # a leader this node has no endpoint for is -1, not an id the client cannot reach (Kafka's)
        listed = {n["brokerId"] for n in nodes}
        controller = self._c.leader_id if self._c.leader_id in listed else -1
        return {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "errorMessage": None,
            "endpointType": CONTROLLER_ENDPOINT,
            "clusterId": self._c.cluster_id,
            "controllerId": controller,
            "brokers": nodes,
            "clusterAuthorizedOperations": -2147483648,
        }

    def register_broker(self, request: Request) -> AppendThenRespond:
        body, now_ms = cast(BrokerRegistrationRequest, request.body), request.now_ms
        mv = self._c.latest_metadata_version
        assert mv is not None
        broker_id = body["brokerId"]
        if body.get("clusterId") != self._c.cluster_id:
            raise ApiError(
                Errors.INCONSISTENT_CLUSTER_ID,
                f"Expected cluster ID {self._c.cluster_id}, but got cluster ID {body.get('clusterId')}",
            )
        migrating = bool(body.get("isMigratingZkBroker", False))
        if migrating and (self._c.migration is None or not mv.is_migration_supported()):
            raise ApiError(
                Errors.BROKER_ID_NOT_REGISTERED, "Controller does not support registering ZK brokers."
            )
        existing = self._c.image.cluster.brokers.get(broker_id)
        incarnation = body["incarnationId"]
        if (
            existing is not None
            and existing.incarnation_id != incarnation
            and self._has_session(broker_id, now_ms)
            and not existing.fenced
        ):
            raise ApiError(
                Errors.DUPLICATE_BROKER_REGISTRATION, "Another broker is registered with that broker id."
            )
        ranges = features_from_request(body.get("features") or ())
        err = self._c.features.registration_error(ranges, mv)
        if err is not None:
            log.info(
                "[QuorumController id=%d] Unable to register broker %d: %s", self._c.node_id, broker_id, err
            )
            raise err
        amending = existing is not None and existing.incarnation_id == incarnation
        if body.get("staticConfigs") and not amending:
            static = {c["name"]: v for c in body["staticConfigs"] if (v := c.get("value")) is not None}
            err = self._c.configs.registration_error(broker_id, static)
            if err is not None:
                log.warning("[QuorumController id=%d] Unable to register broker %d: %s",
                            self._c.node_id, broker_id, err.text)
                raise err
        if body.get("staticConfigs"):  # even an unchanged, amending registration refreshes them
            self.reported_static_configs[broker_id] = tuple(
                (c["name"], c.get("value")) for c in body["staticConfigs"])
        prior = existing if amending else None
        if prior is not None:
            epoch = prior.epoch  # a retried registration keeps its epoch (Kafka's amending path)
            if not self._registration_changed(prior, body, ranges):
                self.last_contact[broker_id] = now_ms
                return AppendThenRespond((), {"throttleTimeMs": 0, "errorCode": 0, "brokerEpoch": epoch})
        else:
            # A new incarnation: the broker epoch is the offset of its RegisterBrokerRecord (Kafka's
            # nextWriteOffset), so a restart gets a larger epoch and the old process's requests fail.
            epoch = self._c.next_offset
        record_version = mv.register_broker_record_version()
        value: dict[str, Any] = {
            "brokerId": broker_id,
            "isMigratingZkBroker": migrating,
            "incarnationId": incarnation,
            "brokerEpoch": epoch,
            "endPoints": _endpoint_records(body),
            "features": [
                {"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in sorted(ranges.items())
            ],
            "rack": body.get("rack"),
            # Amending keeps the fencing state (Kafka's); a new incarnation starts fenced.
            "fenced": prior.fenced if prior is not None else True,
            "inControlledShutdown": prior.in_controlled_shutdown if prior is not None else False,
        }
        if record_version >= 3:
            value["logDirs"] = list(body.get("logDirs") or ())
        if record_version >= 4 and body.get("cordonedLogDirs"):
            value["cordonedLogDirs"] = list(body.get("cordonedLogDirs") or ())
        if record_version >= 5 and body.get("staticConfigs"):
            value["staticConfigs"] = [
                {"name": c["name"], "value": c.get("value")} for c in body.get("staticConfigs") or ()
            ]
        value = _shape(lookup_record("RegisterBrokerRecord"), record_version, value)
        self.last_contact[broker_id] = now_ms
        log.info(
            "[QuorumController id=%d] %s broker %d, incarnation ID %s (previous %s), with broker epoch %d "
            "(RegisterBrokerRecord v%d).",
            self._c.node_id,
            "Amending the registration of" if amending else "Registering a new incarnation of",
            broker_id,
            incarnation,
            existing.incarnation_id if existing is not None else None,
            epoch,
            record_version,
        )
        response = {"throttleTimeMs": 0, "errorCode": 0, "brokerEpoch": epoch}
        self.inflight_brokers[broker_id] = dict(ranges)
        return AppendThenRespond(
            (rec("RegisterBrokerRecord", record_version, value),),
            response,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "brokerEpoch": -1,
            },
        )

    @staticmethod
    def _registration_changed(
        existing: BrokerRegistration, body: Mapping[str, Any], ranges: Mapping[str, VersionRange]
    ) -> bool:
        listeners = tuple((lst["name"], lst["host"], lst["port"]) for lst in body.get("listeners") or ())
        have = tuple((e.name, e.host, e.port) for e in existing.listeners)
        return (
            listeners != have
            or ranges_of(existing.supported_features) != dict(ranges)
            or existing.rack != body.get("rack")
        )

    def _has_session(self, broker_id: int, now_ms: int) -> bool:
        last = self.last_contact.get(broker_id)
        return last is not None and now_ms - last <= self._c.session_timeout_ms

    def register_controller(self, request: Request) -> AppendThenRespond:
        body = request.body
        mv = self._c.latest_metadata_version
        if mv is None or not mv.is_controller_registration_supported():
            raise ApiError(
                Errors.UNSUPPORTED_VERSION,
                "The current MetadataVersion is too old to support controller registrations.",
            )
        ok = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None}
        return AppendThenRespond(
            (self._controller_record(body),),
            ok,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "errorMessage": None,
            },
        )

    def _controller_record(self, body: Mapping[str, Any]) -> MetadataRecord:
        mv = self._c.latest_metadata_version
        assert mv is not None
        return rec(
            "RegisterControllerRecord",
            mv.register_controller_record_version(),
            {
                "controllerId": body["controllerId"],
                "incarnationId": body["incarnationId"],
                "zkMigrationReady": bool(body.get("zkMigrationReady", False)),
                "endPoints": _endpoint_records(body),
                "features": [dict(f) for f in body.get("features") or ()],
            },
        )

    def controller_registration_body(self) -> Body:
        """The ControllerRegistration request this node sends to the active controller (KIP-919)."""
        return {
            "controllerId": self._c.node_id,
            "incarnationId": self._c.incarnation_id,
            "zkMigrationReady": self._c.migration is not None,
            "listeners": [
                {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}
                for e in self._c.listeners
            ],
            "features": [
                {"name": n, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for n, r in self._c.software.supported_features().items()
            ],
        }

    def needs_controller_registration(self) -> bool:
        """Whether a standby should send :meth:`controller_registration_body` to the active one."""
        mv = self._c.latest_metadata_version
        if self._c.is_active or mv is None or not mv.is_controller_registration_supported():
            return False
        current = self._c.image.cluster.controllers.get(self._c.node_id)
        if current is None or current.incarnation_id != self._c.incarnation_id:
            return True
        # New software (a rolling upgrade) changes the supported ranges: register them again.
        return (dict(current.supported_features) != self._own_ranges()
                or current.zk_migration_ready != (self._c.migration is not None))

    def _own_ranges(self) -> dict[str, SupportedRange]:
        """This controller's supported ranges as a registration records them; asked at every timer
        tick of a standby, so computed once per software (the simulator's hottest controller path)."""
        software = self._c.software
        if self._own_ranges_for is not software:
            wanted = self.controller_registration_body()["features"]
            self._own_ranges_cache = {f["name"]: _srange(f) for f in wanted}
            self._own_ranges_for = software
        return self._own_ranges_cache

    def unregister_broker(self, request: Request) -> AppendThenRespond:
        body = cast(UnregisterBrokerRequest, request.body)
        broker_id = body["brokerId"]
        existing = self._c.image.cluster.brokers.get(broker_id)
        if existing is None:
            raise ApiError(
                Errors.BROKER_ID_NOT_REGISTERED, f"Broker ID {broker_id} is not currently registered"
            )
        self.last_contact.pop(broker_id, None)
        ok = {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None}
        return AppendThenRespond(
            (rec("UnregisterBrokerRecord", 0, {"brokerId": broker_id, "brokerEpoch": existing.epoch}),), ok
        )

    # ------------------------------------------------------------------ heartbeats

    def broker_heartbeat(self, request: Request) -> Respond | AppendThenRespond:
        body, now_ms = cast(BrokerHeartbeatRequest, request.body), request.now_ms
        broker_id = body["brokerId"]
        broker = self._c.image.cluster.brokers.get(broker_id)
        if broker is None:
            raise ApiError(Errors.BROKER_ID_NOT_REGISTERED, f"Broker {broker_id} is not registered.")
        if body.get("brokerEpoch") != broker.epoch:
            raise ApiError(
                Errors.STALE_BROKER_EPOCH,
                f"Expected broker epoch {broker.epoch}, but got broker epoch {body.get('brokerEpoch')}",
            )
        self.last_contact[broker_id] = now_ms
        offset = body.get("currentMetadataOffset", -1)
        register_offset = self._c.replayer.register_offsets.get(broker_id, self._c.last_committed_offset)
        # A migrating ZooKeeper broker reads no metadata log (its metadata comes in LeaderAndIsr and
        # UpdateMetadata), so it is as caught up as it can be (see docs/compatibility.md).
        caught_up = offset >= register_offset or broker.is_migrating_zk_broker
        want_fence = bool(body.get("wantFence", False))
        want_shutdown = bool(body.get("wantShutDown", False))
        records: list[MetadataRecord] = []
        fenced = broker.fenced
        should_shutdown = False
        if want_shutdown:
            # No partition leadership moves here, so a controlled shutdown completes at once
            # (Kafka's SHUTDOWN_NOW when the broker leads nothing): fence it and let it go.
            if not fenced:
                records.append(self._fence_record(broker, in_controlled_shutdown=True))
                records.extend(pc.on_brokers_fenced(self._c.topics.live_image(), self._mv(), {broker_id}))
                self._fencing.add(broker_id)
            fenced = True
            should_shutdown = True
        elif want_fence:
            if not fenced:
                records.append(self._fence_record(broker, in_controlled_shutdown=False))
                records.extend(pc.on_brokers_fenced(self._c.topics.live_image(), self._mv(), {broker_id}))
                self._fencing.add(broker_id)
            fenced = True
        elif fenced and caught_up:
            log.info(
                "[QuorumController id=%d] The request from broker %d to unfence has been granted because "
                "it has caught up with the offset of its register broker record %d.",
                self._c.node_id,
                broker_id,
                register_offset,
            )
            records.append(self._unfence_record(broker))
            records.extend(pc.on_broker_unfenced(self._c.topics.live_image(), self._mv(), broker_id))
            fenced = False
        response = {
            "throttleTimeMs": 0,
            "errorCode": 0,
            "isCaughtUp": caught_up,
            "isFenced": fenced,
            "shouldShutDown": should_shutdown,
        }
        if not records:
            return Respond(response)
        return AppendThenRespond(
            tuple(records),
            response,
            not_controller_body={
                "throttleTimeMs": 0,
                "errorCode": Errors.NOT_CONTROLLER.code,
                "isCaughtUp": False,
                "isFenced": True,
                "shouldShutDown": False,
            },
        )

    def _fence_record(self, broker: BrokerRegistration, *, in_controlled_shutdown: bool) -> MetadataRecord:
        mv = self._c.latest_metadata_version
        assert mv is not None
        if mv.is_broker_registration_change_record_supported():
            value: dict[str, Any] = {"brokerId": broker.id, "brokerEpoch": broker.epoch, "fenced": 1}
            if in_controlled_shutdown and mv.is_in_controlled_shutdown_state_supported():
                value["inControlledShutdown"] = 1
            return rec("BrokerRegistrationChangeRecord", _change_record_version(mv), value)
        return rec("FenceBrokerRecord", 0, {"id": broker.id, "epoch": broker.epoch})

    def _unfence_record(self, broker: BrokerRegistration) -> MetadataRecord:
        mv = self._c.latest_metadata_version
        assert mv is not None
        if mv.is_broker_registration_change_record_supported():
            return rec(
                "BrokerRegistrationChangeRecord",
                _change_record_version(mv),
                {"brokerId": broker.id, "brokerEpoch": broker.epoch, "fenced": -1},
            )
        return rec("UnfenceBrokerRecord", 0, {"id": broker.id, "epoch": broker.epoch})


# --------------------------------------------------------------------------- helpers


def _srange(f: Mapping[str, Any]) -> SupportedRange:
    return SupportedRange(f["minSupportedVersion"], f["maxSupportedVersion"])


def _endpoint_records(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A registration request's ``listeners`` as the ``endPoints`` of its Register*Record."""
    return [
        {
            "name": lst["name"],
            "host": lst["host"],
            "port": lst["port"],
            "securityProtocol": lst["securityProtocol"],
        }
        for lst in body.get("listeners") or ()
    ]


def _change_record_version(mv: MetadataVersion) -> int:
    """BrokerRegistrationChangeRecord version: 0; 1 with InControlledShutdown (3.3-IV3); 2 with
    LogDirs (3.7-IV2); 3 with CordonedLogDirs (4.3-IV0)."""
    if mv.is_cordoned_log_dirs_supported():
        return 3
    if mv.is_directory_assignment_supported():
        return 2
    if mv.is_in_controlled_shutdown_state_supported():
        return 1
    return 0


def _shape(spec: Any, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """Keep only the fields ``version`` of ``spec`` has."""
    return {
        f.json_name: value[f.json_name] for f in spec.fields if f.json_name in value and version in f.versions
    }
