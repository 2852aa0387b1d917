"""The scan's format logic without Spark: batch rows, record rows, splits, damage, summaries."""

from __future__ import annotations

import itertools
import shutil
import struct
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.records import CompressionType, RecordsBuilder, TimestampType
from kraftwerk.storage.index import format_offset_index
from kraftwerk.storage.scan import (
    BatchColumns,
    BatchRow,
    _batch_row,
    _scanned,
    batch_arrow_schema,
    iter_batch_columns,
    iter_batch_rows,
    iter_record_rows,
    scan_segments,
)
from kraftwerk.storage.scan_summary import summarize, totals
from kraftwerk.storage.segment import Segment, SegmentReader, compute_indexes, write_indexes
from kraftwerk.storage.segment_splits import (
    ScanError,
    SegmentFile,
    SegmentSplit,
    discover_segments,
    locate_segment,
    plan_splits,
)
from tests.conftest import golden_path
from tests.storage.fleet import Fleet, build_fleet
from tests.storage.helpers import make_batches, write_segment


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    return build_fleet(tmp_path_factory.mktemp("fleet"))


def test_fleet_scans_to_the_generators_counts(fleet: Fleet) -> None:
    segments = discover_segments(fleet.log_dirs)
    assert len(segments) == sum(len(b.segments) for b in fleet.partitions)
    summaries = summarize(scan_segments(segments))
    assert len(summaries) == len(fleet.partitions)
    for s in summaries:
        books = fleet.books(s.log_dir, s.topic, s.partition)
        assert s.batches == books.batches
        assert s.records == len(books.records)
        assert s.legacy_batches == books.legacy_batches
        assert s.legacy_records == books.legacy_records
        assert s.legacy_bytes == books.legacy_bytes
        assert s.v0_bytes + s.v1_bytes == s.legacy_bytes
        assert s.bytes == sum(len(d) for d in books.segments.values())
        assert s.corrupt_batches == 0
        assert s.segments == set(books.segments)
        if books.records:
            assert (s.first_offset, s.last_offset) == (books.records[0][0], books.records[-1][0])
    tot = totals(summaries)
    assert tot["partitionsWithLegacy"] == sum(1 for b in fleet.partitions if b.has_legacy)
    # every format and codec the issue asks for is in the fleet, golden segments included
    codecs = set().union(*(b.codecs for b in fleet.partitions))
    assert {(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")} <= codecs
    assert {(2, c) for c in ("none", "gzip", "snappy", "lz4", "zstd")} <= codecs
    assert sum(b.control_batches for b in fleet.partitions) > 0
    assert {s.topic for s in summaries if s.topic.startswith("golden-")} == {
        "golden-v0-none", "golden-v0-gzip", "golden-v1-none", "golden-v1-gzip"}


def test_batch_rows_carry_header_facts(fleet: Fleet) -> None:
    rows = list(scan_segments(discover_segments(fleet.log_dirs)))
    by_magic = Counter(r.magic for r in rows)
    assert set(by_magic) == {0, 1, 2}
    control = [r for r in rows if r.is_control]
    assert control and all(r.is_transactional and r.magic == 2 and r.record_count == 1 for r in control)
    assert all(r.crc_valid and r.error is None for r in rows)
    for r in rows:
        assert r.base_offset is not None and r.last_offset is not None
        assert r.base_offset <= r.last_offset
        assert r.timestamp_type == ("NoTimestampType" if r.magic == 0 else r.timestamp_type)
        if r.magic == 0:
            assert r.max_timestamp == -1


def test_record_rows_are_the_consumers_view(fleet: Fleet) -> None:
    for books in fleet.partitions[::7]:
        got = []
        for base in sorted(books.segments):
            seg = locate_segment(books.directory / f"{base:020d}.log")
            got += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_record_rows(seg)]
        assert got == books.records


def test_locate_and_reject_paths(tmp_path: Path) -> None:
    p = write_segment(tmp_path / "logs" / "my-topic-with-dashes-12", 5, make_batches(1, base_offset=5))
    seg = locate_segment(p)
    assert (seg.log_dir, seg.topic, seg.partition, seg.base_offset) == (
        str(tmp_path / "logs"), "my-topic-with-dashes", 12, 5)
    assert locate_segment(f"file:{p}").path == str(p)
    with pytest.raises(ScanError):
        locate_segment(tmp_path / "logs" / "nodash" / "00000000000000000000.log")
    with pytest.raises(ScanError, match="does not exist"):
        discover_segments([tmp_path / "missing"])


def _big_segment(tmp_path: Path) -> SegmentFile:
    d = tmp_path / "logs" / "big-0"
    write_segment(d, 0, make_batches(60, value_size=500))
    write_indexes(Segment(d, 0), 1024)
    return locate_segment(d / "00000000000000000000.log")


def test_large_segment_splits_at_index_entries(tmp_path: Path) -> None:
    seg = _big_segment(tmp_path)
    whole = list(iter_batch_rows(seg))
    splits = plan_splits(seg, 8 * 1024)
    assert len(splits) > 5
    assert splits[0].start == 0 and splits[-1].end == seg.size
    positions = {r.position for r in whole}
    assert all(s.start in positions for s in splits[1:])
    pieces = [r for s in splits for r in iter_batch_rows(s)]
    assert pieces == whole
    records = [r for s in splits for r in iter_record_rows(s)]
    assert records == list(iter_record_rows(seg))
    assert plan_splits(seg, 10**9) == [splits[0].__class__(seg, 0, seg.size)]


def test_a_stale_index_entry_is_not_used_as_a_cut(tmp_path: Path) -> None:
    seg = _big_segment(tmp_path)
    idx = compute_indexes(Path(seg.path), 1024)
    bad = [type(e)(e.offset + 1, e.position + 3) for e in idx.offsets]  # nowhere near a batch start
    (Path(seg.partition_dir) / "00000000000000000000.index").write_bytes(format_offset_index(bad, 0))
    assert len(plan_splits(seg, 8 * 1024)) == 1
    (Path(seg.partition_dir) / "00000000000000000000.index").unlink()
    assert len(plan_splits(seg, 8 * 1024)) == 1


def test_damage_becomes_rows_not_exceptions(tmp_path: Path) -> None:
    d = tmp_path / "logs" / "t-0"
    batches = make_batches(4)
    path = write_segment(d, 0, batches)
    data = bytearray(path.read_bytes())
    data[len(batches[0]) + 70] ^= 0xFF  # a payload byte of batch 1: bad CRC, framing intact
    data += b"\x00" * 8 + b"\x00\x00\x00\x05junk"  # a frame whose size is below the minimum
    path.write_bytes(bytes(data))
    rows = list(iter_batch_rows(locate_segment(path)))
    assert [r.crc_valid for r in rows] == [True, False, True, True, False]
    assert rows[-1].error is not None and rows[-1].error.startswith("corrupt")
    assert rows[-1].magic is None
    s = summarize(rows)[0]
    assert s.corrupt_batches == 2 and s.batches == 4

    torn = write_segment(tmp_path / "logs" / "t-1", 0, [batches[0], batches[1][:40]])
    rows = list(iter_batch_rows(locate_segment(torn)))
    assert len(rows) == 2 and rows[1].error is not None and rows[1].error.startswith("truncated")


def test_unreadable_compressed_wrapper_is_reported(tmp_path: Path) -> None:
    b = RecordsBuilder(1, CompressionType.GZIP, base_offset=0)
    for i in range(3):
        b.append(1000 + i, None, b"v%d" % i)
    data = bytearray(b.build())
    data[-5] ^= 0xFF  # inside the gzip stream (the CRC then fails as well)
    path = write_segment(tmp_path / "logs" / "w-0", 0, [bytes(data)])
    rows = list(iter_batch_rows(locate_segment(path)))
    assert len(rows) == 1 and not rows[0].crc_valid
    assert rows[0].magic == 1 and rows[0].codec == "gzip"


def test_kraft_metadata_log_reads_at_batch_level(tmp_path: Path) -> None:
    src = golden_path("kafka-4.3-standalone", "00000000000000000000.log")
    d = tmp_path / "meta" / "__cluster_metadata-0"
    d.mkdir(parents=True)
    shutil.copyfile(src, d / src.name)
    rows = list(scan_segments(discover_segments([tmp_path / "meta"])))
    assert rows and all(r.magic == 2 and r.crc_valid for r in rows)
    assert rows[0].topic == "__cluster_metadata" and rows[0].partition == 0
    assert any(r.is_control for r in rows)  # LeaderChange / KRaft control batches
    assert sum(r.record_count or 0 for r in rows) == len(list(iter_record_rows(locate_segment(d / src.name))))


def test_wrapper_counts_agree_with_the_records_layer(fleet: Fleet) -> None:
    """The scan frames inner messages instead of decoding them: same base offset and count as
    RecordBatch for every compressed v0/v1 wrapper of the fleet (golden segments included), and for
    a v1 wrapper with Kafka's "wrapper offset 0" quirk."""
    from kraftwerk.records import iter_batches
    seen = 0
    for books in fleet.partitions:
        for data in books.segments.values():
            for b in iter_batches(data):
                if b.magic < 2 and b.is_compressed:
                    fresh = next(iter_batches(b.raw))
                    assert b.offsets_and_count() == (fresh.base_offset, fresh.record_count)
                    seen += 1
    assert seen > 50
    rb = RecordsBuilder(1, CompressionType.GZIP, base_offset=40)
    for i in range(3):
        rb.append(1000 + i, None, b"v")
    data = bytearray(rb.build())
    assert next(iter_batches(data)).offsets_and_count() == (40, 3)
    data[:8] = bytes(8)  # some librdkafka versions wrote wrapper offset 0 (outside the CRC)
    zero = next(iter_batches(bytes(data)))
    assert zero.offsets_and_count() == (zero.base_offset, zero.record_count) == (0, 3)


# ---------------------------------------------------------------------- columnar fast path

def _reference_rows(split: SegmentSplit, validate: bool = True) -> list[BatchRow]:
    """Every batch through BatchScanner and RecordBatch: what the header-only v2 path must equal."""
    with SegmentReader(Path(split.segment.path)) as reader:
        return [err if b is None else _batch_row(split.segment, b, validate)  # type: ignore[misc]
                for b, err in _scanned(split, reader)]


def test_columnar_rows_equal_batch_object_rows_on_the_fleet(fleet: Fleet) -> None:
    for seg in discover_segments(fleet.log_dirs):
        for split in plan_splits(seg, 8 * 1024):
            for validate in (True, False):
                assert list(iter_batch_rows(split, validate=validate)) == _reference_rows(split, validate)


def test_column_chunks_hold_at_most_max_rows_and_every_row(fleet: Fleet) -> None:
    segments = discover_segments(fleet.log_dirs)
    splits = [s for seg in segments for s in plan_splits(seg, 8 * 1024)]
    chunks = list(iter_batch_columns(splits, max_rows=7))
    assert all(0 < len(c) <= 7 for c in chunks)
    assert [r for c in chunks for r in c.rows()] == [r for s in splits for r in _reference_rows(s)]


def _assert_arrow_equals_rows(chunk: BatchColumns) -> list[dict[str, object]]:
    """A chunk's Arrow batch holds its rows, in order (the Spark source and the CLI write it)."""
    pytest.importorskip("pyarrow")
    rows = [r._asdict() for r in chunk.rows()]
    assert chunk.to_arrow(batch_arrow_schema()).to_pylist() == rows
    return rows


def test_arrow_chunks_hold_the_same_rows_in_the_same_order(fleet: Fleet) -> None:
    segments = discover_segments(fleet.log_dirs)
    splits = [s for seg in segments for s in plan_splits(seg, 8 * 1024)]
    mixed = 0
    for chunk in iter_batch_columns(splits, max_rows=50):
        rows = _assert_arrow_equals_rows(chunk)
        mixed += len({r["magic"] for r in rows}) > 1
    assert mixed > 0  # chunks that interleave header-gathered v2 rows with row objects


def _one_batch(magic: int, codec: CompressionType, offset: int) -> bytes:
    b = RecordsBuilder(magic, codec, TimestampType.CREATE_TIME, offset)
    for i in range(3):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"value-%d" % i * 5)
    return b.build()


#: (struct format, offset in a header, value): sizes, magic, codec and count the fast path must refuse
#: in a v2 header, and in a v0/v1 one the codec bits and a wrapper offset of 0 (a librdkafka quirk,
#: outside the CRC), below its last inner offset, or making the first offset negative
_HEADER_DAMAGE = ([(">i", 8, v) for v in (-1, 0, 13, 14, 48, 49, 50, 2**31 - 1)]
                  + [(">b", 16, v) for v in (-1, 0, 1, 3)]
                  + [(">B", 22, v) for v in range(8)]
                  + [(">i", 57, v) for v in (-2, -1, 0, 2**31 - 1)]
                  + [(">B", 17, v) for v in range(8)]
                  + [(">q", 0, v) for v in (0, 1, 2, -1)])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_columnar_rows_equal_batch_object_rows_on_damaged_bytes(tmp_path: Path, data: st.DataObject) -> None:
    """Flipped, cut and spliced bytes: the header-only path hands every odd batch to BatchScanner,
    so the rows (errors included) never differ from the batch-object path."""
    pieces = [_one_batch(m, c, 10 * i) for i, (m, c) in enumerate(data.draw(st.lists(
        st.sampled_from([(2, CompressionType.NONE), (2, CompressionType.LZ4), (1, CompressionType.GZIP),
                         (1, CompressionType.SNAPPY), (1, CompressionType.LZ4), (0, CompressionType.GZIP),
                         (0, CompressionType.SNAPPY), (0, CompressionType.LZ4), (0, CompressionType.NONE),
                         (1, CompressionType.NONE)]), min_size=1, max_size=6)))]
    blob = bytearray(b"".join(pieces))
    starts = [0, *itertools.accumulate(len(p) for p in pieces)]
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(blob) - 1))
        blob[at] = data.draw(st.integers(0, 255))
    for piece, (fmt, where, value) in data.draw(st.lists(st.tuples(
            st.integers(0, len(pieces) - 1), st.sampled_from(_HEADER_DAMAGE)), max_size=2)):
        if starts[piece] + where + struct.calcsize(fmt) <= len(blob):
            struct.pack_into(fmt, blob, starts[piece] + where, value)
    cut = data.draw(st.one_of(st.integers(1, len(blob)), st.builds(
        int.__sub__, st.sampled_from(starts[1:]), st.integers(0, 2))))
    blob = blob[:max(1, cut)]
    d = tmp_path / "logs" / f"f-{data.draw(st.integers(0, 10**9))}"
    path = write_segment(d, 0, [bytes(blob)])
    seg = locate_segment(path)
    start = data.draw(st.sampled_from(starts[:-1]))
    end = data.draw(st.one_of(st.just(seg.size), st.integers(start + 1, max(start + 1, seg.size))))
    split = SegmentSplit(seg, start, end)
    assert list(iter_batch_rows(split)) == _reference_rows(split)
    for chunk in iter_batch_columns([split], max_rows=3):  # error rows carry nulls into Arrow
        _assert_arrow_equals_rows(chunk)
