"""A generated fleet of broker log dirs with mixed message formats (the pipeline tests' input).

Each partition's segments are built from "chunks" (runs of batches) through ``RecordsBuilder``:
v0/v1 uncompressed messages (one batch each), v0/v1 compressed wrappers (gzip, snappy, lz4;
CreateTime and LogAppendTime), v2 batches with every codec and headers, v2 transactional batches
and their COMMIT/ABORT control batches. The generator keeps its own books (batches, records, bytes
per format, the consumer-visible record sequence), independent of the code under test.
"""

from __future__ import annotations

import random
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kraftwerk.records import CompressionType, ControlRecordType, RecordsBuilder, TimestampType
from tests.conftest import KAFKA_DATA
from tests.records.helpers import peer_records, split_batches

Rec = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]
LEGACY_CODECS = (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4)
GOLDEN_LEGACY = ("v0-none", "v0-gzip", "v1-none", "v1-gzip")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


@dataclass
class PartitionBooks:
    """What the generator wrote into one topic-partition."""

    log_dir: Path
    topic: str
    partition: int
    records: list[Rec] = field(default_factory=list)
    batches: int = 0
    legacy_batches: int = 0
    legacy_records: int = 0
    legacy_bytes: int = 0
    segments: dict[int, bytes] = field(default_factory=dict)
    codecs: set[tuple[int, str]] = field(default_factory=set)
    control_batches: int = 0

    @property
    def directory(self) -> Path:
        return self.log_dir / f"{self.topic}-{self.partition}"

    @property
    def has_legacy(self) -> bool:
        return self.legacy_batches > 0


@dataclass
class Fleet:
    log_dirs: list[Path]
    partitions: list[PartitionBooks]

    def books(self, log_dir: str | Path, topic: str, partition: int) -> PartitionBooks:
        for b in self.partitions:
            if str(b.log_dir) == str(log_dir) and b.topic == topic and b.partition == partition:
                return b
        raise KeyError((log_dir, topic, partition))


class _Writer:
    def __init__(self, books: PartitionBooks, rnd: random.Random) -> None:
        self.books = books
        self.rnd = rnd
        self.offset = rnd.choice((0, 0, 1000))
        self.ts = 1_700_000_000_000 + rnd.randrange(10**6)
        self.pid = 5000 + rnd.randrange(1000)

    def _sample(self, i: int, headers: bool) -> tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]:  # noqa: E501
        key = None if self.rnd.random() < 0.2 else f"k{self.offset + i}".encode()
        value = None if self.rnd.random() < 0.1 else self.rnd.randbytes(self.rnd.randrange(0, 300))
        hdrs: tuple[tuple[str, bytes | None], ...] = ()
        if headers and self.rnd.random() < 0.5:
            hdrs = (("trace", self.rnd.randbytes(8)), ("empty", None))
        return key, value, hdrs

    def chunk(self, magic: int, codec: CompressionType, n: int, *, log_append: bool = False,
              transactional: bool = False) -> tuple[int, bytes]:
        ts_type = TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME
        lat = self.ts + 77 if log_append else -1
        b = RecordsBuilder(magic, codec, ts_type, self.offset, log_append_time=lat,
                           producer_id=self.pid if transactional else -1,
                           producer_epoch=0 if transactional else -1,
                           base_sequence=0 if transactional else -1, is_transactional=transactional)
        for i in range(n):
            key, value, hdrs = self._sample(i, magic == 2)
            ts = self.ts + self.rnd.randrange(-5, 50)
            b.append_with_offset(self.offset + i, ts, key, value, hdrs)
            seen_ts = -1 if magic == 0 else (lat if log_append else ts)
            self.books.records.append((self.offset + i, seen_ts, key, value, hdrs))
        data = b.build()
        start = self.offset
        self.offset += n
        self.ts += 100
        nb = len(split_batches(data))
        self.books.batches += nb
        self.books.codecs.add((magic, codec.kafka_name))
        if magic < 2:
            self.books.legacy_batches += nb
            self.books.legacy_records += n
            self.books.legacy_bytes += len(data)
        return start, data

    def control(self, commit: bool) -> tuple[int, bytes]:
        b = RecordsBuilder(2, CompressionType.NONE, TimestampType.CREATE_TIME, self.offset,
                           producer_id=self.pid, producer_epoch=0, is_transactional=True, is_control=True)
        b.append_end_txn_marker(self.ts, commit, 3)
        kind = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        key = _CONTROL_KEY.pack(0, int(kind))
        self.books.records.append((self.offset, self.ts, key, _END_TXN.pack(0, 3), ()))
        self.offset += 1
        self.books.batches += 1
        self.books.control_batches += 1
        return self.offset - 1, b.build()


def _partition_chunks(w: _Writer, style: str) -> list[tuple[int, bytes]]:
    rnd = w.rnd
    out: list[tuple[int, bytes]] = []
    if style in ("legacy", "mixed"):
        for _ in range(rnd.randrange(2, 5)):
            magic = rnd.choice((0, 1))
            if rnd.random() < 0.4:
                out.append(w.chunk(magic, CompressionType.NONE, rnd.randrange(1, 4),
                                   log_append=magic == 1 and rnd.random() < 0.3))
            else:
                out.append(w.chunk(magic, rnd.choice(LEGACY_CODECS), rnd.randrange(1, 6),
                                   log_append=magic == 1 and rnd.random() < 0.3))
    if style in ("v2", "mixed"):
        for _ in range(rnd.randrange(1, 4)):
            out.append(w.chunk(2, rnd.choice(tuple(CompressionType)), rnd.randrange(1, 6),
                               log_append=rnd.random() < 0.2))
        if rnd.random() < 0.5:
            out.append(w.chunk(2, rnd.choice(tuple(CompressionType)), 2, transactional=True))
            out.append(w.control(commit=rnd.random() < 0.5))
    return out


def build_fleet(root: Path, *, log_dirs: int = 3, partitions_per_dir: int = 32, seed: int = 7,
                golden: bool = True) -> Fleet:
    """``log_dirs`` broker dirs of ``partitions_per_dir`` partitions each, plus (``golden``) one
    partition per legacy segment real Kafka wrote (``tests/data/kafka/legacy``) in the first dir."""
    rnd = random.Random(seed)
    dirs = [root / f"broker-{i}" / "data" for i in range(log_dirs)]
    books_all: list[PartitionBooks] = []
    topics = ("orders", "clicks", "audit-log")
    for d_i, d in enumerate(dirs):
        d.mkdir(parents=True)
        (d / "meta.properties").write_text(f"node.id={d_i}\nversion=1\n")
        for p_i in range(partitions_per_dir):
            topic = topics[p_i % len(topics)]
            books = PartitionBooks(d, topic, d_i * partitions_per_dir + p_i)
            books.directory.mkdir()
            w = _Writer(books, rnd)
            style = ("legacy", "mixed", "v2", "mixed")[p_i % 4]
            chunks = _partition_chunks(w, style)
            # one or two segments, cut at a chunk boundary
            cut = rnd.randrange(1, len(chunks)) if len(chunks) > 2 and rnd.random() < 0.5 else len(chunks)
            for part in (chunks[:cut], chunks[cut:]):
                if part:
                    base = part[0][0]
                    books.segments[base] = b"".join(c for _, c in part)
                    (books.directory / f"{base:020d}.log").write_bytes(books.segments[base])
            books_all.append(books)
    if golden:
        kafka_record = __import__("kafka.record", fromlist=["MemoryRecords"])
        for i, name in enumerate(GOLDEN_LEGACY):
            src = KAFKA_DATA / "legacy" / name / "00000000000000000000.log"
            books = PartitionBooks(dirs[0], f"golden-{name}", i)
            books.directory.mkdir()
            shutil.copyfile(src, books.directory / src.name)
            data = src.read_bytes()
            books.segments[0] = data
            recs = [r for b in peer_records(kafka_record, data) for r in b]
            books.records = [(o, -1 if t is None else t, k, v, tuple(h)) for o, t, k, v, h in recs]
            nb = len(split_batches(data))
            books.batches = books.legacy_batches = nb
            books.legacy_records = len(recs)
            books.legacy_bytes = len(data)
            books_all.append(books)
    return Fleet(dirs, books_all)


PEERS = ("kafka.record", "aiokafka.record.memory_records")


def read_partition_with_peer(peer: str, directory: Path) -> tuple[list[Rec], set[int]]:
    """(offset, timestamp, key, value, headers) of every record of a partition dir read by a peer
    library, and the set of magic bytes of its batches."""
    import importlib

    module = importlib.import_module(peer)
    records: list[Rec] = []
    magics: set[int] = set()
    for seg in sorted(directory.glob("*.log")):
        data = seg.read_bytes()
        magics |= {chunk[16] for chunk in split_batches(data)}
        for batch in peer_records(module, data):
            assert batch is not None, f"{peer} cannot read a batch of {seg}"
            records += [(o, -1 if t is None else t, k, v, tuple(h)) for o, t, k, v, h in batch]
    return records, magics
