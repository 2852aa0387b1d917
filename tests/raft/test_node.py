"""State-machine transitions of the raft core, driven by hand (no simulator)."""

from __future__ import annotations

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import LEADER_CHANGE_MESSAGE, ControlRecordType
from kraftwerk.raft import (
    CommittedBatch,
    ElectionState,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    NotLeaderError,
    RaftConfig,
    RaftNode,
    Role,
    SendRequest,
    SendResponse,
)
from kraftwerk.records import RecordsBuilder


def node(
    nid: int = 1,
    voters: tuple[int, ...] = (1, 2, 3),
    store: MemoryQuorumStateStore | None = None,
    log: MemoryRaftLog | None = None,
) -> RaftNode:
    return RaftNode(
        RaftConfig(nid, voters), log or MemoryRaftLog(), store or MemoryQuorumStateStore(), now_ms=0, seed=7
    )


def vote_part(req: SendRequest) -> dict:  # type: ignore[type-arg]
    return req.body["topics"][0]["partitions"][0]


def vote_response(granted: bool, epoch: int, leader: int = -1) -> dict:  # type: ignore[type-arg]
    return {
        "errorCode": 0,
        "topics": [
            {
                "topicName": "__cluster_metadata",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "errorCode": 0,
                        "leaderId": leader,
                        "leaderEpoch": epoch,
                        "voteGranted": granted,
                    }
                ],
            }
        ],
    }


def test_single_voter_elects_itself_and_commits_after_the_flush() -> None:
    n = node(voters=(1,))
    assert n.role is Role.LEADER and n.epoch == 1
    n.poll(0)
    first = n.drain_committed()
    assert isinstance(first[0], CommittedBatch) and first[0].is_control
    assert first[0].control_types == (int(ControlRecordType.LEADER_CHANGE),)
    lc = codec.decode(LEADER_CHANGE_MESSAGE, 0, first[0].records[0])
    assert lc["leaderId"] == 1 and lc["grantingVoters"] == [{"voterId": 1}]
    last = n.append([b"a", b"b"], 10)
    assert n.high_watermark == 1  # not flushed yet: the leader does not count it
    assert n.next_deadline_ms() == 10 + n.config.append_linger_ms
    n.poll(10 + n.config.append_linger_ms)
    assert n.high_watermark == last + 1
    batch = n.drain_committed()[0]
    assert isinstance(batch, CommittedBatch) and batch.records == (b"a", b"b") and batch.epoch == 1


def test_prevote_then_vote_then_leader() -> None:
    store = MemoryQuorumStateStore()
    n = node(store=store)
    assert n.role is Role.UNATTACHED
    out = n.poll(n.next_deadline_ms())
    assert n.role is Role.PROSPECTIVE and n.epoch == 0
    votes = [e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.VOTE]
    assert {v.destination for v in votes} == {2, 3}
    assert vote_part(votes[0])["preVote"] is True and vote_part(votes[0])["replicaEpoch"] == 1
    out = n.handle_response(2, ApiKey.VOTE, 2, vote_response(True, 0), votes[0].correlation_id, 5)
    assert n.role is Role.CANDIDATE and n.epoch == 1
    assert store.state == ElectionState(1, None, 1)
    real = [e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.VOTE]
    assert vote_part(real[0])["preVote"] is False and vote_part(real[0])["replicaEpoch"] == 1
    out = n.handle_response(
        real[0].destination, ApiKey.VOTE, 2, vote_response(True, 1), real[0].correlation_id, 6
    )
    assert n.role is Role.LEADER and store.state == ElectionState(1, 1, 1)
    assert {
        e.destination for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.BEGIN_QUORUM_EPOCH
    } == {2, 3}
    with pytest.raises(NotLeaderError):
        node(2).append([b"x"], 0)


def test_restarted_leader_comes_back_resigned() -> None:
    store = MemoryQuorumStateStore(ElectionState(4, 1, 1))
    n = node(store=store)
    assert n.role is Role.RESIGNED and n.epoch == 4 and not n.is_leader
    out = n.poll(0)
    assert {
        e.destination for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.END_QUORUM_EPOCH
    } == {2, 3}
    n.poll(n.next_deadline_ms() + 5000)
    assert n.role in (Role.PROSPECTIVE, Role.CANDIDATE) and n.epoch >= 4


def test_vote_rejected_for_a_shorter_log_and_granted_once_per_epoch() -> None:
    log = MemoryRaftLog()
    b = RecordsBuilder(base_offset=0, partition_leader_epoch=3)
    b.append(0, None, b"x")
    log.append(b.build())
    n = node(2, log=log, store=MemoryQuorumStateStore(ElectionState(3)))
    req = {
        "clusterId": None,
        "voterId": 2,
        "topics": [
            {
                "topicName": "__cluster_metadata",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "replicaEpoch": 4,
                        "replicaId": 1,
                        "lastOffsetEpoch": 2,
                        "lastOffset": 5,
                        "preVote": False,
                    }
                ],
            }
        ],
    }
    out = n.handle_request(1, ApiKey.VOTE, 2, req, 1, 0)
    assert isinstance(out[0], SendResponse)
    assert out[0].body["topics"][0]["partitions"][0]["voteGranted"] is False
    assert n.epoch == 4  # a higher epoch is adopted even when the vote is refused
    req["topics"][0]["partitions"][0].update(lastOffsetEpoch=3, lastOffset=1)
    assert n.handle_request(1, ApiKey.VOTE, 2, req, 2, 0)[0].body["topics"][0]["partitions"][0]["voteGranted"]
    req["topics"][0]["partitions"][0].update(replicaId=3)
    assert not n.handle_request(3, ApiKey.VOTE, 2, req, 3, 0)[0].body["topics"][0]["partitions"][0][
        "voteGranted"
    ]


def _leader_with_epochs() -> RaftNode:
    """Node 1 leads epoch 5 with a log of epoch 1 (offsets 0-1) and epoch 5 (LeaderChange at 2)."""
    log = MemoryRaftLog()
    b = RecordsBuilder(base_offset=0, partition_leader_epoch=1)
    b.append(0, None, b"a")
    b.append(0, None, b"b")
    log.append(b.build())
    log.flush()
    n = node(1, voters=(1,), log=log, store=MemoryQuorumStateStore(ElectionState(4, None, None)))
    assert n.role is Role.LEADER and n.epoch == 5
    n.poll(0)
    return n


def fetch_request(offset: int, epoch: int, leader_epoch: int) -> dict:  # type: ignore[type-arg]
    return {
        "replicaState": {"replicaId": 9, "replicaEpoch": -1},
        "maxWaitMs": 0,
        "minBytes": 0,
        "topics": [
            {
                "partitions": [
                    {
                        "partition": 0,
                        "currentLeaderEpoch": leader_epoch,
                        "fetchOffset": offset,
                        "lastFetchedEpoch": epoch,
                        "partitionMaxBytes": 1 << 20,
                    }
                ]
            }
        ],
    }


def test_fetch_with_a_diverging_epoch_gets_the_epoch_end() -> None:
    n = _leader_with_epochs()
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(6, 3, 5), 1, 1)
    part = out[0].body["responses"][0]["partitions"][0]
    assert part["divergingEpoch"] == {"epoch": 1, "endOffset": 2}
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(2, 1, 5), 2, 1)
    part = out[0].body["responses"][0]["partitions"][0]
    assert part["records"] and part["highWatermark"] == 3
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(2, 1, 4), 3, 1)
    assert out[0].body["responses"][0]["partitions"][0]["errorCode"] == 74  # FENCED_LEADER_EPOCH


def test_follower_truncates_and_refetches_on_divergence() -> None:
    log = MemoryRaftLog()
    for epoch, base in ((1, 0), (2, 1), (2, 2)):
        b = RecordsBuilder(base_offset=base, partition_leader_epoch=epoch)
        b.append(0, None, b"v%d" % base)
        log.append(b.build())
    log.flush()
    n = node(2, log=log, store=MemoryQuorumStateStore(ElectionState(3, 1, None)))
    out = n.poll(0)
    fetch = next(e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.FETCH)
    assert fetch.body["topics"][0]["partitions"][0]["lastFetchedEpoch"] == 2
    resp = {
        "errorCode": 0,
        "responses": [
            {
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "errorCode": 0,
                        "highWatermark": 1,
                        "divergingEpoch": {"epoch": 1, "endOffset": 1},
                        "currentLeader": {"leaderId": 1, "leaderEpoch": 3},
                        "records": None,
                    }
                ]
            }
        ],
    }
    out = n.handle_response(1, ApiKey.FETCH, 17, resp, fetch.correlation_id, 1)
    assert log.end_offset == 1 and log.epoch_entries() == ((1, 0),)
    again = next(e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.FETCH)
    assert again.body["topics"][0]["partitions"][0]["fetchOffset"] == 1


def test_memory_log_recovery_cuts_a_torn_write() -> None:
    log = MemoryRaftLog()
    b = RecordsBuilder(base_offset=0, partition_leader_epoch=1)
    b.append(0, None, b"durable")
    log.append(b.build())
    log.flush()
    b = RecordsBuilder(base_offset=1, partition_leader_epoch=1)
    b.append(0, None, b"lost")
    log.append(b.build())
    recovered = MemoryRaftLog.recover(log.durable_image(torn_bytes=10))
    assert recovered.end_offset == 1 and recovered.flushed_offset == 1


def test_an_empty_replica_starts_from_the_latest_snapshot_even_where_the_log_is_kept() -> None:
    """Kafka's rule: fetch offset 0 gets the latest (non-bootstrap) snapshot rather than the whole
    log, also when the log behind the snapshot was kept (unlimited metadata log retention)."""
    cfg = RaftConfig(1, (1,), clean_log_behind_snapshot=False)
    n = RaftNode(cfg, MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=0, seed=7)
    n.append([b"x", b"y"], 1)
    n.poll(1 + cfg.append_linger_ms)
    n.drain_committed()
    hw = n.high_watermark
    assert hw is not None and hw > 1
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(0, -1, n.epoch), 1, 100)
    part = out[0].body["responses"][0]["partitions"][0]
    assert part["records"] and "snapshotId" not in part  # no snapshot yet: the log from 0
    sid = n.create_snapshot(hw, [b"x", b"y"], 100)
    assert n.log.start_offset == 0  # kept behind the snapshot
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(0, -1, n.epoch), 2, 101)
    part = out[0].body["responses"][0]["partitions"][0]
    assert part["snapshotId"] == {"endOffset": sid.end_offset, "epoch": sid.epoch}
    out = n.handle_request(9, ApiKey.FETCH, 17, fetch_request(1, n.epoch, n.epoch), 3, 102)
    assert out[0].body["responses"][0]["partitions"][0]["records"]  # a replica part-way reads on


def _two_voter_leader() -> RaftNode:
    """Node 1 leads epoch 1 of voters (1, 2); its LeaderChange (offset 0) is committed by 2's fetch."""
    n = node(1, voters=(1, 2))
    out = n.poll(n.next_deadline_ms())
    prevote = next(e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.VOTE)
    out = n.handle_response(2, ApiKey.VOTE, 2, vote_response(True, 0), prevote.correlation_id, 1)
    vote = next(e for e in out if isinstance(e, SendRequest) and e.api_key == ApiKey.VOTE)
    n.handle_response(2, ApiKey.VOTE, 2, vote_response(True, 1), vote.correlation_id, 2)
    assert n.role is Role.LEADER
    n.poll(n.next_deadline_ms())  # flush the LeaderChange
    fetch(n, 2, 1, 0, now=3)
    assert n.high_watermark == 1
    return n


def fetch(n: RaftNode, replica: int, offset: int, max_wait: int, now: int) -> dict | None:  # type: ignore[type-arg]
    """Send replica's Fetch at ``offset``; its partition response, or None while it is parked."""
    req = fetch_request(offset, 1 if offset else -1, n.epoch)
    req.update(replicaState={"replicaId": replica, "replicaEpoch": -1}, maxWaitMs=max_wait)
    out = n.handle_request(replica, ApiKey.FETCH, 17, req, offset, now)
    answers = [e for e in out if isinstance(e, SendResponse) and e.destination == replica]
    return answers[0].body["responses"][0]["partitions"][0] if answers else None


def test_a_parked_fetch_is_answered_when_the_high_watermark_advances() -> None:
    """An observer that got a record before it committed learns the commit at once, not at
    its fetch's max wait (Kafka completes delayed fetches on a high-watermark change)."""
    n = _two_voter_leader()
    assert fetch(n, 9, 1, 500, now=4) is not None  # first contact: it learns the high watermark 1
    assert fetch(n, 9, 1, 500, now=5) is None  # nothing new: parked until 505
    n.append([b"x"], 6)
    out = n.poll(n.next_deadline_ms())  # the leader's flush appends offset 1; the parked fetch gets it
    part = next(e for e in out if e.destination == 9).body["responses"][0]["partitions"][0]
    assert part["records"] and part["highWatermark"] == 1  # not committed yet
    now = 40
    assert fetch(n, 9, 2, 500, now=now) is None  # at the end, and it knows the current HW
    assert not [e for e in n.poll(now) if e.destination == 9]
    voter = fetch(n, 2, 2, 500, now=now + 1)  # the voter's fetch commits offset 1
    assert voter is not None and voter["highWatermark"] == 2 and n.high_watermark == 2
    assert n.next_deadline_ms() == 0
    out = n.poll(now + 1)
    part = next(e for e in out if e.destination == 9).body["responses"][0]["partitions"][0]
    assert part["highWatermark"] == 2 and part["records"] is None


def test_a_fetch_from_a_replica_behind_the_high_watermark_is_not_parked() -> None:
    """The race the wake-up alone misses: the commit lands between the answer that carried the
    uncommitted record and the observer's next fetch, which must not wait for the new HW."""
    n = _two_voter_leader()
    assert fetch(n, 9, 1, 500, now=4) is not None
    n.append([b"x"], 5)
    n.poll(n.next_deadline_ms())
    part = fetch(n, 9, 1, 500, now=n.next_deadline_ms())
    assert part is not None and part["records"] and part["highWatermark"] == 1
    fetch(n, 2, 2, 500, now=20)
    assert n.high_watermark == 2
    part = fetch(n, 9, 2, 500, now=21)  # known HW 1 < 2: answered at once
    assert part is not None and part["highWatermark"] == 2
    assert fetch(n, 9, 2, 500, now=22) is None  # now it is up to date: parked
