"""A fleet scan's input: the segments of log dirs, large ones cut into splits at verified index entries.

Each offset-index entry names a batch start; a split is cut there only after checking that the entry
really points at a batch with that last offset, so a stale index cannot misplace a split.
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.records.types import LOG_OVERHEAD, MAGIC_V2
from kraftwerk.storage.errors import StorageError, StorageIOError
from kraftwerk.storage.fileio import translate_os_errors
from kraftwerk.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    file_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    read_offset_index,
)

log = logging.getLogger(__name__)

#: Segments larger than this are split into several input partitions at offset-index entries.
DEFAULT_MAX_SPLIT_BYTES = 128 * 1024 * 1024
_LAST_OFFSET_DELTA = struct.Struct(">i")
_BASE_OFFSET = struct.Struct(">q")


class ScanError(StorageError):
    """A scan that cannot start: no such log dir, or a path that is not a segment."""


# ---------------------------------------------------------------------- segments and splits

@dataclass(frozen=True, slots=True)
class SegmentFile:
    """One ``.log`` file located in its log dir and topic-partition."""

    log_dir: str
    topic: str
    partition: int
    base_offset: int
    path: str
    size: int

    @property
    def partition_dir(self) -> str:
        return os.path.dirname(self.path)


@dataclass(frozen=True, slots=True)
class SegmentSplit:
    """Bytes ``[start, end)`` of a segment: the batches that *start* in that range."""

    segment: SegmentFile
    start: int
    end: int


def locate_segment(path: str | Path, size: int | None = None) -> SegmentFile:
    """Where a ``.log`` file sits: ``<log dir>/<topic>-<partition>/<base offset>.log``."""
    p = Path(str(path).removeprefix("file:"))
    parsed = parse_segment_file_name(p.name)
    pdir = parse_partition_dir_name(p.parent.name)
    if parsed is None or parsed[1] != LOG_SUFFIX or pdir is None or pdir.kind is not None:
        raise ScanError(f"{p} is not a log segment inside a topic-partition directory")
    if size is None:
        with translate_os_errors(p, "stat"):
            size = p.stat().st_size
    return SegmentFile(str(p.parent.parent), pdir.topic, pdir.partition, parsed[0], str(p), size)


def partition_dirs(log_dir: str | Path) -> list[Path]:
    """The topic-partition directories of a log dir (``-delete``/``-future``/``-stray`` excluded)."""
    root = Path(log_dir)
    if not root.is_dir():
        raise ScanError(f"Log directory {root} does not exist or is not a directory")
    with translate_os_errors(root, "list"):
        names = sorted(os.listdir(root))
    out = []
    for name in names:
        parsed = parse_partition_dir_name(name)
        if parsed is not None and parsed.kind is None and (root / name).is_dir():
            out.append(root / name)
    return out


def discover_segments(log_dirs: Sequence[str | Path]) -> list[SegmentFile]:
    """Every segment of the given log dirs by a local directory walk (the no-Spark listing)."""
    out: list[SegmentFile] = []
    for log_dir in log_dirs:
        for pdir in partition_dirs(log_dir):
            with translate_os_errors(pdir, "list"):
                names = sorted(os.listdir(pdir))
            for name in names:
                parsed = parse_segment_file_name(name)
                if parsed is not None and parsed[1] == LOG_SUFFIX:
                    out.append(locate_segment(pdir / name))
    return out


def is_segment_path(path: str) -> bool:
    """True for ``.../<topic>-<n>/<20 digits>.log`` (used to filter a file listing)."""
    p = Path(path)
    parsed = parse_segment_file_name(p.name)
    pdir = parse_partition_dir_name(p.parent.name)
    return parsed is not None and parsed[1] == LOG_SUFFIX and pdir is not None and pdir.kind is None


def _last_offset_at(fd: int, position: int) -> int | None:
    """The last offset of the batch starting at ``position`` (header bytes only), or None."""
    try:
        head = os.pread(fd, 61, position)
    except OSError:
        return None
    if len(head) < LOG_OVERHEAD + 5:
        return None
    (base,) = _BASE_OFFSET.unpack_from(head, 0)
    magic = head[16]
    if magic == MAGIC_V2:
        if len(head) < 27:
            return None
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(head, 23)
        return int(base + delta)
    return int(base) if magic in (0, 1) else None


def plan_splits(segment: SegmentFile, max_split_bytes: int = DEFAULT_MAX_SPLIT_BYTES) -> list[SegmentSplit]:
    """One split per segment, or several cut at verified offset-index entries for a large one."""
    if max_split_bytes <= 0 or segment.size <= max_split_bytes:
        return [SegmentSplit(segment, 0, segment.size)]
    index_path = Path(segment.partition_dir) / file_name(segment.base_offset, INDEX_SUFFIX)
    try:
        entries = read_offset_index(index_path, segment.base_offset)
    except StorageError as exc:
        log.info("%s: no usable offset index (%s); reading the segment as one split", segment.path, exc)
        return [SegmentSplit(segment, 0, segment.size)]
    cuts: list[int] = []
    try:
        fd = os.open(segment.path, os.O_RDONLY)
    except OSError as exc:
        raise StorageIOError(f"cannot open {segment.path}: {exc.strerror}", segment.path) from exc
    try:
        last_cut = 0
        for e in entries:
            if e.position - last_cut >= max_split_bytes and e.position < segment.size:
                if _last_offset_at(fd, e.position) == e.offset:
                    cuts.append(e.position)
                    last_cut = e.position
                else:
                    log.warning("%s: index entry %d@%d does not match the log; not splitting there",
                                segment.path, e.offset, e.position)
    finally:
        os.close(fd)
    bounds = [0, *cuts, segment.size]
    return [SegmentSplit(segment, a, b) for a, b in itertools.pairwise(bounds)]
