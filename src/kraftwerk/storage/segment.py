"""Log segments on disk: file names, streaming batch reads, index building and checks.

A segment is ``%020d.log`` plus ``.index``, ``.timeindex`` (and maybe ``.txnindex``) named by its
base offset, inside a partition directory ``<topic>-<partition>``. Reading memory-maps the log
(an empty file reads as no bytes), so a scan touches pages as it goes and memory use does not grow
with the file; batches are the records layer's zero-copy ``RecordBatch`` views, valid while the
:class:`SegmentReader` is open. This module is the storage layer's one coupling to record framing.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kraftwerk.records.batch import RecordBatch
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.recovery import BatchScanner, Tail, TailReason
from kraftwerk.records.types import DEFAULT_MAX_DECOMPRESSED_SIZE
from kraftwerk.storage.errors import CorruptFileError, StorageError
from kraftwerk.storage.fileio import atomic_write, io_error, read_bytes, translate_os_errors
from kraftwerk.storage.index import (
    DEFAULT_INDEX_INTERVAL_BYTES,
    BatchSummary,
    IndexProblem,
    OffsetIndexEntry,
    TimeIndexEntry,
    build_indexes,
    format_offset_index,
    format_time_index,
    parse_offset_index,
    parse_time_index,
    verify_offset_index,
    verify_time_index,
)

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
_INT32_MAX = (1 << 31) - 1
#: a scan drops the mapped pages behind it every this many bytes (page cache keeps them; RSS stays flat)
RELEASE_INTERVAL_BYTES = 16 * 1024 * 1024
_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")
_PARTITION_DIR = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d+)(?:\.(?P<tag>[0-9a-z]+)-(?P<kind>delete|future|stray))?$")


def file_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    """``%020d`` + suffix, Kafka's LogFileUtils.filenamePrefixFromOffset."""
    if base_offset < 0:
        raise ValueError(f"negative base offset {base_offset}")
    return f"{base_offset:020d}{suffix}"


def parse_segment_file_name(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) of a segment file name, or ``None`` for any other file."""
    m = _SEGMENT_FILE.match(name)
    return None if m is None else (int(m.group(1)), m.group(2))


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    """A parsed partition directory name; ``kind`` is set for ``-delete``/``-future``/``-stray`` dirs."""

    topic: str
    partition: int
    kind: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_dir_name(name: str) -> PartitionDirName | None:
    """Split ``<topic>-<partition>`` (the topic may itself contain dashes), or ``None``."""
    m = _PARTITION_DIR.match(name)
    if m is None or not m.group("topic"):
        return None
    return PartitionDirName(m.group("topic"), int(m.group("partition")), m.group("kind"))


@dataclass(frozen=True, slots=True)
class Segment:
    """A segment's files in a partition directory (they need not all exist)."""

    directory: Path
    base_offset: int

    @property
    def log_path(self) -> Path:
        return self.directory / file_name(self.base_offset, LOG_SUFFIX)

    @property
    def index_path(self) -> Path:
        return self.directory / file_name(self.base_offset, INDEX_SUFFIX)

    @property
    def time_index_path(self) -> Path:
        return self.directory / file_name(self.base_offset, TIME_INDEX_SUFFIX)

    @property
    def txn_index_path(self) -> Path:
        return self.directory / file_name(self.base_offset, TXN_INDEX_SUFFIX)

    def paths(self) -> tuple[Path, ...]:
        return tuple(self.directory / file_name(self.base_offset, s) for s in SEGMENT_SUFFIXES)

    def size(self) -> int:
        with translate_os_errors(self.log_path, "stat"):
            return self.log_path.stat().st_size

    def open(self, **kwargs: int) -> SegmentReader:
        return SegmentReader(self.log_path, **kwargs)


def list_segments(directory: Path) -> list[Segment]:
    """The segments of a partition directory (every ``%020d.log``), by base offset."""
    directory = Path(directory)
    with translate_os_errors(directory, "list"):
        names = os.listdir(directory)
    bases = sorted({p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX})
    return [Segment(directory, b) for b in bases]


def base_offset_of(path: Path) -> int:
    """The base offset a segment or index file's name declares (0 for unrecognised names)."""
    parsed = parse_segment_file_name(Path(path).name)
    return 0 if parsed is None else parsed[0]


@dataclass(frozen=True, slots=True)
class SegmentScan:
    """Where the valid batches of a segment end, why they stop, and what they hold."""

    path: Path
    base_offset: int
    size: int
    valid_bytes: int
    batch_count: int
    next_offset: int | None  # last offset + 1 of the last valid batch; None when there is none
    tail: Tail | None

    @property
    def truncated_bytes(self) -> int:
        return self.size - self.valid_bytes


class SegmentReader:
    """A memory-mapped ``.log`` file read as record batches (a context manager).

    ``batches()`` raises :class:`CorruptFileError` at the first bad batch (naming the position);
    ``scan()`` never raises for bad content and reports the valid prefix instead (recovery).
    """

    def __init__(self, path: Path, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        self.path = Path(path)
        self.base_offset = base_offset_of(self.path)
        self.max_decompressed_size = max_decompressed_size
        self._file: int | None = None
        self._map: mmap.mmap | None = None
        self._view: memoryview | None = None
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError as exc:
            raise io_error(exc, self.path, "open") from exc
        self._file = fd
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):  # os.open accepts a directory; mmap would say "No such device"
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
            size = st.st_size
            if size:
                self._map = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
                self._view = memoryview(self._map)
            else:
                self._view = memoryview(b"")
        except OSError as exc:
            self.close()
            raise io_error(exc, self.path, "map") from exc

    @property
    def data(self) -> memoryview:
        if self._view is None:
            raise StorageError(f"{self.path} is closed")
        return self._view

    @property
    def size(self) -> int:
        return len(self.data)

    def scanner(self, start: int = 0, *, validate: bool = True, deep: bool = False,
                end: int | None = None) -> BatchScanner:
        return BatchScanner(self.data, start, end, validate=validate, deep=deep,
                            max_decompressed_size=self.max_decompressed_size)

    def stream(self, batches: Iterable[RecordBatch]) -> Iterator[RecordBatch]:
        """Iterate ``batches`` (in file order, from this reader) releasing the mapped pages behind them.

        Touched pages of a file mapping count towards the process's resident memory until unmapped,
        so a plain scan of a 1 GiB segment ends with 1 GiB resident. Every
        ``RELEASE_INTERVAL_BYTES`` this drops the pages before the current batch from the mapping
        (``MADV_DONTNEED``; the data stays in the page cache and earlier batch views stay valid,
        they just fault the page back in if read again).
        """
        released = 0
        for batch in batches:
            yield batch
            if batch.position - released >= RELEASE_INTERVAL_BYTES:
                released = self.release(released, batch.position)

    def release(self, start: int, upto: int) -> int:
        """Drop the mapped pages between ``start`` and ``upto`` (both rounded down to a page) from
        this process: they stay in the page cache, and a later read of them faults them back in
        (``MADV_DONTNEED``). Returns where the released range ends, for the next call."""
        start -= start % mmap.PAGESIZE
        upto -= upto % mmap.PAGESIZE
        mapping = self._map
        if mapping is None or upto <= start or not hasattr(mmap, "MADV_DONTNEED"):
            return upto
        try:
            mapping.madvise(mmap.MADV_DONTNEED, start, upto - start)
        except (OSError, ValueError) as exc:  # the map was closed under us, or no support
            log.debug("%s: cannot release mapped pages: %s", self.path, exc)
        return upto

    def batches(self, start: int = 0, *, validate: bool = True, deep: bool = False) -> Iterator[RecordBatch]:
        """Every batch from ``start``; a partial batch at the very end is ignored like Kafka's readers,
        anything else wrong raises :class:`CorruptFileError`."""
        scanner = self.scanner(start, validate=validate, deep=deep)
        yield from self.stream(scanner)
        tail = scanner.tail
        if tail is not None and tail.reason is not TailReason.TRUNCATED:
            raise CorruptFileError(self.path, tail.message, position=tail.position)
        if tail is not None:
            log.debug("%s: ignoring %d bytes of a partial batch at %d", self.path, tail.length, tail.position)

    def scan(self, *, deep: bool = False) -> SegmentScan:
        """Kafka's segment recovery check: CRCs valid and offsets within int32 of the base offset;
        stricter than Kafka, offsets must also increase from batch to batch."""
        scanner = self.scanner(validate=True, deep=deep)
        count = 0
        next_offset: int | None = None
        tail: Tail | None = None
        valid = 0
        for batch in self.stream(scanner):
            bad = _offset_problem(batch, self.base_offset)
            if bad is None and next_offset is not None and batch.base_offset < next_offset:
                bad = (f"batch base offset {batch.base_offset} is below the previous batch's next "
                       f"offset {next_offset}")
            if bad is not None:
                tail = Tail(batch.position, self.size - batch.position, TailReason.CORRUPT, bad)
                break
            count += 1
            valid = batch.position + batch.size
            next_offset = batch.last_offset + 1
        else:
            tail = scanner.tail
            valid = scanner.valid_end
        return SegmentScan(self.path, self.base_offset, self.size, valid, count, next_offset, tail)

    def summaries(self) -> list[BatchSummary]:
        """Position, size, last offset and max timestamp of each valid batch (for index work)."""
        return list(self.iter_summaries())

    def iter_summaries(self) -> Iterator[BatchSummary]:
        """``summaries()`` streamed: one small value per batch, pages released as the scan goes."""
        for b in self.stream(self.scanner(validate=False)):
            yield BatchSummary(b.position, b.size, b.last_offset, b.max_timestamp)

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a caller still holds a batch view; the map goes when it does
                log.debug("%s: batch views still alive, leaving the mapping to the GC", self.path)
            self._map = None
        if self._file is not None:
            os.close(self._file)
            self._file = None

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _offset_problem(batch: RecordBatch, base_offset: int) -> str | None:
    """Kafka's ensureOffsetInRange: the batch's offsets must fit the segment's int32 index."""
    try:
        first, last = batch.base_offset, batch.last_offset
    except RecordsError as exc:  # a v0/v1 wrapper whose payload does not decompress
        return f"cannot read the batch's offsets: {exc}"
    if last - base_offset > _INT32_MAX or last < base_offset or first < base_offset:
        return (f"batch offsets {first}..{last} are outside the range of segment base offset "
                f"{base_offset}")
    return None


@contextlib.contextmanager
def map_file(path: Path) -> Iterator[memoryview]:
    """Any file's bytes memory-mapped read-only for the duration of a ``with`` (indexes, snapshots);
    an empty file is an empty view, an unreadable one a :class:`StorageIOError` naming it."""
    with SegmentReader(path) as reader:
        yield reader.data


def iter_segment_batches(path: Path, *, validate: bool = True) -> Iterator[RecordBatch]:
    """Stream the batches of one ``.log`` file (the mapping closes when the iterator finishes)."""
    with SegmentReader(path) as reader:
        yield from reader.batches(validate=validate)


# ---------------------------------------------------------------------- indexes

@dataclass(frozen=True, slots=True)
class SegmentIndexes:
    offsets: tuple[OffsetIndexEntry, ...]
    times: tuple[TimeIndexEntry, ...]


def compute_indexes(log_path: Path, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    summaries: Iterable[BatchSummary] | None = None) -> SegmentIndexes:
    """The index entries Kafka would rebuild for this segment's valid batches (from ``summaries``
    of them when the caller has just read the file anyway)."""
    if summaries is not None:
        offsets, times = build_indexes(summaries, index_interval_bytes)
    else:
        with SegmentReader(log_path) as reader:
            offsets, times = build_indexes(reader.iter_summaries(), index_interval_bytes)
    return SegmentIndexes(tuple(offsets), tuple(times))


def write_indexes(segment: Segment, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                  *, suffix: str = "", summaries: Iterable[BatchSummary] | None = None) -> SegmentIndexes:
    """Rebuild ``.index`` and ``.timeindex`` of a segment, crash-safely (``suffix``: e.g. ``.cleaned``)."""
    log_path = segment.log_path.with_name(segment.log_path.name + suffix)
    idx = compute_indexes(log_path, index_interval_bytes, summaries)
    atomic_write(segment.index_path.with_name(segment.index_path.name + suffix),
                 format_offset_index(idx.offsets, segment.base_offset))
    atomic_write(segment.time_index_path.with_name(segment.time_index_path.name + suffix),
                 format_time_index(idx.times, segment.base_offset))
    return idx


def read_offset_index(path: Path, base_offset: int | None = None) -> list[OffsetIndexEntry]:
    path = Path(path)
    return parse_offset_index(read_bytes(path), base_offset_of(path) if base_offset is None else base_offset,
                              path)


def read_time_index(path: Path, base_offset: int | None = None) -> list[TimeIndexEntry]:
    path = Path(path)
    return parse_time_index(read_bytes(path), base_offset_of(path) if base_offset is None else base_offset,
                            path)


def verify_indexes(segment: Segment) -> list[IndexProblem]:
    """``--verify-index-only``: check both indexes (those that exist) against the log's batches."""
    with SegmentReader(segment.log_path) as reader:
        batches = reader.summaries()
    problems: list[IndexProblem] = []
    if segment.index_path.exists():
        problems += verify_offset_index(segment.index_path, read_offset_index(segment.index_path), batches)
    if segment.time_index_path.exists():
        problems += verify_time_index(segment.time_index_path, read_time_index(segment.time_index_path),
                                      batches)
    return problems


def truncate_file(path: Path, size: int) -> None:
    """Cut a file to ``size`` bytes and fsync it (recovery of a torn tail)."""
    with translate_os_errors(path, "truncate"):
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)


def delete_segment_files(segment: Segment) -> list[Path]:
    """Remove every file of a segment; returns the paths that existed."""
    gone: list[Path] = []
    for p in segment.paths():
        with translate_os_errors(p, "delete"), contextlib.suppress(FileNotFoundError):
            p.unlink()
            gone.append(p)
    return gone
