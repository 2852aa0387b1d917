"""Loading images from a ``__cluster_metadata-0`` directory or a snapshot file.

The storage layer lists, maps and decodes the files; this module only turns its batches into
:class:`~kraftwerk.image.loader.MetadataBatch` values and picks "latest snapshot + log after it".
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from kraftwerk.image.errors import ImageError
from kraftwerk.image.loader import MetadataBatch, load_snapshot, replay_batches
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.metadata_log import (
    iter_metadata_batches,
    iter_snapshot_batches,
    latest_snapshot,
    parse_snapshot_file_name,
)
from kraftwerk.storage.segment import list_segments

log = logging.getLogger(__name__)


class MetadataSourceError(ImageError):
    """A metadata log directory or file that cannot be read as one."""


def read_batches(path: Path, *, min_offset: int = 0, snapshot: bool = False) -> Iterator[MetadataBatch]:
    """The batches of one segment (records below ``min_offset`` skipped) or, with ``snapshot``, of
    a snapshot file, whose header and footer records are checked as Kafka's snapshot reader does."""
    try:
        batches = iter_snapshot_batches(path) if snapshot else iter_metadata_batches(path,
                                                                                    min_offset=min_offset)
        for batch in batches:
            records = tuple((e.offset, e.record) for e in batch.entries
                            if isinstance(e.record, MetadataRecord))
            yield MetadataBatch(batch.base_offset, batch.last_offset, batch.leader_epoch,
                                batch.append_time, records, batch.is_control)
    except StorageError as exc:
        raise MetadataSourceError(str(exc)) from None


def load_snapshot_file(path: Path, image: MetadataImage = EMPTY_IMAGE) -> MetadataImage:
    """The image a snapshot file holds."""
    parsed = parse_snapshot_file_name(Path(path).name)
    end_offset, epoch = (-1, -1) if parsed is None else (parsed.snapshot_id.end_offset,
                                                         parsed.snapshot_id.epoch)
    return load_snapshot(read_batches(path, snapshot=True), image, end_offset, epoch)


def load_log_dir(directory: Path) -> MetadataImage:
    """The image of a metadata log directory: latest snapshot, then the log after it.

    Files other than segments and snapshots (indexes, quorum-state, ...) are ignored.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise MetadataSourceError(f"{directory} is not a directory")
    try:
        segments = list_segments(directory)
        snap = latest_snapshot(directory)
    except StorageError as exc:
        raise MetadataSourceError(str(exc)) from None
    if not segments and snap is None:
        raise MetadataSourceError(f"{directory} holds no metadata log segment or snapshot")
    image = EMPTY_IMAGE
    start = 0
    if snap is not None:
        log.info("Loading snapshot %s", snap.path.name)
        image = load_snapshot(read_batches(snap.path, snapshot=True), EMPTY_IMAGE,
                              snap.snapshot_id.end_offset, snap.snapshot_id.epoch)
        start = snap.snapshot_id.end_offset
    batches = (b for seg in segments for b in read_batches(seg.log_path, min_offset=start))
    return replay_batches(batches, image)
