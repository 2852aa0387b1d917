"""Errors raised by the storage layer.

Every failure while reading or writing files on disk is one of these, so the CLI can print a
message naming the file (and line or byte position) instead of a traceback, and recovery code can
catch ``StorageError`` without ever seeing ``OSError``, ``ValueError`` or a records-layer error.
"""

from __future__ import annotations

from pathlib import Path

from kraftwerk.errors import KraftwerkError


class StorageError(KraftwerkError):
    """Base class of every storage-layer failure."""


class StorageIOError(StorageError):
    """An operating-system error (missing file, permission, disk full) while touching ``path``."""

    def __init__(self, message: str, path: Path | str | None = None) -> None:
        super().__init__(message)
        self.path = None if path is None else Path(path)


class CorruptFileError(StorageError):
    """A file whose content is not what Kafka writes; names the file and the line or byte position."""

    def __init__(self, path: Path | str, message: str, *, line: int | None = None,
                 position: int | None = None) -> None:
        where = str(path)
        if line is not None:
            where += f" line {line}"
        if position is not None:
            where += f" at byte {position}"
        super().__init__(f"{where}: {message}")
        self.path = Path(path)
        self.line = line
        self.position = position
        self.detail = message


class UnsupportedFileVersionError(CorruptFileError):
    """A well-formed file carrying a format version this code does not know."""


class CorruptSnapshotError(CorruptFileError):
    """A snapshot or bootstrap file whose batches are valid but whose structure is not
    (missing header or footer, records after the footer, a data record in a control batch)."""


class LogDirLockedError(StorageError):
    """The log directory's ``.lock`` is held by another process (a running broker or tool)."""


class ReplaceError(StorageError):
    """A segment replacement that cannot be started or completed (bad plan, inconsistent files)."""
