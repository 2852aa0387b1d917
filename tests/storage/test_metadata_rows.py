"""What one node's metadata rows say before a replay (``kraftwerk.storage.metadata_rows``): each copy's
reach, which copy of a cluster is read, and the feature-level history -- on real Kafka 4.3 files and
on copies of one generated log that lag, end in a torn append or were cleaned behind a snapshot."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kraftwerk.storage.metadata_log import METADATA_PARTITION_DIR, MetadataLogDir
from kraftwerk.storage.metadata_rows import (
    MetadataCopy,
    choose_source,
    copy_stats,
    feature_changes,
    is_torn_tail,
)
from kraftwerk.storage.metadata_scan import scan_metadata
from tests.conftest import golden_path
from tests.readiness.generator import _build_cluster, _Cluster, _write_copy


@pytest.fixture(scope="module")
def cluster() -> _Cluster:
    return _build_cluster(random.Random(5), 0, "ready", set())


def _levels_in_log(directory: Path) -> list[tuple[int, str, int]]:
    """(offset, feature, level) of every FeatureLevelRecord, walked with the storage reader."""
    return [(e.offset, str(e.record.value["name"]), int(e.record.value["featureLevel"]))
            for b in MetadataLogDir(directory).log_batches() for e in b.entries
            if getattr(e.record, "spec", None) is not None and e.record.spec.name == "FeatureLevelRecord"]


def test_kafkas_log(tmp_path: Path) -> None:
    rows = list(scan_metadata([golden_path("kafka-4.3-standalone")]))
    copy = copy_stats(rows)
    assert (copy.cluster_id, copy.node_id, copy.files, copy.records) == ("co8Lz5qWSCe6yEg4UfbcVw", 1, 2, 154)
    assert (copy.log_start_offset, copy.last_offset, copy.snapshot_end_offset, copy.errors) == (0, 149, 0, 0)
    changes = feature_changes(rows)
    # the log starts at 0: the bootstrap snapshot (end offset 0) adds nothing
    walked = _levels_in_log(golden_path("kafka-4.3-standalone"))
    assert [(c.offset, c.feature, c.to_level) for c in changes if c.feature != "kraft.version"] == walked
    assert [c.offset for c in changes] == sorted(c.offset for c in changes)


def test_copies_of_one_log(cluster: _Cluster, tmp_path: Path) -> None:
    count = len(cluster.log.batches)
    _write_copy(cluster, tmp_path / "full", 3000, count, snapshot_at=None, torn=False)
    _write_copy(cluster, tmp_path / "lagging", 1, count - 3, snapshot_at=None, torn=True)
    _write_copy(cluster, tmp_path / "cleaned", 3001, count, snapshot_at=count - 5, torn=False)
    full, lagging, cleaned = (copy_stats(scan_metadata([tmp_path / name]))
                              for name in ("full", "lagging", "cleaned"))
    assert lagging.torn_tails == 1 and lagging.errors == 0 and lagging.last_offset < full.last_offset
    torn = next(r for r in scan_metadata([tmp_path / "lagging"]) if is_torn_tail(r))
    assert torn.error is not None and torn.error.startswith("truncated bytes at position")
    assert cleaned.last_offset == full.last_offset and cleaned.log_start_offset > 0
    assert cleaned.snapshot_end_offset is not None and cleaned.snapshot_end_offset > cleaned.log_start_offset
    assert choose_source([lagging, cleaned, full]) is full  # same reach: the lower node id
    assert choose_source([lagging, cleaned]) is cleaned
    broken = MetadataCopy("c", 0, 1, 10, 1, 0, 0, 10**6, None)
    assert choose_source([broken, lagging]) is lagging  # a copy with unreadable rows comes last
    # the cleaned copy's history: the snapshot's levels at its end offset - 1, then the log after it
    walked = _levels_in_log(tmp_path / "full" / METADATA_PARTITION_DIR)
    full_history = feature_changes(scan_metadata([tmp_path / "full"]))
    assert [(c.offset, c.feature, c.to_level) for c in full_history] == walked
    end = cleaned.snapshot_end_offset
    history = feature_changes(scan_metadata([tmp_path / "cleaned"]))
    before = {f: lvl for o, f, lvl in walked if o < end}
    assert [(c.offset, c.feature, c.to_level) for c in history] == (
        [(end - 1, f, before[f]) for f in sorted(before)] + [w for w in walked if w[0] >= end])
