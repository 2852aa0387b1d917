"""Rewrite segments that hold message format v0/v1 as v2 (KIP-724's "future work"), safely.

The unit of work is one topic-partition directory (so a retried Spark task, or a re-run after a
crash, first finishes or rolls back an interrupted swap of that directory with
:func:`~kraftwerk.storage.replace.recover_replacements`, then continues). Within it, each segment
holding any v0/v1 batch is rewritten on its own:

1. every batch goes through :func:`kraftwerk.records.upconvert_batch` (Kafka 4.0's cleaner rules:
   one v2 batch per shallow v0/v1 message, same codec, same absolute offsets; v2 batches copied),
   streamed into ``<base>.log.cleaned`` with rebuilt indexes (a ``.txnindex`` is copied: it holds
   offsets only, which do not change);
2. the new file is read back and verified against the old one: the same (offset, timestamp, key,
   value, headers) sequence, only magic-2 batches, every CRC valid. The old segment is decoded once:
   while converting (every source CRC checked), its content goes into a BLAKE2b ledger
   (:class:`~kraftwerk.records.digest.ContentDigest`) that the read-back must reproduce (copied v2
   batches as raw bytes, converted ones record by record, decoded independently of the conversion by
   :func:`~kraftwerk.records.digest.digest_v2_batches`); only on a mismatch is it compared pairwise,
   to name the first difference;
3. only then the swap protocol of :mod:`kraftwerk.storage.replace` puts it in place.

Segments with only v2 batches are never touched, so a second run changes nothing. Segments with a
corrupt batch or a torn tail are reported and left alone (recover the partition first). With an
output directory instead of ``in_place``, converted segments are written there and the source is
only read. Callers must hold the log dir's lock for in-place work (:func:`upconvert_log_dirs` does).
"""

from __future__ import annotations

import enum
import itertools
import logging
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c

from kraftwerk.records.batch import Record, RecordBatch, iter_spans
from kraftwerk.records.convert import upconvert_legacy
from kraftwerk.records.digest import ContentDigest, digest_v2_batches
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.types import MAGIC_V2, RECORD_BATCH_OVERHEAD, CompressionType
from kraftwerk.storage.errors import LogDirLockedError, StorageError
from kraftwerk.storage.fileio import atomic_write, read_bytes, translate_os_errors
from kraftwerk.storage.index import BatchSummary
from kraftwerk.storage.lock import LogDirLock, lock_holder
from kraftwerk.storage.replace import ReplaceHook, SegmentReplacement, recover_replacements
from kraftwerk.storage.segment import (
    Segment,
    SegmentReader,
    list_segments,
    parse_partition_dir_name,
    write_indexes,
)
from kraftwerk.storage.segment_splits import ScanError, partition_dirs

log = logging.getLogger(__name__)


class UpconvertError(StorageError):
    """A conversion that cannot be done or whose result does not match its input."""


class VerificationError(UpconvertError):
    """The rewritten segment does not read back as the same records as the original."""


class SourceCorruptError(UpconvertError):
    """The segment being converted has a bad CRC or an unreadable batch: it is left alone."""


class Status(enum.Enum):
    """What happened to one segment (or, for ``LOCKED``/``MISSING``, to a whole log dir)."""

    CONVERTED = "converted"
    WOULD_CONVERT = "would-convert"  # dry run
    UNCHANGED = "unchanged"  # v2 only: not touched
    CORRUPT = "corrupt"  # unreadable batches: left alone
    FAILED = "failed"  # conversion or verification failed: left alone
    LOCKED = "locked"  # a broker holds the log dir
    MISSING = "missing"  # the log dir does not exist

    @property
    def is_problem(self) -> bool:
        return self in (Status.CORRUPT, Status.FAILED, Status.LOCKED, Status.MISSING)


@dataclass(frozen=True, slots=True)
class SegmentOutcome:
    """The result for one segment (``base_offset`` -1 and empty topic for a log-dir-level outcome)."""

    log_dir: str
    topic: str
    partition: int
    base_offset: int
    status: Status
    batches: int = 0
    legacy_batches: int = 0
    records: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    message: str = ""

    def to_json(self) -> dict[str, object]:
        return {"logDir": self.log_dir, "topic": self.topic, "partition": self.partition,
                "baseOffset": self.base_offset, "status": self.status.value, "batches": self.batches,
                "legacyBatches": self.legacy_batches, "records": self.records,
                "inputBytes": self.input_bytes, "outputBytes": self.output_bytes, "message": self.message}


@dataclass(frozen=True, slots=True)
class SegmentCensus:
    """Header-only facts of a segment: how many batches, how many v0/v1, where reading stopped."""

    batches: int
    legacy_batches: int
    size: int
    problem: str | None


def census(log_path: Path) -> SegmentCensus:
    """Count batches and v0/v1 batches from the framing alone (no batch objects, no CRCs: the
    verification checks the CRCs of every segment it converts)."""
    with SegmentReader(log_path) as reader:
        batches = legacy = end = 0
        problem = None
        try:
            for pos, size, magic in iter_spans(reader.data):
                batches += 1
                legacy += magic < MAGIC_V2
                end = pos + size
        except RecordsError as exc:
            problem = f"corrupt batch: {exc}"
        if problem is None and end != reader.size:
            problem = f"truncated batch at byte {end} ({reader.size - end} bytes)"
        return SegmentCensus(batches, legacy, reader.size, problem)


#: converted batches are written in chunks of about this size (one write call per chunk)
WRITE_CHUNK = 1024 * 1024
_V2_HEAD = struct.Struct(">qiibIhiqqqhii")
_COUNT = struct.Struct(">i")


class ConversionLedger:
    """What the conversion read from the old segment, to verify the new one without decoding the old
    one twice: the digest of its content and, per batch, one bit saying "copied v2" (memory: one bit
    per batch)."""

    def __init__(self) -> None:
        self.digest = ContentDigest()
        self.copied = bytearray()
        self.batches = 0

    def add(self, copied: bool) -> None:
        i = self.batches
        self.batches = i + 1
        if copied:
            short = (i >> 3) + 1 - len(self.copied)
            if short > 0:
                self.copied += bytes(short)
            self.copied[i >> 3] |= 1 << (i & 7)

    def was_copied(self, i: int) -> bool:
        return i >> 3 < len(self.copied) and bool(self.copied[i >> 3] & (1 << (i & 7)))


def converted_chunks(reader: SegmentReader, ledger: ConversionLedger | None = None) -> Iterator[bytes]:
    """The segment's batches as v2 bytes in ~1 MiB chunks (memory bounded by a chunk or a batch).

    Every old batch's CRC is checked (a bad one raises :class:`SourceCorruptError`); with a
    ``ledger`` the old content is digested on the way for :func:`verify_with_ledger`. Batches are
    framed with :func:`~kraftwerk.records.batch.iter_spans` and v0/v1 ones converted by
    :func:`~kraftwerk.records.convert.upconvert_legacy` without building batch objects.
    """
    mv = reader.data
    digest = None if ledger is None else ledger.digest
    max_size = reader.max_decompressed_size
    unpack = _V2_HEAD.unpack_from
    buf = bytearray()
    try:
        for pos, size, magic in iter_spans(mv):
            if magic >= MAGIC_V2:
                if size < RECORD_BATCH_OVERHEAD:
                    raise SourceCorruptError(f"{reader.path}: batch at byte {pos} is too short for v2")
                stored_crc = unpack(mv, pos)[4]
                raw = mv[pos:pos + size]
                if crc32c(raw[21:]) != stored_crc:
                    raise SourceCorruptError(f"{reader.path}: batch at byte {pos} has a bad CRC")
                buf += raw
                if ledger is not None:
                    ledger.digest.raw(raw, _COUNT.unpack_from(mv, pos + 57)[0])
                    ledger.add(True)
            else:
                buf += upconvert_legacy(mv, pos, size, magic, digest, max_decompressed_size=max_size)
                if ledger is not None:
                    ledger.add(False)
            if len(buf) >= WRITE_CHUNK:
                yield bytes(buf)
                buf.clear()
    except RecordsError as exc:
        raise SourceCorruptError(f"{reader.path}: {exc}") from exc
    if buf:
        yield bytes(buf)


@dataclass(frozen=True, slots=True)
class Verified:
    """A converted segment that read back as what was converted: its record count, and its batches'
    summaries for building the indexes without reading the file again."""

    records: int
    batches: list[BatchSummary]


def verify_with_ledger(old_path: Path, new_path: Path, ledger: ConversionLedger) -> Verified:
    """Read ``new_path`` back (CRCs checked, magic 2 only) and compare its content with what the
    conversion read from ``old_path``; on a difference, :func:`verify_converted` names where."""
    digest = ContentDigest()
    summaries: list[tuple[int, int, int, int]] = []
    try:
        with SegmentReader(new_path) as new:
            count, end = digest_v2_batches(new.data, digest, ledger.copied,
                                           max_decompressed_size=new.max_decompressed_size,
                                           summaries=summaries)
            if end != new.size:
                raise VerificationError(f"{new_path}: unreadable batch at byte {end}: "
                                        f"{new.size - end} trailing bytes")
    except RecordsError as exc:
        raise VerificationError(f"verifying {new_path}: {exc}") from exc
    if count != ledger.batches or digest.digest() != ledger.digest.digest():
        verify_converted(old_path, new_path)  # names the first difference
        raise VerificationError(f"{new_path} does not hold the records of {old_path}")
    return Verified(digest.record_count, [BatchSummary(*s) for s in summaries])


def _legacy_view(b: RecordBatch) -> list[Record]:
    """What a consumer reads from one v0/v1 batch (an uncompressed message without object churn)."""
    if b.compression is CompressionType.NONE:
        key, value = b.legacy_key_value()
        return [Record(b.last_offset, b.max_timestamp, key, value, ())]
    return list(b.records())


def verify_converted(old_path: Path, new_path: Path) -> int:
    """Check that ``new_path`` holds exactly the records of ``old_path``, all in v2 batches.

    Conversion maps batches one to one, so they are compared pairwise: a v2 batch must be copied
    byte for byte, a v0/v1 batch must decode to the same (offset, timestamp, key, value, headers)
    as its v2 replacement, whose CRC is checked. Returns the record count; raises
    :class:`VerificationError` naming the first difference.
    """
    with SegmentReader(old_path) as old, SegmentReader(new_path) as new:
        new_scanner = new.scanner(validate=True)
        count = 0

        def old_batches() -> Iterator[RecordBatch]:
            try:
                yield from old.batches(validate=True)
            except (RecordsError, StorageError) as exc:
                raise SourceCorruptError(str(exc)) from exc

        try:
            for a, b in itertools.zip_longest(old_batches(), new_scanner):
                if a is None or b is None:
                    raise VerificationError(
                        f"{new_path}: {'extra' if a is None else 'missing'} batch "
                        f"(offset {(b if a is None else a).last_offset}) compared with {old_path}")
                if b.magic != MAGIC_V2:
                    raise VerificationError(f"{new_path}: batch at byte {b.position} has magic {b.magic}")
                if a.magic == MAGIC_V2:
                    if a.raw != b.raw:
                        raise VerificationError(f"{new_path}: v2 batch at offset {a.base_offset} was not "
                                                f"copied unchanged from {old_path}")
                    count += a.record_count
                    continue
                try:
                    expected = _legacy_view(a)
                except RecordsError as exc:
                    raise SourceCorruptError(f"{old_path}: {exc}") from exc
                got = list(b.records())
                if got != expected:
                    first = next((x for x, y in zip(expected, got, strict=False) if x != y),
                                 expected[-1] if expected else None)
                    raise VerificationError(f"{new_path}: record at offset "
                                            f"{first.offset if first else '?'} differs from {old_path}")
                count += len(got)
        except (RecordsError, StorageError) as exc:
            if isinstance(exc, VerificationError | SourceCorruptError):
                raise
            raise VerificationError(f"verifying {new_path} against {old_path}: {exc}") from exc
        if new_scanner.tail is not None:
            raise VerificationError(f"{new_path}: unreadable batch at byte {new_scanner.tail.position}: "
                                    f"{new_scanner.tail.message}")
        return count


def _read_txn_index(seg: Segment) -> bytes | None:
    """The segment's transaction index (aborted transactions: the log cannot rebuild it), if any."""
    return read_bytes(seg.txn_index_path) if seg.txn_index_path.exists() else None


def _outcome(log_dir: Path, topic: str, partition: int, base: int, status: Status, c: SegmentCensus | None,
             *, records: int = 0, output_bytes: int = 0, message: str = "") -> SegmentOutcome:
    batches = 0 if c is None else c.batches
    legacy = 0 if c is None else c.legacy_batches
    size = 0 if c is None else c.size
    return SegmentOutcome(str(log_dir), topic, partition, base, status, batches, legacy, records, size,
                          output_bytes, message)


def upconvert_partition(partition_dir: Path, *, in_place: bool = False, out_dir: Path | None = None,
                        dry_run: bool = False, hook: ReplaceHook | None = None) -> list[SegmentOutcome]:
    """Convert the segments of one topic-partition directory; one outcome per segment.

    ``in_place`` swaps converted segments in (crash-safe); otherwise they are written under
    ``out_dir/<partition dir name>/``. ``hook`` is the swap protocol's crash-injection hook.
    """
    partition_dir = Path(partition_dir)
    log_dir = partition_dir.parent
    parsed = parse_partition_dir_name(partition_dir.name)
    if parsed is None:
        raise UpconvertError(f"{partition_dir} is not a topic-partition directory")
    topic, partition = parsed.topic, parsed.partition
    if not in_place and out_dir is None and not dry_run:
        raise UpconvertError("either in_place or an output directory is required")
    if in_place and not dry_run:
        recovered = recover_replacements(partition_dir)
        if recovered.touched:
            log.warning("%s: finished an interrupted replacement first (%s)", partition_dir, recovered)
    outcomes: list[SegmentOutcome] = []
    for seg in list_segments(partition_dir):
        try:
            c = census(seg.log_path)
        except StorageError as exc:
            outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, Status.CORRUPT, None,
                                     message=str(exc)))
            continue
        if c.legacy_batches == 0 and c.problem is None:
            outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, Status.UNCHANGED, c))
            continue
        if c.problem is not None:
            outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, Status.CORRUPT, c,
                                     message=f"{seg.log_path}: {c.problem}"))
            continue
        if dry_run:
            outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, Status.WOULD_CONVERT, c))
            continue
        try:
            if in_place:
                out_bytes, records = _convert_in_place(seg, hook)
            else:
                assert out_dir is not None
                out_bytes, records = _convert_to(seg, Path(out_dir) / partition_dir.name)
        except (RecordsError, UpconvertError, StorageError) as exc:
            if isinstance(exc, LogDirLockedError):
                raise
            # a batch of the source that cannot be read (bad CRC, undecodable wrapper) is corruption;
            # anything else (a verification mismatch, I/O) is a failure of this run
            corrupt = isinstance(exc, SourceCorruptError | RecordsError)
            status = Status.CORRUPT if corrupt else Status.FAILED
            log.error("%s: not converted: %s", seg.log_path, exc)
            outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, status, c,
                                     message=str(exc)))
            continue
        outcomes.append(_outcome(log_dir, topic, partition, seg.base_offset, Status.CONVERTED, c,
                                 records=records, output_bytes=out_bytes))
    return outcomes


def _convert_in_place(seg: Segment, hook: ReplaceHook | None) -> tuple[int, int]:
    rep = SegmentReplacement(seg.directory, hook=hook)
    verified: list[Verified] = []

    def check(cleaned: Path) -> list[BatchSummary]:
        verified.append(verify_with_ledger(seg.log_path, cleaned, ledger))
        return verified[-1].batches

    try:
        txn_index = _read_txn_index(seg)
        with SegmentReader(seg.log_path) as reader:
            ledger = ConversionLedger()
            cleaned = rep.add_segment(seg.base_offset, converted_chunks(reader, ledger), check=check,
                                      txn_index=txn_index)
        size = cleaned.stat().st_size
    except BaseException:
        rep.abort()
        raise
    rep.commit([seg.base_offset])
    return size, verified[0].records


def _convert_to(seg: Segment, target_dir: Path) -> tuple[int, int]:
    with translate_os_errors(target_dir, "create"):
        target_dir.mkdir(parents=True, exist_ok=True)
    out = Segment(target_dir, seg.base_offset)
    with SegmentReader(seg.log_path) as reader:
        ledger = ConversionLedger()
        atomic_write(out.log_path, converted_chunks(reader, ledger))
    try:
        verified = verify_with_ledger(seg.log_path, out.log_path, ledger)
    except UpconvertError:
        for p in out.paths():
            p.unlink(missing_ok=True)
        raise
    write_indexes(out, summaries=verified.batches)
    txn_index = _read_txn_index(seg)
    if txn_index is not None:
        atomic_write(out.txn_index_path, txn_index)
    return out.log_path.stat().st_size, verified.records


# ---------------------------------------------------------------------- log dirs

def out_names(log_dirs: Sequence[Path]) -> list[str]:
    """Distinct directory names for the log dirs' output trees (``<i>-<name>`` on a clash)."""
    names = [Path(d).resolve().name or "root" for d in log_dirs]
    clash = {n for n in names if names.count(n) > 1}
    return [f"{i}-{n}" if n in clash else n for i, n in enumerate(names)]


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One topic-partition directory to convert, and where its output goes (when not in place)."""

    partition_dir: str
    out_dir: str | None


def plan_work(log_dirs: Sequence[Path], out_dir: Path | None
              ) -> tuple[list[WorkItem], list[SegmentOutcome]]:
    """The partition dirs of every existing log dir; a ``MISSING`` outcome for the others."""
    items: list[WorkItem] = []
    problems: list[SegmentOutcome] = []
    for log_dir, name in zip(log_dirs, out_names(log_dirs), strict=True):
        try:
            dirs = partition_dirs(log_dir)
        except ScanError as exc:
            problems.append(SegmentOutcome(str(log_dir), "", -1, -1, Status.MISSING, message=str(exc)))
            continue
        target = None if out_dir is None else str(Path(out_dir) / name)
        items += [WorkItem(str(d), target) for d in dirs]
    return items, problems


class LogDirLocks:
    """Hold the ``.lock`` of every log dir that is free; the others are reported as ``LOCKED``."""

    def __init__(self, log_dirs: Sequence[Path], *, probe_only: bool = False) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self.probe_only = probe_only  # dry runs only look (and create no .lock file)
        self._held: list[LogDirLock] = []
        self.locked: list[SegmentOutcome] = []

    def __enter__(self) -> LogDirLocks:
        for d in self.log_dirs:
            if not d.is_dir():
                continue
            if self.probe_only:
                holder = lock_holder(d)
                if holder is not None:
                    who = f" by process {holder.pid}" if holder.pid else ""
                    message = f"{d}/.lock is held{who}: a broker may be running"
                    self.locked.append(SegmentOutcome(str(d), "", -1, -1, Status.LOCKED, message=message))
                continue
            lock = LogDirLock(d)
            try:
                lock.acquire()
            except LogDirLockedError as exc:
                self.locked.append(SegmentOutcome(str(d), "", -1, -1, Status.LOCKED, message=str(exc)))
                continue
            self._held.append(lock)
        return self

    @property
    def locked_dirs(self) -> set[str]:
        return {o.log_dir for o in self.locked}

    def __exit__(self, *exc: object) -> None:
        for lock in self._held:
            lock.release()
        self._held.clear()


def run_work_item(item: WorkItem, *, in_place: bool, dry_run: bool,
                  hook: ReplaceHook | None = None) -> list[SegmentOutcome]:
    """Convert one partition dir, turning any storage failure into a ``FAILED`` outcome."""
    pdir = Path(item.partition_dir)
    try:
        return upconvert_partition(pdir, in_place=in_place, dry_run=dry_run, hook=hook,
                                   out_dir=None if item.out_dir is None else Path(item.out_dir))
    except StorageError as exc:
        parsed = parse_partition_dir_name(pdir.name)
        return [SegmentOutcome(str(pdir.parent), parsed.topic if parsed else pdir.name,
                               parsed.partition if parsed else -1, -1, Status.FAILED, message=str(exc))]


def upconvert_log_dirs(log_dirs: Sequence[Path], *, in_place: bool = False, out_dir: Path | None = None,
                       dry_run: bool = False, hook: ReplaceHook | None = None,
                       progress: Callable[[int, int], None] | None = None) -> list[SegmentOutcome]:
    """The single-process up-conversion of whole log dirs (the Spark job runs the same work items)."""
    log_dirs = [Path(d) for d in log_dirs]
    items, outcomes = plan_work(log_dirs, out_dir)
    with LogDirLocks(log_dirs if in_place else [], probe_only=dry_run) as locks:
        outcomes += locks.locked
        skip = locks.locked_dirs
        for done, item in enumerate(items, 1):
            if str(Path(item.partition_dir).parent) not in skip:
                outcomes += run_work_item(item, in_place=in_place, dry_run=dry_run, hook=hook)
            if progress is not None:
                progress(done, len(items))
    return outcomes


__all__ = [
    "LogDirLocks",
    "SegmentCensus",
    "SegmentOutcome",
    "SourceCorruptError",
    "Status",
    "UpconvertError",
    "VerificationError",
    "Verified",
    "WorkItem",
    "census",
    "converted_chunks",
    "out_names",
    "plan_work",
    "run_work_item",
    "upconvert_log_dirs",
    "upconvert_partition",
    "verify_converted",
    "verify_with_ledger",
]
