"""Framing, CRC validation and recovery reporting (truncated / corrupt tails)."""

from __future__ import annotations

import mmap
import tracemalloc
from pathlib import Path

import pytest

from kraftwerk.records import (
    BatchScanner,
    CompressionType,
    CorruptRecordError,
    DecompressionLimitError,
    RecordsError,
    TailReason,
    UnsupportedMagicError,
    build_records,
    iter_batches,
    scan_batches,
)


def _log() -> tuple[bytes, list[int]]:
    parts = [
        build_records([(0, 1, b"a", b"b", ())], magic=0),
        build_records([(1, 2, b"c", b"d", ()), (2, 3, None, b"e", ())], magic=1,
                      compression=CompressionType.GZIP),
        build_records([(3, 4, b"f", b"g", (("h", b"i"),)), (4, 5, b"j", None, ())],
                      compression=CompressionType.LZ4),
        build_records([(5, 6, b"k", b"l", ())]),
    ]
    ends = []
    total = 0
    for p in parts:
        total += len(p)
        ends.append(total)
    return b"".join(parts), ends


def test_positions_and_sizes() -> None:
    data, ends = _log()
    batches = list(iter_batches(memoryview(data)))
    assert [b.position + b.size for b in batches] == ends
    assert [b.magic for b in batches] == [0, 1, 2, 2]
    assert [b.count_or_none for b in batches] == [1, None, 2, 1]
    assert [b.last_offset for b in batches] == [0, 2, 4, 5]
    assert bytes(batches[2].raw) == data[ends[1]:ends[2]]


def test_truncated_tail_is_reported_not_raised() -> None:
    data, ends = _log()
    for cut in (ends[2] + 5, ends[2] + 15, ends[3] - 1):
        result = scan_batches(data[:cut])
        assert [b.position for b in result.batches][-1] == ends[1]
        assert result.valid_end == ends[2]
        assert result.tail is not None and result.tail.reason is TailReason.TRUNCATED
        assert result.tail.position == ends[2] and result.tail.length == cut - ends[2]
        assert len(list(iter_batches(data[:cut]))) == 3  # iter_batches skips the partial tail silently
    assert scan_batches(data).tail is None


def test_crc_mismatch_names_the_batch() -> None:
    data, ends = _log()
    bad = bytearray(data)
    bad[ends[2] - 1] ^= 0xFF  # last byte of the lz4 v2 batch
    result = scan_batches(bytes(bad))
    assert result.valid_end == ends[1]
    assert result.tail is not None and result.tail.reason is TailReason.CORRUPT
    assert result.tail.position == ends[1] and "crc" in result.tail.message
    with pytest.raises(CorruptRecordError) as info:
        list(iter_batches(bytes(bad), validate=True))
    assert info.value.position == ends[1]
    # without validation the framing still works and the CRC can be asked per batch
    assert [b.is_valid for b in iter_batches(bytes(bad))] == [True, True, False, True]


def test_bad_size_and_magic() -> None:
    data, ends = _log()
    bad = bytearray(data)
    bad[ends[0] + 8:ends[0] + 12] = (3).to_bytes(4, "big")
    with pytest.raises(CorruptRecordError, match="minimum record overhead"):
        list(iter_batches(bytes(bad)))
    bad = bytearray(data)
    bad[ends[0] + 16] = 7
    with pytest.raises(UnsupportedMagicError):
        list(iter_batches(bytes(bad)))
    scanner = BatchScanner(bytes(bad))
    assert len(list(scanner)) == 1 and scanner.valid_end == ends[0]
    assert scanner.tail is not None and scanner.tail.reason is TailReason.CORRUPT


def test_deep_scan_decodes_records() -> None:
    body = build_records([(0, 1, b"k" * 10, b"v" * 10, ())])
    bad = bytearray(body)
    bad[-12] = 0x7F  # key length varint now claims more than the record holds; fix the crc
    from crc32c import crc32c
    bad[17:21] = crc32c(bytes(bad[21:])).to_bytes(4, "big")
    assert scan_batches(bytes(bad)).tail is None
    result = scan_batches(bytes(bad), deep=True)
    assert result.tail is not None and result.tail.reason is TailReason.CORRUPT
    with pytest.raises(CorruptRecordError):
        list(next(iter_batches(bytes(bad))).records())


def test_decompression_cap_applies_to_batches() -> None:
    data = build_records([(0, 1, None, bytes(2_000_000), ())], compression=CompressionType.ZSTD)
    (batch,) = list(iter_batches(data, max_decompressed_size=1_000_000))
    with pytest.raises(DecompressionLimitError) as info:
        list(batch.records())
    assert info.value.limit == 1_000_000 and isinstance(info.value, RecordsError)


def test_deep_scan_memory_is_one_batch_not_the_buffer(tmp_path: Path) -> None:
    """A deep, validating scan of a mapped file allocates per batch: the traced peak does not grow
    with the file (the mapping itself is not a Python allocation)."""
    from bench.bench_memory import write_synthetic_segment

    written: dict[Path, int] = {}

    def peak(path: Path) -> int:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            view = memoryview(mm)
            tracemalloc.start()
            try:
                scanner = BatchScanner(view, validate=True, deep=True)
                count = sum(batch.record_count for batch in scanner)
                assert scanner.tail is None and count == written[path]
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
                del scanner
                view.release()

    small, large = tmp_path / "small.log", tmp_path / "large.log"
    written[small] = write_synthetic_segment(small, 256 * 1024, value_size=1024, per_batch=50)
    written[large] = write_synthetic_segment(large, 6 * 1024 * 1024, value_size=1024, per_batch=50)
    peak(small)  # warm-up
    small_peak, large_peak = peak(small), peak(large)
    assert large_peak < 512 * 1024  # about one 50 KiB batch and its records
    assert large_peak < small_peak * 1.5 + 64 * 1024
