"""Record rows of KRaft metadata logs and snapshots: the format logic of the ``kafka-metadata`` source.

A metadata directory is a ``__cluster_metadata-0`` directory (or any directory holding its
segments ``NNNN.log`` and snapshots ``NNNN-EEEE.checkpoint``); a broker's or controller's log dir
stands for the ``__cluster_metadata-0`` inside it. Each file is cut into splits at batch
boundaries; a split yields one :class:`MetadataRow` per record: where it is (cluster and node ids
from ``meta.properties``, file, offset, batch), when the leader appended it, its type name and
version, and its fields as Kafka's JSON (what ``kafka-dump-log --cluster-metadata-decoder``
prints). A record that cannot be decoded is a row with ``error`` set; unreadable bytes (a torn
tail, bad framing) one row with ``error`` and no offset. Spark only plans and moves the rows
(``kraftwerk.spark.metadata_source``); this module works without it.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.control_records import spec_for
from kraftwerk.protocol.frame import decode_metadata_record
from kraftwerk.protocol.json_form import to_json
from kraftwerk.records.batch import RecordBatch
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.recovery import BatchScanner, TailReason
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.metadata_log import (
    METADATA_PARTITION_DIR,
    decode_control_record,
    parse_snapshot_file_name,
)
from kraftwerk.storage.properties import META_PROPERTIES_FILE, read_meta_properties
from kraftwerk.storage.segment import LOG_SUFFIX, SegmentReader, parse_segment_file_name

log = logging.getLogger(__name__)

SEGMENT = "log"
SNAPSHOT = "snapshot"
#: Cut files larger than this at batch boundaries (a metadata log segment is 1 GiB at most in Kafka).
DEFAULT_MAX_SPLIT_BYTES = 64 * 1024 * 1024
_BATCH_PREFIX = struct.Struct(">qi")  # base offset, length: every batch format starts with them
#: how the error of a row for a partial batch at the end of a file (an interrupted append) starts
TORN_TAIL = f"{TailReason.TRUNCATED.value} bytes at position"


class MetadataScanError(StorageError):
    """A path given to the metadata scan that is not a metadata directory, log dir or file."""


@dataclass(frozen=True, slots=True)
class MetadataFile:
    """One segment or snapshot of a metadata directory, with the node it belongs to."""

    path: str
    kind: str  # SEGMENT or SNAPSHOT
    size: int
    cluster_id: str | None
    node_id: int | None
    #: a segment's base offset; a snapshot's end offset (the log offset its state is at)
    offset: int


@dataclass(frozen=True, slots=True)
class MetadataSplit:
    """Bytes ``[start, end)`` of a file: the batches that start there."""

    file: MetadataFile
    start: int
    end: int


class MetadataRow(NamedTuple):
    """One record of a metadata log or snapshot."""

    cluster_id: str | None
    node_id: int | None
    file: str
    file_kind: str
    snapshot_end_offset: int | None
    batch_offset: int | None
    offset: int | None
    leader_epoch: int | None
    append_time_ms: int | None
    is_control: bool | None
    record_type: str | None
    record_version: int | None
    fields: str | None
    error: str | None


#: The row schema (Spark SQL types); ``append_time`` is the batch's max timestamp, in UTC.
METADATA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cluster_id", "string"), ("node_id", "int"), ("file", "string"), ("file_kind", "string"),
    ("snapshot_end_offset", "bigint"), ("batch_offset", "bigint"), ("offset", "bigint"),
    ("leader_epoch", "int"), ("append_time", "timestamp"), ("is_control", "boolean"),
    ("record_type", "string"), ("record_version", "smallint"), ("fields", "string"), ("error", "string"),
)
assert len(METADATA_COLUMNS) == len(MetadataRow._fields)


# ---------------------------------------------------------------------- discovery

def _node_of(directory: Path) -> tuple[str | None, int | None]:
    """Cluster and node id from the ``meta.properties`` beside or above a metadata directory."""
    for candidate in (directory, directory.parent):
        path = candidate / META_PROPERTIES_FILE
        if path.is_file():
            try:
                meta = read_meta_properties(path)
            except (KraftwerkError, ValueError) as exc:
                log.warning("%s: cannot read: %s", path, exc)
                return None, None
            return meta.cluster_id, meta.node_id
    return None, None


def metadata_files(directory: Path) -> list[MetadataFile]:
    """The segments and complete snapshots of one metadata directory, segments first, by offset."""
    cluster_id, node_id = _node_of(directory)
    segments: list[MetadataFile] = []
    snapshots: list[MetadataFile] = []
    for entry in sorted(directory.iterdir()):
        if not entry.is_file():
            continue
        segment = parse_segment_file_name(entry.name)
        snapshot = parse_snapshot_file_name(entry.name)
        if segment is not None and segment[1] == LOG_SUFFIX:
            segments.append(MetadataFile(str(entry), SEGMENT, entry.stat().st_size, cluster_id, node_id,
                                         segment[0]))
        elif snapshot is not None and snapshot.state == "checkpoint":
            snapshots.append(MetadataFile(str(entry), SNAPSHOT, entry.stat().st_size, cluster_id, node_id,
                                          snapshot.snapshot_id.end_offset))
    return segments + snapshots


def discover_metadata_files(paths: Iterable[str | Path]) -> list[MetadataFile]:
    """Every segment and snapshot under ``paths``: metadata directories, log dirs holding
    ``__cluster_metadata-0``, single segment/snapshot files, or directories above them (a fleet's
    root: every ``__cluster_metadata-0`` below it, in path order)."""
    out: list[MetadataFile] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found = [f for f in metadata_files(path.parent) if Path(f.path) == path]
            if not found:
                raise MetadataScanError(f"{path} is not a metadata log segment or snapshot")
            out += found
        elif (path / METADATA_PARTITION_DIR).is_dir():
            out += metadata_files(path / METADATA_PARTITION_DIR)
        elif path.is_dir():
            files = metadata_files(path)
            if not files:
                for found_dir in sorted(path.rglob(METADATA_PARTITION_DIR)):
                    if found_dir.is_dir():
                        files += metadata_files(found_dir)
            out += files
        else:
            raise MetadataScanError(f"{path} does not exist")
    return out


def plan_metadata_splits(file: MetadataFile, max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES
                         ) -> list[MetadataSplit]:
    """The file whole, or cut where a batch starts once a split reaches ``max_split_bytes``
    (found by walking the batches' length fields, no record read)."""
    if max_split_bytes <= 0 or file.size <= max_split_bytes:
        return [MetadataSplit(file, 0, file.size)]
    cuts = [0]
    with SegmentReader(Path(file.path)) as reader:
        data, pos = reader.data, 0
        while pos + _BATCH_PREFIX.size <= len(data):
            _, length = _BATCH_PREFIX.unpack_from(data, pos)
            if length <= 0:
                break  # bad framing: the split that reaches it reports it
            pos += _BATCH_PREFIX.size + length
            if pos - cuts[-1] >= max_split_bytes and pos < len(data):
                cuts.append(pos)
    ends = [*cuts[1:], file.size]
    return [MetadataSplit(file, start, end) for start, end in zip(cuts, ends, strict=True)]


# ---------------------------------------------------------------------- rows

def _record_row(file: MetadataFile, batch: RecordBatch, offset: int, key: bytes | None,
                value: bytes | None) -> MetadataRow:
    snapshot_end = file.offset if file.kind == SNAPSHOT else None
    base = (file.cluster_id, file.node_id, Path(file.path).name, file.kind, snapshot_end, batch.base_offset,
            offset, batch.partition_leader_epoch, batch.max_timestamp, batch.is_control)
    try:
        if batch.is_control:
            control = decode_control_record(key, value)
            if control.value is None:
                unknown = f"unknown control record type {control.type_code}"
                return MetadataRow(*base, None, None, None, unknown)
            spec, version, decoded = spec_for(control.type), 0, control.value
        else:
            if value is None:
                return MetadataRow(*base, None, None, None, "metadata record without a value")
            record = decode_metadata_record(value)
            spec, version, decoded = record.spec, record.version, record.value
        fields = json.dumps(to_json(spec, version, decoded), separators=(",", ":"))
    except (KraftwerkError, ValueError) as exc:
        return MetadataRow(*base, None, None, None, str(exc))
    return MetadataRow(*base, spec.name, version, fields, None)


def iter_metadata_rows(split: MetadataSplit) -> Iterator[MetadataRow]:
    """One row per record of the batches starting in the split, in offset order."""
    file = split.file
    snapshot_end = file.offset if file.kind == SNAPSHOT else None
    name = Path(file.path).name
    with SegmentReader(Path(file.path)) as reader:
        end = min(split.end, reader.size)
        # frame up to the file end so a batch that starts in the split but ends after it is read whole
        scanner = BatchScanner(reader.data, split.start, reader.size, validate=True)
        for batch in scanner:
            if batch.position >= end:
                return
            try:
                for rec in batch.records():
                    key = None if rec.key is None else bytes(rec.key)
                    value = None if rec.value is None else bytes(rec.value)
                    yield _record_row(file, batch, rec.offset, key, value)
            except RecordsError as exc:
                yield MetadataRow(file.cluster_id, file.node_id, name, file.kind, snapshot_end,
                                  batch.base_offset, None, batch.partition_leader_epoch, batch.max_timestamp,
                                  batch.is_control, None, None, None, f"batch at {batch.position}: {exc}")
        tail = scanner.tail
        if tail is not None and tail.position < end:
            yield MetadataRow(file.cluster_id, file.node_id, name, file.kind, snapshot_end, None, None, None,
                              None, None, None, None, None,
                              f"{tail.reason.value} bytes at position {tail.position}: {tail.message}")


def scan_metadata(paths: Sequence[str | Path], max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES
                  ) -> Iterator[MetadataRow]:
    """Every row of every file under ``paths``, in one process (what the Spark source serves)."""
    for file in discover_metadata_files(paths):
        for split in plan_metadata_splits(file, max_split_bytes):
            yield from iter_metadata_rows(split)
