"""The KRaft ``quorum-state`` file (Kafka's FileQuorumStateStore).

One line of compact JSON, no trailing newline: the QuorumStateData fields of ``data_version`` 0
(``clusterId``, ``leaderId``, ``leaderEpoch``, ``votedId``, ``appliedOffset``, ``currentVoters``)
or 1 (``leaderId``, ``leaderEpoch``, ``votedId``, ``votedDirectoryId``), then ``data_version``.
Written through ``quorum-state.tmp`` + fsync + rename like Kafka.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.json_form import uuid_from_str, uuid_to_str
from kraftwerk.storage.errors import CorruptFileError, UnsupportedFileVersionError
from kraftwerk.storage.fileio import atomic_write, read_bytes

QUORUM_STATE_FILE = "quorum-state"
ZERO_UUID = uuid.UUID(int=0)

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


@dataclass(frozen=True, slots=True)
class QuorumState:
    """The election state a KRaft voter persists; fields not in ``data_version`` keep defaults."""

    data_version: int
    leader_id: int = -1
    leader_epoch: int = -1
    voted_id: int = -1
    voted_directory_id: uuid.UUID = ZERO_UUID  # data_version 1
    cluster_id: str = ""  # data_version 0
    applied_offset: int = 0  # data_version 0
    current_voters: tuple[int, ...] | None = None  # data_version 0 (nullable)

    def __post_init__(self) -> None:
        if self.data_version not in (0, 1):
            raise ValueError(f"Quorum state data version ({self.data_version}) is not 0 or 1")

    def to_json_object(self) -> dict[str, Any]:
        """The JSON object in Kafka's field order (QuorumStateDataJsonConverter + data_version)."""
        obj: dict[str, Any] = {}
        if self.data_version == 0:
            obj["clusterId"] = self.cluster_id
        obj["leaderId"] = self.leader_id
        obj["leaderEpoch"] = self.leader_epoch
        obj["votedId"] = self.voted_id
        if self.data_version >= 1:
            obj["votedDirectoryId"] = uuid_to_str(self.voted_directory_id)
        if self.data_version == 0:
            obj["appliedOffset"] = self.applied_offset
            obj["currentVoters"] = (None if self.current_voters is None
                                    else [{"voterId": v} for v in self.current_voters])
        obj["data_version"] = self.data_version
        return obj


def format_quorum_state(state: QuorumState) -> bytes:
    """The exact bytes Kafka writes (Jackson's compact ``ObjectNode.toString()``, no newline)."""
    return json.dumps(state.to_json_object(), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _int(path: Path | str, obj: dict[str, Any], name: str, bounds: tuple[int, int], version: int) -> int:
    if name not in obj:
        raise CorruptFileError(path, f"QuorumStateData: unable to locate field '{name}', which is "
                                     f"mandatory in version {version}", line=1)
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
        raise CorruptFileError(path, f"QuorumStateData field '{name}' is not an integer in range: "
                                     f"{value!r}", line=1)
    return value


def parse_quorum_state(data: bytes, path: Path | str = QUORUM_STATE_FILE) -> QuorumState:
    """Parse the first line like FileQuorumStateStore.readStateFromFile, strictly typed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(path, f"not UTF-8: {exc.reason}", position=exc.start) from None
    line = text.split("\n", 1)[0].rstrip("\r")
    if not line:
        raise CorruptFileError(path, "File ended prematurely.", line=1)
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CorruptFileError(path, f"invalid JSON: {exc.msg} (column {exc.colno})", line=1) from None
    except (ValueError, RecursionError) as exc:  # a number of thousands of digits, arrays nested too deep
        raise CorruptFileError(path, f"invalid JSON: {exc}", line=1) from None
    if not isinstance(obj, dict):
        raise CorruptFileError(path, f"Deserialized node {line} is not an object node", line=1)
    if "data_version" not in obj:
        raise CorruptFileError(path, f"Deserialized node {line} does not have data_version field", line=1)
    version = _int(path, obj, "data_version", (-(1 << 15), (1 << 15) - 1), 0)
    if version not in (0, 1):
        raise UnsupportedFileVersionError(
            path, f"data_version ({version}) is not within the min (0) and max (1) supported version", line=1)
    leader_id = _int(path, obj, "leaderId", _INT32, version)
    leader_epoch = _int(path, obj, "leaderEpoch", _INT32, version)
    voted_id = _int(path, obj, "votedId", _INT32, version)
    if version == 1:
        raw = obj.get("votedDirectoryId")
        if not isinstance(raw, str):
            raise CorruptFileError(path, "QuorumStateData: unable to locate field 'votedDirectoryId', "
                                         "which is mandatory in version 1", line=1)
        try:
            voted_dir = uuid_from_str(raw)
        except ProtocolError as exc:
            raise CorruptFileError(path, f"votedDirectoryId: {exc}", line=1) from None
        return QuorumState(1, leader_id, leader_epoch, voted_id, voted_dir)
    cluster_id = obj.get("clusterId")
    if not isinstance(cluster_id, str):
        raise CorruptFileError(path, "QuorumStateData: unable to locate field 'clusterId', which is "
                                     "mandatory in version 0", line=1)
    applied = _int(path, obj, "appliedOffset", _INT64, 0)
    if "currentVoters" not in obj:
        raise CorruptFileError(path, "QuorumStateData: unable to locate field 'currentVoters', which is "
                                     "mandatory in version 0", line=1)
    raw_voters = obj["currentVoters"]
    voters: tuple[int, ...] | None = None
    if raw_voters is not None:
        if not isinstance(raw_voters, list) or not all(isinstance(v, dict) for v in raw_voters):
            raise CorruptFileError(path, "currentVoters is not an array of objects", line=1)
        voters = tuple(_int(path, v, "voterId", _INT32, 0) for v in raw_voters)
    return QuorumState(0, leader_id, leader_epoch, voted_id, ZERO_UUID, cluster_id, applied, voters)


def read_quorum_state(path: Path) -> QuorumState:
    """Read ``quorum-state`` (pass the file or the metadata log directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / QUORUM_STATE_FILE
    return parse_quorum_state(read_bytes(path), path)


def write_quorum_state(path: Path, state: QuorumState) -> None:
    path = Path(path)
    if path.is_dir():
        path = path / QUORUM_STATE_FILE
    atomic_write(path, format_quorum_state(state))
