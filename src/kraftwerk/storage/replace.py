"""Crash-safe replacement of log segments (Kafka's LocalLog.replaceSegments + LogLoader recovery).

Protocol, each step made durable (fsync of files and of the directory) before the next:

1. write every new segment as ``<base>.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned``);
2. rename the new segments' files ``.cleaned`` → ``.swap``, highest base offset first;
3. rename every file of the old segments to ``<name>.deleted``;
4. rename ``.swap`` → final names (log file first, then its indexes);
5. delete the ``.deleted`` files.

:func:`recover_replacements` (run when a partition directory is opened) undoes or finishes an
interrupted run: ``.deleted`` files go; ``.cleaned`` files go, and so does every ``.swap`` at or
above the lowest ``.cleaned`` base offset (step 2 was interrupted: roll back); remaining ``.swap``
logs replace the segments whose offsets they overlap and are renamed into place (step 3 or 4 was
interrupted: roll forward); offset and time index ``.swap`` files are dropped and rebuilt from
the log, while a transaction index ``.swap`` (which the log cannot rebuild) is renamed into place
next to its log.
Temporary files of segment files (``*.tmp``: a write killed before its rename) are dropped.
A crash at any point therefore leaves the whole old or the whole new set of segments.

Like Kafka, the roll-forward finds the old segments by offset overlap with the new ones, so new
segments must span the offsets of the segments they replace (true for rewrites that keep offsets,
such as format conversion; compaction that empties a whole trailing old segment would keep it).
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.storage.errors import ReplaceError
from kraftwerk.storage.fileio import TMP_SUFFIX, Bytes, fsync_dir, translate_os_errors, write_and_sync
from kraftwerk.storage.index import DEFAULT_INDEX_INTERVAL_BYTES, BatchSummary
from kraftwerk.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    Segment,
    SegmentReader,
    file_name,
    list_segments,
    parse_segment_file_name,
    write_indexes,
)

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"


class ReplaceStep(enum.Enum):
    """The file operations of a replacement; a hook sees each one before it happens."""

    WRITE_CLEANED = "write .cleaned"
    SYNC_CLEANED = "fsync directory after .cleaned"
    RENAME_TO_SWAP = "rename .cleaned to .swap"
    RENAME_OLD_TO_DELETED = "rename old to .deleted"
    RENAME_SWAP_TO_FINAL = "rename .swap to final"
    DELETE_OLD = "delete .deleted"


#: Called before every file operation with the step and the file it touches; raising from it
#: simulates a crash at exactly that point (tests use this to crash at each step).
ReplaceHook = Callable[[ReplaceStep, Path], None]


def _no_hook(step: ReplaceStep, path: Path) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ReplaceResult:
    """What a completed replacement did."""

    directory: Path
    removed: tuple[int, ...]
    added: tuple[int, ...]


class SegmentReplacement:
    """Stage new segments as ``.cleaned`` files, then :meth:`commit` them in place of old ones."""

    def __init__(self, directory: Path, *, hook: ReplaceHook | None = None,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> None:
        self.directory = Path(directory)
        self.hook = hook or _no_hook
        self.index_interval_bytes = index_interval_bytes
        self._new: list[int] = []

    def add_segment(self, base_offset: int, chunks: Bytes | Iterable[Bytes], *,
                    check: Callable[[Path], Iterable[BatchSummary]] | None = None,
                    txn_index: Bytes | None = None) -> Path:
        """Write one new segment's log (and its indexes) under ``.cleaned`` names.

        ``check`` reads the written log back before its indexes are written (raising refuses it) and
        returns its batches' summaries, from which the indexes are built without a second read.
        ``txn_index`` is the new segment's transaction index, which the log cannot rebuild; staged
        like the rest, a crash while it is written leaves a ``.cleaned`` file that recovery drops.
        """
        if base_offset in self._new:
            raise ReplaceError(f"segment {base_offset} was already added to this replacement")
        seg = Segment(self.directory, base_offset)
        self._new.append(base_offset)  # from here on abort() removes whatever was written
        target = seg.log_path.with_name(seg.log_path.name + CLEANED_SUFFIX)
        self.hook(ReplaceStep.WRITE_CLEANED, target)
        parts: Iterable[Bytes] = (chunks,) if isinstance(chunks, bytes | bytearray | memoryview) else chunks
        write_and_sync(target, parts)
        summaries = None if check is None else check(target)
        self.hook(ReplaceStep.WRITE_CLEANED, seg.index_path.with_name(seg.index_path.name + CLEANED_SUFFIX))
        write_indexes(seg, self.index_interval_bytes, suffix=CLEANED_SUFFIX, summaries=summaries)
        if txn_index is not None:
            txn_target = seg.txn_index_path.with_name(seg.txn_index_path.name + CLEANED_SUFFIX)
            self.hook(ReplaceStep.WRITE_CLEANED, txn_target)
            write_and_sync(txn_target, (txn_index,))
        return target

    def abort(self) -> None:
        """Drop the staged ``.cleaned`` files (nothing else was touched yet)."""
        for base in self._new:
            for p in _suffixed_paths(Segment(self.directory, base), CLEANED_SUFFIX):
                with translate_os_errors(p, "delete"):
                    p.unlink(missing_ok=True)
        self._new.clear()

    def commit(self, old: Sequence[int]) -> ReplaceResult:
        """Steps 2-5: swap the staged segments in for the segments with base offsets ``old``."""
        if not self._new:
            raise ReplaceError("no new segment was added to the replacement")
        existing = {s.base_offset for s in list_segments(self.directory)}
        missing = [b for b in old if b not in existing]
        if missing:
            raise ReplaceError(f"cannot replace segments {missing} of {self.directory}: they do not exist")
        hook = self.hook
        hook(ReplaceStep.SYNC_CLEANED, self.directory)
        fsync_dir(self.directory)
        new = sorted(self._new)
        for base in reversed(new):  # step 2, highest first (see recover_replacements)
            seg = Segment(self.directory, base)
            for p in _suffixed_paths(seg, CLEANED_SUFFIX):
                if p.exists():
                    dst = p.with_name(p.name[:-len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
                    hook(ReplaceStep.RENAME_TO_SWAP, p)
                    _rename(p, dst)
        fsync_dir(self.directory)
        for base in sorted(old):  # step 3
            for p in Segment(self.directory, base).paths():
                if p.exists():
                    hook(ReplaceStep.RENAME_OLD_TO_DELETED, p)
                    _rename(p, p.with_name(p.name + DELETED_SUFFIX))
        fsync_dir(self.directory)
        for base in new:  # step 4
            for p in _suffixed_paths(Segment(self.directory, base), SWAP_SUFFIX):
                if p.exists():
                    hook(ReplaceStep.RENAME_SWAP_TO_FINAL, p)
                    _rename(p, p.with_name(p.name[:-len(SWAP_SUFFIX)]))
        fsync_dir(self.directory)
        for base in sorted(old):  # step 5
            for p in Segment(self.directory, base).paths():
                d = p.with_name(p.name + DELETED_SUFFIX)
                if d.exists():
                    hook(ReplaceStep.DELETE_OLD, d)
                    with translate_os_errors(d, "delete"):
                        d.unlink()
        fsync_dir(self.directory)
        self._new = []
        log.info("replaced segments %s of %s with %s", sorted(old), self.directory, new)
        return ReplaceResult(self.directory, tuple(sorted(old)), tuple(new))


def replace_segments(directory: Path, old: Sequence[int], new: Sequence[tuple[int, Bytes | Iterable[Bytes]]],
                     *, hook: ReplaceHook | None = None,
                     index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> ReplaceResult:
    """Replace segments ``old`` (base offsets) with ``new`` ((base offset, log bytes) pairs)."""
    rep = SegmentReplacement(directory, hook=hook, index_interval_bytes=index_interval_bytes)
    try:
        for base, data in new:
            rep.add_segment(base, data)
    except BaseException:
        with contextlib.suppress(Exception):
            rep.abort()
        raise
    return rep.commit(old)


def _suffixed_paths(seg: Segment, suffix: str) -> list[Path]:
    # the log first: Kafka renames the log before its indexes (LogSegment.changeFileSuffixes)
    return [p.with_name(p.name + suffix) for p in seg.paths()]


def _rename(src: Path, dst: Path) -> None:
    with translate_os_errors(src, f"rename to {dst.name}"):
        os.replace(src, dst)


# ---------------------------------------------------------------------- recovery

@dataclass(frozen=True, slots=True)
class ReplaceRecovery:
    """What :func:`recover_replacements` found and did."""

    deleted_files: tuple[str, ...]
    rolled_back: tuple[str, ...]  # .cleaned and invalid .swap files removed
    completed: tuple[int, ...]  # base offsets of segments swapped into place
    replaced: tuple[int, ...]  # base offsets of old segments removed while completing

    @property
    def touched(self) -> bool:
        return bool(self.deleted_files or self.rolled_back or self.completed)


def _next_offset(log_path: Path, base: int) -> int:
    with SegmentReader(log_path) as reader:
        nxt = base
        for b in reader.scanner(validate=False):
            nxt = b.last_offset + 1
        return nxt


def recover_replacements(directory: Path, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
                         ) -> ReplaceRecovery:
    """Bring a partition directory back to a whole old or whole new set of segments."""
    directory = Path(directory)
    with translate_os_errors(directory, "list"):
        names = sorted(os.listdir(directory))
    deleted: list[str] = []
    rolled_back: list[str] = []
    cleaned: list[tuple[int, str]] = []
    swaps: list[tuple[int, str, str]] = []
    for name in names:
        if name.endswith(DELETED_SUFFIX) and parse_segment_file_name(name[:-len(DELETED_SUFFIX)]):
            _delete(directory / name)
            deleted.append(name)
        elif name.endswith(TMP_SUFFIX) and parse_segment_file_name(
                name[:-len(TMP_SUFFIX)].removesuffix(CLEANED_SUFFIX)):
            _delete(directory / name)  # an index or .cleaned file whose write never reached its rename
            rolled_back.append(name)
        elif name.endswith(CLEANED_SUFFIX) and (p := parse_segment_file_name(name[:-len(CLEANED_SUFFIX)])):
            cleaned.append((p[0], name))
        elif name.endswith(SWAP_SUFFIX) and (p := parse_segment_file_name(name[:-len(SWAP_SUFFIX)])):
            swaps.append((p[0], p[1], name))
    min_cleaned = min((b for b, _ in cleaned), default=None)
    for _, name in cleaned:
        _delete(directory / name)
        rolled_back.append(name)
    valid_logs: list[int] = []
    reindex: set[int] = set()
    txn_swaps: list[int] = []
    completed_txn: list[int] = []
    for base, suffix, name in swaps:
        if min_cleaned is not None and base >= min_cleaned:
            _delete(directory / name)  # step 2 was interrupted: this swap belongs to an unfinished set
            rolled_back.append(name)
        elif suffix == TXN_INDEX_SUFFIX:
            txn_swaps.append(base)  # cannot be rebuilt from the log: rolled forward below
        elif suffix != LOG_SUFFIX:
            _delete(directory / name)  # indexes are rebuilt from the log
            deleted.append(name)
            reindex.add(base)
        else:
            valid_logs.append(base)
    replaced: list[int] = []
    for base in sorted(valid_logs):
        swap_path = directory / (file_name(base, LOG_SUFFIX) + SWAP_SUFFIX)
        swap_next = _next_offset(swap_path, base)
        for seg in list_segments(directory):
            if seg.base_offset < max(swap_next, base + 1) and (
                    seg.base_offset >= base or _next_offset(seg.log_path, seg.base_offset) > base):
                for old_path in seg.paths():
                    _delete(old_path)
                replaced.append(seg.base_offset)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            _delete(directory / file_name(base, suffix))
        _rename(swap_path, directory / file_name(base, LOG_SUFFIX))
        fsync_dir(directory)
        write_indexes(Segment(directory, base), index_interval_bytes)
        log.warning("%s: completed an interrupted segment swap at base offset %d", directory, base)
    for base in txn_swaps:
        swap_path = directory / (file_name(base, TXN_INDEX_SUFFIX) + SWAP_SUFFIX)
        if (directory / file_name(base, LOG_SUFFIX)).exists():
            _rename(swap_path, directory / file_name(base, TXN_INDEX_SUFFIX))
            completed_txn.append(base)
        else:
            _delete(swap_path)
            deleted.append(swap_path.name)
    # index files whose log is gone (a crash while renaming an old segment to .deleted), as
    # Kafka's LogLoader deletes orphaned index files
    with translate_os_errors(directory, "list"):
        names = sorted(os.listdir(directory))
    logs = {p[0] for n in names if (p := parse_segment_file_name(n)) and p[1] == LOG_SUFFIX}
    for name in names:
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed[1] != LOG_SUFFIX and parsed[0] not in logs:
            _delete(directory / name)
            deleted.append(name)
    for base in sorted(reindex - set(valid_logs)):
        seg = Segment(directory, base)
        if seg.log_path.exists():
            write_indexes(seg, index_interval_bytes)
    if deleted or rolled_back or valid_logs or completed_txn:
        fsync_dir(directory)
        log.info("%s: replacement recovery removed %s, rolled back %s, completed %s",
                 directory, deleted, rolled_back, valid_logs)
    return ReplaceRecovery(tuple(deleted), tuple(rolled_back), tuple(sorted(valid_logs)), tuple(replaced))


def _delete(path: Path) -> None:
    with translate_os_errors(path, "delete"):
        path.unlink(missing_ok=True)


__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "SEGMENT_SUFFIXES",
    "SWAP_SUFFIX",
    "ReplaceHook",
    "ReplaceRecovery",
    "ReplaceResult",
    "ReplaceStep",
    "SegmentReplacement",
    "recover_replacements",
    "replace_segments",
]
