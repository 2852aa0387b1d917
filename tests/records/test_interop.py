"""kafka-python and aiokafka as peers: they read what we write, we read what they write."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from kraftwerk.records import CompressionType, RecordsBuilder, TimestampType, iter_batches
from tests.conftest import golden_path
from tests.records.helpers import peer_records

pytestmark = pytest.mark.interop


PEERS = ["kafka.record", "aiokafka.record.memory_records"]
SEGMENTS = [
    ("mixed-formats", "00000000000000000000.log"),
    ("kafka-4.3-standalone", "00000000000000000000.log"),
] + [("legacy", n, "00000000000000000000.log") for n in ("v0-none", "v0-gzip", "v1-none", "v1-gzip")]

CASES = [(m, c) for m in (0, 1) for c in (0, 1, 2, 3)] + [(2, c) for c in (0, 1, 2, 3, 4)]


def _ours(data: bytes) -> list[list[tuple[Any, ...]]]:
    return [[tuple(r) for r in b.records()] for b in iter_batches(data)]


def _norm(batches: list[list[tuple[Any, ...]]]) -> list[list[tuple[Any, ...]]]:
    # peers report a v0 timestamp as None where Kafka (and we) say -1
    return [[(o, -1 if t is None else t, k, v, h) for o, t, k, v, h in b] for b in batches]


def _aiokafka_cannot(peer: str, magic: int, codec: int) -> None:
    if peer.startswith("aiokafka") and magic == 0 and codec == 3:
        pytest.skip("aiokafka does not support lz4 with magic 0 at all")


def _sample(n: int, with_headers: bool) -> list[tuple[int, int, bytes | None, bytes | None, tuple[Any, ...]]]:
    rows = []
    for i in range(n):
        key = None if i % 3 == 0 else f"key-{i}".encode()
        value = None if i % 5 == 4 else (f"value-{i}-" * (i % 7 + 1)).encode()
        headers = (("h1", b"x"), ("h2", None)) if with_headers and i % 2 else ()
        rows.append((100 + i, 1700000000000 + i * 3, key, value, headers))
    return rows


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize("parts", SEGMENTS, ids=lambda p: "/".join(p[:-1]))
def test_golden_matches_peer_reader(peer: str, parts: tuple[str, ...]) -> None:
    check_peer_reads_alike(peer, golden_path(*parts).read_bytes())


def check_peer_reads_alike(peer: str, data: bytes) -> None:
    """The peer library reads the same records from a real segment as we do."""
    module = importlib.import_module(peer)
    theirs = peer_records(module, data)
    ours = _ours(data)
    batches = list(iter_batches(data))
    assert len(theirs) == len(ours)
    for t, o, b in zip(theirs, ours, batches, strict=True):
        if t is None:  # a batch the peer cannot read
            assert (b.magic, b.compression) == (0, CompressionType.LZ4)
            continue
        assert _norm([t]) == [o]


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_peers_read_what_we_write(peer: str, magic: int, codec: int) -> None:
    _aiokafka_cannot(peer, magic, codec)
    rows = _sample(40, with_headers=magic == 2)
    builder = RecordsBuilder(magic, CompressionType(codec), TimestampType.CREATE_TIME, rows[0][0])
    for o, t, k, v, h in rows:
        builder.append_with_offset(o, t, k, v, h)
    data = builder.build()
    got = _norm(peer_records(importlib.import_module(peer), data))
    flat = [r for b in got for r in b]
    expected = [(o, t if magic else -1, k, v, h) for o, t, k, v, h in rows]
    assert flat == expected
    assert _ours(data) == got


def _peer_build(peer: str, magic: int, codec: int, rows: list[Any]) -> bytes:
    pkg = "kafka.record" if peer.startswith("kafka") else "aiokafka.record"
    default_builder = importlib.import_module(f"{pkg}.default_records").DefaultRecordBatchBuilder
    legacy_builder = importlib.import_module(f"{pkg}.legacy_records").LegacyRecordBatchBuilder
    if magic == 2:
        b: Any = default_builder(2, codec, False, -1, -1, -1, 1 << 20)
        for o, t, k, v, h in rows:
            b.append(o, t, k, v, list(h))
    else:
        b = legacy_builder(magic, codec, 1 << 20)
        for o, t, k, v, _ in rows:
            b.append(o, t, k, v)
    return bytes(b.build())


@pytest.mark.parametrize("peer", PEERS)
@pytest.mark.parametrize(("magic", "codec"), CASES)
def test_we_read_what_peers_write(peer: str, magic: int, codec: int) -> None:
    _aiokafka_cannot(peer, magic, codec)
    rows = [(i, 1700000000000 + i, r[2], r[3], r[4]) for i, r in enumerate(_sample(30, magic == 2))]
    data = _peer_build(peer, magic, codec, rows)
    batches = list(iter_batches(data, validate=True))
    assert all(b.magic == magic for b in batches)
    assert {b.compression for b in batches} == {CompressionType(codec)}
    flat = [tuple(r) for b in batches for r in b.records()]
    assert flat == [(o, t if magic else -1, k, v, tuple(h)) for o, t, k, v, h in rows]
    assert flat == [r for b in _norm(peer_records(importlib.import_module(peer), data)) for r in b]
