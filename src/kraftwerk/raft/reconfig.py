"""AddRaftVoter and RemoveRaftVoter on the leader (KIP-853, Kafka's AddVoterHandler and
RemoveVoterHandler), sans-I/O like the rest of the raft core.

One change at a time. Adding a voter: the leader must have a high watermark, kraft.version must be
at least 1 (else UNSUPPORTED_VERSION), the previous VotersRecord must be committed and the id new
(DUPLICATE_VOTER); the leader then asks the new voter for ApiVersions, checks that it supports the
finalized kraft.version and has been fetching as an observer, appends the new VotersRecord and
answers once it commits. Removing one: the same first checks, the voter must be in the set with
that directory id and not be the last (VOTER_NOT_FOUND), then the VotersRecord is appended and the
answer waits for its commit; a leader that removed itself resigns then. Errors carry Kafka's texts.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.api_versions import ApiVersionsResponse
from kraftwerk.protocol.messages.raft import AddRaftVoterRequest, AddRaftVoterResponse, RemoveRaftVoterRequest
from kraftwerk.raft.types import (
    Body,
    VoterEndpoint,
)
from kraftwerk.raft.voters import ZERO_UUID, Voter, VoterSet, replica_key_text
from kraftwerk.versions.features import KRAFT_VERSION

if TYPE_CHECKING:
    from kraftwerk.raft.roles.leader import Leader

#: Kafka's isReplicaCaughtUp: the observer fetched (and was caught up) within the last hour.
_CAUGHT_UP_WINDOW_MS = 3_600_000


def _code(error: Errors) -> int:
    return error.value.code


def voter_change_response(error: Errors, message: str | None = None) -> Body:
    """An AddRaftVoter / RemoveRaftVoter response body (both share this shape)."""
    response: AddRaftVoterResponse = {"throttleTimeMs": 0, "errorCode": _code(error), "errorMessage": message}
    return as_body(response)


def cluster_error(body: AddRaftVoterRequest | RemoveRaftVoterRequest, cluster_id: str | None) -> Body | None:
    """The answer to a voter change that names another cluster (checked before anything else)."""
    cluster = body.get("clusterId")
    if cluster is not None and cluster_id is not None and cluster != cluster_id:
        return voter_change_response(
            Errors.INCONSISTENT_CLUSTER_ID,
            f'The given id "{cluster}" doesn\'t match the cluster id "{cluster_id}"')
    return None


@dataclass(slots=True)
class _Pending:
    """The one voter change in progress: who waits for the answer, and what it waits for."""

    api_key: int
    source: int
    version: int
    correlation_id: int
    deadline_ms: int
    voter: Voter
    offset: int | None = None  # of the appended VotersRecord, once written
    ack_when_committed: bool = True


class VoterChanges:
    """The leader's AddRaftVoter / RemoveRaftVoter state; the leader calls it on requests, on the
    ApiVersions response, when the high watermark moves, on timers and when it stops leading.
    (A node that is not the leader answers such a request with :func:`cluster_error` or
    NOT_LEADER_OR_FOLLOWER itself.)"""

    def __init__(self, leader: Leader) -> None:
        self.leader = leader
        self.q = leader.q
        self.pending: _Pending | None = None

    # ------------------------------------------------------------------ requests
    def add_voter(
        self, source: int, version: int, body: AddRaftVoterRequest, correlation_id: int, now_ms: int
    ) -> None:
        node = self.q
        error = self._common_checks(body, now_ms, "adding")
        if error is not None:
            node.respond(source, ApiKey.ADD_RAFT_VOTER, version, correlation_id, error)
            return
        voter_id = int(body.get("voterId", -1))
        directory_id: uuid.UUID = body.get("voterDirectoryId") or ZERO_UUID
        if voter_id < 0 or directory_id == ZERO_UUID:
            node.respond(source, ApiKey.ADD_RAFT_VOTER, version, correlation_id, voter_change_response(
                Errors.INVALID_REQUEST, "Add voter request didn't include a valid voter"))
            return
        endpoints = tuple(VoterEndpoint(voter_id, str(e["name"]), str(e["host"]), int(e["port"]))
                          for e in body.get("listeners") or ())
        listener = node.config.listener_name
        if not any(listener is None or e.name == listener for e in endpoints):
            given = [f"{e.name}://{e.host}:{e.port}" for e in endpoints]
            node.respond(source, ApiKey.ADD_RAFT_VOTER, version, correlation_id, voter_change_response(
                Errors.INVALID_REQUEST,
                f"Add voter request didn't include the endpoint ({given}) for the default listener "
                f"{listener}"))
            return
        voters = node.voter_set
        if voters.get(voter_id) is not None:
            node.respond(source, ApiKey.ADD_RAFT_VOTER, version, correlation_id, voter_change_response(
                Errors.DUPLICATE_VOTER,
                f"The voter id for {replica_key_text(voter_id, directory_id)} is already part of the set of "
                f"voters {voters.keys_text}."))
            return
        timeout = max(int(body.get("timeoutMs", 0)), node.config.request_timeout_ms)
        voter = Voter(voter_id, directory_id, endpoints, (0, 0))
        self.pending = _Pending(ApiKey.ADD_RAFT_VOTER, source, version, correlation_id, now_ms + timeout,
                                voter, ack_when_committed=bool(body.get("ackWhenCommitted", True)))
        address = voter.address(listener)
        if address is not None:
            node.addresses[voter_id] = address
        node.send(voter_id, ApiKey.API_VERSIONS, {"clientSoftwareName": "kraftwerk-raft",
                                                "clientSoftwareVersion": "0"}, now_ms)

    def remove_voter(
        self, source: int, version: int, body: RemoveRaftVoterRequest, correlation_id: int, now_ms: int
    ) -> None:
        node = self.q
        error = self._common_checks(body, now_ms, "removing")
        if error is not None:
            node.respond(source, ApiKey.REMOVE_RAFT_VOTER, version, correlation_id, error)
            return
        voter_id = int(body.get("voterId", -1))
        directory_id: uuid.UUID = body.get("voterDirectoryId") or ZERO_UUID
        if voter_id < 0:
            node.respond(source, ApiKey.REMOVE_RAFT_VOTER, version, correlation_id, voter_change_response(
                Errors.INVALID_REQUEST, "Remove voter request didn't include a valid voter"))
            return
        voters = node.voter_set
        remaining = voters.remove(voter_id, directory_id)
        if remaining is None:
            node.respond(source, ApiKey.REMOVE_RAFT_VOTER, version, correlation_id, voter_change_response(
                Errors.VOTER_NOT_FOUND,
                f"Cannot remove voter {replica_key_text(voter_id, directory_id)} from the set of voters "
                f"{voters.keys_text}"))
            return
        removed = voters.get(voter_id)
        assert removed is not None
        self.pending = _Pending(ApiKey.REMOVE_RAFT_VOTER, source, version, correlation_id,
                                now_ms + node.config.request_timeout_ms, removed)
        self.pending.offset = self.leader.append_voters(remaining, now_ms)

    def _common_checks(
        self, body: AddRaftVoterRequest | RemoveRaftVoterRequest, now_ms: int, verb: str
    ) -> Body | None:
        """What Kafka checks before either change: cluster id, leadership, one change at a time,
        a high watermark, kraft.version >= 1, the last VotersRecord committed."""
        node = self.q
        error = cluster_error(body, node.config.cluster_id)
        if error is not None:
            return error
        self.expire(now_ms)
        if self.pending is not None:
            return voter_change_response(
                Errors.REQUEST_TIMED_OUT,
                "Request timed out waiting for leader to handle previous voter change request")
        hw = node.hw
        if hw is None:
            return voter_change_response(
                Errors.REQUEST_TIMED_OUT,
                "Request timed out waiting for leader to establish HWM and fence previous voter changes")
        level = node.control.kraft_version
        if level < 1:
            return voter_change_response(
                Errors.UNSUPPORTED_VERSION,
                f"Cluster doesn't support {verb} voter because the {KRAFT_VERSION} feature is {level}")
        last = node.control.last_voters_offset
        if last is None or last >= hw:
            shown = "Optional.empty" if last is None else f"Optional[{last}]"
            return voter_change_response(
                Errors.REQUEST_TIMED_OUT,
                f"Request timed out waiting for voters to commit the latest voter change at {shown} with "
                f"HWM {hw}")
        return None

    # ------------------------------------------------------------------ progress
    def api_versions_response(self, source: int, body: ApiVersionsResponse, now_ms: int) -> None:
        """The new voter's ApiVersions: check its kraft.version range and that it caught up, then
        append the VotersRecord that adds it."""
        node, pending = self.q, self.pending
        if pending is None or pending.api_key != ApiKey.ADD_RAFT_VOTER or pending.voter.voter_id != source \
                or pending.offset is not None:
            return
        voter = pending.voter
        error = int(body.get("errorCode", 0))
        if error != 0:
            name = Errors.for_code(error).name
            self._finish(Errors.REQUEST_TIMED_OUT,
                         f"Aborted add voter operation for since API_VERSIONS returned an error {name}")
            return
        features = body.get("supportedFeatures") or ()
        found = next((f for f in features if f.get("name") == KRAFT_VERSION), None)
        level = node.control.kraft_version
        if found is None or not int(found["minVersion"]) <= level <= int(found["maxVersion"]):
            shown = (f"(min: {found['minVersion']}, max: {found['maxVersion']}" if found
                     else "(min: 0, max: 0)")
            self._finish(Errors.INVALID_REQUEST,
                         f"Aborted add voter operation for {voter.key_text} since the {KRAFT_VERSION} range "
                         f"{shown} doesn't support the finalized version {level}")
            return
        if not self.leader.replica_caught_up(voter.voter_id, now_ms, _CAUGHT_UP_WINDOW_MS):
            self._finish(Errors.REQUEST_TIMED_OUT,
                         f"Aborted add voter operation for {voter.key_text} since it is lagging behind")
            return
        pending.voter = Voter(voter.voter_id, voter.directory_id, voter.endpoints,
                              (int(found["minVersion"]), int(found["maxVersion"])))
        added = node.voter_set.add(pending.voter)
        assert added is not None  # checked when the request came in; one change at a time
        pending.offset = self.leader.append_voters(added, now_ms)
        if not pending.ack_when_committed:
            self._finish(Errors.NONE)

    def api_versions_failed(self, destination: int) -> None:
        pending = self.pending
        if pending is not None and pending.api_key == ApiKey.ADD_RAFT_VOTER \
                and pending.voter.voter_id == destination and pending.offset is None:
            self._finish(Errors.REQUEST_TIMED_OUT,
                         f"New voter {pending.voter.key_text} is not ready to receive requests")

    def high_watermark_updated(self) -> None:
        """Answer the change once its VotersRecord is committed; a leader that removed itself
        resigns (Kafka: once the new voter set is committed)."""
        pending, hw = self.pending, self.q.hw
        if pending is None or pending.offset is None or hw is None or hw <= pending.offset:
            return
        self._finish(Errors.NONE)
        if pending.api_key == ApiKey.REMOVE_RAFT_VOTER and not self.q.is_voter:
            self.leader.resign_requested = True

    def expire(self, now_ms: int) -> None:
        if self.pending is not None and now_ms >= self.pending.deadline_ms:
            self._finish(Errors.REQUEST_TIMED_OUT)

    def next_deadline_ms(self) -> int | None:
        return None if self.pending is None else self.pending.deadline_ms

    def abort(self) -> None:
        """This node stopped leading: the change's client must look for the new leader."""
        if self.pending is not None:
            self._finish(Errors.NOT_LEADER_OR_FOLLOWER)

    def _finish(self, error: Errors, message: str | None = None) -> None:
        pending, self.pending = self.pending, None
        assert pending is not None
        self.q.respond(pending.source, pending.api_key, pending.version, pending.correlation_id,
                           voter_change_response(error, message))


__all__ = ["VoterChanges", "VoterSet", "voter_change_response"]
