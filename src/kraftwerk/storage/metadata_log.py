"""The KRaft metadata log on disk: ``__cluster_metadata-0`` segments, snapshots, bootstrap file.

Snapshots are ``%020d-%010d.checkpoint`` (end offset exclusive, epoch), written as
``.checkpoint.part``, fsynced and renamed (Kafka's FileRawSnapshotWriter); deleted snapshots are
renamed ``.checkpoint.deleted`` first. A snapshot and ``bootstrap.checkpoint`` share one layout
(RecordsSnapshotWriter / BatchFileWriter driving Kafka's BatchAccumulator): a control batch whose
first record is SnapshotHeaderRecord (plus KRaftVersionRecord and VotersRecord when kraft.version
> 0), data batches of framed metadata records filled up to 8 MiB (records of one ``append`` never
split), a control batch holding SnapshotFooterRecord. Offsets start at 0, every batch carries the
snapshot epoch (0 for bootstrap) as partition leader epoch, every record of a batch has the time
the batch was started. The bootstrap header says ``lastContainedLogTimestamp`` 0.

Readers stream :class:`MetadataBatch` values (each record decoded into a
:class:`~kraftwerk.protocol.frame.MetadataRecord` or a :class:`ControlRecord`), the input the
image layer replays.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from kraftwerk.protocol import codec
from kraftwerk.protocol.control_records import (
    KRAFT_VERSION_RECORD,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
    ControlRecordType,
    parse_control_key,
    spec_for,
)
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record, encode_metadata_record
from kraftwerk.records.batch import RecordBatch
from kraftwerk.records.builder import RecordsBuilder, encode_v2_record
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.types import RECORD_BATCH_OVERHEAD
from kraftwerk.storage.errors import CorruptFileError, CorruptSnapshotError, StorageError
from kraftwerk.storage.fileio import atomic_rename, fsync_dir, translate_os_errors, write_and_sync
from kraftwerk.storage.quorum_state import QUORUM_STATE_FILE, QuorumState, read_quorum_state
from kraftwerk.storage.segment import Segment, SegmentReader, list_segments

log = logging.getLogger(__name__)

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = f"{METADATA_TOPIC}-0"
BOOTSTRAP_FILE = "bootstrap.checkpoint"
SNAPSHOT_SUFFIX = ".checkpoint"
PARTIAL_SUFFIX = ".checkpoint.part"
DELETED_SNAPSHOT_SUFFIX = ".checkpoint.deleted"
#: KafkaRaftClient.MAX_BATCH_SIZE_BYTES: the batch size limit of snapshots and bootstrap files.
MAX_BATCH_BYTES = 8 * 1024 * 1024

_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})(\.checkpoint(?:\.part|\.deleted)?)$")
_PARTIAL_NAME = re.compile(r"^(\d{20})-(\d{10}).*\.checkpoint\.part$")  # Kafka adds random digits

Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


# ---------------------------------------------------------------------- snapshot ids and files

@dataclass(frozen=True, slots=True, order=True)
class SnapshotId:
    """A snapshot's id: the end offset (exclusive) and the epoch of the last contained record."""

    end_offset: int
    epoch: int

    @property
    def file_name(self) -> str:
        return f"{self.end_offset:020d}-{self.epoch:010d}{SNAPSHOT_SUFFIX}"


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """A file in a metadata log directory that belongs to a snapshot; ``state`` is
    ``"checkpoint"`` (complete), ``"partial"`` (an unfinished write) or ``"deleted"``."""

    path: Path
    snapshot_id: SnapshotId
    state: str


def parse_snapshot_file_name(name: str) -> SnapshotFile | None:
    m = _SNAPSHOT_NAME.match(name) or _PARTIAL_NAME.match(name)
    if m is None:
        return None
    sid = SnapshotId(int(m.group(1)), int(m.group(2)))
    state = ("partial" if name.endswith(PARTIAL_SUFFIX)
             else "deleted" if name.endswith(DELETED_SNAPSHOT_SUFFIX) else "checkpoint")
    return SnapshotFile(Path(name), sid, state)


def list_snapshot_files(directory: Path) -> list[SnapshotFile]:
    """Every snapshot file (complete, partial, deleted) in ``directory``, ordered by id."""
    directory = Path(directory)
    with translate_os_errors(directory, "list"):
        names = os.listdir(directory)
    out = []
    for name in names:
        f = parse_snapshot_file_name(name)
        if f is not None:
            out.append(SnapshotFile(directory / name, f.snapshot_id, f.state))
    out.sort(key=lambda f: (f.snapshot_id, f.state))
    return out


def list_snapshots(directory: Path) -> list[SnapshotFile]:
    """The complete snapshots of a metadata log directory, oldest first."""
    return [f for f in list_snapshot_files(directory) if f.state == "checkpoint"]


def latest_snapshot(directory: Path) -> SnapshotFile | None:
    snaps = list_snapshots(directory)
    return snaps[-1] if snaps else None


def clean_snapshot_leftovers(directory: Path) -> list[Path]:
    """Delete ``.checkpoint.part`` and ``.checkpoint.deleted`` files, as KafkaMetadataLog does on open."""
    gone = []
    for f in list_snapshot_files(directory):
        if f.state != "checkpoint":
            with translate_os_errors(f.path, "delete"):
                f.path.unlink(missing_ok=True)
            gone.append(f.path)
    if gone:
        fsync_dir(Path(directory))
    return gone


def delete_snapshot(path: Path) -> None:
    """Rename to ``.checkpoint.deleted`` (durably), then delete (Kafka's Snapshots.deleteIfExists)."""
    path = Path(path)
    deleted = path.with_name(path.name[:-len(SNAPSHOT_SUFFIX)] + DELETED_SNAPSHOT_SUFFIX)
    atomic_rename(path, deleted)
    with translate_os_errors(deleted, "delete"):
        deleted.unlink()


# ---------------------------------------------------------------------- reading

@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A KRaft control record: its type, the decoded value (``None`` for an unknown type), raw bytes."""

    type: ControlRecordType
    type_code: int
    value: codec.Value | None
    raw: bytes | None


class LogEntry(NamedTuple):
    """One record of the metadata log: absolute offset, timestamp, decoded record.

    A NamedTuple: a cold image load makes one per record (millions), and a tuple is built
    several times faster than a frozen dataclass.
    """

    offset: int
    timestamp: int
    record: MetadataRecord | ControlRecord


@dataclass(frozen=True, slots=True)
class MetadataBatch:
    """One batch of the metadata log with its records decoded (the unit the image layer replays)."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    append_time: int  # the batch's max timestamp: when the leader appended it
    position: int
    size: int
    is_control: bool
    entries: tuple[LogEntry, ...]

    @property
    def records(self) -> tuple[MetadataRecord, ...]:
        return tuple(e.record for e in self.entries if isinstance(e.record, MetadataRecord))

    @property
    def control_records(self) -> tuple[ControlRecord, ...]:
        return tuple(e.record for e in self.entries if isinstance(e.record, ControlRecord))


_new_entry = tuple.__new__  # LogEntry's generated __new__ is a Python function: a call per record


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """Decode a control record (value decoded at version 0 like Kafka's ControlRecordUtils)."""
    rtype, code = parse_control_key(key)
    if rtype is ControlRecordType.UNKNOWN or value is None:
        return ControlRecord(rtype, code, None, value)
    return ControlRecord(rtype, code, codec.decode(spec_for(rtype), 0, value), value)


def _entries(path: Path, batch: RecordBatch, min_offset: int) -> list[LogEntry]:
    """The decoded records of one batch, from ``min_offset`` on."""
    entries: list[LogEntry] = []
    for rec in batch.records():
        if rec.offset < min_offset:
            continue
        value = None if rec.value is None else bytes(rec.value)
        if batch.is_control:
            key = None if rec.key is None else bytes(rec.key)
            record: MetadataRecord | ControlRecord = decode_control_record(key, value)
        elif value is None:
            raise CorruptFileError(path, f"metadata record at offset {rec.offset} has no value",
                                   position=batch.position)
        else:
            record = decode_metadata_record(value)
        entries.append(_new_entry(LogEntry, (rec.offset, rec.timestamp, record)))
    return entries


def _data_entries(path: Path, batch: RecordBatch) -> list[LogEntry]:
    """:func:`_entries` of a whole data batch, as one comprehension (a cold load makes a million)."""
    try:
        return [_new_entry(LogEntry, (rec.offset, rec.timestamp,
                                      decode_metadata_record(rec.value)))  # type: ignore[arg-type]
                for rec in batch.records()]
    except TypeError:  # a record without a value (its value is ``None``): say which
        return _entries(path, batch, batch.base_offset)


def iter_metadata_batches(path: Path, *, min_offset: int = 0) -> Iterator[MetadataBatch]:
    """Stream the batches of a metadata segment, snapshot or bootstrap file, decoded.

    Batches wholly below ``min_offset`` are skipped without decoding; records below it are
    dropped from a batch that straddles it. A partial batch at the end (a torn append) is ignored
    like Kafka's readers do; any other damage is a :class:`CorruptFileError` naming the position.
    """
    path = Path(path)
    with SegmentReader(path) as reader:
        for batch in reader.batches(validate=True):
            if batch.last_offset < min_offset:
                continue
            try:
                if batch.is_control or batch.base_offset < min_offset:
                    entries = _entries(path, batch, min_offset)
                else:
                    entries = _data_entries(path, batch)
            except (RecordsError, ProtocolError) as exc:
                raise CorruptFileError(path, f"batch at offset {batch.base_offset}: {exc}",
                                       position=batch.position) from None
            yield MetadataBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                                batch.max_timestamp, batch.position, batch.size, batch.is_control,
                                tuple(entries))


def iter_log_entries(path: Path, *, min_offset: int = 0) -> Iterator[LogEntry]:
    """Every record of one file as ``(offset, timestamp, record)`` entries."""
    for batch in iter_metadata_batches(path, min_offset=min_offset):
        yield from batch.entries


def iter_snapshot_batches(path: Path) -> Iterator[MetadataBatch]:
    """The batches of a snapshot or bootstrap file, checking its structure as it streams:
    a header control batch first, a footer control batch last, nothing after the footer."""
    path = Path(path)
    first = True
    footer_seen = False
    for batch in iter_metadata_batches(path):
        if footer_seen:
            raise CorruptSnapshotError(path,
                                       f"batch at offset {batch.base_offset} follows the snapshot footer",
                                       position=batch.position)
        controls = batch.control_records
        if first:
            header = controls[0].type if batch.is_control and controls else None
            if header is not ControlRecordType.SNAPSHOT_HEADER:
                raise CorruptSnapshotError(path, "the first batch does not start with a SnapshotHeaderRecord",
                                           position=batch.position)
            first = False
        if batch.is_control and any(c.type is ControlRecordType.SNAPSHOT_FOOTER for c in controls):
            footer_seen = True
        yield batch
    if first:
        raise CorruptSnapshotError(path, "no batches: a snapshot starts with a SnapshotHeaderRecord")
    if not footer_seen:
        raise CorruptSnapshotError(path, "the snapshot ends without a SnapshotFooterRecord")


@dataclass(frozen=True, slots=True)
class SnapshotContents:
    """A whole snapshot (or bootstrap) file read into memory."""

    path: Path
    snapshot_id: SnapshotId | None
    last_contained_log_timestamp: int
    batches: tuple[MetadataBatch, ...]

    @property
    def records(self) -> tuple[MetadataRecord, ...]:
        return tuple(r for b in self.batches for r in b.records)

    @property
    def control_records(self) -> tuple[ControlRecord, ...]:
        return tuple(c for b in self.batches for c in b.control_records)


def read_snapshot(path: Path) -> SnapshotContents:
    """Read and check a snapshot or bootstrap file."""
    path = Path(path)
    batches = tuple(iter_snapshot_batches(path))
    header = batches[0].control_records[0].value or {}
    parsed = parse_snapshot_file_name(path.name)
    return SnapshotContents(path, None if parsed is None else parsed.snapshot_id,
                            int(header.get("lastContainedLogTimestamp", 0)), batches)


def read_bootstrap(path: Path) -> SnapshotContents:
    """Read ``bootstrap.checkpoint`` (pass the file or the directory that holds it)."""
    path = Path(path)
    if path.is_dir():
        path = path / BOOTSTRAP_FILE
    return read_snapshot(path)


# ---------------------------------------------------------------------- writing

class BatchFileBuilder:
    """Kafka's BatchAccumulator as RecordsSnapshotWriter and BatchFileWriter drive it.

    The header control batch is built on construction, :meth:`append` adds a group of records
    (never split across batches), :meth:`finish` adds the footer. :meth:`drain` hands out completed
    batches so a writer can stream them. ``clock`` is read once per batch when the batch starts,
    exactly when Kafka reads ``time.milliseconds()``, so feeding the original times reproduces a
    file byte for byte.
    """

    def __init__(self, *, epoch: int = 0, last_contained_log_timestamp: int = 0, kraft_version: int = 0,
                 voters: codec.Value | None = None, clock: Clock = wall_clock_ms,
                 max_batch_bytes: int = MAX_BATCH_BYTES) -> None:
        if kraft_version == 0 and voters is not None:
            raise ValueError("a voter set is not expected when the kraft.version is 0")
        self.epoch = epoch
        self.clock = clock
        self.max_batch_bytes = max_batch_bytes
        self._next_offset = 0
        self._done: list[bytes] = []
        self._current: RecordsBuilder | None = None
        self._current_ts = 0
        self._current_size = 0
        self._finished = False
        controls: list[tuple[ControlRecordType, bytes]] = [
            (ControlRecordType.SNAPSHOT_HEADER,
             codec.encode(SNAPSHOT_HEADER_RECORD, 0,
                          {"version": 0, "lastContainedLogTimestamp": last_contained_log_timestamp}))]
        if kraft_version > 0:
            controls.append((ControlRecordType.KRAFT_VERSION,
                             codec.encode(KRAFT_VERSION_RECORD, 0,
                                          {"version": 0, "kRaftVersion": kraft_version})))
            if voters is not None:
                controls.append((ControlRecordType.KRAFT_VOTERS, codec.encode(VOTERS_RECORD, 0, voters)))
        self._control_batch(controls)

    @property
    def next_offset(self) -> int:
        return self._next_offset

    def _control_batch(self, controls: Sequence[tuple[ControlRecordType, bytes]]) -> None:
        self._complete_current()
        now = self.clock()
        builder = RecordsBuilder(base_offset=self._next_offset, is_control=True,
                                 partition_leader_epoch=self.epoch)
        for rtype, value in controls:
            builder.append_control_record(now, rtype, value)
        self._done.append(builder.build())
        self._next_offset = builder.next_offset()

    def _complete_current(self) -> None:
        if self._current is not None:
            self._done.append(self._current.build())
            self._current = None

    def append(self, records: Sequence[MetadataRecord | bytes]) -> None:
        """Append records that must stay in one batch (one ``append`` call in Kafka)."""
        if self._finished:
            raise StorageError("append after the snapshot footer was written")
        values = [r if isinstance(r, bytes) else encode_metadata_record(r.spec, r.version, r.value)
                  for r in records]
        if not values:
            return
        need = sum(len(encode_v2_record(self._next_offset + i - (self._current.base_offset if self._current
                                                                     else self._next_offset), 0, None, v))
                   for i, v in enumerate(values))
        if need + RECORD_BATCH_OVERHEAD > self.max_batch_bytes:
            raise StorageError(
                f"records of {need} bytes do not fit a batch of at most {self.max_batch_bytes} bytes")
        if self._current is not None and self._current_size + need > self.max_batch_bytes:
            self._complete_current()
        if self._current is None:
            self._current_ts = self.clock()
            self._current = RecordsBuilder(base_offset=self._next_offset, partition_leader_epoch=self.epoch)
            self._current_size = RECORD_BATCH_OVERHEAD
        for v in values:
            self._current.append(self._current_ts, None, v)
        self._current_size += need
        self._next_offset = self._current.next_offset()

    def finish(self) -> None:
        """Append the SnapshotFooterRecord control batch (Kafka's freeze / close)."""
        if not self._finished:
            self._control_batch([(ControlRecordType.SNAPSHOT_FOOTER,
                                  codec.encode(SNAPSHOT_FOOTER_RECORD, 0, {"version": 0}))])
            self._finished = True

    def drain(self) -> list[bytes]:
        """The completed batches since the last drain."""
        out, self._done = self._done, []
        return out


def _grouped(records: Iterable[MetadataRecord | bytes | Sequence[MetadataRecord | bytes]]
             ) -> Iterator[Sequence[MetadataRecord | bytes]]:
    for item in records:
        if isinstance(item, MetadataRecord | bytes):
            yield (item,)
        else:
            yield item


def snapshot_file_batches(records: Iterable[MetadataRecord | bytes | Sequence[MetadataRecord | bytes]], *,
                          epoch: int = 0, last_contained_log_timestamp: int = 0, kraft_version: int = 0,
                          voters: codec.Value | None = None, clock: Clock = wall_clock_ms,
                          max_batch_bytes: int = MAX_BATCH_BYTES) -> Iterator[bytes]:
    """The batches of a snapshot/bootstrap file, streamed. Items of ``records`` that are
    sequences are appended as one group (kept in one batch)."""
    builder = BatchFileBuilder(epoch=epoch, last_contained_log_timestamp=last_contained_log_timestamp,
                               kraft_version=kraft_version, voters=voters, clock=clock,
                               max_batch_bytes=max_batch_bytes)
    yield from builder.drain()
    for group in _grouped(records):
        builder.append(group)
        yield from builder.drain()
    builder.finish()
    yield from builder.drain()


def write_snapshot_file(directory: Path, snapshot_id: SnapshotId, batches: Iterable[bytes]) -> Path:
    """Write already-built snapshot batches as ``<id>.checkpoint`` via ``.checkpoint.part``."""
    directory = Path(directory)
    final = directory / snapshot_id.file_name
    if final.exists():
        raise StorageError(f"snapshot {final} already exists")
    part = directory / (final.name[:-len(SNAPSHOT_SUFFIX)] + PARTIAL_SUFFIX)
    try:
        size = write_and_sync(part, batches, exclusive=True)
        atomic_rename(part, final)
    except BaseException:
        with contextlib.suppress(OSError):
            part.unlink()
        raise
    log.info("wrote snapshot %s (%d bytes)", final, size)
    return final


def write_snapshot(directory: Path, snapshot_id: SnapshotId,
                   records: Iterable[MetadataRecord | bytes | Sequence[MetadataRecord | bytes]], *,
                   last_contained_log_timestamp: int, kraft_version: int = 0,
                   voters: codec.Value | None = None,
                   clock: Clock = wall_clock_ms, max_batch_bytes: int = MAX_BATCH_BYTES) -> Path:
    """Write a KRaft snapshot of ``records`` like RecordsSnapshotWriter, crash-safely."""
    return write_snapshot_file(directory, snapshot_id, snapshot_file_batches(
        records, epoch=snapshot_id.epoch, last_contained_log_timestamp=last_contained_log_timestamp,
        kraft_version=kraft_version, voters=voters, clock=clock, max_batch_bytes=max_batch_bytes))


def write_bootstrap(directory: Path, records: Iterable[MetadataRecord | bytes], *,
                    clock: Clock = wall_clock_ms) -> Path:
    """Write ``bootstrap.checkpoint`` like BootstrapDirectory.writeBinaryFile (via ``.tmp``)."""
    directory = Path(directory)
    final = directory / BOOTSTRAP_FILE
    tmp = directory / (BOOTSTRAP_FILE + ".tmp")
    with translate_os_errors(tmp, "delete"):
        tmp.unlink(missing_ok=True)
    try:
        write_and_sync(tmp, snapshot_file_batches(records, clock=clock), exclusive=True)
        atomic_rename(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return final


# ---------------------------------------------------------------------- the directory

@dataclass(frozen=True, slots=True)
class MetadataLogDir:
    """A ``__cluster_metadata-0`` directory: segments, snapshots, quorum state."""

    path: Path

    def segments(self) -> list[Segment]:
        return list_segments(self.path)

    def snapshots(self) -> list[SnapshotFile]:
        return list_snapshots(self.path)

    def latest_snapshot(self) -> SnapshotFile | None:
        return latest_snapshot(self.path)

    def quorum_state(self) -> QuorumState | None:
        qs = self.path / QUORUM_STATE_FILE
        return read_quorum_state(qs) if qs.exists() else None

    def log_batches(self, from_offset: int = 0) -> Iterator[MetadataBatch]:
        """The log's batches from ``from_offset`` on, across segments, in offset order."""
        segs = self.segments()
        for i, seg in enumerate(segs):
            if i + 1 < len(segs) and segs[i + 1].base_offset <= from_offset:
                continue
            yield from iter_metadata_batches(seg.log_path, min_offset=from_offset)

    def replay_batches(self) -> tuple[SnapshotFile | None, Iterator[MetadataBatch]]:
        """What a loader replays: the latest snapshot's batches, then the log after its end offset."""
        snap = self.latest_snapshot()
        start = 0 if snap is None else snap.snapshot_id.end_offset

        def gen() -> Iterator[MetadataBatch]:
            if snap is not None:
                yield from iter_snapshot_batches(snap.path)
            yield from self.log_batches(start)

        return snap, gen()


def describe_entry(entry: LogEntry) -> dict[str, Any]:
    """A small JSON-able description of an entry (for logs and tools)."""
    rec = entry.record
    if isinstance(rec, ControlRecord):
        return {"offset": entry.offset, "control": rec.type.name, "value": rec.value}
    return {"offset": entry.offset, "type": rec.spec.name, "version": rec.version}
