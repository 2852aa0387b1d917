"""Hypothesis: round trips over all magics and codecs; garbage only ever raises RecordsError."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.records import (
    CompressionType,
    RecordsError,
    TimestampType,
    build_records,
    downconvert,
    iter_batches,
    scan_batches,
    upconvert,
)

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

blobs = st.one_of(st.none(), st.binary(max_size=300))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)


@st.composite
def batches(draw: Any) -> tuple[int, CompressionType, TimestampType, list[tuple[Any, ...]]]:
    magic = draw(st.sampled_from([0, 1, 2]))
    codecs = list(CompressionType) if magic == 2 else list(CompressionType)[:4]
    codec = draw(st.sampled_from(codecs))
    ts_type = TimestampType.CREATE_TIME
    start = draw(st.integers(0, 2**40))
    n = draw(st.integers(1, 12))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=n, max_size=n))
    rows = []
    offset = start
    for i in range(n):
        offset += gaps[i] if i else 0
        ts = draw(st.one_of(st.just(-1), st.integers(0, 2**45)))
        rows.append((offset, ts, draw(blobs), draw(blobs), tuple(draw(headers)) if magic == 2 else ()))
    return magic, codec, ts_type, rows


@SETTINGS
@given(batches())
def test_round_trip(spec: tuple[int, CompressionType, TimestampType, list[tuple[Any, ...]]]) -> None:
    magic, codec, ts_type, rows = spec
    data = build_records(rows, magic=magic, compression=codec, timestamp_type=ts_type)
    result = scan_batches(data, deep=True)
    assert result.tail is None and result.valid_end == len(data)
    got = [tuple(r) for b in result.batches for r in b.records()]
    expected = [(o, t if magic else -1, k, v, h) for o, t, k, v, h in rows]
    assert got == expected
    up = [tuple(r) for b in iter_batches(upconvert(data), validate=True) for r in b.records()]
    assert up == expected
    if codec is not CompressionType.ZSTD:
        down = [tuple(r)[:4] for b in iter_batches(downconvert(data, 1), validate=True) for r in b.records()]
        assert down == [e[:4] for e in expected]


def _exercise(data: bytes) -> None:
    try:
        for batch in iter_batches(data, max_decompressed_size=1 << 20):
            _ = (batch.is_valid, batch.last_sequence, batch.base_offset, batch.record_count)
            for _r in batch.records():
                pass
            if batch.magic < 2:
                batch.messages()
                batch.wrapper()
    except RecordsError:
        pass
    scanner_result = scan_batches(data, deep=True, max_decompressed_size=1 << 20)
    assert scanner_result.valid_end <= len(data)


@SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes_only_raise_records_errors(data: bytes) -> None:
    _exercise(data)


@st.composite
def mutated(draw: Any) -> bytes:
    magic, codec, ts_type, rows = draw(batches())
    data = bytearray(build_records(rows, magic=magic, compression=codec, timestamp_type=ts_type))
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(data) - 1))
        data[pos] ^= 1 << draw(st.integers(0, 7))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) if draw(st.booleans()) else bytes(data)


@SETTINGS
@given(mutated())
def test_bit_flips_and_truncation_only_raise_records_errors(data: bytes) -> None:
    _exercise(data)


@SETTINGS
@given(st.sampled_from([0, 1, 2]), st.sampled_from(list(CompressionType)), st.binary(max_size=300),
       st.integers(-2, 50))
def test_garbage_inside_valid_framing(magic: int, codec: CompressionType, inner: bytes, count: int) -> None:
    """Random content behind a correct header and CRC reaches the record decoders themselves."""
    from kraftwerk.records import compress, encode_legacy_message
    from kraftwerk.records.builder import write_v2_header

    if magic < 2 and codec is CompressionType.ZSTD:
        codec = CompressionType.GZIP
    payload = compress(codec, inner, magic=magic)
    if magic == 2:
        out = bytearray(61) + payload
        write_v2_header(out, 0, -1, int(codec), max(count, 0), 0, 0, -1, -1, -1, count)
        data = bytes(out)
    else:
        msg = encode_legacy_message(magic, int(codec), 0, None, payload)
        data = (5).to_bytes(8, "big") + len(msg).to_bytes(4, "big") + msg
    _exercise(data)


@settings(max_examples=500, deadline=None)
@given(magic=st.sampled_from([0, 1]), n=st.integers(0, 6), data=st.data())
def test_message_count_fold_equals_iter_spans(magic: int, n: int, data: st.DataObject) -> None:
    """``last_span`` (the wrapper count of a scan) is ``iter_spans`` folded: same result, same error."""
    from kraftwerk.records.batch import iter_spans as spans
    from kraftwerk.records.legacy import last_span

    blob = bytearray(build_records([(i, 1_000 + i, b"k", b"v" * i, ()) for i in range(n)], magic=magic)
                     if n else b"")
    starts = [p for p, _, _ in spans(bytes(blob))] + [len(blob)]
    for _ in range(data.draw(st.integers(0, 2))):  # a size or magic byte of some message
        at = data.draw(st.sampled_from(starts)) + data.draw(st.sampled_from([8, 9, 10, 11, 16]))
        if at < len(blob):
            blob[at] = data.draw(st.sampled_from([0, 1, 2, 3, 13, 14, 127, 128, 255]))
    blob = blob[:max(0, data.draw(st.sampled_from(starts)) + data.draw(st.integers(-18, 18)))]
    try:
        listed = [p for p, _, _ in spans(bytes(blob))]
        expected: object = (listed[-1] if listed else -1, len(listed))
    except RecordsError as exc:
        expected = (type(exc), str(exc))
    try:
        got: object = last_span(bytes(blob))
    except RecordsError as exc:
        got = (type(exc), str(exc))
    assert got == expected
