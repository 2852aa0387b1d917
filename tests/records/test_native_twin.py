"""The compiled twin of the records hot loops (``_cbatch``) against its pure reference, input for input.

Same Hypothesis strategies as the pure fuzz tests (``test_fuzz.batches``), then damage: flipped bits,
cuts, overwritten varint bytes, oversized lengths. Both sides must yield the same records and stop
with the same error type and text, never anything else.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.records import CompressionType, RecordsError, build_records, iter_spans
from kraftwerk.records.batch import _decode_v2_py
from kraftwerk.records.compression import _fill_bytes_py
from kraftwerk.records.convert import _upconvert_message_py
from kraftwerk.records.types import RECORD_BATCH_OVERHEAD, Record
from tests.records.test_fuzz import batches

try:
    cbatch: Any = importlib.import_module("kraftwerk.records._cbatch")
except ImportError:  # tests/test_native.py fails for a missing extension; no need to fail here too
    pytestmark = pytest.mark.skip(reason="the compiled extension kraftwerk.records._cbatch is not built")

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(make: Callable[[], Iterable[Record]]) -> tuple[list[tuple[Any, ...]], object]:
    got: list[tuple[Any, ...]] = []
    try:
        for record in make():
            assert type(record) is Record
            got.append(tuple(record))
    except RecordsError as exc:
        return got, (type(exc), str(exc))
    return got, None


@st.composite
def v2_sections(draw: Any) -> tuple[bytes, int, int, int, int | None]:
    """(records section, declared count, base offset, base timestamp, log-append time), damaged or not."""
    _, _, ts_type, rows = draw(batches())
    rows = [(o, max(t, 0), k, v, h) for o, t, k, v, h in rows]
    batch = build_records(rows, magic=2, compression=CompressionType.NONE, timestamp_type=ts_type)
    section = bytearray(batch[RECORD_BATCH_OVERHEAD:])
    count = len(rows)
    damage = draw(st.sampled_from(["none", "flip", "byte", "cut", "count", "random"]))
    if damage == "flip" and section:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(section) - 1))
            section[at] ^= 1 << draw(st.integers(0, 7))
    elif damage == "byte" and section:  # an overlong, oversized or negative varint byte somewhere
        at = draw(st.integers(0, len(section) - 1))
        section[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFE, 0xFF]))
    elif damage == "cut":
        section = section[:draw(st.integers(0, len(section)))]
    elif damage == "count":
        count = draw(st.integers(0, count + 3))
    elif damage == "random":
        section = bytearray(draw(st.binary(max_size=120)))
        count = draw(st.integers(0, 12))
    base_offset = draw(st.sampled_from([0, rows[0][0], 2**63 - 1, -(2**63)]))
    base_ts = draw(st.sampled_from([0, 1_700_000_000_000, 2**63 - 1, -(2**63)]))
    lat = draw(st.sampled_from([None, None, 1_700_000_000_123]))
    return bytes(section), count, base_offset, base_ts, lat


@SETTINGS
@given(v2_sections(), st.sampled_from([bytes, memoryview]))
def test_v2_decode_matches_the_pure_decoder(case: tuple[bytes, int, int, int, int | None],
                                            kind: Callable[[bytes], Any]) -> None:
    section, count, base_offset, base_ts, lat = case
    buf = kind(section)
    expected = _outcome(lambda: _decode_v2_py(buf, count, base_offset, base_ts, lat, 7))
    assert _outcome(lambda: cbatch.decode_v2(buf, count, base_offset, base_ts, lat, 7)) == expected


def test_v2_decode_releases_the_buffer_when_done() -> None:
    """A finished (or failed) iterator holds no export: the bytearray behind it can be resized."""
    section = bytearray(build_records([(0, 5, b"k", b"v", ())])[RECORD_BATCH_OVERHEAD:])
    records = cbatch.decode_v2(section, 1, 0, 0, None, 0)
    with pytest.raises(BufferError):
        section.extend(b"x")
    assert [r.value for r in records] == [b"v"]
    section.extend(b"x")
    failed = cbatch.decode_v2(section, 1, 0, 0, None, 0)
    with pytest.raises(RecordsError, match="records still remaining"):
        list(failed)
    section.extend(b"y")


@st.composite
def legacy_messages(draw: Any) -> tuple[bytes, int, int, int]:
    """(buffer, position, size, magic) of one v0/v1 message, maybe a wrapper, damaged or not."""
    magic, codec, ts_type, rows = draw(batches().filter(lambda spec: spec[0] < 2))
    data = bytearray(build_records(rows, magic=magic, compression=codec, timestamp_type=ts_type))
    spans = list(iter_spans(bytes(data)))
    pos, size, _ = draw(st.sampled_from(spans))
    damage = draw(st.sampled_from(["none", "flip", "byte", "size"]))
    if damage == "flip":
        at = pos + draw(st.integers(0, size - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif damage == "byte":  # a key or value length, the attributes or the magic
        at = pos + draw(st.sampled_from([16, 17, 18, 21, 25, 26, 29, 30, 33]))
        if at < pos + size:
            data[at] = draw(st.sampled_from([0x00, 0x07, 0x7F, 0x80, 0xFF]))
    elif damage == "size":
        size = draw(st.integers(0, size))
    return bytes(data), pos, size, magic


def _converted(convert: Callable[[], bytes | None]) -> object:
    try:
        return convert()
    except RecordsError as exc:
        return type(exc), str(exc)


@SETTINGS
@given(legacy_messages(), st.booleans())
def test_upconversion_matches_the_pure_converter(case: tuple[bytes, int, int, int], check_crc: bool) -> None:
    data, pos, size, magic = case
    view = memoryview(data)
    expected = _converted(lambda: _upconvert_message_py(view, pos, size, magic, check_crc))
    assert _converted(lambda: cbatch.upconvert_message(view, pos, size, magic, check_crc)) == expected


def test_upconversion_refuses_a_span_outside_the_buffer() -> None:
    with pytest.raises(ValueError, match="outside"):
        cbatch.upconvert_message(b"\x00" * 40, 10, 40, 1, True)


@pytest.mark.parametrize("fill", [_fill_bytes_py, "compiled"])
def test_fill_bytes_returns_what_was_written_and_releases_the_view(fill: Any) -> None:
    fill = cbatch.fill_bytes if fill == "compiled" else fill
    kept: list[memoryview] = []

    def write(view: memoryview, n: int) -> int:
        kept.append(view)
        view[:n] = b"z" * n
        return n

    assert fill(8, lambda v: write(v, 3)) == b"zzz"
    assert fill(8, lambda v: write(v, 8)) == b"z" * 8
    assert fill(0, lambda v: write(v, 0)) == b""
    with pytest.raises(ValueError, match="wrote 9 bytes"):
        fill(8, lambda v: 9)
    with pytest.raises(KeyError):
        fill(8, lambda v: {}["raised inside"])
    if fill is cbatch.fill_bytes:  # the result is no longer writable through a view kept by the writer
        with pytest.raises(ValueError):
            kept[0][0] = 1
