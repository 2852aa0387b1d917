"""Segment replacement: a crash before any file operation recovers to the whole old or whole new set."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kraftwerk.storage import (
    ReplaceError,
    ReplaceStep,
    Segment,
    SegmentReplacement,
    recover_log,
    recover_replacements,
    replace_segments,
    write_indexes,
)
from tests.storage.helpers import make_batches, write_segment


class Crash(Exception):
    """A simulated power cut."""


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _crash_at(k: int) -> Callable[[ReplaceStep, Path], None]:
    """A hook that crashes before the ``k``-th file operation (counting from 0)."""
    calls = 0

    def hook(step: ReplaceStep, path: Path) -> None:
        nonlocal calls
        if calls == k:
            raise Crash(f"{step.value} {path.name}")
        calls += 1

    return hook


def _old_state(directory: Path) -> None:
    for base, seed in ((0, 1), (30, 2), (60, 3)):
        write_segment(directory, base, make_batches(10, base_offset=base, seed=seed))
        write_indexes(Segment(directory, base), 1024)


def _new_segments() -> list[tuple[int, bytes]]:
    # rewrite segments 0 and 30 (offsets 0..59) as two segments with other bytes, same offsets
    return [(0, b"".join(make_batches(15, base_offset=0, seed=11, value_size=300))),
            (45, b"".join(make_batches(5, base_offset=45, seed=12, value_size=300)))]


def _expected_new(tmp_path: Path) -> dict[str, bytes]:
    d = tmp_path / "expected-new"
    d.mkdir()
    _old_state(d)
    replace_segments(d, [0, 30], _new_segments(), index_interval_bytes=1024)
    return _snapshot(d)


def _operations(tmp_path: Path) -> list[tuple[ReplaceStep, str]]:
    d = tmp_path / "count"
    d.mkdir()
    _old_state(d)
    ops: list[tuple[ReplaceStep, str]] = []
    replace_segments(d, [0, 30], _new_segments(), index_interval_bytes=1024,
                     hook=lambda step, path: ops.append((step, path.name)))
    return ops


def test_replace_completes(tmp_path: Path) -> None:
    new = _expected_new(tmp_path)
    suffixes = (".log", ".index", ".timeindex")
    assert sorted(new) == sorted(f"{b:020d}{s}" for b in (0, 45, 60) for s in suffixes)
    for name in new:
        assert not name.endswith((".cleaned", ".swap", ".deleted"))


def test_crash_at_every_step(tmp_path: Path) -> None:
    ops = _operations(tmp_path)
    steps = {step for step, _ in ops}
    assert steps == set(ReplaceStep)
    base = tmp_path / "old"
    base.mkdir()
    _old_state(base)
    old = _snapshot(base)
    new = _expected_new(tmp_path)
    outcomes = []
    for k in range(len(ops) + 1):
        d = tmp_path / f"crash-{k}"
        shutil.copytree(base, d)
        with contextlib.suppress(Crash):
            replace_segments(d, [0, 30], _new_segments(), hook=_crash_at(k), index_interval_bytes=1024)
        recover_replacements(d, index_interval_bytes=1024)
        state = _snapshot(d)
        assert state in (old, new), (k, ops[k] if k < len(ops) else "done", sorted(state))
        outcomes.append("old" if state == old else "new")
        # recovery is idempotent and a full log recovery finds nothing more to do
        recover_replacements(d, index_interval_bytes=1024)
        assert _snapshot(d) == state
        assert recover_log(d, index_interval_bytes=1024).clean
    # crashes while writing .cleaned or renaming to .swap roll back; later ones roll forward
    first_forward = next(i for i, (s, _) in enumerate(ops) if s is ReplaceStep.RENAME_OLD_TO_DELETED)
    assert outcomes[:first_forward] == ["old"] * first_forward
    assert outcomes[first_forward:] == ["new"] * (len(outcomes) - first_forward)


def test_same_base_single_segment(tmp_path: Path) -> None:
    write_segment(tmp_path, 0, make_batches(6, seed=1))
    write_indexes(Segment(tmp_path, 0))
    old = _snapshot(tmp_path)
    newdata = b"".join(make_batches(6, seed=7))
    ops: list[ReplaceStep] = []
    d2 = tmp_path / "ref"
    d2.mkdir()
    write_segment(d2, 0, [newdata])
    write_indexes(Segment(d2, 0))
    new = _snapshot(d2)
    replace_segments(d2, [0], [(0, newdata)], hook=lambda s, p: ops.append(s))
    for k in range(len(ops)):
        d = tmp_path / f"c{k}"
        d.mkdir()
        write_segment(d, 0, make_batches(6, seed=1))
        write_indexes(Segment(d, 0))
        with pytest.raises(Crash):
            replace_segments(d, [0], [(0, newdata)], hook=_crash_at(k))
        recover_replacements(d)
        assert _snapshot(d) in (old, new)


def test_a_staged_transaction_index_goes_and_comes_with_its_log(tmp_path: Path) -> None:
    """The transaction index cannot be rebuilt from the log: a staged one is swapped in with its
    segment, and a crash at any step leaves the old one or the new one."""
    new_log, new_txn = b"".join(make_batches(6, seed=7)), b"\x02" * 34

    def old_state(d: Path) -> None:
        d.mkdir()
        write_segment(d, 0, make_batches(6, seed=1))
        write_indexes(Segment(d, 0))
        Segment(d, 0).txn_index_path.write_bytes(b"\x01" * 34)

    def replace(d: Path, hook: Callable[[ReplaceStep, Path], None]) -> None:
        rep = SegmentReplacement(d, hook=hook)
        rep.add_segment(0, new_log, txn_index=new_txn)
        rep.commit([0])

    old_state(tmp_path / "old")
    old = _snapshot(tmp_path / "old")
    old_state(tmp_path / "new")
    ops: list[tuple[ReplaceStep, str]] = []
    replace(tmp_path / "new", lambda step, path: ops.append((step, path.name)))
    new = _snapshot(tmp_path / "new")
    assert new[f"{0:020d}.txnindex"] == new_txn
    assert (ReplaceStep.WRITE_CLEANED, f"{0:020d}.txnindex.cleaned") in ops
    for k in range(len(ops)):
        d = tmp_path / f"crash-{k}"
        old_state(d)
        with pytest.raises(Crash):
            replace(d, _crash_at(k))
        recover_replacements(d)
        assert _snapshot(d) in (old, new), (k, ops[k])


def test_recovery_drops_unfinished_temp_files_of_segment_files_only(tmp_path: Path) -> None:
    _old_state(tmp_path)
    old = _snapshot(tmp_path)
    strays = [f"{0:020d}.index.tmp", f"{30:020d}.timeindex.cleaned.tmp", f"{90:020d}.log.cleaned.tmp"]
    others = ["leader-epoch-checkpoint.tmp", "partition.metadata.tmp", "notes.tmp"]
    for name in strays + others:
        (tmp_path / name).write_bytes(b"partial")
    recovery = recover_replacements(tmp_path)
    assert sorted(recovery.rolled_back) == sorted(strays)
    assert _snapshot(tmp_path) == old | {name: b"partial" for name in others}


def test_bad_plans(tmp_path: Path) -> None:
    write_segment(tmp_path, 0, make_batches(3))
    with pytest.raises(ReplaceError):
        replace_segments(tmp_path, [99], [(0, b"")])
    rep = SegmentReplacement(tmp_path)
    with pytest.raises(ReplaceError):
        rep.commit([0])
    rep.add_segment(0, b"".join(make_batches(3, seed=5)))
    with pytest.raises(ReplaceError):
        rep.add_segment(0, b"")
    rep.abort()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["00000000000000000000.log"]
