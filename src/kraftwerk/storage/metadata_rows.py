"""What one node's metadata rows say before any replay: how far its copy of the log reaches, which
copy of a cluster to replay, and the feature-level changes it records.

The rows are :class:`~kraftwerk.storage.metadata_scan.MetadataRow` values of one node (its log
segments and snapshots, in any order). Every node of a cluster holds a copy of the same metadata
log; a copy that reaches further has seen more of it, so a cluster is read from its furthest copy
(:func:`choose_source`). Spark groups the rows of the ``kafka-metadata`` source by node or by
cluster and calls these functions per group; ``--no-spark`` runs calls them on the rows of
:func:`~kraftwerk.storage.metadata_scan.scan_metadata`, so both give the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kraftwerk.storage.metadata_scan import SEGMENT, SNAPSHOT, TORN_TAIL, MetadataRow
from kraftwerk.versions.features import KRAFT_VERSION

FEATURE_RECORDS = ("FeatureLevelRecord", "KRaftVersionRecord")


def is_torn_tail(row: MetadataRow) -> bool:
    """A partial batch at the end of a file (an interrupted append): Kafka's readers ignore it."""
    return row.offset is None and row.error is not None and row.error.startswith(TORN_TAIL)


# ---------------------------------------------------------------------- copies

@dataclass(frozen=True, slots=True)
class MetadataCopy:
    """One node's copy of its cluster's metadata log, as far as its files show it.

    ``last_offset`` is the last record offset of its log segments, else the last offset its latest
    snapshot contains (end offset - 1), else None; ``errors`` counts rows that could not be read
    (torn tails apart).
    """

    cluster_id: str | None
    node_id: int | None
    files: int
    records: int
    errors: int
    torn_tails: int
    log_start_offset: int | None
    last_offset: int | None
    snapshot_end_offset: int | None

    def to_json(self) -> dict[str, Any]:
        return {"nodeId": self.node_id, "files": self.files, "records": self.records, "errors": self.errors,
                "tornTails": self.torn_tails, "logStartOffset": self.log_start_offset,
                "lastOffset": self.last_offset, "snapshotEndOffset": self.snapshot_end_offset}


def copy_stats(rows: Iterable[MetadataRow]) -> MetadataCopy:
    """Fold one node's rows into a :class:`MetadataCopy`."""
    cluster_id: str | None = None
    node_id: int | None = None
    files: set[str] = set()
    records = errors = torn = 0
    log_start: int | None = None
    last_log: int | None = None
    snapshot_end: int | None = None
    for row in rows:
        cluster_id, node_id = row.cluster_id, row.node_id
        files.add(row.file)
        if is_torn_tail(row):
            torn += 1
            continue
        if row.error is not None:
            errors += 1
            continue
        records += 1
        if row.file_kind == SEGMENT and row.offset is not None:
            log_start = row.offset if log_start is None else min(log_start, row.offset)
            last_log = row.offset if last_log is None else max(last_log, row.offset)
        elif row.file_kind == SNAPSHOT and row.snapshot_end_offset is not None:
            snapshot_end = max(snapshot_end or 0, row.snapshot_end_offset)
    last = last_log
    if snapshot_end is not None and snapshot_end > 0 and (last is None or snapshot_end - 1 > last):
        last = snapshot_end - 1
    return MetadataCopy(cluster_id, node_id, len(files), records, errors, torn, log_start, last, snapshot_end)


def choose_source(copies: Sequence[MetadataCopy]) -> MetadataCopy:
    """The copy to replay for a cluster: the one that reaches furthest, the lowest node id on a tie
    (copies with unreadable rows come last: a broken copy is read only when no other exists)."""
    if not copies:
        raise ValueError("no copies to choose from")

    def rank(c: MetadataCopy) -> tuple[int, int, int]:
        reach = -1 if c.last_offset is None else c.last_offset
        return (0 if c.errors else 1, reach, -(c.node_id if c.node_id is not None else 1 << 31))

    return max(copies, key=rank)


# ---------------------------------------------------------------------- feature history

@dataclass(frozen=True, slots=True)
class FeatureChange:
    """One feature-level change a node's metadata files record, in log order."""

    cluster_id: str | None
    node_id: int | None
    offset: int
    append_time_ms: int | None
    feature: str
    from_level: int | None
    to_level: int


def _level_of(row: MetadataRow) -> tuple[str, int]:
    fields = json.loads(row.fields or "{}")
    if row.record_type == "KRaftVersionRecord":
        return KRAFT_VERSION, int(fields["kRaftVersion"])
    return str(fields["name"]), int(fields["featureLevel"])


def feature_changes(rows: Iterable[MetadataRow]) -> list[FeatureChange]:
    """Every feature-level change of one node's metadata files, in log order.

    The changes are the FeatureLevelRecords (and KRaftVersionRecords: kraft.version lives in raft's
    control records) of the log segments. Where the node's log was cleaned behind a snapshot (it
    no longer starts at offset 0), the snapshot that covers the cleaned part -- the first one that
    ends at or after the log's first offset, else the last one -- gives the levels before (dated at
    its end offset - 1), and the log's changes follow from its end offset on; the bootstrap
    snapshot (end offset 0) holds no history. ``from_level`` is the previous level of the feature
    (None for the first one the files record).
    """
    usable = [r for r in rows if r.error is None]
    starts = [r.offset for r in usable if r.file_kind == SEGMENT and r.offset is not None]
    log_start = min(starts) if starts else None
    ends = sorted({r.snapshot_end_offset for r in usable
                   if r.file_kind == SNAPSHOT and r.snapshot_end_offset})
    start = None
    if ends and log_start != 0:
        start = next((e for e in ends if log_start is None or e >= log_start), ends[-1])
    events: list[tuple[int, str, int, MetadataRow]] = []
    for row in usable:
        if row.record_type not in FEATURE_RECORDS:
            continue
        if row.file_kind == SEGMENT and row.offset is not None and (start is None or row.offset >= start):
            offset = row.offset
        elif row.file_kind == SNAPSHOT and start is not None and row.snapshot_end_offset == start:
            offset = start - 1
        else:
            continue
        feature, level = _level_of(row)
        events.append((offset, feature, level, row))
    events.sort(key=lambda e: (e[0], e[1]))
    last: dict[str, int] = {}
    out = []
    for offset, feature, level, row in events:
        out.append(FeatureChange(row.cluster_id, row.node_id, offset, row.append_time_ms, feature,
                                 last.get(feature), level))
        last[feature] = level
    return out
