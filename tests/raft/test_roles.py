"""The rules of each raft role, one at a time, driven by hand through the RaftNode facade."""

from __future__ import annotations

from typing import Any

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.raft import (
    Effect,
    ElectionState,
    MemoryQuorumStateStore,
    MemoryRaftLog,
    RaftConfig,
    RaftNode,
    Role,
    SendRequest,
    SendResponse,
)

Body = dict[str, Any]


def node(
    nid: int = 1,
    voters: tuple[int, ...] = (1, 2, 3),
    state: ElectionState | None = None,
    log: MemoryRaftLog | None = None,
    now: int = 0,
    **config: Any,
) -> RaftNode:
    store = MemoryQuorumStateStore(state) if state is not None else MemoryQuorumStateStore()
    return RaftNode(RaftConfig(nid, voters, **config), log or MemoryRaftLog(), store, now_ms=now, seed=11)


def requests(effects: list[Effect], api_key: int) -> list[SendRequest]:
    return [e for e in effects if isinstance(e, SendRequest) and e.api_key == api_key]


def responses(effects: list[Effect], api_key: int) -> list[SendResponse]:
    return [e for e in effects if isinstance(e, SendResponse) and e.api_key == api_key]


def partition(body: Body) -> Body:
    part: Body = body["topics"][0]["partitions"][0]
    return part


def vote_answer(granted: bool, epoch: int, leader: int = -1, error: int = 0, part_error: int = 0) -> Body:
    return {
        "errorCode": error,
        "topics": [
            {
                "topicName": "__cluster_metadata",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "errorCode": part_error,
                        "leaderId": leader,
                        "leaderEpoch": epoch,
                        "voteGranted": granted,
                    }
                ],
            }
        ],
    }


def answer(n: RaftNode, req: SendRequest, body: Body, now: int) -> list[Effect]:
    return n.handle_response(req.destination, req.api_key, req.version, body, req.correlation_id, now)


def prospective(n: RaftNode) -> list[SendRequest]:
    """Poll an unattached voter until it asks for pre-votes; the requests it sent."""
    out = n.poll(n.next_deadline_ms())
    assert n.role is Role.PROSPECTIVE
    return requests(out, ApiKey.VOTE)


# ---------------------------------------------------------------------------------- Candidate
def test_vote_requests_name_the_voter_and_the_candidates_log() -> None:
    n = node()
    votes = prospective(n)
    assert sorted(v.destination for v in votes) == [2, 3]
    for v in votes:
        assert v.body["voterId"] == v.destination
        part = partition(v.body)
        assert (part["replicaId"], part["replicaEpoch"], part["preVote"]) == (1, 1, True)
        assert (part["lastOffset"], part["lastOffsetEpoch"]) == (0, 0)


def test_a_rejection_or_a_failed_answer_is_no_grant() -> None:
    n = node()
    votes = prospective(n)
    answer(n, votes[0], vote_answer(False, 0), 5)
    assert n.role is Role.PROSPECTIVE
    answer(n, votes[1], vote_answer(True, 0, error=37), 5)  # cluster mismatch, granting partition
    assert n.role is Role.PROSPECTIVE
    votes = prospective_again(n)
    answer(n, votes[0], vote_answer(True, 0, part_error=6), 5)  # the partition refuses
    assert n.role is Role.PROSPECTIVE
    answer(n, votes[1], {"errorCode": 0, "topics": []}, 5)  # no partition at all
    assert n.role is Role.PROSPECTIVE


def prospective_again(n: RaftNode) -> list[SendRequest]:
    """Let the election time out; the pre-votes of the next one."""
    while True:
        out = n.poll(n.next_deadline_ms())
        votes = requests(out, ApiKey.VOTE)
        if votes:
            return votes


def test_a_lost_election_backs_off_then_asks_again() -> None:
    n = node()
    votes = prospective(n)
    answer(n, votes[0], vote_answer(True, 0), 5)
    assert n.role is Role.CANDIDATE and n.epoch == 1
    while n.role is Role.CANDIDATE:  # nobody answers the real votes: the election times out
        left_at = n.next_deadline_ms()
        out = n.poll(left_at)
    assert n.role is Role.PROSPECTIVE and n.epoch == 1 and not requests(out, ApiKey.VOTE)
    send_at = n.next_deadline_ms()  # the backoff, before the new election's timeout
    cfg = n.config
    assert left_at + cfg.retry_backoff_ms <= send_at <= left_at + cfg.election_backoff_max_ms
    assert not requests(n.poll(send_at - 1), ApiKey.VOTE)
    votes = requests(n.poll(send_at), ApiKey.VOTE)
    assert sorted(v.destination for v in votes) == [2, 3] and partition(votes[0].body)["replicaEpoch"] == 2
    assert n.next_deadline_ms() > send_at


def test_a_candidates_election_deadline_is_one_to_two_timeouts_away() -> None:
    n = node()
    votes = prospective(n)
    answer(n, votes[0], vote_answer(True, 0), 500)
    assert n.role is Role.CANDIDATE
    timeout = n.config.election_timeout_ms
    while n.role is Role.CANDIDATE:
        last = n.next_deadline_ms()
        n.poll(last)
    assert 500 + timeout <= last <= 500 + 2 * timeout


def test_a_rejection_naming_the_abandoned_leader_brings_the_follower_back() -> None:
    n = node(state=ElectionState(5, 2, None))
    assert n.role is Role.FOLLOWER
    while n.role is Role.FOLLOWER:  # leader 2 stops answering
        out = n.poll(n.next_deadline_ms())
    assert n.role is Role.PROSPECTIVE and n.epoch == 5
    votes = requests(out, ApiKey.VOTE)
    out = answer(n, votes[0], vote_answer(False, 5, leader=2), 3000)
    assert n.role is Role.FOLLOWER and n.leader_id == 2 and n.epoch == 5
    assert [f.destination for f in requests(out, ApiKey.FETCH)] == [2]  # fetches at once


def test_a_grant_naming_the_abandoned_leader_is_a_grant() -> None:
    n = node(state=ElectionState(5, 2, None))
    while n.role is Role.FOLLOWER:
        out = n.poll(n.next_deadline_ms())
    votes = requests(out, ApiKey.VOTE)
    answer(n, votes[0], vote_answer(True, 5, leader=2), 3000)
    assert n.role is Role.CANDIDATE and n.epoch == 6


def test_a_grant_naming_another_leader_of_the_epoch_makes_a_follower() -> None:
    n = node(state=ElectionState(5, 2, None))
    while n.role is Role.FOLLOWER:
        out = n.poll(n.next_deadline_ms())
    votes = requests(out, ApiKey.VOTE)
    answer(n, votes[0], vote_answer(True, 5, leader=3), 3000)
    assert n.role is Role.FOLLOWER and n.leader_id == 3


# ---------------------------------------------------------------------------------- Unattached
def fetch_answer(
    leader: Body | None = None, error: int = 0, part_error: int = 0, endpoints: list[Body] | None = None,
    partitions: bool = True,
) -> Body:
    part: Body = {"partitionIndex": 0, "errorCode": part_error, "highWatermark": -1, "logStartOffset": 0,
                  "records": None}
    if leader is not None:
        part["currentLeader"] = leader
    return {
        "errorCode": error,
        "responses": [{"topicId": None, "partitions": [part] if partitions else []}],
        "nodeEndpoints": endpoints or [],
    }


def observer() -> tuple[RaftNode, SendRequest]:
    """Observer 4 of voters 1-3, and the fetch it sends at once to find the leader."""
    n = node(4, now=100)
    assert n.role is Role.UNATTACHED and not n.is_voter
    [fetch] = requests(n.poll(100), ApiKey.FETCH)
    assert fetch.destination in (1, 2, 3)
    return n, fetch


def test_an_observer_asks_one_voter_at_a_time() -> None:
    n, _fetch = observer()
    timeout = n.config.request_timeout_ms
    assert n.next_deadline_ms() == 100 + timeout  # the fetch in flight, nothing else
    assert not requests(n.poll(100 + timeout - 1), ApiKey.FETCH)
    n.poll(100 + timeout)  # it timed out: retry after the backoff
    assert n.next_deadline_ms() == 100 + timeout + n.config.retry_backoff_ms
    assert len(requests(n.poll(n.next_deadline_ms()), ApiKey.FETCH)) == 1


def test_an_observer_retries_after_a_send_failure() -> None:
    n, fetch = observer()
    n.handle_send_failure(fetch.destination, fetch.correlation_id, 150)
    assert n.next_deadline_ms() == 150 + n.config.retry_backoff_ms


def test_an_observer_follows_the_leader_a_voter_names_and_learns_where_it_is() -> None:
    n, fetch = observer()
    endpoints = [{"nodeId": 2, "host": "h2", "port": 9093, "rack": None}]
    out = answer(n, fetch, fetch_answer({"leaderId": 2, "leaderEpoch": 3}, endpoints=endpoints), 120)
    assert n.role is Role.FOLLOWER and n.leader_id == 2 and n.epoch == 3
    assert n.address_of(2) == ("h2", 9093)
    assert [f.destination for f in requests(out, ApiKey.FETCH)] == [2]


def test_an_observer_ignores_failed_or_empty_fetch_answers() -> None:
    for body in (
        fetch_answer({"leaderId": 2, "leaderEpoch": 3}, error=37),  # the answer failed as a whole
        {"errorCode": 0, "responses": [], "nodeEndpoints": []},
        fetch_answer({"leaderId": 2, "leaderEpoch": 3}, partitions=False),
        fetch_answer(None),  # no leader named
    ):
        n, fetch = observer()
        answer(n, fetch, body, 120)
        assert n.role is Role.UNATTACHED and n.epoch == 0, body
        assert n.next_deadline_ms() == 120 + n.config.retry_backoff_ms


def test_an_observer_takes_a_newer_epoch_without_a_leader() -> None:
    n, fetch = observer()
    answer(n, fetch, fetch_answer({"leaderEpoch": 3}), 120)
    assert n.role is Role.UNATTACHED and n.epoch == 3 and n.leader_id is None


def test_an_unattached_voter_waits_one_to_two_election_timeouts() -> None:
    n = node(now=100)
    timeout = n.config.election_timeout_ms
    deadline = n.next_deadline_ms()
    assert 100 + timeout <= deadline <= 100 + 2 * timeout
    assert n.poll(deadline - 1) == [] and n.role is Role.UNATTACHED
    n.poll(deadline)
    assert n.role is Role.PROSPECTIVE


# ---------------------------------------------------------------------------------- Resigned
def resigned() -> tuple[RaftNode, list[SendRequest]]:
    """Node 1 restarted as the recorded leader of epoch 4, and the EndQuorumEpochs it sends."""
    n = node(state=ElectionState(4, 1, 1), now=100, request_timeout_ms=500)
    assert n.role is Role.RESIGNED
    return n, requests(n.poll(100), ApiKey.END_QUORUM_EPOCH)


def end_answer(epoch: int, leader: int) -> Body:
    return {"errorCode": 0, "topics": [{"topicName": "__cluster_metadata", "partitions": [
        {"partitionIndex": 0, "errorCode": 0, "leaderId": leader, "leaderEpoch": epoch}]}]}


def test_a_resigned_leader_tells_every_other_voter_once_until_answered() -> None:
    n, ends = resigned()
    assert sorted(e.destination for e in ends) == [2, 3]
    for e in ends:
        part = partition(e.body)
        assert (part["leaderId"], part["leaderEpoch"]) == (1, 4)
        # it knows nobody's progress after a restart: no preferred successor (Kafka: an empty list)
        assert part["preferredCandidates"] == []
    assert not requests(n.poll(101), ApiKey.END_QUORUM_EPOCH)  # in flight: not again
    to2 = next(e for e in ends if e.destination == 2)
    answer(n, to2, end_answer(4, 1), 110)
    assert n.role is Role.RESIGNED
    timeout = n.config.request_timeout_ms
    n.poll(100 + timeout)  # the one to 3 timed out: again after the backoff, only to 3
    again = requests(n.poll(100 + timeout + n.config.retry_backoff_ms), ApiKey.END_QUORUM_EPOCH)
    assert [e.destination for e in again] == [3]


def test_a_resigned_leader_resends_after_a_send_failure() -> None:
    n, ends = resigned()
    n.handle_send_failure(ends[1].destination, ends[1].correlation_id, 150)  # the second of two
    assert n.next_deadline_ms() == 150 + n.config.retry_backoff_ms
    again = requests(n.poll(150 + n.config.retry_backoff_ms), ApiKey.END_QUORUM_EPOCH)
    assert [e.destination for e in again] == [ends[1].destination]


def test_a_resigned_leader_stands_again_after_its_election_timeout() -> None:
    n, ends = resigned()
    for e in ends:
        answer(n, e, end_answer(4, 1), 110)
    deadline = n.next_deadline_ms()
    timeout = n.config.election_timeout_ms
    assert 100 + timeout <= deadline <= 100 + 2 * timeout
    n.poll(deadline - 1)
    assert n.role is Role.RESIGNED
    n.poll(deadline)
    assert n.role is Role.PROSPECTIVE and n.epoch == 4 and n.leader_id is None


def test_a_resigned_leader_follows_a_newer_leader_an_answer_names() -> None:
    n, ends = resigned()
    answer(n, ends[0], end_answer(5, 3), 110)
    assert n.role is Role.FOLLOWER and n.leader_id == 3 and n.epoch == 5
    assert requests(n.take_effects(), ApiKey.END_QUORUM_EPOCH) == []


def test_a_resigned_leader_ignores_an_answer_without_a_partition() -> None:
    n, ends = resigned()
    answer(n, ends[0], {"errorCode": 0, "topics": []}, 110)
    assert n.role is Role.RESIGNED
    # not an acknowledgement: it goes again when its resend time comes
    again = requests(n.poll(100 + n.config.request_timeout_ms), ApiKey.END_QUORUM_EPOCH)
    assert ends[0].destination in [e.destination for e in again]


def test_an_answer_without_a_top_level_error_code_is_an_answer() -> None:
    """The codec takes a missing field as its default: ErrorCode 0."""
    n = node()
    votes = prospective(n)
    grant = vote_answer(True, 0)
    del grant["errorCode"]
    answer(n, votes[0], grant, 5)
    assert n.role is Role.CANDIDATE


def test_an_observer_reads_a_fetch_answer_without_a_top_level_error_code() -> None:
    n, fetch = observer()
    body = fetch_answer({"leaderId": 2, "leaderEpoch": 3})
    del body["errorCode"]
    answer(n, fetch, body, 120)
    assert n.role is Role.FOLLOWER and n.leader_id == 2
