"""The log dir .lock: our lock conflicts with a JVM-style POSIX lock held by another process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftwerk.storage import LogDirLock, LogDirLockedError, is_locked, lock_holder

# what the JVM's FileChannel.tryLock does on Linux: fcntl F_SETLK, exclusive, whole file
_HOLDER = """
import fcntl, sys, time
f = open(sys.argv[1], "a+")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("locked", flush=True)
sys.stdin.readline()
"""


def test_lock_acquire_release(tmp_path: Path) -> None:
    assert not is_locked(tmp_path)
    with LogDirLock(tmp_path) as lock:
        assert lock.held
        assert (tmp_path / ".lock").exists()
        assert is_locked(tmp_path)  # probing does not drop our own lock
        assert is_locked(tmp_path)
        with pytest.raises(LogDirLockedError):
            LogDirLock(tmp_path).acquire()
    assert not is_locked(tmp_path)


def test_lock_held_by_other_process(tmp_path: Path) -> None:
    (tmp_path / ".lock").touch()
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(tmp_path / ".lock")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        holder = lock_holder(tmp_path)
        assert holder is not None and holder.pid == proc.pid
        with pytest.raises(LogDirLockedError, match=str(proc.pid)):
            LogDirLock(tmp_path).acquire()
    finally:
        assert proc.stdin is not None
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while is_locked(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.01)
    with LogDirLock(tmp_path):
        pass
