"""The storage layer's parsers on random bytes, bit flips and truncations: ``meta.properties``,
``quorum-state``, checkpoint files, ``partition.metadata``, the clean-shutdown marker, index files
and metadata log files. Each returns a value or raises a :class:`StorageError`, and allocates no
more than its input allows."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.storage import checkpoints as cp
from kraftwerk.storage import index
from kraftwerk.storage.errors import CorruptFileError, StorageError
from kraftwerk.storage.metadata_log import iter_metadata_batches, read_snapshot, snapshot_file_batches
from kraftwerk.storage.properties import MetaProperties, format_meta_properties, parse_meta_properties
from kraftwerk.storage.quorum_state import QuorumState, format_quorum_state, parse_quorum_state
from tests.fuzzing import FUZZ, damaged, parse_or_typed_error

DIR = uuid.UUID(int=0x1234)


def _replace_nth(data: bytes, old: bytes, new: bytes, n: int) -> bytes:
    """``data`` with its ``n``-th occurrence of ``old`` (counting round) replaced by ``new``."""
    starts = [i for i in range(len(data)) if data.startswith(old, i)]
    if not starts:
        return data
    at = starts[n % len(starts)]
    return data[:at] + new + data[at + len(old):]


def texts(valid: list[bytes]) -> st.SearchStrategy[bytes]:
    """Random bytes, damaged valid files, and the text traps: huge numbers, deep JSON nesting."""
    digits = st.integers(4000, 6000).map(lambda n: b"9" * n)
    nested = st.integers(500, 3000).map(lambda n: b"[" * n + b"]" * n)
    return st.one_of(
        st.binary(max_size=200),
        st.sampled_from(valid).flatmap(damaged),
        st.tuples(st.sampled_from(valid), st.sampled_from([b"1", b"0", b"2", b"42"]), digits,
                  st.integers(0, 3)).map(lambda t: _replace_nth(*t)),
        nested,
    )


META = [format_meta_properties(MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qk", 1, DIR)),
        format_meta_properties(MetaProperties(0, None, 3))]


@FUZZ
@given(texts(META))
def test_meta_properties(data: bytes) -> None:
    parse_or_typed_error(lambda: parse_meta_properties(data), StorageError, len(data))


QUORUM = [format_quorum_state(QuorumState(1, 1, 5, -1, DIR)),
          format_quorum_state(QuorumState(0, 2, 7, 2, cluster_id="c", applied_offset=10,
                                          current_voters=(1, 2)))]


@FUZZ
@given(texts(QUORUM))
def test_quorum_state(data: bytes) -> None:
    parse_or_typed_error(lambda: parse_quorum_state(data), StorageError, len(data))


CHECKPOINTS = [cp.format_leader_epoch_checkpoint([cp.EpochEntry(0, 0), cp.EpochEntry(3, 120)]),
               cp.format_offset_checkpoint([cp.PartitionOffset("t", 0, 42), cp.PartitionOffset("u-v", 3, 1)])]


@FUZZ
@given(texts(CHECKPOINTS))
def test_checkpoint_files(data: bytes) -> None:
    parse_or_typed_error(lambda: cp.parse_leader_epoch_checkpoint(data), StorageError, len(data))
    parse_or_typed_error(lambda: cp.parse_offset_checkpoint(data, "f"), StorageError, len(data))


@FUZZ
@given(texts([cp.format_partition_metadata(DIR)]))
def test_partition_metadata(data: bytes) -> None:
    parse_or_typed_error(lambda: cp.parse_partition_metadata(data), StorageError, len(data))


@FUZZ
@given(texts([cp.format_clean_shutdown(42), b""]))
def test_clean_shutdown_marker(data: bytes) -> None:
    parse_or_typed_error(lambda: cp.parse_clean_shutdown(data), StorageError, len(data))


INDEX = index.format_offset_index([index.OffsetIndexEntry(100, 0), index.OffsetIndexEntry(140, 4096)], 100)
TIME_INDEX = index.format_time_index([index.TimeIndexEntry(5, 100), index.TimeIndexEntry(9, 140)], 100)


@FUZZ
@given(st.one_of(st.binary(max_size=96), st.sampled_from([INDEX, TIME_INDEX]).flatmap(damaged)),
       st.integers(0, 2**40))
def test_index_files(data: bytes, offset: int) -> None:
    size = len(data)
    parse_or_typed_error(lambda: index.parse_offset_index(data, 100), StorageError, size)
    parse_or_typed_error(lambda: index.parse_time_index(data, 100), StorageError, size)
    parse_or_typed_error(lambda: index.check_offset_index_sanity(data, 100, "i"), StorageError, size)
    parse_or_typed_error(lambda: index.check_time_index_sanity(data, "t"), StorageError, size)
    parse_or_typed_error(lambda: index.lookup_offset(data, 100, offset), StorageError, size)


def _feature(level: int) -> bytes:
    return encode_metadata_record(lookup_record("FeatureLevelRecord"), 0,
                                  {"name": "metadata.version", "featureLevel": level})


SNAPSHOT = b"".join(snapshot_file_batches([[_feature(30)], [_feature(29)]], epoch=3,
                                          last_contained_log_timestamp=0, clock=lambda: 0))


@FUZZ
@given(st.one_of(st.binary(max_size=200), st.just(SNAPSHOT).flatmap(damaged)))
def test_metadata_log_and_snapshot_files(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000-0000000003.checkpoint"
        path.write_bytes(data)
        parse_or_typed_error(lambda: list(iter_metadata_batches(path)), StorageError, len(data))
        parse_or_typed_error(lambda: read_snapshot(path), StorageError, len(data))


HUGE = "9" * 5000


@pytest.mark.parametrize(("parse", "data"), [
    (parse_meta_properties, META[0].replace(b"node.id=1", f"node.id={HUGE}".encode())),
    (parse_meta_properties, META[1].replace(b"broker.id=3", f"broker.id=-{HUGE}".encode())),
    (parse_quorum_state, QUORUM[0].replace(b'"leaderEpoch":5', f'"leaderEpoch":{HUGE}'.encode())),
    (parse_quorum_state, b"[" * 100_000 + b"]" * 100_000),
    (cp.parse_leader_epoch_checkpoint, f"0\n1\n{HUGE} 0\n".encode()),
    (cp.parse_leader_epoch_checkpoint, f"{HUGE}\n".encode()),
    (cp.parse_partition_metadata, f"version: {HUGE}\ntopic_id: AAAAAAAAAAAAAAAAAAASNA".encode()),
    (cp.parse_clean_shutdown, f'{{"version":0,"brokerEpoch":{HUGE}}}'.encode()),
    (cp.parse_clean_shutdown, b"[" * 100_000),
], ids=["node.id", "broker.id", "quorum-state number", "quorum-state nesting", "checkpoint entry",
        "checkpoint version", "partition.metadata", "clean shutdown number", "clean shutdown nesting"])
def test_numbers_of_thousands_of_digits_and_deep_nesting_are_corrupt_files(
        parse: Callable[[bytes], object], data: bytes) -> None:
    with pytest.raises(CorruptFileError):
        parse(data)
