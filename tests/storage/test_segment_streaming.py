"""Streaming reads of segments and indexes: in-place index entries, lookups, released pages."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kraftwerk.records import build_records
from kraftwerk.storage import segment as segment_mod
from kraftwerk.storage.errors import CorruptFileError, StorageIOError
from kraftwerk.storage.index import (
    OffsetIndexEntry,
    TimeIndexEntry,
    check_offset_index_sanity,
    check_time_index_sanity,
    iter_offset_index,
    iter_time_index,
    lookup_offset,
    parse_offset_index,
)
from kraftwerk.storage.segment import SegmentReader, compute_indexes, map_file


def _index(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in pairs)


def test_iter_offset_index_streams_and_stops_at_the_preallocated_tail() -> None:
    data = _index((0, 0), (5, 100), (9, 250), (0, 0), (0, 0))
    entries = iter_offset_index(memoryview(data), 1000)
    assert next(entries) == OffsetIndexEntry(1000, 0)
    assert list(entries) == [OffsetIndexEntry(1005, 100), OffsetIndexEntry(1009, 250)]
    assert len(list(iter_offset_index(data, 1000, stop_at_zero=False))) == 5
    assert parse_offset_index(data, 1000) == list(iter_offset_index(data, 1000))
    with pytest.raises(CorruptFileError, match="multiple of 8"):
        iter_offset_index(data + b"\x00", 1000)  # raised before the first entry, not mid-stream
    times = struct.pack(">qi", 7, 3) + struct.pack(">qi", 9, 4)
    assert list(iter_time_index(times, 10)) == [TimeIndexEntry(7, 13), TimeIndexEntry(9, 14)]


@pytest.mark.parametrize(("target", "expected"), [
    (999, None), (1000, (1000, 0)), (1004, (1000, 0)), (1005, (1005, 100)), (1008, (1005, 100)),
    (1009, (1009, 250)), (10**9, (1009, 250)),
])
def test_lookup_offset_is_kafkas_binary_search(target: int, expected: tuple[int, int] | None) -> None:
    data = _index((0, 0), (5, 100), (9, 250))
    hit = lookup_offset(data, 1000, target)
    assert (None if hit is None else (hit.offset, hit.position)) == expected


def test_lookup_offset_never_returns_an_entry_above_the_target_with_a_zero_tail() -> None:
    data = _index((2, 10), (5, 100), (9, 250), *[(0, 0)] * 13)
    for target in range(1000, 1020):
        hit = lookup_offset(data, 1000, target)
        assert hit is None or hit.offset <= target


def test_sanity_checks() -> None:
    check_offset_index_sanity(_index((1, 0), (2, 10)), 0, "x.index")
    with pytest.raises(CorruptFileError, match="neither positive nor a multiple of 8"):
        check_offset_index_sanity(_index((1, 0))[:-1], 0, "x.index")
    with pytest.raises(CorruptFileError, match="offsets must increase"):
        check_offset_index_sanity(_index((2, 0), (1, 10)), 0, "x.index")
    with pytest.raises(CorruptFileError, match="less than the base offset 10"):
        check_offset_index_sanity(_index((-1, 0)), 10, "x.index")
    check_offset_index_sanity(_index((1, 0), (2, 10), (0, 0), (0, 0)), 0, "x.index")  # preallocated tail
    check_time_index_sanity(b"\x00" * 24, "x.timeindex")
    with pytest.raises(CorruptFileError, match="multiple of 12"):
        check_time_index_sanity(b"\x00" * 13, "x.timeindex")


def test_map_file(tmp_path: Path) -> None:
    path = tmp_path / "f.index"
    path.write_bytes(b"abc")
    with map_file(path) as data:
        assert bytes(data) == b"abc"
    path.write_bytes(b"")
    with map_file(path) as data:
        assert len(data) == 0
    with pytest.raises(StorageIOError, match="cannot open"), map_file(tmp_path / "missing"):
        pass


def _segment(tmp_path: Path) -> Path:
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as f:
        for base in range(0, 4000, 40):
            f.write(build_records([(base + i, 1000 + base + i, b"k", b"v" * 900, ()) for i in range(40)]))
    return path


def test_released_pages_do_not_change_what_a_scan_reads(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = _segment(tmp_path)
    with SegmentReader(path) as reader:
        expected = [(b.position, list(b.records())) for b in reader.batches()]
        full = reader.scan(deep=True)
        indexes = compute_indexes(path)
    monkeypatch.setattr(segment_mod, "RELEASE_INTERVAL_BYTES", 8192)  # drop pages every few batches
    with SegmentReader(path) as reader:
        kept = list(reader.batches())
        # batches handed out earlier stay readable after their pages were released
        assert [(b.position, list(b.records())) for b in kept] == expected
        assert reader.scan(deep=True) == full
        assert reader.summaries() == list(reader.iter_summaries())
    assert compute_indexes(path) == indexes
