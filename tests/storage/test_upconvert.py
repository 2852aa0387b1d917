"""Up-conversion without Spark: KIP-724 rewrite, peers read it back, crash safety, idempotence."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from kraftwerk.records import CompressionType, RecordsBuilder, iter_batches, upconvert
from kraftwerk.storage.fileio import Bytes
from kraftwerk.storage.lock import LogDirLock
from kraftwerk.storage.replace import ReplaceStep, recover_replacements
from kraftwerk.storage.segment import Segment, list_segments, verify_indexes, write_indexes
from kraftwerk.storage.upconvert import (
    Status,
    census,
    upconvert_log_dirs,
    upconvert_partition,
    verify_converted,
)
from tests.storage.fleet import PEERS, Fleet, build_fleet, read_partition_with_peer
from tests.storage.helpers import make_batches, write_segment


def _snapshot(dirs: list[Path]) -> dict[Path, tuple[bytes, int]]:
    files = [p for d in dirs for p in sorted(d.rglob("*")) if p.is_file()]
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}


def check_fleet_converted(fleet: Fleet, converted: set[tuple[str, int]]) -> None:
    """Every partition reads back through both peers as the generator wrote it, magic 2 only."""
    for books in fleet.partitions:
        for peer in PEERS:
            records, magics = read_partition_with_peer(peer, books.directory)
            assert magics == {2}, (books.directory, peer)
            assert records == books.records, (books.directory, peer)
        for seg in list_segments(books.directory):
            assert verify_indexes(seg) == []
            if (str(books.directory), seg.base_offset) in converted:
                assert seg.index_path.exists() and seg.time_index_path.exists()
        assert not [p for p in books.directory.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]


def test_in_place_fleet_reads_back_through_peers_and_is_idempotent(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path)
    v2_only = [b.directory / f"{base:020d}.log" for b in fleet.partitions for base, data in b.segments.items()
               if all(c[16] == 2 for c in _chunks(data))]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in v2_only}
    outcomes = upconvert_log_dirs(fleet.log_dirs, in_place=True)
    converted = [o for o in outcomes if o.status is Status.CONVERTED]
    assert len(converted) == sum(1 for b in fleet.partitions for d in b.segments.values()
                                 if any(c[16] < 2 for c in _chunks(d)))
    assert not [o for o in outcomes if o.status.is_problem]
    assert sum(o.legacy_batches for o in converted) == sum(b.legacy_batches for b in fleet.partitions)
    check_fleet_converted(fleet, {(f"{o.log_dir}/{o.topic}-{o.partition}", o.base_offset) for o in converted})
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in v2_only} == before  # untouched
    snap = _snapshot(fleet.log_dirs)
    again = upconvert_log_dirs(fleet.log_dirs, in_place=True)
    assert {o.status for o in again} == {Status.UNCHANGED}
    assert _snapshot(fleet.log_dirs) == snap


def _chunks(data: bytes) -> list[bytes]:
    from tests.records.helpers import split_batches

    return split_batches(data)


def test_out_dir_leaves_the_source_alone(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path / "src", log_dirs=2, partitions_per_dir=6, golden=False)
    snap = _snapshot(fleet.log_dirs)
    out = tmp_path / "out"
    outcomes = upconvert_log_dirs(fleet.log_dirs, out_dir=out)
    assert _snapshot(fleet.log_dirs) == snap
    converted = [o for o in outcomes if o.status is Status.CONVERTED]
    assert converted
    for o in converted:
        books = fleet.books(o.log_dir, o.topic, o.partition)
        # both log dirs are named "data": the output names them apart
        i = fleet.log_dirs.index(Path(o.log_dir))
        new = out / f"{i}-data" / books.directory.name / f"{o.base_offset:020d}.log"
        old = books.directory / new.name
        assert verify_converted(old, new) == o.records
        assert {c.magic for c in iter_batches(new.read_bytes())} == {2}
        assert new.read_bytes() == upconvert(old.read_bytes())
        assert verify_indexes(Segment(new.parent, o.base_offset)) == []


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path, log_dirs=1, partitions_per_dir=8, golden=False)
    snap = _snapshot(fleet.log_dirs)
    outcomes = upconvert_log_dirs(fleet.log_dirs, in_place=True, dry_run=True)
    assert {o.status for o in outcomes} == {Status.WOULD_CONVERT, Status.UNCHANGED}
    assert _snapshot(fleet.log_dirs) == snap


def _legacy_partition(root: Path) -> tuple[Path, bytes]:
    d = root / "logs" / "t-0"
    parts = []
    for i, codec in enumerate((CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY)):
        b = RecordsBuilder(1, codec, base_offset=i * 4)
        for j in range(4):
            b.append(1_700_000_000_000 + i * 4 + j, b"k%d" % j, b"value-%d-%d" % (i, j))
        parts.append(b.build())
    write_segment(d, 0, parts)
    write_indexes(Segment(d, 0), 64)
    write_segment(d, 12, make_batches(3, base_offset=12))  # a v2-only segment after it
    (d / "00000000000000000000.txnindex").write_bytes(b"\x00" * 34)
    return d, b"".join(parts)


class Crash(Exception):
    pass


def _hook_calls(tmp_path: Path) -> list[tuple[ReplaceStep, str]]:
    d, _ = _legacy_partition(tmp_path / "count")
    calls: list[tuple[ReplaceStep, str]] = []
    upconvert_partition(d, in_place=True, hook=lambda step, path: calls.append((step, path.name)))
    return calls


def _check_recovered_and_rerun(d: Path, old: bytes, where: str) -> None:
    """After a crash: recovery (what a broker or the next run does on opening the directory) leaves
    the segment whole old or whole new and no stray file; a re-run then completes the job."""
    recover_replacements(d)
    data = (d / "00000000000000000000.log").read_bytes()
    assert data in (old, upconvert(old)), f"crash {where}: segment is neither old nor new"
    final = {f"{0:020d}{s}" for s in (".log", ".index", ".timeindex", ".txnindex")} | {f"{12:020d}.log"}
    assert {p.name for p in d.iterdir()} == final, f"crash {where}: stray or missing files"
    outcomes = upconvert_partition(d, in_place=True)
    assert (d / "00000000000000000000.log").read_bytes() == upconvert(old)
    status = {o.base_offset: o.status for o in outcomes}
    assert status[12] is Status.UNCHANGED
    assert status[0] in (Status.CONVERTED, Status.UNCHANGED)
    assert verify_indexes(Segment(d, 0)) == []
    assert {p.name for p in d.iterdir()} == final
    assert (d / "00000000000000000000.txnindex").read_bytes() == b"\x00" * 34, f"crash {where}: txnindex lost"


def test_crash_at_every_step_leaves_whole_old_or_whole_new(tmp_path: Path) -> None:
    calls = _hook_calls(tmp_path)
    assert {s for s, _ in calls} == set(ReplaceStep)
    for n, (step, name) in enumerate(calls):
        d, old = _legacy_partition(tmp_path / f"crash-{n}")
        seen = [0]

        def hook(s: ReplaceStep, p: Path, n: int = n, seen: list[int] = seen) -> None:
            if seen[0] == n:
                raise Crash(f"{s} {p.name}")
            seen[0] += 1

        with pytest.raises(Crash):
            upconvert_partition(d, in_place=True, hook=hook)
        _check_recovered_and_rerun(d, old, f"before {step} on {name}")


#: A child that converts the partition in place and dies (os._exit: no exception handler or clean-up
#: runs, as under kill -9 or a power cut) before its n-th replacement step, or half-way through its
#: n-th file write.
_DIE_AT = """
import os, sys
from pathlib import Path
from kraftwerk.storage import fileio, replace
from kraftwerk.storage.upconvert import upconvert_partition
directory, mode, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seen = [0]
def reached():
    seen[0] += 1
    return seen[0] - 1 == n
real_write = fileio.write_and_sync
def write(path, chunks, **kw):
    if mode == "write" and reached():
        path.write_bytes(b"".join(chunks)[:10])
        os._exit(17)
    return real_write(path, chunks, **kw)
def hook(step, path):
    if mode == "step" and reached():
        os._exit(17)
fileio.write_and_sync = replace.write_and_sync = write
upconvert_partition(directory, in_place=True, hook=hook)
"""


def test_a_process_killed_at_every_step_and_in_every_write_recovers(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftwerk.storage import fileio, replace

    writes: list[str] = []
    real_write = fileio.write_and_sync

    def counting_write(path: Path, chunks: Iterable[Bytes], **kw: bool) -> int:
        writes.append(path.name)
        return real_write(path, chunks, **kw)

    d, _ = _legacy_partition(tmp_path / "count")
    steps: list[tuple[ReplaceStep, str]] = []
    monkeypatch.setattr(fileio, "write_and_sync", counting_write)
    monkeypatch.setattr(replace, "write_and_sync", counting_write)
    upconvert_partition(d, in_place=True, hook=lambda step, path: steps.append((step, path.name)))
    monkeypatch.undo()
    assert any(name.endswith(".txnindex.cleaned") for name in writes)
    for mode, points in (("step", [f"before {s} on {name}" for s, name in steps]),
                         ("write", [f"writing {name}" for name in writes])):
        for n, where in enumerate(points):
            d, old = _legacy_partition(tmp_path / f"{mode}-{n}")
            child = subprocess.run([sys.executable, "-c", _DIE_AT, str(d), mode, str(n)], check=False)
            assert child.returncode == 17, f"the child did not die {where}"
            _check_recovered_and_rerun(d, old, where)


def test_transaction_index_is_carried_over(tmp_path: Path) -> None:
    d, _ = _legacy_partition(tmp_path)
    txn = (d / "00000000000000000000.txnindex").read_bytes()
    upconvert_partition(d, in_place=True)
    assert (d / "00000000000000000000.txnindex").read_bytes() == txn


def test_locked_missing_and_corrupt_are_reported_not_fatal(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path, log_dirs=3, partitions_per_dir=4, golden=False)
    locked_dir, corrupt_dir, good_dir = fleet.log_dirs
    victim = next(b for b in fleet.partitions if b.log_dir == corrupt_dir and b.has_legacy)
    seg = victim.directory / f"{min(victim.segments):020d}.log"
    data = bytearray(seg.read_bytes())
    data[30] ^= 0x55
    seg.write_bytes(bytes(data))
    with LogDirLock(locked_dir):  # stands in for a running broker
        locked_snap = _snapshot([locked_dir])
        outcomes = upconvert_log_dirs([*fleet.log_dirs, tmp_path / "nope"], in_place=True)
    by_status = {s: [o for o in outcomes if o.status is s] for s in Status}
    assert [o.log_dir for o in by_status[Status.LOCKED]] == [str(locked_dir)]
    assert "Failed to acquire lock" in by_status[Status.LOCKED][0].message
    assert [o.log_dir for o in by_status[Status.MISSING]] == [str(tmp_path / "nope")]
    assert [(o.topic, o.partition, o.base_offset) for o in by_status[Status.CORRUPT]] == [
        (victim.topic, victim.partition, min(victim.segments))]
    assert seg.read_bytes() == bytes(data)
    assert _snapshot([locked_dir]) == locked_snap
    assert any(o.log_dir == str(good_dir) for o in by_status[Status.CONVERTED])
    assert census(seg).problem is None  # framing is intact: the CRC check during verification found it


@pytest.mark.parametrize("victim", ["single", "wrapper"])
def test_failed_verification_replaces_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              victim: str) -> None:
    """A conversion bug in either hot path (one message, a compressed wrapper) is caught: the
    ledger holds what was read from the old batch, the read-back decodes what was written."""
    d, old = _legacy_partition(tmp_path)
    import kraftwerk.storage.upconvert as mod

    real = mod.upconvert_legacy

    def lossy(mv: memoryview, pos: int, size: int, magic: int, *args: object, **kwargs: object) -> bytes:
        out = real(mv, pos, size, magic, *args, **kwargs)  # type: ignore[arg-type]
        batch = next(iter_batches(out))
        if (batch.compression is CompressionType.NONE) != (victim == "single"):
            return out
        rebuilt = RecordsBuilder(2, batch.compression, base_offset=batch.base_offset)
        for r in batch.records():
            rebuilt.append_with_offset(r.offset, r.timestamp, r.key, b"tampered")
        return rebuilt.build()

    monkeypatch.setattr(mod, "upconvert_legacy", lossy)
    outcomes = upconvert_partition(d, in_place=True)
    failed = [o for o in outcomes if o.status is Status.FAILED]
    assert len(failed) == 1 and "differs" in failed[0].message
    assert (d / "00000000000000000000.log").read_bytes() == old
    assert not [p for p in d.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]


def test_a_bit_flip_in_the_written_segment_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d, old = _legacy_partition(tmp_path)
    import kraftwerk.storage.upconvert as mod

    real = mod.converted_chunks

    def flipping(reader: object, ledger: object = None) -> Iterator[bytes]:
        for chunk in real(reader, ledger):  # type: ignore[arg-type]
            data = bytearray(chunk)
            data[len(data) // 2] ^= 0x01
            yield bytes(data)

    monkeypatch.setattr(mod, "converted_chunks", flipping)
    outcomes = upconvert_partition(d, in_place=True)
    assert [o.status for o in outcomes] == [Status.FAILED, Status.UNCHANGED]
    assert (d / "00000000000000000000.log").read_bytes() == old


def test_golden_legacy_segments_convert(tmp_path: Path) -> None:
    from tests.conftest import golden_path

    for name in ("v0-none", "v0-gzip", "v1-none", "v1-gzip"):
        src = golden_path("legacy", name, "00000000000000000000.log")
        d = tmp_path / "logs" / f"{name}-0"
        d.mkdir(parents=True)
        shutil.copyfile(src, d / src.name)
        before = read_partition_with_peer("kafka.record", d)[0]
        [o] = upconvert_partition(d, in_place=True)
        assert o.status is Status.CONVERTED
        for peer in PEERS:
            records, magics = read_partition_with_peer(peer, d)
            assert magics == {2} and records == before


def test_dry_run_reports_a_locked_dir_without_taking_locks(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path, log_dirs=2, partitions_per_dir=3, golden=False)
    with LogDirLock(fleet.log_dirs[0]):
        outcomes = upconvert_log_dirs(fleet.log_dirs, in_place=True, dry_run=True)
    locked = [o for o in outcomes if o.status is Status.LOCKED]
    assert [o.log_dir for o in locked] == [str(fleet.log_dirs[0])]
    assert not (fleet.log_dirs[1] / ".lock").exists()
    assert {o.status for o in outcomes if o.log_dir == str(fleet.log_dirs[1])} <= {
        Status.WOULD_CONVERT, Status.UNCHANGED}


def test_ledger_verification_catches_a_changed_v2_copy_and_a_missing_batch(tmp_path: Path) -> None:
    from kraftwerk.storage.segment import SegmentReader
    from kraftwerk.storage.upconvert import (
        ConversionLedger,
        VerificationError,
        converted_chunks,
        verify_with_ledger,
    )
    from tests.records.helpers import split_batches

    d, _ = _legacy_partition(tmp_path)
    old = d / "00000000000000000000.log"
    extra = make_batches(2, base_offset=12)
    old.write_bytes(old.read_bytes() + b"".join(extra))  # legacy batches followed by v2 batches
    ledger = ConversionLedger()
    with SegmentReader(old) as reader:
        good = b"".join(converted_chunks(reader, ledger))
    new = tmp_path / "new.log"
    new.write_bytes(good)
    verified = verify_with_ledger(old, new, ledger)
    assert verified.records == 12 + 6
    with SegmentReader(new) as written:  # the indexes are built from these: they must be the file's
        assert verified.batches == written.summaries()
    other = RecordsBuilder(2, base_offset=12)
    for i in range(3):  # a valid v2 batch with the same offsets but other content
        other.append(1_700_000_000_000 + i, b"k%d" % (12 + i), b"other")
    batches = split_batches(good)
    new.write_bytes(b"".join(batches[:-2]) + other.build() + batches[-1])
    with pytest.raises(VerificationError):
        verify_with_ledger(old, new, ledger)
    new.write_bytes(b"".join(batches[:-1]))
    with pytest.raises(VerificationError, match="missing"):
        verify_with_ledger(old, new, ledger)
