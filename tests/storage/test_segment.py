"""Segments: streaming reads, index building like Kafka, index verification, names."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftwerk.storage import (
    CorruptFileError,
    Segment,
    SegmentReader,
    iter_segment_batches,
    list_segments,
    parse_partition_dir_name,
    partition_dir_name,
    scan_log,
    verify_indexes,
    write_indexes,
)
from kraftwerk.storage.index import (
    OFFSET_ENTRY,
    TIME_ENTRY,
    BatchSummary,
    OffsetIndexEntry,
    build_indexes,
    format_offset_index,
    format_time_index,
    parse_offset_index,
    parse_time_index,
)
from kraftwerk.storage.segment import file_name, parse_segment_file_name, read_offset_index, read_time_index
from tests.conftest import golden_path
from tests.storage.helpers import make_batches, write_segment


def test_names() -> None:
    assert file_name(42) == "00000000000000000042.log"
    assert parse_segment_file_name("00000000000000000042.timeindex") == (42, ".timeindex")
    assert parse_segment_file_name("00000000000000000042.log.swap") is None
    assert partition_dir_name("my-topic", 3) == "my-topic-3"
    parsed = parse_partition_dir_name("my-topic-3")
    assert parsed is not None and (parsed.topic, parsed.partition, parsed.kind) == ("my-topic", 3, None)
    parsed = parse_partition_dir_name("t-0.0123456789abcdef-delete")
    assert parsed is not None and parsed.kind == "delete"
    assert parse_partition_dir_name("meta.properties") is None


def test_stream_batches(tmp_path: Path) -> None:
    batches = make_batches(40)
    path = write_segment(tmp_path, 0, batches)
    got = [(b.base_offset, b.size) for b in iter_segment_batches(path)]
    assert got == [(i * 3, len(b)) for i, b in enumerate(batches)]
    with SegmentReader(path) as reader:
        scan = reader.scan(deep=True)
    assert scan.tail is None and scan.valid_bytes == path.stat().st_size and scan.next_offset == 120


def test_empty_segment(tmp_path: Path) -> None:
    path = write_segment(tmp_path, 5, [])
    assert list(iter_segment_batches(path)) == []
    with SegmentReader(path) as reader:
        assert reader.scan().next_offset is None


def test_batches_raise_storage_error_on_corruption(tmp_path: Path) -> None:
    data = bytearray(b"".join(make_batches(5)))
    data[200] ^= 0xFF
    path = write_segment(tmp_path, 0, [bytes(data)])
    with pytest.raises(CorruptFileError) as info:
        list(iter_segment_batches(path))
    assert info.value.position == 0


def test_build_indexes_like_kafka() -> None:
    # 1000-byte batches: entry when more than 4096 bytes passed since the last entry
    batches = [BatchSummary(i * 1000, 1000, i * 2 + 1, 100 + i) for i in range(20)]
    offsets, times = build_indexes(batches, 4096)
    assert [e.position for e in offsets] == [5000, 10000, 15000]
    assert [e.offset for e in offsets] == [11, 21, 31]
    assert [(t.timestamp, t.offset) for t in times] == [(105, 11), (110, 21), (115, 31), (119, 39)]


def test_time_index_needs_growing_timestamps() -> None:
    batches = [BatchSummary(i * 5000, 5000, i, 7) for i in range(4)]
    _, times = build_indexes(batches, 4096)
    assert [(t.timestamp, t.offset) for t in times] == [(7, 0)]
    legacy = [BatchSummary(i * 5000, 5000, i, -1) for i in range(4)]
    assert build_indexes(legacy, 4096)[1] == []


def test_index_formats_round_trip() -> None:
    entries = [OffsetIndexEntry(110, 0), OffsetIndexEntry(150, 4200)]
    data = format_offset_index(entries, 100)
    assert data == OFFSET_ENTRY.pack(10, 0) + OFFSET_ENTRY.pack(50, 4200)
    assert parse_offset_index(data, 100) == entries
    assert parse_offset_index(data + bytes(16), 100) == entries  # preallocated tail
    with pytest.raises(CorruptFileError):
        parse_offset_index(data + b"\x00", 100, "x.index")
    tdata = TIME_ENTRY.pack(5, 1)
    assert parse_time_index(format_time_index(parse_time_index(tdata, 7), 7), 7)[0].offset == 8
    with pytest.raises(CorruptFileError):
        parse_time_index(tdata[:-1], 7)


def test_write_and_verify_indexes(tmp_path: Path) -> None:
    write_segment(tmp_path, 0, make_batches(60))
    seg = Segment(tmp_path, 0)
    idx = write_indexes(seg)
    assert len(idx.offsets) > 3
    assert read_offset_index(seg.index_path) == list(idx.offsets)
    assert read_time_index(seg.time_index_path) == list(idx.times)
    assert verify_indexes(seg) == []
    # an entry pointing into the middle of a batch, then offsets going backwards
    bad = [OffsetIndexEntry(idx.offsets[0].offset, idx.offsets[0].position + 1), *idx.offsets[1:],
           OffsetIndexEntry(idx.offsets[0].offset, idx.offsets[-1].position + 10_000)]
    seg.index_path.write_bytes(format_offset_index(bad, 0))
    problems = verify_indexes(seg)
    assert any("not the start of a batch" in p.message for p in problems)
    assert any("does not follow" in p.message for p in problems)


def test_golden_segments_scan_clean() -> None:
    check_log_dir_scans_clean(golden_path("kafka-4.3-standalone"))


def check_log_dir_scans_clean(directory: Path) -> None:
    """A real partition dir of one segment recovers whole: no tail to cut."""
    segs = list_segments(directory)
    assert [s.base_offset for s in segs] == [0]
    (scan,) = scan_log(directory, deep=True)
    assert scan.tail is None and scan.valid_bytes == scan.size


def test_golden_mixed_formats_and_legacy(tmp_path: Path) -> None:
    for parts in (("mixed-formats",), ("legacy", "v0-gzip"), ("legacy", "v1-none")):
        src = golden_path(*parts, "00000000000000000000.log")
        (scan,) = scan_log(src.parent)
        assert scan.tail is None
        dst = tmp_path / "-".join(parts) / src.name
        dst.parent.mkdir()
        dst.write_bytes(src.read_bytes())
        write_indexes(Segment(dst.parent, 0), 1024)
        assert verify_indexes(Segment(dst.parent, 0)) == []


def test_a_directory_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    from kraftwerk.storage.errors import StorageIOError
    from kraftwerk.storage.segment import SegmentReader

    with pytest.raises(StorageIOError, match="Is a directory"):
        SegmentReader(tmp_path)
