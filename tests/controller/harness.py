"""A tiny in-memory "raft": one log, every core replays what is appended (committed at once).

Every reply body is encoded with the real codec at its version, so the tests also prove the
bodies the cores build are valid wire messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.broker import BrokerNode
from kraftwerk.controller import AppendThenRespond, Effect, QuorumController, Respond, WriteSnapshot
from kraftwerk.image.model import Endpoint
from kraftwerk.protocol import codec
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions import SoftwareVersion

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"


def roundtrip(api_key: int, version: int, body: dict[str, Any], kind: Kind = Kind.RESPONSE) -> dict[str, Any]:
    spec = by_api_key(kind, api_key)
    return codec.decode(spec, version, codec.encode(spec, version, body))


@dataclass
class Log:
    records: list[bytes] = field(default_factory=list)
    epoch: int = 1
    controllers: list[QuorumController] = field(default_factory=list)
    brokers: list[BrokerNode] = field(default_factory=list)
    effects: dict[int, list[Effect]] = field(default_factory=dict)

    @property
    def end(self) -> int:
        return len(self.records)

    def append(self, records: Sequence[MetadataRecord]) -> list[Effect]:
        """Append a batch and have every node replay it (as raft would after commit)."""
        if not records:
            return []
        encoded = AppendThenRespond(tuple(records), {}).encoded_records()
        base = self.end
        self.records.extend(encoded)
        out: list[Effect] = []
        for node in [*self.controllers, *self.brokers]:
            eff = node.replay(base, encoded, epoch=self.epoch)
            self.effects.setdefault(node.node_id, []).extend(eff)
            out.extend(eff)
        return out

    def join(self, node: QuorumController | BrokerNode) -> None:
        """Add a node that first catches up with everything committed so far: from the latest
        snapshot a controller wrote, when there is one (raft hands a replica with an empty log the
        latest snapshot, as Kafka does), then the records after it."""
        start = 0
        snapshot = self.latest_snapshot()
        if snapshot is not None:
            records = snapshot.render().encoded()
            if isinstance(node, BrokerNode):
                loaded = node.load_snapshot(records, end_offset=snapshot.end_offset, epoch=snapshot.epoch)
                self.effects.setdefault(node.node_id, []).extend(loaded)
            else:
                node.load_snapshot(records, end_offset=snapshot.end_offset, epoch=snapshot.epoch)
            start = snapshot.end_offset
        if self.records[start:]:
            replayed = node.replay(start, self.records[start:], epoch=self.epoch)
            self.effects.setdefault(node.node_id, []).extend(replayed)
        if isinstance(node, BrokerNode):
            self.brokers.append(node)
        else:
            self.controllers.append(node)

    def latest_snapshot(self) -> WriteSnapshot | None:
        """The snapshot with the highest end offset the controllers asked to write."""
        written = [e for c in self.controllers for e in self.effects.get(c.node_id, [])
                   if isinstance(e, WriteSnapshot)]
        return max(written, key=lambda e: e.end_offset, default=None)

    def decoded(self) -> list[MetadataRecord]:
        return [decode_metadata_record(r) for r in self.records]


def listener(port: int, name: str = "PLAINTEXT") -> Endpoint:
    return Endpoint(name, "localhost", port, 0)


def controller(
    node_id: int = 1, voters: tuple[int, ...] = (1,), release: str = "4.3", **kw: Any
) -> QuorumController:
    kw.setdefault("incarnation_id", uuid.UUID(int=node_id << 8 | 0xC0))
    return QuorumController(
        node_id,
        CLUSTER_ID,
        SoftwareVersion.for_release(release),
        voters,
        listeners=[listener(9093 + node_id, "CONTROLLER")],
        **kw,
    )


def broker(node_id: int = 2, release: str = "4.3", **kw: Any) -> BrokerNode:
    kw.setdefault("incarnation_id", uuid.UUID(int=node_id << 8 | 0xB0))
    return BrokerNode(
        node_id,
        CLUSTER_ID,
        SoftwareVersion.for_release(release),
        [listener(9092 + node_id * 10)],
        [uuid.UUID(int=node_id * 1000 + 7)],
        **kw,
    )


def activate(log: Log, ctl: QuorumController, now_ms: int = 0) -> None:
    act = ctl.on_leader_change(ctl.node_id, log.epoch, now_ms, log.end == 0)
    if act is not None:
        log.append(act.records)


def call(
    log: Log, ctl: QuorumController, api_key: int, version: int, body: dict[str, Any], now_ms: int = 0
) -> dict[str, Any]:
    """Send a request to the controller; perform AppendThenRespond; return the decoded response."""
    req = roundtrip(api_key, version, body, Kind.REQUEST)
    reply = ctl.handle_request(api_key, version, req, now_ms, next_offset=log.end)
    if isinstance(reply, Respond):
        return roundtrip(api_key, version, reply.body)
    log.append(reply.records)
    return roundtrip(api_key, version, reply.response_body)


def drive_broker(log: Log, ctl: QuorumController, b: BrokerNode, now_ms: int) -> None:
    """Deliver every controller call the broker wants now."""
    for c in b.poll(now_ms):
        version = c.max_version
        resp = call(log, ctl, c.api_key, version, c.body_for(version), now_ms)
        if c.api_key == 62:
            b.handle_registration_response(resp, now_ms)
        elif c.api_key == 63:
            b.handle_heartbeat_response(resp, now_ms)
