"""The voter set of a KRaft quorum (KIP-853, Kafka's ``VoterSet``) as an immutable value.

A static quorum takes its voters from ``controller.quorum.voters``; a dynamic one (kraft.version 1)
from the latest VotersRecord in the log or a snapshot, committed or not, the bootstrap snapshot
``00000000000000000000-0000000000.checkpoint`` written by ``kafka-storage format
--initial-controllers`` included. :class:`VoterSet` converts between the VotersRecord value
(codec dict) and the ids, directory ids and endpoints the raft core needs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.raft.types import Body, VoterEndpoint

#: Kafka's ``Uuid.ZERO_UUID``: the directory id of a voter whose directory is unknown (a static
#: voter, or a VotersRecord written by a kraft.version 0 -> 1 upgrade).
ZERO_UUID = uuid.UUID(int=0)


def replica_key_text(voter_id: int, directory_id: uuid.UUID | None) -> str:
    """Kafka's ``ReplicaKey.toString()`` (its directory id is a Java ``Optional``)."""
    shown = ("Optional.empty" if directory_id is None or directory_id == ZERO_UUID
             else f"Optional[{uuid_to_str(directory_id)}]")
    return f"ReplicaKey(id={voter_id}, directoryId={shown})"


@dataclass(frozen=True, slots=True)
class Voter:
    """One voter: its id, directory id, listeners and the kraft.version range it supports."""

    voter_id: int
    directory_id: uuid.UUID
    endpoints: tuple[VoterEndpoint, ...]
    kraft_range: tuple[int, int]

    @property
    def key_text(self) -> str:
        return replica_key_text(self.voter_id, self.directory_id)

    def matches(self, node_id: int, directory_id: uuid.UUID | None) -> bool:
        """Kafka's ``VoterSet.isVoter``: same id, and same directory id unless either is unknown."""
        return self.voter_id == node_id and (
            directory_id in (None, ZERO_UUID) or self.directory_id in (ZERO_UUID, directory_id))

    def address(self, listener: str | None) -> tuple[str, int] | None:
        """The (host, port) of ``listener`` (the first endpoint when ``listener`` is None)."""
        for e in self.endpoints:
            if listener is None or e.name == listener:
                return e.host, e.port
        return None

    def to_record(self) -> Body:
        return {
            "voterId": self.voter_id,
            "voterDirectoryId": self.directory_id,
            "endpoints": [{"name": e.name, "host": e.host, "port": e.port} for e in self.endpoints],
            "kRaftVersionFeature": {"minSupportedVersion": self.kraft_range[0],
                                    "maxSupportedVersion": self.kraft_range[1]},
        }


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters, ordered by id."""

    voters: tuple[Voter, ...]

    @classmethod
    def of(cls, voters: Iterable[Voter]) -> VoterSet:
        return cls(tuple(sorted(voters, key=lambda v: v.voter_id)))

    @classmethod
    def from_record(cls, value: Mapping[str, Any]) -> VoterSet:
        """From a decoded VotersRecord value."""
        return cls.of(
            Voter(
                int(v["voterId"]),
                v.get("voterDirectoryId") or ZERO_UUID,
                tuple(VoterEndpoint(int(v["voterId"]), str(e["name"]), str(e["host"]), int(e["port"]))
                      for e in v.get("endpoints") or ()),
                (int(v["kRaftVersionFeature"]["minSupportedVersion"]),
                 int(v["kRaftVersionFeature"]["maxSupportedVersion"])),
            )
            for v in value.get("voters") or ())

    @classmethod
    def static(cls, voter_ids: Iterable[int], endpoints: Iterable[VoterEndpoint],
               kraft_range: tuple[int, int]) -> VoterSet:
        """The static voters of ``controller.quorum.voters`` (directory ids unknown), as Kafka's
        ``VoterSet.fromInetSocketAddresses`` builds them."""
        by_id: dict[int, list[VoterEndpoint]] = {}
        for e in endpoints:
            by_id.setdefault(e.voter_id, []).append(e)
        return cls.of(Voter(v, ZERO_UUID, tuple(by_id.get(v, ())), kraft_range) for v in voter_ids)

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(v.voter_id for v in self.voters)

    @property
    def keys_text(self) -> str:
        """Kafka's ``voterKeys()`` as a Java Set prints it."""
        return "[" + ", ".join(v.key_text for v in self.voters) + "]"

    def get(self, voter_id: int) -> Voter | None:
        return next((v for v in self.voters if v.voter_id == voter_id), None)

    def is_voter(self, node_id: int, directory_id: uuid.UUID | None) -> bool:
        return any(v.matches(node_id, directory_id) for v in self.voters)

    def add(self, voter: Voter) -> VoterSet | None:
        """The set with ``voter`` added; None when its id is already a voter."""
        if self.get(voter.voter_id) is not None:
            return None
        return VoterSet.of((*self.voters, voter))

    def remove(self, voter_id: int, directory_id: uuid.UUID) -> VoterSet | None:
        """The set without the voter of this id and directory id; None when no voter has both, or
        when it is the last voter (Kafka's ``VoterSet.removeVoter``)."""
        found = self.get(voter_id)
        if found is None or found.directory_id != directory_id or len(self.voters) < 2:
            return None
        return VoterSet(tuple(v for v in self.voters if v.voter_id != voter_id))

    def to_record(self) -> Body:
        """The VotersRecord value (version 0)."""
        return {"version": 0, "voters": [v.to_record() for v in self.voters]}
