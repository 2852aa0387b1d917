"""The log directory ``.lock`` (Kafka's FileLock: ``FileChannel.tryLock`` on ``<logdir>/.lock``).

On Linux the JVM takes a POSIX record lock (``fcntl F_SETLK``, whole file). We take an
open-file-description lock (``F_OFD_SETLK``) where available: it conflicts with the JVM's lock in
both directions, and unlike a classic POSIX lock it is not dropped when some other descriptor of
the same file is closed in this process. ``lock_holder`` probes with ``F_OFD_GETLK``, which never
acquires anything, so asking "is a broker running on this directory?" is side-effect free.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kraftwerk.storage.errors import LogDirLockedError
from kraftwerk.storage.fileio import io_error

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"

# struct flock: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid (+ padding)
_FLOCK = struct.Struct("@hhqqi4x")
_OFD_SETLK: int | None = getattr(fcntl, "F_OFD_SETLK", None)
_OFD_GETLK: int | None = getattr(fcntl, "F_OFD_GETLK", None)


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who holds a ``.lock``: a process id for a classic POSIX lock (a JVM), ``None`` for an OFD lock."""

    pid: int | None


def _open_lock_file(path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise io_error(exc, path, "open lock file") from exc


def _try_lock(fd: int) -> bool:
    """Take an exclusive whole-file lock without blocking; False when someone else holds it."""
    try:
        if _OFD_SETLK is not None:
            fcntl.fcntl(fd, _OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        else:  # pragma: no cover - non-Linux fallback: classic POSIX lock, like the JVM's
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True


def lock_holder(log_dir: Path) -> LockHolder | None:
    """Who holds ``<log_dir>/.lock`` right now, or ``None`` when it is free (or absent)."""
    path = Path(log_dir) / LOCK_FILE
    if not path.exists():
        return None
    fd = _open_lock_file(path)
    try:
        if _OFD_GETLK is not None:
            try:
                res = fcntl.fcntl(fd, _OFD_GETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
            except OSError as exc:
                raise io_error(exc, path, "probe lock") from exc
            l_type, _, _, _, pid = _FLOCK.unpack(res)
            if l_type == fcntl.F_UNLCK:
                return None
            return LockHolder(pid if pid > 0 else None)
        # pragma: no cover - fallback: try and release (may drop this process's own POSIX lock)
        if _try_lock(fd):  # pragma: no cover
            return None
        return LockHolder(None)  # pragma: no cover
    finally:
        os.close(fd)


def is_locked(log_dir: Path) -> bool:
    """True when another holder (a running broker, another tool) has the directory locked."""
    return lock_holder(log_dir) is not None


class LogDirLock:
    """An exclusive lock on a log directory, held until :meth:`release` (a context manager).

    Refuses with :class:`LogDirLockedError` when a broker or another tool holds the directory,
    exactly as a second Kafka broker on the same ``log.dirs`` would fail to start.
    """

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = Path(log_dir)
        self.path = self.log_dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> LogDirLock:
        if self._fd is not None:
            return self
        fd = _open_lock_file(self.path)
        try:
            ok = _try_lock(fd)
        except OSError as exc:
            os.close(fd)
            raise io_error(exc, self.path, "lock") from exc
        if not ok:
            os.close(fd)
            holder = lock_holder(self.log_dir)
            who = f" by process {holder.pid}" if holder is not None and holder.pid else ""
            raise LogDirLockedError(
                f"Failed to acquire lock on file .lock in {self.log_dir}: it is held{who}. "
                "A Kafka broker (or another tool) may be using this directory.")
        self._fd = fd
        log.debug("locked %s", self.path)
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the description drops the lock
            self._fd = None
            log.debug("unlocked %s", self.path)

    def __enter__(self) -> LogDirLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
