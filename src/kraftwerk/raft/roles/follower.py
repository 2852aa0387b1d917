"""Follower (and observer: a follower that is not a voter): pull the leader's log with Fetch, truncate
where it diverges, download its snapshot when the log behind it is gone, and stand for election
(a voter) or look for a new leader (an observer) when the leader stops answering."""

from __future__ import annotations

import logging
import uuid
from typing import cast

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.messages.raft import (
    EndQuorumEpochRequestPartitionData,
    FetchSnapshotResponsePartitionSnapshot,
)
from kraftwerk.raft.delivery import Delivery
from kraftwerk.raft.log import SnapshotId, scan_batch_infos
from kraftwerk.raft.roles.base import RoleState, Transitions
from kraftwerk.raft.roles.unattached import fetched_partition, learn_leader
from kraftwerk.raft.state import (
    NONE,
    POSITION_OUT_OF_RANGE,
    SNAPSHOT_NOT_FOUND,
    InFlight,
    QuorumState,
    first_partition,
)
from kraftwerk.raft.types import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    Body,
    RaftStateError,
    Role,
)
from kraftwerk.raft.voters import ZERO_UUID

log = logging.getLogger(__name__)


def successor_backoff_ms(position: int, successors: int, max_ms: int) -> int:
    """Kafka's ``strictExponentialElectionBackoffMs``: the first preferred successor stands at once,
    the one at ``position`` k of n waits ``max_ms >> (n - 1) << (k - 1)`` (each twice the one before
    it, the last ``max_ms / 2``), and a voter not in the list waits the whole ``max_ms``."""
    if position == 0:
        return 0
    if not 0 < position < successors:
        return max_ms
    return (max_ms >> (successors - 1)) << (position - 1)


class Follower(RoleState):
    role = Role.FOLLOWER

    def __init__(self, q: QuorumState, moves: Transitions, delivery: Delivery, now_ms: int) -> None:
        super().__init__(q, moves)
        self.delivery = delivery
        self.fetch_deadline = now_ms + q.config.fetch_timeout_ms
        # the next Fetch or FetchSnapshot; None exactly while one is in flight (every answer and
        # every failure sets it again)
        self.send_at: int | None = now_ms
        self.download: tuple[SnapshotId, bytearray] | None = None  # snapshot id, bytes so far

    @property
    def leader_id(self) -> int:
        leader = self.q.leader_id
        assert leader is not None  # a follower always knows its leader
        return leader

    # ------------------------------------------------------------------ timers
    def poll(self, now_ms: int) -> None:
        if now_ms >= self.fetch_deadline:
            if self.q.is_voter:
                self.moves.become_prospective(now_ms, 0)
            else:
                self.moves.become_unattached(self.q.epoch, now_ms, persist=False)
        else:
            self.maybe_send_fetch(now_ms)

    def deadlines(self) -> list[int]:
        # (a request in flight has its own deadline, the node's)
        return [self.fetch_deadline] if self.send_at is None else [self.fetch_deadline, self.send_at]

    def request_failed(self, flight: InFlight, now_ms: int) -> None:
        self.send_at = now_ms + self.q.config.retry_backoff_ms

    def maybe_send_fetch(self, now_ms: int) -> None:
        q = self.q
        if self.send_at is None or now_ms < self.send_at:  # None: a request is in flight
            return
        if self.download is not None:
            sid, buf = self.download
            body = {
                "clusterId": q.config.cluster_id,
                "replicaId": q.node_id,
                "maxBytes": q.config.fetch_snapshot_max_bytes,
                "topics": [
                    {
                        "name": METADATA_TOPIC,
                        "partitions": [
                            {
                                "partition": METADATA_PARTITION,
                                "currentLeaderEpoch": q.epoch,
                                "snapshotId": {"endOffset": sid.end_offset, "epoch": sid.epoch},
                                "position": len(buf),
                            }
                        ],
                    }
                ],
            }
            q.send(self.leader_id, ApiKey.FETCH_SNAPSHOT, body, now_ms)
        else:
            q.send_fetch(self.leader_id, now_ms)
        self.send_at = None

    def end_quorum(self, part: EndQuorumEpochRequestPartitionData, now_ms: int) -> None:
        """The leader resigned (EndQuorumEpoch): Kafka's ``endEpochElectionBackoff`` replaces the
        fetch timeout, so that the preferred successors, most caught-up first, time out first."""
        q = self.q
        cands: list[tuple[int, uuid.UUID | None]] = [
            (int(c["candidateId"]), c.get("candidateDirectoryId"))
            for c in part.get("preferredCandidates") or []
        ]
        if not cands:  # v0 names successors by id only
            cands = [(int(c), None) for c in part.get("preferredSuccessors") or []]
        me = (None, ZERO_UUID, q.config.directory_id)  # a candidate without a directory id: any
        pos = next((i for i, (cid, d) in enumerate(cands) if cid == q.node_id and d in me), len(cands))
        self.fetch_deadline = now_ms + successor_backoff_ms(pos, len(cands), q.config.election_backoff_max_ms)
        q.last_fetch_ok_ms = None

    # ------------------------------------------------------------------ answers
    def on_response(self, source: int, api_key: int, body: Body, flight: InFlight, now_ms: int) -> None:
        if api_key == ApiKey.FETCH:
            self._on_fetch(body, flight, now_ms)
        else:
            self._on_fetch_snapshot(body, now_ms)

    def _fetched(self, now_ms: int) -> None:
        """The leader answered: it is alive, and the next request may go at once."""
        self.q.last_fetch_ok_ms = now_ms
        self.fetch_deadline = now_ms + self.q.config.fetch_timeout_ms
        self.send_at = now_ms

    def _on_fetch(self, body: Body, flight: InFlight, now_ms: int) -> None:
        q = self.q
        retry = now_ms + q.config.retry_backoff_ms
        part = fetched_partition(body)
        if part is None:
            self.send_at = retry
            return
        if learn_leader(q, self.moves, body, part, now_ms):
            return
        if part["errorCode"] != NONE or flight.context != q.log.end_offset:
            self.send_at = retry
            return
        self._fetched(now_ms)
        diverging = part.get("divergingEpoch") or {}
        snapshot = part.get("snapshotId") or {}
        if int(snapshot.get("endOffset", -1)) >= 0 and int(snapshot.get("epoch", -1)) >= 0:
            self.download = (SnapshotId(int(snapshot["endOffset"]), int(snapshot["epoch"])), bytearray())
        elif int(diverging.get("endOffset", -1)) >= 0 and int(diverging.get("epoch", -1)) >= 0:
            self._truncate_diverging(int(diverging["epoch"]), int(diverging["endOffset"]))
        else:
            data = part.get("records")
            if data:
                self._append(bytes(data))
            self._update_hw(int(part.get("highWatermark", -1)))
        self.maybe_send_fetch(now_ms)

    def _truncate_diverging(self, epoch: int, end_offset: int) -> None:
        q = self.q
        local = q.log.end_offset_for_epoch(epoch)
        target = end_offset if local.offset < 0 else min(end_offset, local.offset)
        committed = max(self.delivery.applied, q.hw or 0)
        if target < committed:
            raise RaftStateError(
                f"node {q.node_id}: diverging epoch {epoch} at {end_offset} would truncate "
                f"to {target}, below the committed offset {committed}"
            )
        if target < q.log.start_offset:
            raise RaftStateError(
                f"node {q.node_id}: truncation to {target} is below the log start {q.log.start_offset}"
            )
        log.debug("node %d truncates to %d (diverging epoch %d end %d)", q.node_id, target, epoch, end_offset)
        q.log.truncate_to(target)
        q.control.forget_from(target)

    def _append(self, data: bytes) -> None:
        q = self.q
        infos, _valid = scan_batch_infos(data)
        for info in infos:
            if info.base_offset < q.log.end_offset:
                continue  # already have it (cannot happen with one fetch in flight, but harmless)
            if info.base_offset > q.log.end_offset:
                break
            batch = data[info.position : info.position + info.size]
            q.log.append(batch)
            q.control.track(batch, q.node_id)
        q.log.flush()  # voters flush before fetching again: their fetch offset acknowledges

    def _update_hw(self, leader_hw: int) -> None:
        q = self.q
        if leader_hw < 0:
            return
        hw = min(leader_hw, q.log.flushed_offset)
        if q.hw is None or hw > q.hw:
            q.hw = hw

    def _on_fetch_snapshot(self, body: Body, now_ms: int) -> None:
        q = self.q
        retry = now_ms + q.config.retry_backoff_ms
        found = first_partition(body)
        if found is None or body.get("errorCode", NONE) != NONE:
            self.send_at = retry
            return
        part = cast(FetchSnapshotResponsePartitionSnapshot, found)
        leader = part.get("currentLeader") or {}
        if self.moves.observe_epoch(
            int(leader.get("leaderId", -1)), int(leader.get("leaderEpoch", -1)), now_ms
        ):
            return
        if self.download is None:  # FetchSnapshot goes out only during a download
            return
        sid, buf = self.download
        if part["errorCode"] != NONE:
            if part["errorCode"] in (SNAPSHOT_NOT_FOUND, POSITION_OUT_OF_RANGE):
                self.download = None  # fetch again and learn the current snapshot
            self.send_at = retry
            return
        self._fetched(now_ms)
        size = int(part["size"])
        chunk = bytes(part.get("unalignedRecords") or b"")
        if int(part["position"]) != len(buf) or len(buf) + len(chunk) > size:
            self.download = None
            self.send_at = retry
            return
        buf += chunk
        if len(buf) == size:
            self._install_snapshot(sid, bytes(buf))
        self.maybe_send_fetch(now_ms)

    def _install_snapshot(self, sid: SnapshotId, data: bytes) -> None:
        q, delivery = self.q, self.delivery
        self.download = None
        if sid.end_offset <= delivery.applied and q.log.end_offset >= sid.end_offset:
            return
        q.log.write_snapshot(sid, data)
        q.log.reset_to_snapshot(sid)
        q.control.rebuild(q.node_id)
        if q.hw is None or q.hw < sid.end_offset:
            q.hw = sid.end_offset
        delivery.installed(sid)
