"""Codecs: Kafka framing, the lz4 v0 quirk, raw/xerial snappy, bounded decompression."""

from __future__ import annotations

import gzip
import os
import struct

import cramjam
import pytest

from kraftwerk.records import (
    CompressionError,
    CompressionType,
    DecompressionLimitError,
    UnsupportedCompressionError,
    compress,
    decompress,
)
from kraftwerk.records.compression import lz4_header, xxhash32

CODECS = list(CompressionType)
PAYLOADS = [b"", b"x", b"hello kafka " * 1000, os.urandom(70_000), bytes(200_000)]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: str(len(p)))
def test_round_trip(codec: CompressionType, payload: bytes) -> None:
    for magic in (0, 1, 2):
        if codec is CompressionType.ZSTD and magic < 2:
            continue
        assert decompress(codec, compress(codec, payload, magic=magic), magic=magic) == payload


def test_xxhash32_vectors() -> None:
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"abc") == 0x32D153FF
    assert xxhash32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_lz4_header_checksum_quirk() -> None:
    good = lz4_header(1)
    broken = lz4_header(0)
    assert good[:6] == broken[:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert good[6] == (xxhash32(good[4:6]) >> 8) & 0xFF
    assert broken[6] == (xxhash32(broken[:6]) >> 8) & 0xFF
    assert good[6] != broken[6]
    # each magic only accepts its own checksum, like Kafka's KafkaLZ4BlockInputStream
    v0 = compress(CompressionType.LZ4, b"abc" * 100, magic=0)
    v1 = compress(CompressionType.LZ4, b"abc" * 100, magic=1)
    with pytest.raises(CompressionError, match="descriptor"):
        decompress(CompressionType.LZ4, v0, magic=1)
    with pytest.raises(CompressionError, match="descriptor"):
        decompress(CompressionType.LZ4, v1, magic=0)
    # the v1+ frame is a standard lz4 frame
    assert bytes(cramjam.lz4.decompress(v1)) == b"abc" * 100


def test_lz4_incompressible_block_stored_raw() -> None:
    data = os.urandom(1000)
    out = compress(CompressionType.LZ4, data)
    (word,) = struct.unpack_from("<I", out, 7)
    assert word == 1000 | 0x80000000
    assert out[-4:] == b"\x00\x00\x00\x00"


def test_snappy_xerial_framing_and_raw_read() -> None:
    data = b"snappy " * 10_000  # > 32 KiB: two xerial blocks
    out = compress(CompressionType.SNAPPY, data)
    assert out[:16] == b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
    assert decompress(CompressionType.SNAPPY, out) == data
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(CompressionType.SNAPPY, raw) == data


def test_gzip_matches_java_header_and_reads_concatenated_members() -> None:
    out = compress(CompressionType.GZIP, b"abc")
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    assert gzip.decompress(out) == b"abc"
    assert decompress(CompressionType.GZIP, out + gzip.compress(b"def")) == b"abcdef"


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not CompressionType.NONE])
def test_decompression_bomb_is_capped(codec: CompressionType) -> None:
    bomb = compress(codec, bytes(5_000_000))
    with pytest.raises(DecompressionLimitError) as info:
        decompress(codec, bomb, max_size=1_000_000)
    assert info.value.limit == 1_000_000
    assert decompress(codec, bomb, max_size=5_000_000) == bytes(5_000_000)


def test_zstd_without_content_size_is_capped() -> None:
    zstandard = pytest.importorskip("zstandard")
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(bytes(3_000_000))
    with pytest.raises(DecompressionLimitError):
        decompress(CompressionType.ZSTD, frame, max_size=2_000_000)
    assert decompress(CompressionType.ZSTD, frame, max_size=3_000_000) == bytes(3_000_000)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not CompressionType.NONE])
def test_garbage_and_truncation_raise_compression_error(codec: CompressionType) -> None:
    good = compress(codec, b"some payload " * 50)
    for bad in (good[: len(good) // 2], b"\x00" * 20, good[:3]):
        with pytest.raises(CompressionError):
            decompress(codec, bad)


def test_zstd_refused_before_v2() -> None:
    with pytest.raises(UnsupportedCompressionError):
        compress(CompressionType.ZSTD, b"x", magic=1)
    with pytest.raises(UnsupportedCompressionError):
        decompress(CompressionType.ZSTD, b"x", magic=0)
    with pytest.raises(UnsupportedCompressionError):
        CompressionType.from_id(5)
    assert CompressionType.from_name("LZ4") is CompressionType.LZ4


@pytest.mark.parametrize("block_checksum", [False, True])
@pytest.mark.parametrize("content_checksum", [False, True])
def test_lz4_frames_of_the_reference_library(block_checksum: bool, content_checksum: bool) -> None:
    """Frames with block and content checksums, a content size and several blocks (the block sizes
    bound the output buffer, checksums included in the walk over the block headers)."""
    lz4_frame = pytest.importorskip("lz4.frame")
    data = b"".join(os.urandom(500) + bytes(3000) for _ in range(100))
    frame = lz4_frame.compress(data, block_size=lz4_frame.BLOCKSIZE_MAX64KB, block_linked=False,
                               block_checksum=block_checksum, content_checksum=content_checksum,
                               store_size=True)
    assert decompress(CompressionType.LZ4, frame) == data
    with pytest.raises(DecompressionLimitError):
        decompress(CompressionType.LZ4, frame, max_size=len(data) - 1)
