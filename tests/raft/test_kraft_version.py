"""kraft.version 0 -> 1 on a static quorum (KIP-853 follow-up): the leader's control batch, its
replication, and its survival across restarts and snapshots."""

from __future__ import annotations

import uuid

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import KRAFT_VERSION_RECORD, VOTERS_RECORD, ControlRecordType
from kraftwerk.raft import (
    CommittedBatch,
    ElectionState,
    KRaftVersionError,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    SendRequest,
    SnapshotId,
    VoterEndpoint,
)
from kraftwerk.records import RecordsBuilder
from kraftwerk.records.batch import iter_batches
from kraftwerk.sim.cluster import Cluster

ENDPOINTS = (VoterEndpoint(1, "CONTROLLER", "localhost", 9093),)


def single(log: MemoryRaftLog | None = None, store: MemoryQuorumStateStore | None = None) -> RaftNode:
    cfg = RaftConfig(1, (1,), voter_endpoints=ENDPOINTS)
    return RaftNode(cfg, log or MemoryRaftLog(), store or MemoryQuorumStateStore(), now_ms=0, seed=3)


def commit_all(n: RaftNode, now: int) -> list[CommittedBatch]:
    n.poll(now + n.config.append_linger_ms)
    return [b for b in n.drain_committed() if isinstance(b, CommittedBatch)]


def test_upgrade_writes_the_control_batch_and_is_idempotent() -> None:
    n = single()
    commit_all(n, 0)
    assert n.kraft_version == 0
    assert n.upgrade_kraft_version(1, 10, validate_only=True) is True
    assert n.kraft_version == 0 and n.log.end_offset == 1  # a dry run writes nothing
    assert n.upgrade_kraft_version(1, 10) is True
    assert n.kraft_version == 1 and n.kraft_version_at(n.high_watermark or 0) == 0  # not committed yet
    assert n.upgrade_kraft_version(1, 11) is False  # same level: no-op, nothing appended
    batches = commit_all(n, 10)
    assert n.kraft_version_at(n.high_watermark or 0) == 1
    (batch,) = batches
    assert batch.is_control
    assert batch.control_types == (int(ControlRecordType.KRAFT_VERSION), int(ControlRecordType.KRAFT_VOTERS))
    assert codec.decode(KRAFT_VERSION_RECORD, 0, batch.records[0])["kRaftVersion"] == 1
    voters = codec.decode(VOTERS_RECORD, 0, batch.records[1])["voters"]
    assert voters == [
        {
            "voterId": 1,
            "voterDirectoryId": uuid.UUID(int=0),
            "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
            "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
        }
    ]
    with pytest.raises(KRaftVersionError, match="downgrade"):
        n.upgrade_kraft_version(0, 20)
    with pytest.raises(KRaftVersionError, match="from version 1 to 2"):
        n.upgrade_kraft_version(2, 20)


def test_only_the_leader_upgrades() -> None:
    n = RaftNode(RaftConfig(2, (1, 2, 3)), MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=0, seed=1)
    with pytest.raises(NotLeaderError):
        n.upgrade_kraft_version(1, 0)


def test_the_level_survives_a_restart_and_rides_in_the_snapshot() -> None:
    log, store = MemoryRaftLog(), MemoryQuorumStateStore()
    n = single(log, store)
    commit_all(n, 0)
    n.upgrade_kraft_version(1, 10)
    n.append([b"x"], 11)
    commit_all(n, 11)
    restarted = single(MemoryRaftLog.recover(log.durable_image()), store)
    assert restarted.kraft_version == 1
    # a snapshot at the end carries KRaftVersion + Voters in its header batch; the log behind it goes
    hw = n.high_watermark
    assert hw is not None
    sid = n.create_snapshot(hw, [b"x"], 30)
    assert n.log.start_offset == hw
    raw = n.log.read_snapshot(sid, 0, n.log.snapshot_size(sid) or 0)
    header = next(iter_batches(raw))
    types = [int.from_bytes(bytes(r.key or b"")[2:4], "big") for r in header.records()]
    assert types == [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.KRAFT_VERSION,
                     ControlRecordType.KRAFT_VOTERS]
    again = single(MemoryRaftLog.recover(n.log.durable_image()), store)
    assert again.kraft_version == 1 and again.kraft_version_at(hw) == 1


def test_a_snapshot_before_the_upgrade_has_no_kraft_records() -> None:
    n = single()
    n.append([b"x"], 1)
    commit_all(n, 1)
    n.upgrade_kraft_version(1, 40)
    commit_all(n, 40)
    sid = n.create_snapshot(2, [b"x"], 50)  # ends before the upgrade batch
    assert sid == SnapshotId(2, 1)
    raw = n.log.read_snapshot(sid, 0, n.log.snapshot_size(sid) or 0)
    assert len(list(next(iter_batches(raw)).records())) == 1
    assert n.kraft_version == 1 and n.kraft_version_at(2) == 0


def _run(cluster: Cluster, until: int) -> None:
    while (t := cluster.queue.next_time()) is not None and t <= until:
        cluster.queue.run_next()


def test_followers_replicate_the_level_and_keep_it_across_a_crash() -> None:
    cluster = Cluster(voters=3, observers=1, seed=11)
    _run(cluster, 5_000)
    lid = cluster.leader()
    assert lid is not None
    cluster.run_on(lid, lambda r: r.upgrade_kraft_version(1, cluster.now))
    cluster.client_append(b"after")
    _run(cluster, cluster.now + 3_000)
    for nid, sim in cluster.nodes.items():
        raft = sim.raft
        assert raft is not None
        assert raft.kraft_version == 1, nid
        assert raft.kraft_version_at(raft.high_watermark or 0) == 1, nid
    follower = next(v for v in cluster.voter_ids if v != lid)
    cluster.crash(follower)
    cluster.start(follower)
    restarted = cluster.nodes[follower].raft
    assert restarted is not None and restarted.kraft_version == 1


def test_a_truncated_upgrade_is_forgotten() -> None:
    """An upgrade the old leader never committed goes away with the log suffix that held it."""
    log = MemoryRaftLog()
    data = RecordsBuilder(base_offset=0, partition_leader_epoch=1)
    data.append(0, None, b"v0")
    log.append(data.build())
    control = RecordsBuilder(base_offset=1, is_control=True, partition_leader_epoch=2)
    level_one = codec.encode(KRAFT_VERSION_RECORD, 0, {"version": 0, "kRaftVersion": 1})
    control.append_control_record(0, ControlRecordType.KRAFT_VERSION, level_one)
    log.append(control.build())
    log.flush()
    cfg = RaftConfig(2, (1, 2, 3))
    n = RaftNode(cfg, log, MemoryQuorumStateStore(ElectionState(3, 1, None)), now_ms=0, seed=1)
    assert n.kraft_version == 1 and n.kraft_version_at(1) == 0  # read back from the log on start-up
    fetch = next(e for e in n.poll(0) if isinstance(e, SendRequest) and e.api_key == ApiKey.FETCH)
    part = {"partitionIndex": 0, "errorCode": 0, "highWatermark": 1, "records": None,
            "divergingEpoch": {"epoch": 1, "endOffset": 1},
            "currentLeader": {"leaderId": 1, "leaderEpoch": 3}}
    n.handle_response(1, ApiKey.FETCH, 17, {"errorCode": 0, "responses": [{"partitions": [part]}]},
                      fetch.correlation_id, 1)
    assert log.end_offset == 1 and n.kraft_version == 0
