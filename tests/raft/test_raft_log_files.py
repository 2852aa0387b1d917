"""The file-backed metadata log: Kafka's layout, restart, torn tails, cleaning, dump-log."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from kraftwerk.protocol import registry
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.raft import CommittedBatch, RaftConfig, RaftNode, Role, SnapshotLoad
from kraftwerk.runtime.raft_log_files import open_metadata_log
from kraftwerk.storage import read_leader_epoch_checkpoint, read_partition_metadata, read_quorum_state

FEATURE = registry.lookup_record("FeatureLevelRecord")


def record(level: int) -> bytes:
    return encode_metadata_record(FEATURE, 0, {"name": "metadata.version", "featureLevel": level})


def test_layout_restart_cleaning_and_dump_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log, store = open_metadata_log(tmp_path, (1,), segment_bytes=500)
    n = RaftNode(RaftConfig(1, (1,)), log, store, now_ms=1000, seed=1)
    for i in range(20):
        n.append([record(i)], 1000 + i)
        n.poll(1100 + i)
    committed = n.drain_committed()
    assert sum(len(c.records) for c in committed if isinstance(c, CommittedBatch) and not c.is_control) == 20
    sid = n.create_snapshot(12, [record(99)], 2000)
    log.close()
    d = tmp_path / "__cluster_metadata-0"
    names = sorted(p.name for p in d.iterdir())
    assert sid.file_name in names and "00000000000000000000.log" not in names
    assert {"partition.metadata", "quorum-state", "leader-epoch-checkpoint"} <= set(names)
    assert str(read_partition_metadata(d / "partition.metadata")) == "00000000-0000-0000-0000-000000000001"
    qs = read_quorum_state(d / "quorum-state")
    assert (qs.leader_id, qs.leader_epoch, qs.current_voters) == (1, 1, (1,))
    assert [
        (e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(d / "leader-epoch-checkpoint")
    ] == [(1, 12)]
    # a torn write at the end of the active segment is cut on open
    active = sorted(d.glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x15\x00\x00\x00\x40garbage")
    log2, store2 = open_metadata_log(tmp_path, (1,), segment_bytes=500)
    assert log2.start_offset == 12 and log2.end_offset == 21
    assert log2.read(21, 1 << 20) == b"" and log2.read(20, 1 << 20)  # at the end: no batch
    n2 = RaftNode(RaftConfig(1, (1,)), log2, store2, now_ms=5000, seed=2)
    assert n2.role is Role.RESIGNED and n2.epoch == 1  # a restarted leader never comes back as leader
    n2.poll(n2.next_deadline_ms())
    assert n2.role is Role.LEADER and n2.epoch == 2
    n2.poll(n2.next_deadline_ms())
    items = n2.drain_committed()
    assert (
        isinstance(items[0], SnapshotLoad) and items[0].end_offset == 12 and items[0].records == (record(99),)
    )
    log2.close()
    files = ",".join(str(p) for p in sorted(d.glob("*.log")) + sorted(d.glob("*.checkpoint")))
    assert main(["dump-log", "--cluster-metadata-decoder", "--files", files]) == 0
    out = capsys.readouterr().out
    assert "FEATURE_LEVEL_RECORD" in out and "LeaderChange" in out and "SnapshotHeader" in out


def test_quorum_state_data_version_follows_the_quorum_kind(tmp_path: Path) -> None:
    """Kafka writes data_version 0 (with currentVoters) for a static quorum, 1 for a dynamic one."""
    from kraftwerk.raft import ElectionState

    _, static = open_metadata_log(tmp_path / "static", (1, 2, 3))
    static.write(ElectionState(4, 2, None))
    _, dynamic = open_metadata_log(tmp_path / "dynamic", ())
    dynamic.write(ElectionState(4, 2, None))
    path = "__cluster_metadata-0/quorum-state"
    assert (tmp_path / "static" / path).read_bytes() == (
        b'{"clusterId":"","leaderId":2,"leaderEpoch":4,"votedId":-1,"appliedOffset":0,'
        b'"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}')
    assert (tmp_path / "dynamic" / path).read_bytes() == (
        b'{"leaderId":2,"leaderEpoch":4,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
        b'"data_version":1}')
    assert read_quorum_state(tmp_path / "dynamic" / path).leader_epoch == 4
    assert dynamic.read() == static.read() == ElectionState(4, 2, None)
