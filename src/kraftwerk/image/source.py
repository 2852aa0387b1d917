"""Reading metadata batches from a ``__cluster_metadata-0`` directory, a segment or a snapshot.

File handling belongs to the storage layer; this module only turns what it reads into
:class:`~kraftwerk.image.loader.MetadataBatch` values and picks "latest snapshot + log after it".
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.image.errors import ImageError
from kraftwerk.image.loader import MetadataBatch, load_snapshot, replay_batches
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.protocol.errors import DecodeError
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record
from kraftwerk.records.batch import iter_batches

log = logging.getLogger(__name__)

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")


class MetadataSourceError(ImageError):
    """A metadata log directory or file that cannot be read as one."""


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A snapshot file and its id: end offset (exclusive) and epoch."""

    path: Path
    end_offset: int
    epoch: int


@dataclass(frozen=True, slots=True)
class LogDirContents:
    """The segments (by base offset) and snapshots (by id) of a metadata log directory."""

    segments: tuple[tuple[int, Path], ...]
    snapshots: tuple[SnapshotFile, ...]

    @property
    def latest_snapshot(self) -> SnapshotFile | None:
        return self.snapshots[-1] if self.snapshots else None


def scan_log_dir(directory: Path) -> LogDirContents:
    """List segments and snapshots; every other file (indexes, quorum-state, ...) is ignored."""
    if not directory.is_dir():
        raise MetadataSourceError(f"{directory} is not a directory")
    segments: list[tuple[int, Path]] = []
    snapshots: list[SnapshotFile] = []
    for entry in directory.iterdir():
        if m := _SEGMENT.match(entry.name):
            segments.append((int(m.group(1)), entry))
        elif m := _SNAPSHOT.match(entry.name):
            snapshots.append(SnapshotFile(entry, int(m.group(1)), int(m.group(2))))
    segments.sort()
    snapshots.sort(key=lambda s: (s.end_offset, s.epoch))
    return LogDirContents(tuple(segments), tuple(snapshots))


def snapshot_id_of(path: Path) -> SnapshotFile:
    m = _SNAPSHOT.match(path.name)
    if m is None:
        return SnapshotFile(path, -1, -1)
    return SnapshotFile(path, int(m.group(1)), int(m.group(2)))


def read_batches(path: Path, *, min_offset: int = 0) -> Iterator[MetadataBatch]:
    """Decode the batches of one segment or snapshot file (records below ``min_offset`` skipped)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MetadataSourceError(f"cannot read {path}: {exc.strerror or exc}") from None
    for batch in iter_batches(data, validate=True):
        if batch.last_offset < min_offset:
            continue
        records: list[tuple[int, MetadataRecord]] = []
        if not batch.is_control:
            for rec in batch.records():
                if rec.offset < min_offset or rec.value is None:
                    continue
                try:
                    records.append((rec.offset, decode_metadata_record(bytes(rec.value))))
                except DecodeError as exc:
                    raise MetadataSourceError(f"{path}: record at offset {rec.offset}: {exc}") from None
        yield MetadataBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                            batch.max_timestamp, tuple(records), batch.is_control)


def load_snapshot_file(path: Path, image: MetadataImage = EMPTY_IMAGE) -> MetadataImage:
    """The image a snapshot file holds."""
    sid = snapshot_id_of(path)
    return load_snapshot(read_batches(path), image, sid.end_offset, sid.epoch)


def log_dir_batches(directory: Path, after_offset: int = 0) -> Iterator[MetadataBatch]:
    """Every batch of the directory's segments from ``after_offset`` on, in offset order."""
    for _, segment in scan_log_dir(directory).segments:
        yield from read_batches(segment, min_offset=after_offset)


def load_log_dir(directory: Path) -> MetadataImage:
    """The image of a metadata log directory: latest snapshot, then the log after it."""
    contents = scan_log_dir(directory)
    if not contents.segments and not contents.snapshots:
        raise MetadataSourceError(f"{directory} holds no metadata log segment or snapshot")
    image = EMPTY_IMAGE
    start = 0
    snap = contents.latest_snapshot
    if snap is not None:
        log.info("Loading snapshot %s", snap.path.name)
        image = load_snapshot(read_batches(snap.path), EMPTY_IMAGE, snap.end_offset, snap.epoch)
        start = snap.end_offset
    batches = (b for _, seg in contents.segments for b in read_batches(seg, min_offset=start))
    return replay_batches(batches, image)
