"""meta.properties, quorum-state, checkpoints, partition.metadata, clean shutdown: golden bytes and
strict parsing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kraftwerk.config.properties import parse_properties
from kraftwerk.storage import (
    CorruptFileError,
    EpochEntry,
    MetaProperties,
    PartitionOffset,
    QuorumState,
    UnsupportedFileVersionError,
    read_clean_shutdown,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    read_quorum_state,
    write_clean_shutdown,
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
    write_quorum_state,
)
from kraftwerk.storage.checkpoints import (
    format_leader_epoch_checkpoint,
    format_partition_metadata,
    parse_clean_shutdown,
    parse_leader_epoch_checkpoint,
    parse_offset_checkpoint,
    parse_partition_metadata,
)
from kraftwerk.storage.properties import (
    format_meta_properties,
    format_properties,
    java_properties_order,
    parse_meta_properties,
)
from kraftwerk.storage.quorum_state import format_quorum_state, parse_quorum_state
from tests.conftest import golden_path

META_FILES = [("kafka-4.3-standalone", "meta.properties")]
QUORUM_FILES = [("kafka-4.3-standalone", "quorum-state")]
EPOCH_FILES = [("kafka-4.3-standalone", "leader-epoch-checkpoint")]
PARTITION_FILES = [("kafka-4.3-standalone", "partition.metadata")]


def _date_of(data: bytes) -> datetime:
    line = data.decode().split("\n")[1][1:]
    return datetime.strptime(line.replace(" UTC ", " "), "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC)


@pytest.mark.parametrize("parts", META_FILES)
def test_meta_properties_golden_round_trip(parts: tuple[str, ...], tmp_path: Path) -> None:
    check_meta_properties_round_trip(golden_path(*parts), tmp_path)


def check_meta_properties_round_trip(path: Path, tmp_path: Path) -> None:
    """A real meta.properties reads, formats and writes back to Kafka's bytes."""
    meta = read_meta_properties(path)
    assert meta.version == 1 and meta.node_id == 1 and meta.directory_id is not None
    data = path.read_bytes()
    assert format_meta_properties(meta, _date_of(data)) == data
    write_meta_properties(tmp_path, meta, _date_of(data))
    assert (tmp_path / "meta.properties").read_bytes() == data
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_meta_properties_golden_values() -> None:
    meta = read_meta_properties(golden_path("kafka-4.3-standalone", "meta.properties"))
    assert meta.cluster_id == "co8Lz5qWSCe6yEg4UfbcVw"
    assert str(meta.directory_id) == "ccbcc793-f87d-4072-a5ac-6ff1425543c5"


def test_meta_properties_v0() -> None:
    meta = MetaProperties(0, "abc", 7)
    data = format_meta_properties(meta, datetime(2024, 3, 5, 1, 2, 3, tzinfo=UTC))
    assert data == b"#\n#Tue Mar 05 01:02:03 UTC 2024\nbroker.id=7\nversion=0\ncluster.id=abc\n"
    assert parse_meta_properties(data) == meta
    assert parse_meta_properties(b"version=0\n") == MetaProperties(0, None, None)
    assert parse_meta_properties(b"") == MetaProperties(0, None, None)


def test_java_properties_order_matches_jdk17() -> None:
    assert java_properties_order(["version", "cluster.id", "node.id", "directory.id"]) == [
        "node.id", "directory.id", "version", "cluster.id"]


def test_properties_escapes_round_trip() -> None:
    props = {"a key": " lead=x:#!\\", "k\tx": "line\nbreak"}
    data = format_properties(props, datetime(2024, 1, 1, tzinfo=UTC))
    parsed = {e.key: e.value for e in parse_properties(data.decode())}
    assert parsed == props


@pytest.mark.parametrize(("content", "needle", "line"), [
    (b"version=2\nnode.id=1\ncluster.id=x\n", "Unknown meta.properties version number 2", 1),
    (b"version=1\ncluster.id=x\n", "Failed to find node.id", None),
    (b"version=1\nnode.id=1\n", "cluster.id was not found.", None),
    (b"version=1\ncluster.id=x\nnode.id=one\n", "base-10", 3),
    (b"version=1\ncluster.id=x\nnode.id=99999999999\n", "int32", 3),
    (b"version=1\ncluster.id=x\nnode.id=1\ndirectory.id=short\n", "Uuid", 4),
    (b"version=1\ncluster.id=x\\u12\nnode.id=1\n", "Malformed \\uxxxx", 2),
])
def test_meta_properties_strict(content: bytes, needle: str, line: int | None) -> None:
    with pytest.raises(CorruptFileError) as info:
        parse_meta_properties(content, "meta.properties")
    assert needle in str(info.value)
    assert info.value.line == line
    assert "meta.properties" in str(info.value)


@pytest.mark.parametrize("parts", QUORUM_FILES)
def test_quorum_state_golden(parts: tuple[str, ...], tmp_path: Path) -> None:
    check_quorum_state_round_trip(golden_path(*parts), tmp_path)


def check_quorum_state_round_trip(path: Path, tmp_path: Path) -> None:
    """A real quorum-state reads, formats and writes back to Kafka's bytes."""
    state = read_quorum_state(path)
    assert state.leader_id == 1 and state.leader_epoch == 1 and state.voted_id == -1
    assert format_quorum_state(state) == path.read_bytes()
    write_quorum_state(tmp_path / "quorum-state", state)
    assert (tmp_path / "quorum-state").read_bytes() == path.read_bytes()


def test_quorum_state_v0_null_voters() -> None:
    null_voters = QuorumState(0, current_voters=None)
    assert b'"currentVoters":null' in format_quorum_state(null_voters)
    assert parse_quorum_state(format_quorum_state(null_voters)) == null_voters


@pytest.mark.parametrize(("content", "error"), [
    (b"", CorruptFileError),
    (b"[1]", CorruptFileError),
    (b"{not json", CorruptFileError),
    (b'{"leaderId":1}', CorruptFileError),
    (b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":2}',
     UnsupportedFileVersionError),
    (b'{"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}',
     CorruptFileError),
    (b'{"leaderId":"1","leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
     b'"data_version":1}', CorruptFileError),
    (b'{"leaderId":1,"leaderEpoch":1,"votedId":-1,"votedDirectoryId":"AA","data_version":1}',
     CorruptFileError),
    (b'{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":-1,"appliedOffset":0,"data_version":0}',
     CorruptFileError),
    (b"\xff\xfe", CorruptFileError),
])
def test_quorum_state_strict(content: bytes, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        parse_quorum_state(content, "quorum-state")
    assert "quorum-state" in str(info.value)


@pytest.mark.parametrize("parts", EPOCH_FILES)
def test_leader_epoch_checkpoint_golden(parts: tuple[str, ...], tmp_path: Path) -> None:
    check_leader_epoch_checkpoint_round_trip(golden_path(*parts), tmp_path)


def check_leader_epoch_checkpoint_round_trip(path: Path, tmp_path: Path) -> None:
    """A real leader-epoch-checkpoint reads, formats and writes back to Kafka's bytes."""
    entries = read_leader_epoch_checkpoint(path)
    assert entries == [EpochEntry(1, 0)]
    assert format_leader_epoch_checkpoint(entries) == path.read_bytes()
    write_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint", entries)
    assert (tmp_path / "leader-epoch-checkpoint").read_bytes() == path.read_bytes()


@pytest.mark.parametrize(("content", "error", "line"), [
    (b"1\n0\n", UnsupportedFileVersionError, 1),
    (b"x\n0\n", CorruptFileError, 1),
    (b"0\n2\n1 0\n", CorruptFileError, 2),
    (b"0\n1\n1 0\n2 5\n", CorruptFileError, 2),
    (b"0\n1\n1\n", CorruptFileError, 3),
    (b"0\n1\n 1 0\n", CorruptFileError, 3),
    (b"0\n1\n1 0 3\n", CorruptFileError, 3),
    (b"0\n1\n1 zero\n", CorruptFileError, 3),
    (b"0\nfew\n", CorruptFileError, 2),
])
def test_leader_epoch_checkpoint_strict(content: bytes, error: type[Exception], line: int) -> None:
    with pytest.raises(error) as info:
        parse_leader_epoch_checkpoint(content, "leader-epoch-checkpoint")
    assert info.value.line == line  # type: ignore[attr-defined]


def test_checkpoint_lenient_where_kafka_is() -> None:
    assert parse_leader_epoch_checkpoint(b"") == []
    assert parse_leader_epoch_checkpoint(b"0\n") == []
    assert parse_leader_epoch_checkpoint(b"0\r\n1\r\n3 7\r\n") == [EpochEntry(3, 7)]


def test_offset_checkpoint_round_trip(tmp_path: Path) -> None:
    entries = [PartitionOffset("orders", 0, 42), PartitionOffset("__consumer_offsets", 49, 0),
               PartitionOffset("my-topic.v2", 3, 1 << 40)]
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offset_checkpoint(path, entries)
    assert path.read_bytes() == (b"0\n3\norders 0 42\n__consumer_offsets 49 0\n"
                                 b"my-topic.v2 3 1099511627776\n")
    assert read_offset_checkpoint(path) == entries
    with pytest.raises(CorruptFileError) as info:
        parse_offset_checkpoint(b"0\n1\norders 0\n", path)
    assert info.value.line == 3


@pytest.mark.parametrize("parts", PARTITION_FILES)
def test_partition_metadata_golden(parts: tuple[str, ...], tmp_path: Path) -> None:
    check_partition_metadata_round_trip(golden_path(*parts), tmp_path)


def check_partition_metadata_round_trip(path: Path, tmp_path: Path) -> None:
    """A real partition.metadata reads, formats and writes back to Kafka's bytes."""
    topic_id = read_partition_metadata(path)
    assert topic_id == uuid.UUID(int=1)
    assert format_partition_metadata(topic_id) == path.read_bytes()
    write_partition_metadata(tmp_path, topic_id)
    assert (tmp_path / "partition.metadata").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("content", [b"", b"version: 1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
                                     b"version: 0\n", b"version: 0\ntopic: AAAAAAAAAAAAAAAAAAAAAQ",
                                     b"version: 0\ntopic_id: nope", b"version 0\ntopic_id: x"])
def test_partition_metadata_strict(content: bytes) -> None:
    with pytest.raises(CorruptFileError):
        parse_partition_metadata(content, "partition.metadata")


def test_clean_shutdown(tmp_path: Path) -> None:
    assert read_clean_shutdown(tmp_path) is None
    write_clean_shutdown(tmp_path, 13)
    assert (tmp_path / ".kafka_cleanshutdown").read_bytes() == b'{"version":0,"brokerEpoch":13}'
    marker = read_clean_shutdown(tmp_path)
    assert marker is not None and marker.broker_epoch == 13
    (tmp_path / ".kafka_cleanshutdown").write_bytes(b"")
    marker = read_clean_shutdown(tmp_path)
    assert marker is not None and marker.broker_epoch is None
    for bad in (b"{", b"[]", b'{"version":0,"brokerEpoch":"x"}'):
        with pytest.raises(CorruptFileError):
            parse_clean_shutdown(bad)
