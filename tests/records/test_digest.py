"""The content digest used to verify conversions: canonical, split-independent, sensitive."""

from __future__ import annotations

from typing import Any

import pytest

from kraftwerk.records import CompressionType, CorruptRecordError, build_records, iter_batches
from kraftwerk.records.digest import ContentDigest, digest_v2_batches

ROWS: list[Any] = [(5, 100, b"k", b"v", ()), (6, -1, None, None, ()),
                   (7, 9, b"", b"x" * 300, (("h", b"1"), ("g", None)))]


def _digest(feed: list[Any], *, one_by_one: bool) -> bytes:
    d = ContentDigest()
    if one_by_one:
        for r in feed:
            if r[4]:
                d.records([r])
            else:
                d.record(r[0], r[1], None if r[2] is None else memoryview(r[2]), r[3])
    else:
        d.records(feed)
    return d.digest()


def test_the_digest_does_not_depend_on_how_records_are_fed() -> None:
    assert _digest(ROWS, one_by_one=True) == _digest(ROWS, one_by_one=False)
    assert _digest(ROWS * 3000, one_by_one=True) == _digest(ROWS * 3000, one_by_one=False)  # flushes


@pytest.mark.parametrize("change", [
    (5, 100, b"k", b"w", ()), (5, 101, b"k", b"v", ()), (4, 100, b"k", b"v", ()), (5, 100, None, b"v", ()),
    (5, 100, b"", b"v", ()), (5, 100, b"k", b"v", (("h", None),)),
])
def test_every_field_changes_the_digest(change: Any) -> None:
    assert _digest([change, *ROWS[1:]], one_by_one=False) != _digest(ROWS, one_by_one=False)


def test_digest_v2_batches_decodes_or_copies_and_checks_crcs() -> None:
    data = b"".join(build_records([r], base_offset=r[0]) for r in ROWS)
    data += build_records(ROWS, compression=CompressionType.LZ4, base_offset=5)
    expected = ContentDigest()
    for b in iter_batches(data):
        expected.records(b.records())
    got = ContentDigest()
    assert digest_v2_batches(data, got) == (4, len(data))
    assert got.digest() == expected.digest() and got.record_count == 6
    copied = ContentDigest()
    digest_v2_batches(data, copied, b"\x01")  # the first batch as raw bytes: another digest
    assert copied.digest() != expected.digest() and copied.record_count == 6
    bad = bytearray(data)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="is corrupt"):
        digest_v2_batches(bytes(bad), ContentDigest())
    with pytest.raises(CorruptRecordError, match="has magic 1"):
        digest_v2_batches(build_records(ROWS[:2], magic=1), ContentDigest())
