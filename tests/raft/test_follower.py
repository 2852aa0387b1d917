"""The follower's edge rules: which fetch answers start a snapshot download or a truncation, how far
a truncation goes, gaps in fetched records, FetchSnapshot chunks that do not fit, a corrupt control
batch, and an EndQuorumEpoch successor's election backoff (the common paths: test_replication.py)."""

from __future__ import annotations

import uuid
from typing import Any

import crc32c
import pytest

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.control_records import ControlRecordType
from kraftwerk.raft import ElectionState, RaftNode, RaftStateError, Role, SendRequest
from kraftwerk.records import RecordsBuilder
from kraftwerk.records.types import RECORD_BATCH_OVERHEAD
from tests.raft.test_replication import batch, fresh_follower, make, next_fetch, reply

Body = dict[str, Any]


MY_DIR, OTHER_DIR = uuid.UUID(int=3), uuid.UUID(int=33)


def stands_at(nid: int, voters: tuple[int, ...], version: int, part: Body, **cfg: Any) -> int:
    """When follower ``nid`` of leader 1 in epoch 3 stands for election after an EndQuorumEpoch
    (``part``: its successor fields) that arrived at 100."""
    n = make(nid, voters, ElectionState(3, 1, None), directory_id=MY_DIR, **cfg)
    n.poll(0)
    body = {"clusterId": None, "topics": [{"topicName": "__cluster_metadata", "partitions": [{
        "partitionIndex": 0, "leaderId": 1, "leaderEpoch": 3, **part}]}]}
    n.handle_request(1, ApiKey.END_QUORUM_EPOCH, version, body, 9, 100)
    t = 0
    while n.role is Role.FOLLOWER:
        t = n.next_deadline_ms()
        n.poll(t)
    assert n.role is Role.PROSPECTIVE
    return t


def ids(*cands: int | tuple[int, uuid.UUID]) -> Body:
    return {"preferredCandidates": [
        {"candidateId": c[0], "candidateDirectoryId": c[1]} if isinstance(c, tuple) else {"candidateId": c}
        for c in cands]}


@pytest.mark.parametrize(("nid", "voters", "version", "part", "waits"), [
    (3, (1, 2, 3), 1, ids(3, 2), 0),  # first in line: at once
    (3, (1, 2, 3), 1, ids(2, 3), 500),  # k-th of n: max >> (n - 1) << (k - 1)
    (4, (1, 2, 3, 4, 5), 1, ids(2, 3, 4, 5), 250),
    (5, (1, 2, 3, 4, 5), 1, ids(2, 3, 4, 5), 500),
    (3, (1, 2, 3), 1, ids(2), 1000),  # not a preferred successor: election.backoff.max.ms
    (3, (1, 2, 3), 1, ids((3, OTHER_DIR), 2), 1000),  # another replica of node 3 is not this one
    (3, (1, 2, 3), 1, ids((3, MY_DIR), 2), 0),
    (3, (1, 2, 3), 1, ids(), 0),  # no successors named: every voter at once
    (3, (1, 2, 3), 0, {"preferredSuccessors": [3, 2]}, 0),  # v0 names successors by id
    (2, (1, 2, 3), 0, {"preferredSuccessors": [3, 2]}, 500),
])
def test_an_end_quorum_epoch_replaces_the_fetch_timeout_with_kafkas_successor_backoff(
    nid: int, voters: tuple[int, ...], version: int, part: Body, waits: int
) -> None:
    """Kafka's endEpochElectionBackoff (strictExponentialElectionBackoffMs) with its default
    election.backoff.max.ms of 1000: no jitter, the most caught-up successor stands first."""
    assert stands_at(nid, voters, version, part, fetch_timeout_ms=5000) == 100 + waits


def test_an_end_quorum_epoch_resets_a_fetch_timeout_that_was_sooner() -> None:
    """Kafka's overrideFetchTimeout resets the timer: a voter left out waits the whole backoff even
    past the fetch timeout it had."""
    assert stands_at(3, (1, 2, 3), 1, ids(2), fetch_timeout_ms=500) == 100 + 1000


def test_a_snapshot_id_of_epoch_zero_starts_a_download() -> None:
    follower, fetch = fresh_follower()
    req = next_fetch(reply(follower, fetch, 1, snapshotId={"endOffset": 5, "epoch": 0}))
    assert req.api_key == ApiKey.FETCH_SNAPSHOT
    assert req.body["topics"][0]["partitions"][0]["snapshotId"] == {"endOffset": 5, "epoch": 0}


@pytest.mark.parametrize("half", [
    {"snapshotId": {"endOffset": 5, "epoch": -1}},
    {"snapshotId": {"endOffset": -1, "epoch": 3}},
    {"divergingEpoch": {"epoch": 2, "endOffset": -1}},
    {"divergingEpoch": {"epoch": -1, "endOffset": 0}},
])
def test_a_half_set_snapshot_id_or_diverging_epoch_is_neither(half: Body) -> None:
    """A snapshot id or diverging epoch counts only with both fields set: the records of such an
    answer are appended as if it had none (no download of a bogus snapshot, no truncation)."""
    follower, fetch = fresh_follower()
    out = reply(follower, fetch, 1, records=batch(0, 3, b"a"), highWatermark=1, **half)
    assert next_fetch(out).api_key == ApiKey.FETCH
    assert follower.log.end_offset == 1 and follower.high_watermark == 1


def test_a_truncation_stops_at_the_followers_own_end_of_the_diverging_epoch(
        caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's truncateToEndOffset: the leader's end of the epoch, or the follower's own end of it
    when that comes first. Here the leader of epoch 5 never saw epoch 4 and holds more of epoch 2."""
    follower = make(2, (1, 2), ElectionState(5, 1, None))
    [fetch] = follower.poll(0)
    assert isinstance(fetch, SendRequest)
    log = batch(0, 1, b"a") + batch(1, 2, b"b") + batch(2, 2, b"c") + batch(3, 4, b"d")
    out = reply(follower, fetch, 1, records=log)
    assert follower.log.end_offset == 4
    with caplog.at_level("DEBUG", logger="kraftwerk.raft.roles.follower"):
        out = reply(follower, next_fetch(out), 2, divergingEpoch={"epoch": 2, "endOffset": 5})
    assert follower.log.end_offset == 3  # epoch 2 ends at 3 here, not at the leader's 5
    assert [r.getMessage() for r in caplog.records] == ["node 2 truncates to 3 (diverging epoch 2 end 5)"]
    assert next_fetch(out).body["topics"][0]["partitions"][0]["fetchOffset"] == 3


def test_a_batch_past_a_gap_is_dropped_and_what_came_before_is_flushed() -> None:
    follower, fetch = fresh_follower()
    out = reply(follower, fetch, 1, records=batch(0, 3, b"a") + batch(5, 3, b"f"), highWatermark=1)
    assert follower.log.end_offset == 1 and follower.log.flushed_offset == 1
    assert follower.high_watermark == 1  # bounded by what is flushed, so the flush happened
    assert next_fetch(out).body["topics"][0]["partitions"][0]["fetchOffset"] == 1


def downloading() -> tuple[RaftNode, SendRequest]:
    """A fresh follower told to fetch snapshot (5, 3), and its first FetchSnapshot request."""
    follower, fetch = fresh_follower()
    req = next_fetch(reply(follower, fetch, 1, snapshotId={"endOffset": 5, "epoch": 3}))
    assert req.api_key == ApiKey.FETCH_SNAPSHOT
    return follower, req


def chunk_answer(**part: Any) -> Body:
    """A FetchSnapshot answer holding only the partition's own fields (no top-level error code, no
    current leader: both optional for the follower)."""
    return {"topics": [{"name": "__cluster_metadata", "partitions": [{
        "index": 0, "errorCode": 0, "snapshotId": {"endOffset": 5, "epoch": 3}, **part}]}]}


def position(req: SendRequest) -> int:
    assert req.api_key == ApiKey.FETCH_SNAPSHOT
    pos: int = req.body["topics"][0]["partitions"][0]["position"]
    return pos


def test_a_chunk_answer_without_a_top_level_error_or_a_current_leader_is_a_chunk() -> None:
    follower, req = downloading()
    out = follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1,
                                   chunk_answer(size=10, position=0, unalignedRecords=b"01234"),
                                   req.correlation_id, 2)
    assert position(next_fetch(out)) == 5


def test_a_chunk_without_records_adds_nothing() -> None:
    follower, req = downloading()
    out = follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1,
                                   chunk_answer(size=10, position=0, unalignedRecords=None),
                                   req.correlation_id, 2)
    assert position(next_fetch(out)) == 0


def test_a_chunk_past_the_snapshots_size_restarts_the_download() -> None:
    follower, req = downloading()
    out = follower.handle_response(1, ApiKey.FETCH_SNAPSHOT, 1,
                                   chunk_answer(size=10, position=0, unalignedRecords=b"x" * 12),
                                   req.correlation_id, 2)
    assert out == []
    again = next_fetch(follower.poll(2 + follower.config.retry_backoff_ms))
    assert again.api_key == ApiKey.FETCH and follower.log.end_offset == 0  # asks which snapshot now



def test_a_corrupt_control_batch_stops_the_follower_naming_it() -> None:
    """A control batch whose CRC holds but whose records do not parse: the follower cannot know its
    voters any more, and says which node failed."""
    b = RecordsBuilder(base_offset=0, partition_leader_epoch=3, is_control=True)
    b.append_control_record(0, ControlRecordType.KRAFT_VERSION, b"\x00\x00\x00\x01")
    raw = bytearray(b.build())
    raw[RECORD_BATCH_OVERHEAD] = 0x7F  # the first record's length: far past the batch's end
    raw[17:21] = crc32c.crc32c(bytes(raw[21:])).to_bytes(4, "big")
    follower, fetch = fresh_follower()
    with pytest.raises(RaftStateError, match=r"^node 2: corrupt control batch: "):
        reply(follower, fetch, 1, records=bytes(raw))
