"""Following committed metadata for one node: the image, KIP-778 fail-stop, and the effects of a
metadata.version change (snapshots around it, the lossy rewrite of an unsafe downgrade).

It lives in the image layer because every core that follows the log (controller, broker) replays
through it, and it is the one hot loader: batch by batch, transactions held back until they end.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.loader import MetadataBatch, load_snapshot
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage, Provenance
from kraftwerk.image.writer import ImageWriteResult, ImageWriterOptions, LossPolicy, write_image
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record
from kraftwerk.versions.features import KRAFT_VERSION, VersionRange
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion, check_if_metadata_changed
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WriteSnapshot:
    """Write a KRaft snapshot ``(end_offset, epoch)`` holding ``image`` written at
    ``options.metadata_version`` (KIP-778 "snapshot at a version change").

    ``end_offset`` is exclusive, as in snapshot file names: the snapshot contains every offset
    below it. ``render()`` runs the image writer (pure); the runtime passes
    ``render().encoded()`` to ``RaftNode.create_snapshot(end_offset, epoch, records)``.
    ``losses`` is already known when the write is lossy (``LossPolicy.DROP``).
    """

    end_offset: int
    epoch: int
    image: MetadataImage
    options: ImageWriterOptions
    reason: str
    losses: tuple[str, ...] = ()

    @property
    def lossy(self) -> bool:
        return self.options.loss_policy is LossPolicy.DROP and bool(self.losses)

    def render(self) -> ImageWriteResult:
        return write_image(self.image, self.options)


@dataclass(frozen=True, slots=True)
class MetadataVersionChanged:
    """Replay adopted a new metadata.version at ``offset``. When the change crossed a metadata
    change downwards (an accepted unsafe downgrade) the image was rewritten through the lossy
    writer and ``losses`` lists what was dropped (Kafka's loss texts)."""

    offset: int
    previous: MetadataVersion | None
    current: MetadataVersion
    losses: tuple[str, ...] = ()


ReplayEffect = WriteSnapshot | MetadataVersionChanged




def as_record(item: MetadataRecord | bytes) -> MetadataRecord:
    """Accept decoded records or framed record bytes (what raft hands out)."""
    if isinstance(item, MetadataRecord):
        return item
    return decode_metadata_record(bytes(item))


def local_supported_ranges(software: SoftwareVersion) -> dict[str, VersionRange]:
    """The ranges a node of ``software`` supports, metadata.version first."""
    return dict(software.supported_features())


def unsupported_level_fault(
    role: str, node_id: int, name: str, level: int, supported: VersionRange | None
) -> FatalFaultError:
    """KIP-778 fail-stop with Kafka's ``FeatureControlManager.replay`` text (the node id goes in the
    log prefix, as Kafka's LogContext does)."""
    record = f"FeatureLevelRecord(name='{name}', featureLevel={level})"
    if supported is None:
        text = f"Tried to apply FeatureLevelRecord {record}, but this {role} does not support feature {name}"
        return FatalFaultError(text, feature=name, level=level)
    text = (
        f"Tried to apply FeatureLevelRecord {record}, but this {role} only supports versions "
        f"{supported.min}-{supported.max}"
    )
    return FatalFaultError(
        text, feature=name, level=level, supported_min=supported.min, supported_max=supported.max
    )


class ImageReplayer:
    """Follows committed metadata for one node: keeps the image, checks every FeatureLevelRecord
    against the node's software (fail-stop), and reports metadata.version changes.

    At a metadata.version change at offset ``o`` it emits (when ``snapshots`` is on) a
    :class:`WriteSnapshot` of the image before it (end offset ``o``, the old version) and one of
    the image after it re-serialised at the new version (end offset ``o + 1``). A downgrade that
    crosses a metadata change (an accepted unsafe downgrade) rewrites the image through the lossy
    writer right there, on every node alike, so every node ends with the same image.
    """

    def __init__(self, node_id: int, role: str, software: SoftwareVersion, *, snapshots: bool = True) -> None:
        self.node_id = node_id
        self.role = role
        self.software = software
        self.snapshots = snapshots
        self.supported = local_supported_ranges(software)
        self.image: MetadataImage = EMPTY_IMAGE
        self.last_offset = -1
        self.last_epoch = -1
        self._pending_txn: list[tuple[MetadataRecord, int]] | None = None
        self.txn_start_offset = -1
        self.register_offsets: dict[int, int] = {}
        """Broker id → offset of its latest RegisterBrokerRecord (Kafka's registerBrokerRecordOffset)."""

    @property
    def in_transaction(self) -> bool:
        """Whether a metadata transaction is open (its records are held back until it ends)."""
        return self._pending_txn is not None

    # ------------------------------------------------------------------ checks

    def check_feature_level(self, record: MetadataRecord) -> None:
        """Fail-stop on a FeatureLevelRecord outside the local range (kraft.version is ignored)."""
        if record.spec.name != "FeatureLevelRecord":
            return
        name, level = record.value["name"], record.value["featureLevel"]
        if name == KRAFT_VERSION:
            return
        supported = self.supported.get(name)
        if supported is None:
            if level == 0:
                return
        elif supported.contains(level) or (name != FEATURE_NAME and level == 0):
            return
        raise unsupported_level_fault(self.role, self.node_id, name, level, supported)

    # ------------------------------------------------------------------ replay

    def replay(
        self,
        base_offset: int,
        records: Sequence[MetadataRecord | bytes],
        *,
        epoch: int = -1,
        append_time_ms: int = -1,
        last_offset: int | None = None,
    ) -> list[ReplayEffect]:
        """Replay one committed batch; returns the version-change effects.

        Raises :class:`FatalFaultError`, before applying anything, if the batch holds a
        FeatureLevelRecord the node cannot run.
        """
        decoded = [as_record(r) for r in records]
        # A batch is applied whole or not at all: fail-stop before any of its records touches the image.
        for record in decoded:
            self.check_feature_level(record)
        end = base_offset + len(decoded) - 1 if last_offset is None else last_offset
        effects: list[ReplayEffect] = []
        delta = MetadataDelta(self.image)
        delta.resume_transaction(self._pending_txn)
        for i, record in enumerate(decoded):
            offset = base_offset + i
            self._track(record, offset, delta)
            name = record.spec.name
            candidate = (name == "EndTransactionRecord" and delta.in_transaction) or (
                name == "FeatureLevelRecord"
                and record.value["name"] == FEATURE_NAME
                and not delta.in_transaction
            )
            if not candidate:
                delta.replay(record, offset)
                continue
            pending = delta.pending_transaction
            prev_epoch = epoch if offset > base_offset else self.last_epoch
            before = delta.apply(Provenance(offset - 1, prev_epoch, append_time_ms, False))
            delta = MetadataDelta(before)
            delta.resume_transaction(pending)
            delta.replay(record, offset)
            after = delta.apply(Provenance(offset, epoch, append_time_ms, False))
            if after.metadata_version is not before.metadata_version and after.metadata_version is not None:
                self.image = after
                effects.extend(
                    self._version_changed(offset, epoch, prev_epoch, before, after.metadata_version)
                )
                delta = MetadataDelta(self.image)
        self._pending_txn = delta.pending_transaction
        self.image = delta.apply(Provenance(end, epoch, append_time_ms, True))
        self.last_offset = max(self.last_offset, end)
        self.last_epoch = epoch if epoch >= 0 else self.last_epoch
        return effects

    def _track(self, record: MetadataRecord, offset: int, delta: MetadataDelta) -> None:
        """Transaction start and broker registration offsets (for heartbeats' "caught up")."""
        name = record.spec.name
        if name == "BeginTransactionRecord":
            self.txn_start_offset = offset
        elif name == "AbortTransactionRecord":
            self.txn_start_offset = -1
        elif name == "EndTransactionRecord":
            self.txn_start_offset = -1
            for rec, _off in delta.pending_transaction or []:
                self._track_registration(rec, offset)
        elif not delta.in_transaction:
            self._track_registration(record, offset)

    def _track_registration(self, record: MetadataRecord, offset: int) -> None:
        if record.spec.name == "RegisterBrokerRecord":
            self.register_offsets[record.value["brokerId"]] = offset
        elif record.spec.name == "UnregisterBrokerRecord":
            self.register_offsets.pop(record.value["brokerId"], None)

    def _version_changed(
        self, offset: int, epoch: int, prev_epoch: int, before_image: MetadataImage, after: MetadataVersion
    ) -> list[ReplayEffect]:
        effects: list[ReplayEffect] = []
        before = before_image.metadata_version
        losses: tuple[str, ...] = ()
        if before is not None and after < before and check_if_metadata_changed(before, after):
            result = write_image(self.image, ImageWriterOptions(after, LossPolicy.DROP))
            losses = result.losses
            batch = MetadataBatch(
                offset,
                offset,
                epoch,
                -1,
                tuple((offset, MetadataRecord(r.spec, r.version, r.value)) for r in result.records),
            )
            reloaded = load_snapshot([batch], EMPTY_IMAGE)
            self.image = replace(reloaded, provenance=self.image.provenance, features_epoch=offset)
            for loss in losses:
                log.warning(
                    "[%s %d] the metadata.version downgrade from %s to %s at offset %d dropped %s",
                    self.role,
                    self.node_id,
                    before,
                    after,
                    offset,
                    loss,
                )
        log.info(
            "[%s %d] metadata.version changed from %s to %s at offset %d",
            self.role,
            self.node_id,
            before,
            after,
            offset,
        )
        if self.snapshots and before is not None:
            if offset > 0:
                effects.append(
                    WriteSnapshot(
                        offset,
                        prev_epoch,
                        before_image,
                        ImageWriterOptions(before),
                        f"before the metadata.version change to {after}",
                    )
                )
            policy = LossPolicy.DROP if losses else LossPolicy.REFUSE
            effects.append(
                WriteSnapshot(
                    offset + 1,
                    epoch,
                    self.image,
                    ImageWriterOptions(after, policy),
                    f"metadata.version changed from {before} to {after}",
                    losses,
                )
            )
        effects.append(MetadataVersionChanged(offset, before, after, losses))
        return effects

    def load_snapshot(
        self,
        records: Iterable[MetadataRecord | bytes],
        *,
        end_offset: int,
        epoch: int = -1,
    ) -> MetadataImage:
        """Replace the image with a snapshot whose id is ``(end_offset, epoch)``; fail-stop applies."""
        decoded = [as_record(r) for r in records]
        for record in decoded:
            self.check_feature_level(record)
        batch = MetadataBatch(
            max(end_offset - 1, 0),
            max(end_offset - 1, 0),
            epoch,
            -1,
            tuple((end_offset - 1, r) for r in decoded),
        )
        self.image = load_snapshot([batch], self.image, end_offset, epoch)
        self._pending_txn = None
        self.txn_start_offset = -1
        self.last_offset = end_offset - 1
        self.last_epoch = epoch
        self.register_offsets = {b: end_offset - 1 for b in self.image.cluster.brokers}
        return self.image
