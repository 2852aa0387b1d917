"""KRaft snapshots of an image: header, the image's records in batches, footer.

The layout is Kafka's RecordsSnapshotWriter: a control batch holding SnapshotHeaderRecord (plus
KRaftVersionRecord/VotersRecord when the caller passes them), then data batches of framed
metadata records, then a control batch holding SnapshotFooterRecord. Offsets inside a snapshot
start at 0; every batch carries the snapshot's epoch as its partition leader epoch.

Building the bytes is pure; putting them on disk (``.checkpoint.part`` → fsync → rename → fsync
dir) is the storage layer's job.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.image.model import MetadataImage
from kraftwerk.image.writer import ImageWriteResult, ImageWriterOptions, write_image
from kraftwerk.protocol import codec
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.records.types import ControlRecordType
from kraftwerk.storage.fileio import atomic_write

log = logging.getLogger(__name__)

#: Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES: a snapshot batch holds up to 8 MiB of records.
MAX_BATCH_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """A snapshot's id: the end offset (exclusive) and the epoch of the last contained record."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}.checkpoint"

    @classmethod
    def of_image(cls, image: MetadataImage) -> SnapshotId:
        """The id Kafka gives a snapshot of this image: last offset + 1, last epoch."""
        return cls(max(image.provenance.last_offset + 1, 0), max(image.provenance.last_epoch, 0))


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """An extra control record for the header batch (KRaftVersionRecord, VotersRecord)."""

    type: ControlRecordType
    value: bytes


def _control_value(name: str, value: codec.Value) -> bytes:
    return codec.encode(lookup_record(name), 0, value)


def snapshot_batches(records: Iterable[bytes], snapshot_id: SnapshotId, last_log_time_ms: int,
                     *, extra_control: Sequence[ControlRecord] = (),
                     max_batch_bytes: int = MAX_BATCH_BYTES) -> Iterator[bytes]:
    """The batches of a snapshot file, each as Kafka writes it."""
    ts = max(last_log_time_ms, 0)
    epoch = snapshot_id.epoch
    header = RecordsBuilder(base_offset=0, is_control=True, partition_leader_epoch=epoch)
    header.append_control_record(ts, ControlRecordType.SNAPSHOT_HEADER,
                                 _control_value("SnapshotHeaderRecord",
                                                {"version": 0, "lastContainedLogTimestamp": ts}))
    for extra in extra_control:
        header.append_control_record(ts, extra.type, extra.value)
    yield header.build()
    offset = header.next_offset()
    builder: RecordsBuilder | None = None
    size = 0
    for value in records:
        if builder is None:
            builder = RecordsBuilder(base_offset=offset, partition_leader_epoch=epoch)
            size = 0
        builder.append(ts, None, value)
        offset += 1
        size += len(value)
        if size >= max_batch_bytes:
            yield builder.build()
            builder = None
    if builder is not None:
        yield builder.build()
    footer = RecordsBuilder(base_offset=offset, is_control=True, partition_leader_epoch=epoch)
    footer.append_control_record(ts, ControlRecordType.SNAPSHOT_FOOTER,
                                 _control_value("SnapshotFooterRecord", {"version": 0}))
    yield footer.build()


@dataclass(frozen=True, slots=True)
class SnapshotWriteResult:
    """Where the snapshot went and what the image writer reported."""

    path: Path
    snapshot_id: SnapshotId
    write: ImageWriteResult
    size_bytes: int


def snapshot_bytes(image: MetadataImage, options: ImageWriterOptions,
                   snapshot_id: SnapshotId | None = None) -> tuple[bytes, ImageWriteResult, SnapshotId]:
    """The whole snapshot file of ``image`` at ``options.metadata_version``, in memory."""
    result = write_image(image, options)
    sid = snapshot_id or SnapshotId.of_image(image)
    data = b"".join(snapshot_batches(result.encoded(), sid, image.provenance.last_log_time_ms))
    return data, result, sid


def write_snapshot(image: MetadataImage, destination: Path, options: ImageWriterOptions,
                   snapshot_id: SnapshotId | None = None) -> SnapshotWriteResult:
    """Write a snapshot of ``image`` crash-safely.

    ``destination`` is a file path, or a directory in which the file gets Kafka's name
    ``<end offset>-<epoch>.checkpoint``. Raises UnwritableMetadataError (nothing is written) when
    the loss policy refuses.
    """
    data, result, sid = snapshot_bytes(image, options, snapshot_id)
    path = destination / sid.file_name if destination.is_dir() else destination
    atomic_write(path, data, tmp_suffix=".part")
    log.info("Wrote snapshot %s (%d records, %d bytes) at metadata.version %s",
             path, len(result.records), len(data), result.metadata_version)
    return SnapshotWriteResult(path, sid, result, len(data))


