"""Recovery scans of record batches: every valid batch of a range, and where and why the valid bytes end.

Storage recovery, the raft log and dump-log use this instead of :func:`~kraftwerk.records.batch.iter_batches`,
which raises at bad bytes: a scan stops at the first truncated or corrupt batch and reports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum

from kraftwerk.records.batch import Buffer, RecordBatch, _as_view, _frame, _Truncated
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.types import DEFAULT_MAX_DECOMPRESSED_SIZE


class TailReason(Enum):
    """Why a scan stopped before the end of the buffer."""

    TRUNCATED = "truncated"  # a partial batch at the end (an interrupted append)
    CORRUPT = "corrupt"  # bad size/magic/CRC/records: the bytes from here on are not trustworthy


@dataclass(frozen=True, slots=True)
class Tail:
    """The unreadable end of a scanned range: where it starts, how long it is and why."""

    position: int
    length: int
    reason: TailReason
    message: str


class BatchScanner:
    """Iterate the valid batches of ``data[start:end]``; stop (without raising) at the first bad one.

    After iteration ``valid_end`` is the position just past the last good batch and ``tail`` says
    what follows it (``None`` when the range was consumed exactly). ``validate`` checks CRCs;
    ``deep`` also decodes every record (and decompresses), as a thorough recovery would.
    """

    def __init__(self, data: Buffer, start: int = 0, end: int | None = None, *, validate: bool = True,
                 deep: bool = False, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        self._mv = _as_view(data)
        self.start = start
        self.end = len(self._mv) if end is None else min(end, len(self._mv))
        self.validate = validate
        self.deep = deep
        self.max_decompressed_size = max_decompressed_size
        self.valid_end = start
        self.tail: Tail | None = None

    def __iter__(self) -> Iterator[RecordBatch]:
        self.valid_end = self.start
        self.tail = None
        it = _frame(self._mv, self.start, self.end, self.max_decompressed_size)
        while True:
            try:
                batch = next(it)
            except StopIteration:
                break
            except _Truncated as t:
                self.tail = Tail(t.position, self.end - t.position, TailReason.TRUNCATED, str(t))
                return
            except RecordsError as e:
                self.tail = Tail(self.valid_end, self.end - self.valid_end, TailReason.CORRUPT, str(e))
                return
            try:
                if self.validate:
                    batch.ensure_valid()
                if self.deep:
                    for _ in batch.records():
                        pass
            except RecordsError as e:
                self.tail = Tail(batch.position, self.end - batch.position, TailReason.CORRUPT, str(e))
                return
            self.valid_end = batch.position + batch.size
            yield batch


@dataclass(frozen=True, slots=True)
class ScanResult:
    """All valid batches of a range plus where and why the valid bytes end."""

    batches: tuple[RecordBatch, ...]
    valid_end: int
    tail: Tail | None


def scan_batches(data: Buffer, start: int = 0, end: int | None = None, *, validate: bool = True,
                 deep: bool = False,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> ScanResult:
    """Collect a ``BatchScanner`` run: the storage layer's recovery primitive."""
    scanner = BatchScanner(data, start, end, validate=validate, deep=deep,
                           max_decompressed_size=max_decompressed_size)
    batches = tuple(scanner)
    return ScanResult(batches, scanner.valid_end, scanner.tail)
