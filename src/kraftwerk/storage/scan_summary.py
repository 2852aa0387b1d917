"""A fleet scan's per-partition and fleet totals, folded from its batch rows (for reports and readiness)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kraftwerk.records.types import MAGIC_V2
from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR
from kraftwerk.storage.scan import BatchRow


@dataclass(slots=True)
class PartitionSummary:
    """Per topic-partition (and log dir) totals of a scan; ``legacy_*`` count v0/v1 batches only."""

    log_dir: str
    topic: str
    partition: int
    segments: set[int] = field(default_factory=set)
    batches: int = 0
    records: int = 0
    bytes: int = 0
    legacy_batches: int = 0
    legacy_records: int = 0
    legacy_bytes: int = 0
    v0_bytes: int = 0
    v1_bytes: int = 0
    legacy_first_offset: int | None = None
    legacy_last_offset: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    corrupt_batches: int = 0

    def add(self, row: BatchRow) -> None:
        self.segments.add(row.segment)
        self.bytes += row.batch_size
        if row.error is not None or not row.crc_valid:
            self.corrupt_batches += 1
        if row.magic is None:
            return
        self.batches += 1
        self.records += row.record_count or 0
        first = row.base_offset if row.base_offset is not None else row.last_offset
        if first is not None and (self.first_offset is None or first < self.first_offset):
            self.first_offset = first
        if row.last_offset is not None and (self.last_offset is None or row.last_offset > self.last_offset):
            self.last_offset = row.last_offset
        if row.magic < MAGIC_V2:
            self.legacy_batches += 1
            self.legacy_records += row.record_count or 0
            self.legacy_bytes += row.batch_size
            if row.magic == 0:
                self.v0_bytes += row.batch_size
            else:
                self.v1_bytes += row.batch_size
            if first is not None and (self.legacy_first_offset is None or first < self.legacy_first_offset):
                self.legacy_first_offset = first
            if row.last_offset is not None and (self.legacy_last_offset is None
                                                or row.last_offset > self.legacy_last_offset):
                self.legacy_last_offset = row.last_offset

    def to_json(self) -> dict[str, object]:
        return {
            "logDir": self.log_dir, "topic": self.topic, "partition": self.partition,
            "segments": len(self.segments), "batches": self.batches, "records": self.records,
            "bytes": self.bytes, "firstOffset": self.first_offset, "lastOffset": self.last_offset,
            "legacyBatches": self.legacy_batches, "legacyRecords": self.legacy_records,
            "legacyBytes": self.legacy_bytes, "v0Bytes": self.v0_bytes, "v1Bytes": self.v1_bytes,
            "legacyFirstOffset": self.legacy_first_offset, "legacyLastOffset": self.legacy_last_offset,
            "corruptBatches": self.corrupt_batches,
        }


def summarize(rows: Iterable[BatchRow]) -> list[PartitionSummary]:
    """Fold batch rows into per-partition summaries, sorted by log dir, topic, partition."""
    by_key: dict[tuple[str, str, int], PartitionSummary] = {}
    for row in rows:
        key = (row.log_dir, row.topic, row.partition)
        s = by_key.get(key)
        if s is None:
            s = by_key[key] = PartitionSummary(*key)
        s.add(row)
    return [by_key[k] for k in sorted(by_key)]


def totals(summaries: Iterable[PartitionSummary]) -> dict[str, int]:
    """Fleet totals of a list of partition summaries."""
    out = {"partitions": 0, "partitionsWithLegacy": 0, "segments": 0, "batches": 0, "records": 0, "bytes": 0,
           "legacyBatches": 0, "legacyRecords": 0, "legacyBytes": 0, "v0Bytes": 0, "v1Bytes": 0,
           "corruptBatches": 0}
    for s in summaries:
        out["partitions"] += 1
        out["partitionsWithLegacy"] += 1 if s.legacy_batches else 0
        out["segments"] += len(s.segments)
        out["batches"] += s.batches
        out["records"] += s.records
        out["bytes"] += s.bytes
        out["legacyBatches"] += s.legacy_batches
        out["legacyRecords"] += s.legacy_records
        out["legacyBytes"] += s.legacy_bytes
        out["v0Bytes"] += s.v0_bytes
        out["v1Bytes"] += s.v1_bytes
        out["corruptBatches"] += s.corrupt_batches
    return out


def is_metadata_partition(topic: str, partition: int) -> bool:
    return f"{topic}-{partition}" == METADATA_PARTITION_DIR
