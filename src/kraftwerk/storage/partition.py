"""A partition log directory as a whole: listing, and recovery of a torn tail.

After a crash the log is its longest valid prefix, as Kafka's LogLoader makes it when it recovers
unflushed segments: the first segment with a truncated or corrupt batch is cut just before that
batch (its indexes rebuilt), and every later segment is deleted. :func:`recover_log` also first
finishes or rolls back an interrupted segment replacement (see :mod:`kraftwerk.storage.replace`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.storage.index import DEFAULT_INDEX_INTERVAL_BYTES
from kraftwerk.storage.replace import ReplaceRecovery, recover_replacements
from kraftwerk.storage.segment import (
    Segment,
    SegmentReader,
    SegmentScan,
    delete_segment_files,
    list_segments,
    truncate_file,
    write_indexes,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DroppedSegment:
    """A whole segment removed because it followed the first invalid batch."""

    base_offset: int
    size: int
    paths: tuple[Path, ...]


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What recovery found and did (or, for a dry run, would do)."""

    directory: Path
    scans: tuple[SegmentScan, ...]
    truncated: SegmentScan | None  # the segment cut at its first invalid batch
    dropped_segments: tuple[DroppedSegment, ...]
    rebuilt_indexes: tuple[int, ...]
    replacement: ReplaceRecovery | None
    dry_run: bool

    @property
    def clean(self) -> bool:
        """True when the log was already its own valid prefix."""
        return self.truncated is None and not self.dropped_segments

    @property
    def dropped_bytes(self) -> int:
        cut = 0 if self.truncated is None else self.truncated.truncated_bytes
        return cut + sum(d.size for d in self.dropped_segments)

    @property
    def next_offset(self) -> int | None:
        """The log end offset after recovery (``None`` when no segment holds a batch)."""
        for scan in reversed(self.scans):
            if scan.next_offset is not None:
                return scan.next_offset
        return None


def scan_log(directory: Path, *, deep: bool = False) -> list[SegmentScan]:
    """Scan every segment (no changes): valid bytes and tail of each."""
    scans = []
    for seg in list_segments(directory):
        with SegmentReader(seg.log_path) as reader:
            scans.append(reader.scan(deep=deep))
    return scans


def recover_log(directory: Path, *, recovery_point: int = 0, deep: bool = False, dry_run: bool = False,
                index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> RecoveryReport:
    """Cut the partition log in ``directory`` to its longest valid prefix.

    Segments wholly below ``recovery_point`` (flushed before the crash) are trusted like Kafka
    trusts them; ``deep`` also decodes every record instead of checking CRCs only. Segments whose
    indexes are missing get them rebuilt.
    """
    directory = Path(directory)
    replacement = (None if dry_run
                   else recover_replacements(directory, index_interval_bytes=index_interval_bytes))
    segments = list_segments(directory)
    scans: list[SegmentScan] = []
    truncated: SegmentScan | None = None
    dropped: list[DroppedSegment] = []
    rebuilt: list[int] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if nxt is not None and nxt <= recovery_point:
            continue  # flushed: Kafka does not re-read it
        with SegmentReader(seg.log_path) as reader:
            scan = reader.scan(deep=deep)
        scans.append(scan)
        if scan.tail is None:
            continue
        truncated = scan
        log.warning("%s: found invalid batch at byte %d (%s): truncating %d bytes",
                    seg.log_path, scan.valid_bytes, scan.tail.message, scan.truncated_bytes)
        for later in segments[i + 1:]:
            dropped.append(DroppedSegment(later.base_offset, later.size(),
                                          tuple(p for p in later.paths() if p.exists())))
        if not dry_run:
            truncate_file(seg.log_path, scan.valid_bytes)
            write_indexes(seg, index_interval_bytes)
            rebuilt.append(seg.base_offset)
            for later in segments[i + 1:]:
                log.warning("%s: deleting segment %d after the invalid batch", directory, later.base_offset)
                delete_segment_files(later)
        break
    if not dry_run:
        for seg in list_segments(directory):
            has_indexes = seg.index_path.exists() and seg.time_index_path.exists()
            if seg.base_offset not in rebuilt and not has_indexes:
                write_indexes(seg, index_interval_bytes)
                rebuilt.append(seg.base_offset)
    return RecoveryReport(directory, tuple(scans), truncated, tuple(dropped), tuple(sorted(rebuilt)),
                          replacement, dry_run)


def segment_at(directory: Path, offset: int) -> Segment | None:
    """The segment whose base offset is the greatest one not above ``offset``."""
    found: Segment | None = None
    for seg in list_segments(directory):
        if seg.base_offset <= offset:
            found = seg
    return found
