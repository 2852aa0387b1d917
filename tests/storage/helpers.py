"""Builders of synthetic segments for the storage tests."""

from __future__ import annotations

import random
from pathlib import Path

from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.records.types import CompressionType


def make_batches(count: int, *, base_offset: int = 0, seed: int = 0, records_per_batch: int = 3,
                 value_size: int = 400, start_ts: int = 1_700_000_000_000) -> list[bytes]:
    """``count`` v2 batches with consecutive offsets and growing timestamps."""
    rnd = random.Random(seed)
    out = []
    offset = base_offset
    for i in range(count):
        codec = CompressionType.GZIP if i % 5 == 4 else CompressionType.NONE
        b = RecordsBuilder(compression=codec, base_offset=offset, partition_leader_epoch=i // 10)
        for j in range(records_per_batch):
            b.append(start_ts + i * 10 + j, f"k{offset + j}".encode(), rnd.randbytes(value_size))
        out.append(b.build())
        offset += records_per_batch
    return out


def write_segment(directory: Path, base_offset: int, batches: list[bytes]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    return path
