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


def peer_records(module: Any, data: bytes) -> list[list[tuple[Any, ...]]]:
    """Per batch, the (offset, timestamp, key, value, headers) a kafka-python-like reader yields."""
    mr = module.MemoryRecords(bytes(data))
    out: list[list[tuple[Any, ...]]] = []
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        recs = []
        for r in batch:
            key = None if r.key is None else bytes(r.key)
            value = None if r.value is None else bytes(r.value)
            headers = tuple((k, None if v is None else bytes(v)) for k, v in (getattr(r, "headers", None) or ()))
            recs.append((r.offset, r.timestamp, key, value, headers))
        out.append(recs)
    return out
