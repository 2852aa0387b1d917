"""Torn tails and corruption: detected everywhere, recovery keeps the longest valid prefix, and
nothing but StorageError ever escapes."""

from __future__ import annotations

import contextlib
import random
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.storage import (
    Segment,
    StorageError,
    iter_metadata_batches,
    iter_segment_batches,
    list_segments,
    recover_log,
    verify_indexes,
    write_indexes,
)
from tests.conftest import golden_path
from tests.storage.helpers import make_batches, write_segment


def _boundaries(batches: list[bytes]) -> list[int]:
    out = [0]
    for b in batches:
        out.append(out[-1] + len(b))
    return out


def _prefix_end(bounds: list[int], limit: int) -> int:
    """The end of the last whole batch at or before ``limit``."""
    return max(b for b in bounds if b <= limit)


def _make_log(directory: Path) -> tuple[list[list[bytes]], list[int]]:
    segs = [make_batches(12, base_offset=0, seed=1), make_batches(12, base_offset=36, seed=2),
            make_batches(12, base_offset=72, seed=3)]
    bases = [0, 36, 72]
    for base, batches in zip(bases, segs, strict=True):
        write_segment(directory, base, batches)
        write_indexes(Segment(directory, base), 1024)
    return segs, bases


def test_clean_log_untouched(tmp_path: Path) -> None:
    _make_log(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    report = recover_log(tmp_path)
    assert report.clean and report.dropped_bytes == 0 and report.next_offset == 108
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("cut", [1, 11, 12, 17, 60, 61, 62, 300, 1000])
def test_truncated_tail_of_last_segment(tmp_path: Path, cut: int) -> None:
    segs, _ = _make_log(tmp_path)
    last = tmp_path / "00000000000000000072.log"
    data = last.read_bytes()
    last.write_bytes(data[:len(data) - cut])
    report = recover_log(tmp_path)
    bounds = _boundaries(segs[2])
    expected = _prefix_end(bounds, len(data) - cut)
    assert report.truncated is not None and report.truncated.valid_bytes == expected
    assert last.stat().st_size == expected
    assert report.dropped_bytes == len(data) - cut - expected
    assert verify_indexes(Segment(tmp_path, 72)) == []
    kept = bounds.index(expected)
    assert [b.base_offset for b in iter_segment_batches(last)] == [72 + 3 * i for i in range(kept)]


def test_corruption_in_middle_segment_drops_later_segments(tmp_path: Path) -> None:
    segs, _ = _make_log(tmp_path)
    mid = tmp_path / "00000000000000000036.log"
    data = bytearray(mid.read_bytes())
    bounds = _boundaries(segs[1])
    data[bounds[5] + 40] ^= 0x01  # inside batch 5's CRC-covered bytes
    mid.write_bytes(bytes(data))
    report = recover_log(tmp_path)
    assert report.truncated is not None and report.truncated.valid_bytes == bounds[5]
    assert [d.base_offset for d in report.dropped_segments] == [72]
    assert [s.base_offset for s in list_segments(tmp_path)] == [0, 36]
    assert not (tmp_path / "00000000000000000072.index").exists()
    assert report.next_offset == 36 + 15


def test_dry_run_changes_nothing(tmp_path: Path) -> None:
    _make_log(tmp_path)
    first = tmp_path / "00000000000000000000.log"
    first.write_bytes(first.read_bytes()[:-5])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    report = recover_log(tmp_path, dry_run=True)
    assert not report.clean and len(report.dropped_segments) == 2
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_recovery_point_skips_flushed_segments(tmp_path: Path) -> None:
    _make_log(tmp_path)
    first = tmp_path / "00000000000000000000.log"
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF
    first.write_bytes(bytes(data))
    report = recover_log(tmp_path, recovery_point=72, dry_run=True)
    assert report.clean  # like Kafka: flushed segments below the recovery point are not re-read


def _single_segment(tmp_path: Path) -> tuple[bytes, list[int]]:
    batches = make_batches(8, seed=9, value_size=60)
    return b"".join(batches), _boundaries(batches)


def _check_recovers_to_prefix(directory: Path, data: bytes, bounds: list[int]) -> None:
    shutil.rmtree(directory, ignore_errors=True)
    write_segment(directory, 0, [data])
    with contextlib.suppress(StorageError):
        list(iter_segment_batches(directory / "00000000000000000000.log"))
    report = recover_log(directory)
    size = (directory / "00000000000000000000.log").stat().st_size
    assert size in bounds
    # what survives is byte-identical to the original prefix and reads cleanly
    assert (directory / "00000000000000000000.log").read_bytes() == data[:size] or not report.clean
    list(iter_segment_batches(directory / "00000000000000000000.log"))
    assert recover_log(directory).clean


def test_every_truncation_point(tmp_path: Path) -> None:
    data, bounds = _single_segment(tmp_path)
    for cut in range(0, len(data), 7):
        _check_recovers_to_prefix(tmp_path / "seg", data[:cut], bounds)
        assert (tmp_path / "seg" / "00000000000000000000.log").stat().st_size == _prefix_end(bounds, cut)


def test_every_bit_flip_position(tmp_path: Path) -> None:
    data, bounds = _single_segment(tmp_path)
    rnd = random.Random(5)
    for pos in range(0, len(data), 3):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << rnd.randrange(8)
        d = tmp_path / "seg"
        shutil.rmtree(d, ignore_errors=True)
        write_segment(d, 0, [bytes(flipped)])
        report = recover_log(d)
        size = (d / "00000000000000000000.log").stat().st_size
        batch_start = _prefix_end(bounds, pos)
        # the damaged batch and everything after it are gone; the bytes before it survive. The base
        # offset and leader epoch are outside the CRC (as in Kafka): a flip there that keeps offsets
        # increasing and in range goes unnoticed
        in_header = pos - batch_start
        if in_header < 8 or 12 <= in_header < 16:
            assert size in bounds and size >= batch_start, (pos, size, batch_start, report.truncated)
        else:
            assert size == batch_start, (pos, size, batch_start, report.truncated)
            assert (d / "00000000000000000000.log").read_bytes() == data[:size]


@pytest.mark.parametrize("length", [-1, 0, 13, 60, 1 << 30, 0x7FFFFFFF])
def test_bad_length_fields(tmp_path: Path, length: int) -> None:
    data, bounds = _single_segment(tmp_path)
    bad = bytearray(data)
    bad[bounds[3] + 8:bounds[3] + 12] = length.to_bytes(4, "big", signed=True)
    write_segment(tmp_path, 0, [bytes(bad)])
    recover_log(tmp_path)
    assert (tmp_path / "00000000000000000000.log").stat().st_size == bounds[3]


def test_bad_crc_fields(tmp_path: Path) -> None:
    data, bounds = _single_segment(tmp_path)
    for i in range(len(bounds) - 1):
        bad = bytearray(data)
        bad[bounds[i] + 17] ^= 0x80  # the stored CRC
        d = tmp_path / f"s{i}"
        write_segment(d, 0, [bytes(bad)])
        report = recover_log(d)
        assert report.truncated is not None and report.truncated.valid_bytes == bounds[i]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=600), st.integers(min_value=0, max_value=2000))
def test_garbage_never_escapes_storage_errors(tmp_path: Path, garbage: bytes, where: int) -> None:
    data, _ = _single_segment(tmp_path)
    where = min(where, len(data))
    blob = data[:where] + garbage + data[where:]
    d = tmp_path / "fuzz"
    shutil.rmtree(d, ignore_errors=True)
    write_segment(d, 0, [blob])
    for reader in (lambda p: list(iter_segment_batches(p)), lambda p: list(iter_metadata_batches(p))):
        with contextlib.suppress(StorageError):
            reader(d / "00000000000000000000.log")
    recover_log(d)
    assert recover_log(d).clean


def test_golden_metadata_log_tail_recovery(tmp_path: Path) -> None:
    src = golden_path("kafka-4.3-standalone", "00000000000000000000.log")
    data = src.read_bytes()
    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    (d / src.name).write_bytes(data[:-30])
    report = recover_log(d)
    assert report.truncated is not None and report.next_offset == 149
    assert (d / src.name).read_bytes() == data[:report.truncated.valid_bytes]
