"""Crash-safe file writing and OS-error translation: the one place that fsyncs.

Kafka's rule (Utils.atomicMoveWithFallback with fsync): write the whole content to a temp name,
fsync it, rename it over the target, then fsync the directory so the rename itself is durable.
A crash at any moment leaves either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlparse

from kraftwerk.storage.errors import StorageError, StorageIOError

log = logging.getLogger(__name__)

TMP_SUFFIX = ".tmp"

Bytes = bytes | bytearray | memoryview


def local_path(uri: str) -> str:
    """A ``file:`` URL (as Spark lists files, or given for a mount every executor sees) or a plain
    path, as a local path."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return unquote(parsed.path) if parsed.scheme else uri
    raise StorageError(f"{uri}: only local paths and file:// URLs can be read (scheme {parsed.scheme!r}); "
                       "every executor must see them at the same path")


def io_error(exc: OSError, path: Path | str, action: str) -> StorageIOError:
    """A ``StorageIOError`` that says what we were doing to which file."""
    return StorageIOError(f"cannot {action} {path}: {exc.strerror or exc}", path)


@contextlib.contextmanager
def translate_os_errors(path: Path | str, action: str) -> Iterator[None]:
    """Re-raise any ``OSError`` inside the block as a ``StorageIOError`` naming ``path``."""
    try:
        yield
    except OSError as exc:
        raise io_error(exc, path, action) from exc


def fsync_dir(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable (no-op where dirs cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:  # e.g. Windows: directories cannot be opened; Kafka ignores this too
        log.debug("cannot open %s to fsync it: %s", directory, exc)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        log.debug("cannot fsync directory %s: %s", directory, exc)
    finally:
        os.close(fd)


def write_and_sync(path: Path, chunks: Iterable[Bytes], *, exclusive: bool = False) -> int:
    """Write ``chunks`` to ``path`` (truncating, or failing if it exists when ``exclusive``), fsync it.

    Returns the number of bytes written. Does not rename anything and does not fsync the directory.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    total = 0
    with translate_os_errors(path, "write"):
        fd = os.open(path, flags, 0o644)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                    total += n
            os.fsync(fd)
        finally:
            os.close(fd)
    return total


def atomic_rename(src: Path, dst: Path, *, sync_dir: bool = True) -> None:
    """Rename ``src`` over ``dst`` atomically and (by default) fsync the destination directory."""
    with translate_os_errors(src, f"rename to {dst.name}"):
        os.replace(src, dst)
    if sync_dir:
        fsync_dir(dst.parent)
        if src.parent != dst.parent:
            fsync_dir(src.parent)


def atomic_write(path: Path, data: Bytes | Iterable[Bytes], *, tmp_suffix: str = TMP_SUFFIX) -> int:
    """Crash-safe replace of ``path``: temp file, fsync, rename, fsync dir. Returns bytes written.

    On any failure the temp file is removed and the old ``path`` (if any) is untouched.
    """
    path = Path(path)
    tmp = path.with_name(path.name + tmp_suffix)
    chunks: Iterable[Bytes] = (data,) if isinstance(data, bytes | bytearray | memoryview) else data
    try:
        written = write_and_sync(tmp, chunks)
        atomic_rename(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    log.debug("wrote %s (%d bytes)", path, written)
    return written


def read_bytes(path: Path) -> bytes:
    """The whole content of a small file, with OS errors translated."""
    with translate_os_errors(path, "read"):
        return Path(path).read_bytes()


def unlink(path: Path, *, missing_ok: bool = True) -> None:
    with translate_os_errors(path, "delete"):
        Path(path).unlink(missing_ok=missing_ok)
