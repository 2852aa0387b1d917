"""The ZK-mode controller (Kafka 3.x's ``KafkaController``), sans-I/O: from the ZooKeeper tree's
state and its changes, decide leaders and ISRs, the znode writes and the requests to brokers.

Kafka users start a KIP-866 migration from a ZooKeeper-mode cluster, so kraftwerk must be one. The
rules are Kafka's: a partition's leader is the first replica in its assignment that is alive and in
the ISR (unclean election off); a dead broker leaves every ISR it was in (the last member stays, so
an unclean election could still find it) and its partitions get new leaders; each change bumps the
leader epoch and is written to the partition's state znode at the znode version read, so a stale
controller cannot overwrite a newer one's decision (and the runtime guards every write with the
``/controller_epoch`` znode version). Brokers learn the decisions from LeaderAndIsr, UpdateMetadata
and StopReplica, as from a Kafka 3.9 controller.

One simplification against Kafka: a topic deletion deletes its znodes in the same step that sends
StopReplica, instead of waiting for every replica's answer (docs/compatibility.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.migration import encode
from kraftwerk.migration.state import ZkClusterState
from kraftwerk.migration.znodes import BrokerZnode, TopicZnode
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors

NO_LEADER = -1
#: UpdateMetadata's leader for a partition being deleted: brokers drop it from their caches.
LEADER_DURING_DELETE = -2
#: StopReplica's leader epoch for a partition being deleted (Kafka's LeaderAndIsr.EpochDuringDelete).
EPOCH_DURING_DELETE = -2
LEADER_AND_ISR_VERSION, UPDATE_METADATA_VERSION, STOP_REPLICA_VERSION = 7, 8, 4
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


# ---------------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A registered broker: ``/brokers/ids/<id>`` (its epoch is the znode's czxid)."""

    id: int
    epoch: int
    endpoints: tuple[tuple[str, str, int, int], ...]
    """(listener, host, port, security protocol id)."""
    rack: str | None = None

    @classmethod
    def from_znode(cls, z: BrokerZnode) -> LiveBroker:
        protocols = dict(z.security_protocols)
        endpoints = []
        for text in z.endpoints:
            listener, _, hostport = text.partition("://")
            host, _, port = hostport.rpartition(":")
            protocol = protocols.get(listener, listener)
            endpoints.append((listener, host.strip("[]"), int(port), SECURITY_PROTOCOL_IDS.get(protocol, 0)))
        return cls(z.broker_id, z.epoch, tuple(endpoints), z.rack)


@dataclass(frozen=True, slots=True)
class LeaderIsr:
    """A partition's state znode and its znode version (Kafka's partition epoch)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int
    leader_recovery_state: int = 0


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    replicas: dict[int, tuple[int, ...]]
    states: dict[int, LeaderIsr] = field(default_factory=dict)


# ---------------------------------------------------------------------------- effects


@dataclass(frozen=True, slots=True)
class ZkCreate:
    path: str
    data: bytes
    sequential: bool = False
    """Sequential: ``path`` is the prefix ZooKeeper appends a 10-digit counter to."""


@dataclass(frozen=True, slots=True)
class ZkSet:
    path: str
    data: bytes
    version: int
    """The znode version the decision was made on (a conditional write); -1: unconditional, and
    the znode is created if it does not exist (Kafka's ``setOrCreateEntityConfigs``)."""


@dataclass(frozen=True, slots=True)
class ZkDelete:
    """Delete a znode (with its children if ``recursive``); one that is gone already is no error."""

    path: str
    recursive: bool = False


ZkOp = ZkCreate | ZkSet | ZkDelete


@dataclass(frozen=True, slots=True)
class BrokerRequest:
    broker_id: int
    api_key: int
    version: int
    body: dict[str, Any]


@dataclass
class Decisions:
    """What one event leads to: znode writes (one transaction, guarded by the controller epoch's
    znode version), then the requests to send once they are written."""

    writes: list[ZkOp] = field(default_factory=list)
    requests: list[BrokerRequest] = field(default_factory=list)

    def batched(self) -> Decisions:
        """One request per (broker, api key), as Kafka's ControllerBrokerRequestBatch sends them: a
        later state of a partition replaces an earlier one, the last broker list wins."""
        merged: dict[tuple[int, int], BrokerRequest] = {}
        for r in self.requests:
            key = (r.broker_id, r.api_key)
            first = merged.get(key)
            merged[key] = r if first is None else BrokerRequest(r.broker_id, r.api_key, r.version,
                                                                _merge_bodies(first.body, r.body))
        return Decisions(self.writes, list(merged.values()))


def _merge_bodies(first: dict[str, Any], later: dict[str, Any]) -> dict[str, Any]:
    topics: dict[str, dict[str, Any]] = {}
    for t in (*first["topicStates"], *later["topicStates"]):
        entry = topics.setdefault(t["topicName"], {**t, "partitionStates": {}})
        entry["partitionStates"].update({p["partitionIndex"]: p for p in t["partitionStates"]})
    body = {**later, "topicStates": [{**t, "partitionStates": list(t["partitionStates"].values())}
                                     for t in topics.values()]}
    if "liveLeaders" in later:
        leaders = {b["brokerId"]: b for b in (*first["liveLeaders"], *later["liveLeaders"])}
        body["liveLeaders"] = [leaders[b] for b in sorted(leaders)]
    return body


# ---------------------------------------------------------------------------- the controller


class ZkController:
    """The active ZK-mode controller's view and rules. The runtime feeds it the tree it watches and
    carries out its :class:`Decisions`; if a write fails the controller has lost its epoch and the
    runtime drops it."""

    def __init__(self, controller_id: int, epoch: int, state: ZkClusterState,
                 new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4) -> None:
        self.controller_id = controller_id
        self.epoch = epoch
        self._new_topic_id = new_topic_id
        self.brokers = {b.broker_id: LiveBroker.from_znode(b) for b in state.brokers.values()}
        self.topics: dict[str, Topic] = {}
        self._unidentified = [t.znode for t in state.topics.values() if t.znode.topic_id is None]
        for name, t in state.topics.items():
            self.topics[name] = Topic(name, t.znode.topic_id or new_topic_id(), dict(t.znode.partitions), {
                p: LeaderIsr(s.leader, s.leader_epoch, s.isr, s.controller_epoch, s.partition_epoch,
                             s.leader_recovery_state) for p, s in t.states.items()})
        self._requested_deletions = set(state.pending_deletions)
        self._has_feature_znode = state.feature is not None

    # ------------------------------------------------------------------ events

    def become_controller(self) -> Decisions:
        """Kafka's ``onControllerFailover``: assign missing topic ids, take brokers that are gone out
        of the ISRs, elect leaders for partitions without a live one, then tell every broker
        everything."""
        out = Decisions()
        if not self._has_feature_znode:  # IBP >= 2.7: the controller enables feature versioning
            out.writes.append(ZkCreate("/feature", encode.encode_feature()))
            self._has_feature_znode = True
        unidentified, self._unidentified = self._unidentified, []
        for znode in unidentified:  # written by an old tool: Kafka's processTopicIds gives it one
            self._write_topic_id(znode, self.topics[znode.name].topic_id, out)
        for topic in list(self.topics.values()):
            missing = [p for p in sorted(topic.replicas) if p not in topic.states]
            if missing:  # a crash between the topic znode and its state znodes
                self._new_partitions(topic, missing, out)
        gone = {r for tp in self._all_partitions() for r in self._state(tp).isr} - set(self.brokers)
        self._replicas_offline(gone, out)  # brokers that died while no controller was watching
        self._elect(self._all_partitions(), out)
        for b in sorted(self.brokers):
            self._leader_and_isr(b, self._partitions_on(b), out, is_new=False)
        self._update_metadata(self.brokers, self._all_partitions(), out)
        deletions, self._requested_deletions = self._requested_deletions, set()
        self._delete_topics(deletions, out)
        return out.batched()

    def brokers_changed(self, registered: Mapping[int, BrokerZnode]) -> Decisions:
        """``/brokers/ids`` changed: a broker that left (or came back with a new epoch) is dead to
        its partitions; a new one gets its partitions and everyone the new broker list."""
        out = Decisions()
        now = {i: LiveBroker.from_znode(z) for i, z in registered.items()}
        dead = {i for i, b in self.brokers.items() if i not in now or now[i].epoch != b.epoch}
        born = {i for i, b in now.items() if i not in self.brokers or i in dead}
        if dead:
            for b in dead:
                self.brokers.pop(b)
            self._replicas_offline(dead, out)
        self.brokers.update({i: now[i] for i in born})
        if born:
            self._update_metadata(self.brokers, self._all_partitions(), out)
            self._elect([tp for tp in self._all_partitions() if self._state(tp).leader == NO_LEADER], out)
            for b in sorted(born):
                self._leader_and_isr(b, self._partitions_on(b), out, is_new=False)
        return out.batched()

    def topics_changed(self, znodes: Mapping[str, TopicZnode]) -> Decisions:
        """``/brokers/topics`` or a topic znode changed: new topics and new partitions come online."""
        out = Decisions()
        for name, znode in sorted(znodes.items()):
            topic = self.topics.get(name)
            if topic is None:
                self._add_topic(name, znode, out)
                continue
            added = {p: r for p, r in znode.partitions.items() if p not in topic.replicas}
            if added:
                topic.replicas.update(added)
                self._new_partitions(topic, sorted(added), out)
        return out.batched()

    def deletions_requested(self, names: Iterable[str]) -> Decisions:
        """``/admin/delete_topics`` children: stop and delete the replicas, then the znodes."""
        out = Decisions()
        self._delete_topics(set(names), out)
        return out.batched()

    def alter_partition(self, body: Mapping[str, Any], version: int) -> tuple[dict[str, Any], Decisions]:
        """A leader's AlterPartition (ISR expansion or shrink): written if the request is on the
        current leader epoch and partition epoch, and every new ISR member is alive."""
        out = Decisions()
        changed: list[tuple[str, int]] = []
        requester = body.get("brokerId", -1)
        broker = self.brokers.get(requester)
        if broker is None or body.get("brokerEpoch", -1) not in (-1, broker.epoch):
            return {"throttleTimeMs": 0, "errorCode": Errors.STALE_BROKER_EPOCH.code, "topics": []}, out
        by_id = {t.topic_id: t for t in self.topics.values()}
        topics_out = []
        for t in body.get("topics", ()):
            topic = by_id.get(t.get("topicId")) if version >= 2 else self.topics.get(t.get("topicName", ""))
            parts_out = []
            for p in t.get("partitions", ()):
                index = p.get("partitionIndex", -1)
                error, state = self._check_isr_change(topic, index, requester, p, version)
                new_isr = self._new_isr(p, version)
                if error is Errors.NONE and topic is not None and state is not None and \
                        set(new_isr) != set(state.isr):
                    state = self._write_state(topic, index, state, out, isr=new_isr)
                    changed.append((topic.name, index))
                parts_out.append({"partitionIndex": index, "errorCode": error.code,
                                  "leaderId": state.leader if state else NO_LEADER,
                                  "leaderEpoch": state.leader_epoch if state else -1,
                                  "isr": list(state.isr) if state else [],
                                  "leaderRecoveryState": state.leader_recovery_state if state else 0,
                                  "partitionEpoch": state.zk_version if state else -1})
            topics_out.append({"topicName": t.get("topicName", ""), "topicId": t.get("topicId"),
                               "partitions": parts_out})
        if changed:
            self._update_metadata(self.brokers, changed, out)
        return {"throttleTimeMs": 0, "errorCode": 0, "topics": topics_out}, out.batched()

    # ------------------------------------------------------------------ rules

    def _check_isr_change(self, topic: Topic | None, index: int, requester: int, p: Mapping[str, Any],
                          version: int) -> tuple[Errors, LeaderIsr | None]:
        if topic is None or index not in topic.states:
            return (Errors.UNKNOWN_TOPIC_ID if version >= 2 else Errors.UNKNOWN_TOPIC_OR_PARTITION), None
        state = topic.states[index]
        leader_epoch, partition_epoch = p.get("leaderEpoch", -1), p.get("partitionEpoch", -1)
        if leader_epoch > state.leader_epoch or partition_epoch > state.zk_version:
            return Errors.NOT_CONTROLLER, state  # the leader knows more than this controller
        if state.leader != requester or leader_epoch < state.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH, state
        new_isr = self._new_isr(p, version)
        if set(new_isr) == set(state.isr):
            return Errors.NONE, state  # already so (a resend after a lost answer): the current state
        if partition_epoch < state.zk_version:
            return Errors.INVALID_UPDATE_VERSION, state
        replicas = topic.replicas[index]
        if not new_isr or state.leader not in new_isr or any(
                b not in replicas or b not in self.brokers for b in new_isr):
            return Errors.INELIGIBLE_REPLICA, state
        if version >= 3 and any(e["brokerEpoch"] not in (-1, self.brokers[e["brokerId"]].epoch)
                                for e in p.get("newIsrWithEpochs", ())):
            return Errors.INELIGIBLE_REPLICA, state
        return Errors.NONE, state

    @staticmethod
    def _new_isr(p: Mapping[str, Any], version: int) -> tuple[int, ...]:
        if version >= 3:
            return tuple(e["brokerId"] for e in p.get("newIsrWithEpochs", ()))
        return tuple(p.get("newIsr", ()))

    def _add_topic(self, name: str, znode: TopicZnode, out: Decisions) -> None:
        topic_id = znode.topic_id
        if topic_id is None:
            topic_id = self._new_topic_id()
            self._write_topic_id(znode, topic_id, out)
        topic = Topic(name, topic_id, dict(znode.partitions))
        self.topics[name] = topic
        self._new_partitions(topic, sorted(topic.replicas), out)

    @staticmethod
    def _write_topic_id(znode: TopicZnode, topic_id: uuid.UUID, out: Decisions) -> None:
        data = encode.encode_topic(znode.partitions, topic_id, adding=znode.adding_replicas,
                                   removing=znode.removing_replicas)
        out.writes.append(ZkSet(encode.topic_path(znode.name), data, -1))

    def _new_partitions(self, topic: Topic, partitions: list[int], out: Decisions) -> None:
        """NewPartition → OnlinePartition: the first live replica leads, the live replicas are the ISR."""
        for p in partitions:
            live = tuple(r for r in topic.replicas[p] if r in self.brokers)
            state = LeaderIsr(live[0] if live else NO_LEADER, 0, live or topic.replicas[p][:1], self.epoch, 0)
            topic.states[p] = state
            out.writes.append(ZkCreate(f"/brokers/topics/{topic.name}/partitions/{p}/state",
                                       encode.encode_partition_state(state.leader, 0, state.isr, self.epoch)))
        tps = [(topic.name, p) for p in partitions]
        for b in sorted({r for p in partitions for r in topic.replicas[p] if r in self.brokers}):
            self._leader_and_isr(b, [tp for tp in tps if b in topic.replicas[tp[1]]], out, is_new=True)
        self._update_metadata(self.brokers, tps, out)

    def _elect(self, partitions: Iterable[tuple[str, int]], out: Decisions) -> None:
        """OfflinePartitionLeaderElection for partitions whose leader is not alive: the first live ISR
        member of the assignment; the ISR keeps only live members. No candidate: leaderless."""
        changed = []
        for name, p in partitions:
            topic, state = self.topics[name], self._state((name, p))
            if state.leader in self.brokers:
                continue
            leader = next((r for r in topic.replicas[p] if r in self.brokers and r in state.isr), NO_LEADER)
            if leader == NO_LEADER:
                if state.leader != NO_LEADER:
                    self._write_state(topic, p, state, out, leader=NO_LEADER, isr=state.isr, bump=True)
                    changed.append((name, p))
                continue
            isr = tuple(r for r in state.isr if r in self.brokers)
            self._write_state(topic, p, state, out, leader=leader, isr=isr, bump=True)
            changed.append((name, p))
        self._announce(changed, out)

    def _replicas_offline(self, dead: set[int], out: Decisions) -> None:
        """Kafka's ``onReplicasBecomeOffline``: new leaders for what the dead led, then the dead leave
        the remaining ISRs (the last member stays)."""
        self._elect([tp for tp in self._all_partitions() if self._state(tp).leader in dead], out)
        changed = []
        for name, p in self._all_partitions():
            topic, state = self.topics[name], self._state((name, p))
            shrunk = tuple(r for r in state.isr if r not in dead)
            if shrunk != state.isr and shrunk:
                self._write_state(topic, p, state, out, isr=shrunk, bump=True)
                changed.append((name, p))
        self._announce(changed, out)

    def _announce(self, changed: list[tuple[str, int]], out: Decisions) -> None:
        """LeaderAndIsr to the live replicas of changed partitions, UpdateMetadata to every broker."""
        if not changed:
            return
        for b in sorted(self.brokers):
            mine = [tp for tp in changed if b in self.topics[tp[0]].replicas[tp[1]]]
            if mine:
                self._leader_and_isr(b, mine, out, is_new=False)
        self._update_metadata(self.brokers, changed, out)

    def _write_state(self, topic: Topic, p: int, state: LeaderIsr | None, out: Decisions, *,
                     leader: int | None = None, isr: tuple[int, ...] | None = None,
                     bump: bool = False) -> LeaderIsr:
        """A new state znode for a partition, written at the version it was decided on."""
        assert state is not None
        new = LeaderIsr(state.leader if leader is None else leader, state.leader_epoch + (1 if bump else 0),
                        state.isr if isr is None else isr, self.epoch, state.zk_version + 1,
                        state.leader_recovery_state)
        topic.states[p] = new
        path, data = encode.partition_state_path(topic.name, p), encode.encode_partition_state(
            new.leader, new.leader_epoch, new.isr, new.controller_epoch, new.leader_recovery_state)
        out.writes.append(ZkSet(path, data, state.zk_version) if state.zk_version >= 0
                          else ZkCreate(path, data))
        return new

    def _delete_topics(self, names: set[str], out: Decisions) -> None:
        for name in sorted(names):
            out.writes.append(ZkDelete(encode.delete_topic_path(name)))
            topic = self.topics.pop(name, None)
            if topic is None:
                continue
            tps = [(name, p) for p in sorted(topic.replicas)]
            for b in sorted(self.brokers):
                mine = [p for p in sorted(topic.replicas) if b in topic.replicas[p]]
                if mine:
                    out.requests.append(self._stop_replica(b, name, mine))
            out.requests.extend(self._update_metadata_to(b, self._partition_states(tps, topic, deleting=True))
                                for b in sorted(self.brokers))
            out.writes.append(ZkDelete(encode.topic_path(name), recursive=True))
            out.writes.append(ZkDelete(encode.config_path("topics", name)))
            out.writes.append(ZkCreate(encode.CONFIG_CHANGE_PREFIX,
                                       encode.encode_config_change(f"topics/{name}"), sequential=True))

    # ------------------------------------------------------------------ requests

    def _all_partitions(self) -> list[tuple[str, int]]:
        return [(t.name, p) for t in self.topics.values() for p in sorted(t.replicas)]

    def _partitions_on(self, broker: int) -> list[tuple[str, int]]:
        return [(t.name, p) for t in self.topics.values() for p, r in sorted(t.replicas.items())
                if broker in r]

    def _state(self, tp: tuple[str, int]) -> LeaderIsr:
        topic = self.topics[tp[0]]
        state = topic.states.get(tp[1])
        if state is None:  # a partition without a state znode: Kafka's migration default
            replicas = topic.replicas[tp[1]]
            state = LeaderIsr(replicas[0] if replicas else NO_LEADER, 0, replicas, self.epoch, -1)
        return state

    def _header(self, broker: int) -> dict[str, Any]:
        return {"controllerId": self.controller_id, "isKRaftController": False, "controllerEpoch": self.epoch,
                "brokerEpoch": self.brokers[broker].epoch}

    def _leader_and_isr(self, broker: int, tps: list[tuple[str, int]], out: Decisions, *,
                        is_new: bool) -> None:
        if not tps:
            return
        by_topic: dict[str, list[dict[str, Any]]] = {}
        leaders = set()
        for name, p in tps:
            topic, state = self.topics[name], self._state((name, p))
            leaders.add(state.leader)
            by_topic.setdefault(name, []).append({
                "partitionIndex": p, "controllerEpoch": state.controller_epoch, "leader": state.leader,
                "leaderEpoch": state.leader_epoch, "isr": list(state.isr), "partitionEpoch": state.zk_version,
                "replicas": list(topic.replicas[p]), "addingReplicas": [], "removingReplicas": [],
                "isNew": is_new, "leaderRecoveryState": state.leader_recovery_state})
        live_leaders = []
        for b in sorted(leaders & set(self.brokers)):
            _, host, port, _ = self.brokers[b].endpoints[0]
            live_leaders.append({"brokerId": b, "hostName": host, "port": port})
        topic_states = [{"topicName": n, "topicId": self.topics[n].topic_id, "partitionStates": ps}
                        for n, ps in by_topic.items()]
        body = {**self._header(broker), "type": 0, "liveLeaders": live_leaders, "topicStates": topic_states}
        out.requests.append(BrokerRequest(broker, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body))

    def _partition_states(self, tps: list[tuple[str, int]], topic: Topic | None = None, *,
                          deleting: bool = False) -> list[dict[str, Any]]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for name, p in tps:
            t = topic if topic is not None else self.topics[name]
            state = t.states.get(p) or self._state((name, p))
            by_topic.setdefault(name, []).append({
                "partitionIndex": p, "controllerEpoch": state.controller_epoch,
                "leader": LEADER_DURING_DELETE if deleting else state.leader,
                "leaderEpoch": state.leader_epoch,
                "isr": list(state.isr), "zkVersion": state.zk_version, "replicas": list(t.replicas[p]),
                "offlineReplicas": [r for r in t.replicas[p] if r not in self.brokers]})
        ids = {name: (topic or self.topics[name]).topic_id for name in by_topic}
        return [{"topicName": n, "topicId": ids[n], "partitionStates": ps} for n, ps in by_topic.items()]

    def _update_metadata_to(self, broker: int, topic_states: list[dict[str, Any]]) -> BrokerRequest:
        live = [{"id": b.id, "rack": b.rack, "endpoints": [
            {"port": port, "host": host, "listener": listener, "securityProtocol": protocol}
            for listener, host, port, protocol in b.endpoints]} for b in sorted(self.brokers.values(),
                                                                                  key=lambda b: b.id)]
        body = {**self._header(broker), "type": 0, "topicStates": topic_states, "liveBrokers": live}
        return BrokerRequest(broker, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)

    def _update_metadata(self, brokers: Iterable[int], tps: list[tuple[str, int]], out: Decisions) -> None:
        states = self._partition_states(tps)
        out.requests.extend(self._update_metadata_to(b, states) for b in sorted(brokers))

    def _stop_replica(self, broker: int, name: str, partitions: list[int]) -> BrokerRequest:
        states = [{"partitionIndex": p, "leaderEpoch": EPOCH_DURING_DELETE, "deletePartition": True}
                  for p in partitions]
        body = {**self._header(broker), "topicStates": [{"topicName": name, "partitionStates": states}]}
        return BrokerRequest(broker, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body)
