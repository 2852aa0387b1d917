"""Loading images from a ``__cluster_metadata-0`` directory, a snapshot file, or the record rows of
one node (the ``kafka-metadata`` source's).

The storage layer lists, maps and decodes the files; this module only turns its batches (or rows)
into :class:`~kraftwerk.image.loader.MetadataBatch` values and picks "latest snapshot + log after it".
"""

from __future__ import annotations

import json
import logging
import operator
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from kraftwerk.image.errors import ImageError
from kraftwerk.image.loader import MetadataBatch, load_snapshot, replay_batches
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.protocol import codec
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.json_form import from_json
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.metadata_log import (
    iter_metadata_batches,
    iter_snapshot_batches,
    latest_snapshot,
    parse_snapshot_file_name,
)
from kraftwerk.storage.metadata_rows import is_torn_tail
from kraftwerk.storage.metadata_scan import SNAPSHOT, MetadataRow
from kraftwerk.storage.segment import list_segments

log = logging.getLogger(__name__)


class MetadataSourceError(ImageError):
    """A metadata log directory or file that cannot be read as one."""


_offset_and_record = operator.itemgetter(0, 2)  # of a LogEntry, without a Python frame per record


def read_batches(path: Path, *, min_offset: int = 0, snapshot: bool = False) -> Iterator[MetadataBatch]:
    """The batches of one segment (records below ``min_offset`` skipped) or, with ``snapshot``, of
    a snapshot file, whose header and footer records are checked as Kafka's snapshot reader does."""
    try:
        batches = iter_snapshot_batches(path) if snapshot else iter_metadata_batches(path,
                                                                                    min_offset=min_offset)
        for batch in batches:
            # a data batch holds metadata records only, a control batch none
            records = () if batch.is_control else tuple(map(_offset_and_record, batch.entries))
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


# ---------------------------------------------------------------------- rows

def _record(row: MetadataRow) -> MetadataRecord:
    """The record a row's Kafka JSON describes, decoded from its bytes as a log read would be (so
    every field a reader of the file sees is there, tagged defaults included)."""
    assert row.record_type is not None and row.record_version is not None
    try:
        spec = lookup_record(row.record_type)
        version = row.record_version
        value = from_json(spec, version, json.loads(row.fields or "{}"))
        return MetadataRecord(spec, version, codec.decode(spec, version, codec.encode(spec, version, value)))
    except (ProtocolError, ValueError) as exc:
        raise MetadataSourceError(f"{row.file}: record at offset {row.offset}: {exc}") from None


def _row_batches(rows: Sequence[MetadataRow]) -> Iterator[MetadataBatch]:
    """Consecutive rows of one batch (same file and batch offset) as one batch."""
    i = 0
    while i < len(rows):
        first = rows[i]
        j = i
        while j < len(rows) and (rows[j].file, rows[j].batch_offset) == (first.file, first.batch_offset):
            j += 1
        group = rows[i:j]
        records = () if first.is_control else tuple((r.offset, _record(r)) for r in group
                                                    if r.offset is not None)
        last = max(r.offset for r in group if r.offset is not None)
        yield MetadataBatch(first.batch_offset or 0, last, first.leader_epoch or 0,
                            first.append_time_ms or 0, records, bool(first.is_control))
        i = j


def _check_snapshot(name: str, rows: Sequence[MetadataRow]) -> None:
    """A snapshot's first record is its header and its last the footer (Kafka's snapshot reader)."""
    if rows[0].record_type != "SnapshotHeaderRecord":
        raise MetadataSourceError(f"{name}: the first batch does not start with a SnapshotHeaderRecord")
    if rows[-1].record_type != "SnapshotFooterRecord":
        raise MetadataSourceError(f"{name}: the snapshot ends without a SnapshotFooterRecord")


def load_rows(rows: Iterable[MetadataRow]) -> MetadataImage:
    """The image of one node's record rows, in any order: its latest snapshot, then its log after the
    snapshot -- what :func:`load_log_dir` reads from the files. A row that could not be read is a
    :class:`MetadataSourceError`, unless it is a partial batch at the end of a file (ignored, as
    Kafka's readers do)."""
    snapshots: dict[int, list[MetadataRow]] = {}
    segments: list[MetadataRow] = []
    for row in rows:
        if row.error is not None:
            if is_torn_tail(row):
                continue
            raise MetadataSourceError(f"{row.file}: {row.error}")
        if row.file_kind == SNAPSHOT:
            snapshots.setdefault(row.snapshot_end_offset or 0, []).append(row)
        else:
            segments.append(row)
    if not snapshots and not segments:
        raise MetadataSourceError("no metadata log segment or snapshot records")
    image = EMPTY_IMAGE
    start = 0
    if snapshots:
        start = max(snapshots)
        snap = sorted(snapshots[start], key=lambda r: r.offset or 0)
        name = snap[0].file
        _check_snapshot(name, snap)
        parsed = parse_snapshot_file_name(name)
        epoch = -1 if parsed is None else parsed.snapshot_id.epoch
        log.info("Loading snapshot %s", name)
        image = load_snapshot(_row_batches(snap), EMPTY_IMAGE, start, epoch)
    after = sorted((r for r in segments if r.offset is not None and r.offset >= start),
                   key=lambda r: r.offset or 0)
    return replay_batches(_row_batches(after), image)
