"""Kafka's small text files next to the logs: checkpoints, ``partition.metadata``, clean-shutdown.

* ``leader-epoch-checkpoint`` and the offset checkpoints (``recovery-point-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``)
  share Kafka's CheckpointFile layout: a version line (0), an entry-count line, one entry per line
  (``epoch startOffset`` / ``topic partition offset``), each line ending in ``\\n``.
* ``partition.metadata``: ``version: 0\\ntopic_id: <Kafka base64 uuid>`` with no final newline.
* ``.kafka_cleanshutdown``: JSON ``{"version":0,"brokerEpoch":N}`` since Kafka 3.7 (KIP-966);
  older brokers left it empty.

Parsing is strict (Kafka's CheckpointReadBuffer rules): an unknown version, a malformed line or a
count that does not match the entries is a :class:`CorruptFileError` naming the file and line.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.json_form import uuid_from_str, uuid_to_str
from kraftwerk.storage.errors import CorruptFileError, UnsupportedFileVersionError
from kraftwerk.storage.fileio import atomic_write, read_bytes

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT_FILE = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
CLEAN_SHUTDOWN_VERSION = 0

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACES = re.compile(r"\s+")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """A leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    """One line of an offset checkpoint: a topic partition and its offset."""

    topic: str
    partition: int
    offset: int


def _java_lines(text: str) -> list[str]:
    """Lines as ``BufferedReader.readLine`` returns them (a final line break adds no empty line)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _java_split(line: str) -> list[str]:
    """``line.split("\\\\s+")``: leading empty field kept, trailing empty fields dropped."""
    parts = _WHITESPACES.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _java_number(text: str, bounds: tuple[int, int]) -> int | None:
    if not _JAVA_INT.fullmatch(text):
        return None
    # No int or long has more than 19 significant digits: longer text is out of range, and never
    # converted (Python refuses to convert more than 4300 digits).
    if len(text.lstrip("+-").lstrip("0")) > 19:
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def _decode(data: bytes, path: Path | str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(path, f"not UTF-8: {exc.reason}", position=exc.start) from None


# ---------------------------------------------------------------------- generic checkpoint file

def parse_checkpoint(data: bytes, path: Path | str, parse_entry: Callable[[str], T | None],
                     version: int = CHECKPOINT_VERSION) -> list[T]:
    """Parse a CheckpointFile; ``parse_entry`` returns ``None`` for a malformed line."""
    lines = _java_lines(_decode(data, path))
    if not lines:
        return []
    read_version = _java_number(lines[0], _INT32)
    if read_version is None:
        raise CorruptFileError(path, f"Malformed version line in checkpoint file: '{lines[0]}'", line=1)
    if read_version != version:
        raise UnsupportedFileVersionError(
            path, f"Unrecognised version:{read_version}, expected version: {version}", line=1)
    if len(lines) < 2:
        return []
    expected = _java_number(lines[1], _INT32)
    if expected is None or expected < 0:
        raise CorruptFileError(path, f"Malformed entry count line in checkpoint file: '{lines[1]}'", line=2)
    entries: list[T] = []
    for number, line in enumerate(lines[2:], start=3):
        entry = parse_entry(line)
        if entry is None:
            raise CorruptFileError(path, f"Malformed line in checkpoint file: '{line}'", line=number)
        entries.append(entry)
    if len(entries) != expected:
        raise CorruptFileError(path, f"Expected {expected} entries in checkpoint file, but found "
                                     f"{len(entries)}", line=2)
    return entries


def format_checkpoint(lines: Sequence[str], version: int = CHECKPOINT_VERSION) -> bytes:
    """Version line, count line, one line per entry, each ended by ``\\n`` (CheckpointWriteBuffer)."""
    return "".join(f"{line}\n" for line in (str(version), str(len(lines)), *lines)).encode("utf-8")


# ---------------------------------------------------------------------- leader-epoch-checkpoint

def _parse_epoch_entry(line: str) -> EpochEntry | None:
    parts = _java_split(line)
    if len(parts) != 2:
        return None
    epoch = _java_number(parts[0], _INT32)
    offset = _java_number(parts[1], _INT64)
    return None if epoch is None or offset is None else EpochEntry(epoch, offset)


def parse_leader_epoch_checkpoint(data: bytes, path: Path | str = LEADER_EPOCH_CHECKPOINT_FILE
                                  ) -> list[EpochEntry]:
    return parse_checkpoint(data, path, _parse_epoch_entry)


def format_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    return format_checkpoint([f"{e.epoch} {e.start_offset}" for e in entries])


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry]:
    """Read a partition's ``leader-epoch-checkpoint`` (pass the file or the partition directory)."""
    path = _file_in(path, LEADER_EPOCH_CHECKPOINT_FILE)
    return parse_leader_epoch_checkpoint(read_bytes(path), path)


def write_leader_epoch_checkpoint(path: Path, entries: Iterable[EpochEntry]) -> None:
    atomic_write(_file_in(path, LEADER_EPOCH_CHECKPOINT_FILE), format_leader_epoch_checkpoint(entries))


# ---------------------------------------------------------------------- offset checkpoints

def _parse_offset_entry(line: str) -> PartitionOffset | None:
    parts = _java_split(line)
    if len(parts) != 3 or not parts[0]:
        return None
    partition = _java_number(parts[1], _INT32)
    offset = _java_number(parts[2], _INT64)
    return None if partition is None or offset is None else PartitionOffset(parts[0], partition, offset)


def parse_offset_checkpoint(data: bytes, path: Path | str) -> list[PartitionOffset]:
    return parse_checkpoint(data, path, _parse_offset_entry)


def format_offset_checkpoint(entries: Iterable[PartitionOffset]) -> bytes:
    return format_checkpoint([f"{e.topic} {e.partition} {e.offset}" for e in entries])


def read_offset_checkpoint(path: Path) -> list[PartitionOffset]:
    """Read any of the four offset checkpoint files of a log directory."""
    return parse_offset_checkpoint(read_bytes(path), path)


def write_offset_checkpoint(path: Path, entries: Iterable[PartitionOffset]) -> None:
    atomic_write(Path(path), format_offset_checkpoint(entries))


# ---------------------------------------------------------------------- partition.metadata

def parse_partition_metadata(data: bytes, path: Path | str = PARTITION_METADATA_FILE) -> uuid.UUID:
    """The topic id of a partition.metadata file (Kafka's PartitionMetadataReadBuffer)."""
    lines = _java_lines(_decode(data, path))
    if not lines:
        raise CorruptFileError(path, "empty partition metadata file", line=1)
    version_parts = re.split(r":\s+", lines[0])
    if len(version_parts) != 2 or version_parts[0].strip() != "version":
        raise CorruptFileError(path, f"Malformed line in partition metadata file: '{lines[0]}'", line=1)
    version = _java_number(version_parts[1], _INT32)
    if version is None:
        raise CorruptFileError(path, f"Malformed line in partition metadata file: '{lines[0]}'", line=1)
    if version != PARTITION_METADATA_VERSION:
        raise UnsupportedFileVersionError(path, f"Unrecognized version of partition metadata file: {version}",
                                          line=1)
    if len(lines) < 2:
        raise CorruptFileError(path, "missing topic_id line", line=2)
    id_parts = re.split(r":\s+", lines[1])
    if len(id_parts) != 2 or id_parts[0].strip() != "topic_id":
        raise CorruptFileError(path, f"Malformed line in partition metadata file: '{lines[1]}'", line=2)
    try:
        topic_id = uuid_from_str(id_parts[1])
    except ProtocolError as exc:
        raise CorruptFileError(path, f"bad topic_id: {exc}", line=2) from None
    if len(lines) > 2:
        raise CorruptFileError(path, f"unexpected line '{lines[2]}'", line=3)
    return topic_id


def format_partition_metadata(topic_id: uuid.UUID) -> bytes:
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_str(topic_id)}".encode()


def read_partition_metadata(path: Path) -> uuid.UUID:
    """Read ``partition.metadata`` (pass the file or the partition directory)."""
    path = _file_in(path, PARTITION_METADATA_FILE)
    return parse_partition_metadata(read_bytes(path), path)


def write_partition_metadata(path: Path, topic_id: uuid.UUID) -> None:
    atomic_write(_file_in(path, PARTITION_METADATA_FILE), format_partition_metadata(topic_id))


# ---------------------------------------------------------------------- .kafka_cleanshutdown

@dataclass(frozen=True, slots=True)
class CleanShutdown:
    """The clean-shutdown marker: present means the last shutdown was clean; the broker epoch is
    there since Kafka 3.7 (``None`` for the empty marker older brokers wrote)."""

    broker_epoch: int | None
    version: int | None = CLEAN_SHUTDOWN_VERSION


def parse_clean_shutdown(data: bytes, path: Path | str = CLEAN_SHUTDOWN_FILE) -> CleanShutdown:
    text = _decode(data, path)
    if not text.strip():
        return CleanShutdown(None, None)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorruptFileError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # a number of thousands of digits, arrays nested too deep
        raise CorruptFileError(path, f"invalid JSON: {exc}", line=1) from None
    if not isinstance(obj, dict):
        raise CorruptFileError(path, "clean shutdown content is not a JSON object", line=1)
    version = obj.get("version", 0)
    epoch = obj.get("brokerEpoch")
    if isinstance(version, bool) or not isinstance(version, int):
        raise CorruptFileError(path, f"version is not an integer: {version!r}", line=1)
    if epoch is not None and (isinstance(epoch, bool) or not isinstance(epoch, int)
                              or not _INT64[0] <= epoch <= _INT64[1]):
        raise CorruptFileError(path, f"brokerEpoch is not a long: {epoch!r}", line=1)
    return CleanShutdown(epoch, version)


def format_clean_shutdown(broker_epoch: int, version: int = CLEAN_SHUTDOWN_VERSION) -> bytes:
    """What CleanShutdownFileHandler.write puts in the file (Jackson, declaration order)."""
    return json.dumps({"version": version, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def read_clean_shutdown(log_dir: Path) -> CleanShutdown | None:
    """The marker of a log directory, or ``None`` when it is absent (an unclean shutdown)."""
    path = _file_in(log_dir, CLEAN_SHUTDOWN_FILE)
    if not path.exists():
        return None
    return parse_clean_shutdown(read_bytes(path), path)


def write_clean_shutdown(log_dir: Path, broker_epoch: int) -> None:
    atomic_write(_file_in(log_dir, CLEAN_SHUTDOWN_FILE), format_clean_shutdown(broker_epoch))


def _file_in(path: Path, name: str) -> Path:
    path = Path(path)
    return path / name if path.is_dir() else path
