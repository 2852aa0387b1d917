"""Record rows of real KRaft metadata files (``kraftwerk.storage.metadata_scan``), checked against
Kafka's own ``kafka-dump-log --cluster-metadata-decoder`` output of the same log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kraftwerk.storage.metadata_scan import (
    SEGMENT,
    SNAPSHOT,
    MetadataScanError,
    discover_metadata_files,
    iter_metadata_rows,
    plan_metadata_splits,
    scan_metadata,
)
from tests.conftest import golden_path
from tests.protocol.test_metadata_records import _dump_payloads

LOG = "00000000000000000000.log"


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """The 4.3 node's files laid out as a broker's log dir: meta.properties beside
    ``__cluster_metadata-0``."""
    source = golden_path("kafka-4.3-standalone")
    partition = tmp_path / "data" / "__cluster_metadata-0"
    partition.mkdir(parents=True)
    for name in (LOG, "00000000000000000000-0000000000.checkpoint", "quorum-state"):
        shutil.copy(source / name, partition / name)
    shutil.copy(source / "meta.properties", tmp_path / "data" / "meta.properties")
    return tmp_path / "data"


def test_rows_match_kafkas_dump(log_dir: Path) -> None:
    rows = list(scan_metadata([log_dir]))
    segment = [r for r in rows if r.file_kind == SEGMENT]
    assert [r.offset for r in segment] == list(range(150))
    assert {(r.cluster_id, r.node_id) for r in rows} == {("co8Lz5qWSCe6yEg4UfbcVw", 1)}
    assert all(r.error is None for r in rows)
    dump = _dump_payloads()
    assert len(dump) > 100
    names = {"payload": None, "LeaderChange": "LeaderChangeMessage", "KRaftVersion": "KRaftVersionRecord",
             "KRaftVoters": "VotersRecord"}
    for row in segment:
        if row.offset not in dump:
            continue
        kind, kafka = dump[row.offset]
        ours = json.loads(row.fields or "{}")
        if kind == "payload":
            assert (row.is_control, row.record_version) == (False, kafka["version"])
            assert row.record_type is not None and kafka["type"] == _snake(row.record_type)
            kafka = kafka["data"]
        else:
            assert row.is_control and row.record_type == names[kind]
        assert {k: ours[k] for k in kafka} == kafka, row.offset  # Kafka leaves out default tagged fields
    snapshot = [r for r in rows if r.file_kind == SNAPSHOT]
    assert {r.snapshot_end_offset for r in snapshot} == {0}
    assert [r.record_type for r in snapshot] == ["SnapshotHeaderRecord", "KRaftVersionRecord", "VotersRecord",
                                                 "SnapshotFooterRecord"]


def _snake(name: str) -> str:
    import re

    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()


def test_splits_cut_at_batch_boundaries(log_dir: Path) -> None:
    (segment,) = [f for f in discover_metadata_files([log_dir]) if f.kind == SEGMENT]
    splits = plan_metadata_splits(segment, 1000)
    assert len(splits) > 5
    assert [s.start for s in splits[1:]] == [s.end for s in splits[:-1]] and splits[-1].end == segment.size
    rows = [r for s in splits for r in iter_metadata_rows(s)]
    assert rows == list(iter_metadata_rows(plan_metadata_splits(segment)[0]))


def test_damage_is_a_row_not_a_failure(log_dir: Path, tmp_path: Path) -> None:
    data = (log_dir / "__cluster_metadata-0" / LOG).read_bytes()
    torn = tmp_path / "torn" / LOG
    torn.parent.mkdir()
    torn.write_bytes(data[:-20])
    rows = list(scan_metadata([torn]))
    assert rows[-1].error is not None and rows[-1].error.startswith("truncated bytes at position ")
    assert [r.offset for r in rows[:-1]] == list(range(149))[: len(rows) - 1]
    with pytest.raises(MetadataScanError, match="does not exist"):
        list(scan_metadata([tmp_path / "nowhere"]))
    with pytest.raises(MetadataScanError, match="is not a metadata log segment or snapshot"):
        list(scan_metadata([log_dir / "meta.properties"]))
