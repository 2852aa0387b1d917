"""The rules :class:`~kraftwerk.node.host.NodeHost` applies between raft and the cores, as pure
functions of plain values: who leads and when this controller activates, the activation records,
the controller's timer records, kraft.version for the cores, where a requested snapshot goes.

Sans-I/O like the cores: raft's state arrives as plain values, time as ``now_ms``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from kraftwerk.controller.effects import AppendThenRespond, WriteSnapshot
from kraftwerk.controller.features import noop_record
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.frame import MetadataRecord


class ControllerFollower(Protocol):
    """A core that only needs to know who the active controller is (the broker)."""

    def set_controller(self, controller_id: int | None) -> None: ...


class KRaftVersionFollower(Protocol):
    """A core that reports raft's kraft.version as a finalized feature (controller and broker)."""

    kraft_version: int

    def set_kraft_version(self, level: int) -> None: ...


def feed_kraft_version(cores: Iterable[KRaftVersionFollower | None], level: int) -> bool:
    """Hand raft's committed kraft.version to the cores (it lives in KRaft control records, not in
    the metadata records they replay); True when any core's level changed."""
    changed = False
    for core in cores:
        if core is not None and core.kraft_version != level:
            core.set_kraft_version(level)
            changed = True
    return changed


@dataclass(slots=True)
class LeaderWatch:
    """Tells the cores about raft's leader. A broker and a standby controller learn of a new
    leader at once; this node's controller activates only once its LeaderChange record has
    committed (the high watermark passed the epoch's start), so that it activates on an image that
    holds everything committed before."""

    seen: tuple[int | None, int] = (None, -1)
    activation_pending: bool = False

    def observe(
        self,
        controller: QuorumController | None,
        broker: ControllerFollower | None,
        *,
        leader_id: int | None,
        epoch: int,
        is_leader: bool,
        high_watermark: int | None,
        epoch_start_offset: int,
        now_ms: int,
    ) -> int | None:
        """Call after every raft event; returns the epoch to activate this controller in (the host
        calls :func:`activate` for it, outside the raft callback), or None."""
        if (leader_id, epoch) != self.seen:
            self.seen = (leader_id, epoch)
            self.activation_pending = is_leader
            if broker is not None:
                broker.set_controller(leader_id)
            if controller is not None and not is_leader:
                # Raft names this node while it is not leading (restarted as Resigned from its
                # quorum-state): nobody is active until the next election, certainly not us.
                known = None if leader_id == controller.node_id else leader_id
                controller.on_leader_change(known, epoch, now_ms, False)
        committed = high_watermark is not None and high_watermark > epoch_start_offset
        if self.activation_pending and controller is not None and is_leader and committed:
            self.activation_pending = False
            return epoch
        return None


def activate(controller: QuorumController, node_id: int, epoch: int, now_ms: int) -> AppendThenRespond | None:
    """Make this controller active in ``epoch``; the activation records to append (bootstrap on an
    empty log, or a transaction abort), or None when there is nothing to write."""
    empty = controller.image.metadata_version is None
    activation = controller.on_leader_change(node_id, epoch, now_ms, empty)
    if activation is not None and activation.records:
        return activation
    return None


def timer_records(
    controller: QuorumController, now_ms: int, last_write_ms: int, idle_interval_ms: int
) -> list[MetadataRecord]:
    """What the active controller appends on a timer: its ``tick`` records, else a NoOpRecord
    once the log was idle for ``idle_interval_ms`` (KIP-835; 0 disables it), as Kafka's controller
    does from metadata.version 3.3-IV0."""
    records = controller.tick(now_ms)
    mv = controller.image.metadata_version
    idle = idle_interval_ms > 0 and now_ms - last_write_ms >= idle_interval_ms
    if not records and idle and mv is not None and mv.is_noop_record_supported():
        records = [noop_record()]
    return records


def snapshot_at_batch_end(effect: WriteSnapshot, image: MetadataImage, last_offset: int) -> WriteSnapshot:
    """Where to store a snapshot a core asked for, once raft has handed out its batch.

    Raft stores snapshots at batch boundaries only, so the image *after* a version change is
    written at the end of everything the core replayed so far (``image``, its current one, at the
    same version and loss policy) rather than right after the FeatureLevelRecord, which may sit
    inside a batch (a ``--release-version`` update). It moves only while the last record replayed
    is itself a FeatureLevelRecord: a node that loads the snapshot takes its end as the features
    epoch, which must be the one every replaying node reports (the last FeatureLevelRecord's
    offset). Any other request is kept as asked (and raft refuses one inside a batch).
    """
    moved = last_offset + 1 > effect.end_offset and image.features_epoch == last_offset
    if moved and image.metadata_version is effect.options.metadata_version:
        return dataclasses.replace(effect, image=image, end_offset=last_offset + 1)
    return effect
