"""Shared test helpers: parse kafka-dump-log output, read peers' records."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_KV = re.compile(r"(\w+): (\[[^\]]*\]|\S+)")


@dataclass
class DumpBatch:
    fields: dict[str, str]
    records: list[dict[str, str]] = field(default_factory=list)


def parse_dump(path: Path) -> list[DumpBatch]:
    """Batches and records of ``kafka-dump-log.sh --deep-iteration --print-data-log`` output."""
    batches: list[DumpBatch] = []
    for line in path.read_text().splitlines():
        if line.startswith("| "):
            body = line[2:]
            rec: dict[str, str] = {}
            # key and payload come last and may not be split on spaces blindly
            head, sep, payload = body.partition(" payload: ")
            head, ksep, key = head.partition(" key: ")
            for k, v in _KV.findall(head):
                rec[k] = v
            if ksep:
                rec["key"] = key
            if sep:
                rec["payload"] = payload
            batches[-1].records.append(rec)
        elif line.startswith(("offset: ", "baseOffset: ")):
            batches.append(DumpBatch(dict(_KV.findall(line))))
    return batches


def split_batches(data: bytes) -> list[bytes]:
    """Split a buffer at batch boundaries (offset int64, size int32, size bytes) independently of us."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        out.append(bytes(data[pos:pos + 12 + size]))
        pos += 12 + size
    return out


def peer_records(module: Any, data: bytes) -> list[list[tuple[Any, ...]]]:
    """Per batch, the (offset, timestamp, key, value, headers) a kafka-python-like reader yields."""
    out: list[list[tuple[Any, ...]]] = []
    for chunk in split_batches(data):
        # one reader per batch: aiokafka's C reader is left in a bad state after an error
        recs: list[tuple[Any, ...]] | None = []
        try:
            mr = module.MemoryRecords(chunk)
            batch = mr.next_batch()
            for r in batch:
                key = None if r.key is None else bytes(r.key)
                value = None if r.value is None else bytes(r.value)
                hdrs = getattr(r, "headers", None) or ()
                headers = tuple((k, None if v is None else bytes(v)) for k, v in hdrs)
                assert recs is not None
                recs.append((r.offset, r.timestamp, key, value, headers))
        except Exception as e:  # aiokafka cannot read magic 0 + lz4 at all
            if "LZ4 is not supported" not in str(e):
                raise
            recs = None
        out.append(recs)  # type: ignore[arg-type]
    return out
