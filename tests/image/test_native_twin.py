"""The compiled partition replay (``_cdelta``) against its pure reference: same registration, same
shared tuples, same errors, for every PartitionRecord version and for values missing keys."""

from __future__ import annotations

import gc
import importlib
import uuid
import weakref
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftwerk.image.delta import _partition_from_record_py
from kraftwerk.image.errors import MetadataReplayError
from kraftwerk.image.model import PartitionRegistration
from kraftwerk.protocol.registry import lookup_record
from tests.protocol.strategies import value_for

try:
    cdelta: Any = importlib.import_module("kraftwerk.image._cdelta")
except ImportError:  # tests/test_native.py fails for a missing extension; no need to fail here too
    pytestmark = pytest.mark.skip(reason="the compiled extension kraftwerk.image._cdelta is not built")

PARTITION_RECORD = lookup_record("PartitionRecord")
_KEYS = ("replicas", "isr", "directories", "removingReplicas", "addingReplicas", "leader",
         "leaderRecoveryState", "leaderEpoch", "partitionEpoch", "eligibleLeaderReplicas", "lastKnownElr")


@st.composite
def partition_values(draw: Any) -> dict[str, Any]:
    version = draw(st.sampled_from(list(PARTITION_RECORD.versions())))
    value = dict(draw(value_for(PARTITION_RECORD, version)))
    replicas = value.get("replicas") or []
    if draw(st.booleans()):  # directories that match the replicas, as a valid record has
        value["directories"] = [uuid.UUID(int=draw(st.integers(0, 3))) for _ in replicas]
    if draw(st.booleans()):
        value["leaderRecoveryState"] = draw(st.sampled_from([0, 1, 2, -1]))
    for key in draw(st.lists(st.sampled_from(_KEYS), max_size=3)):  # a value built by code, not decoded
        value.pop(key, None)
    return value


def _outcome(fn: Any, value: dict[str, Any], shared: dict[Any, Any] | None) -> object:
    try:
        part = fn(value, shared)
    except MetadataReplayError as exc:
        return type(exc), str(exc)
    assert type(part) is PartitionRegistration
    return part


@settings(max_examples=400, deadline=None)
@given(partition_values(), st.booleans())
def test_compiled_replay_matches_the_pure_one(value: dict[str, Any], with_shared: bool) -> None:
    pure_shared: dict[Any, Any] | None = {} if with_shared else None
    compiled_shared: dict[Any, Any] | None = {} if with_shared else None
    expected = _outcome(_partition_from_record_py, value, pure_shared)
    assert _outcome(cdelta.partition_from_record, value, compiled_shared) == expected
    assert pure_shared == compiled_shared


def test_equal_tuples_are_shared_between_partitions() -> None:
    shared: dict[Any, Any] = {}
    dirs = [uuid.UUID(int=5), uuid.UUID(int=6)]
    one = cdelta.partition_from_record({"replicas": [1, 2], "isr": [1, 2], "directories": dirs}, shared)
    two = cdelta.partition_from_record({"replicas": [1, 2], "isr": [2], "directories": list(dirs)}, shared)
    assert one.replicas is two.replicas is one.isr and one.directories is two.directories
    assert two.isr == (2,) and one.leader == -1 and one.partition_epoch == -1


def test_a_compiled_partition_is_left_to_reference_counting() -> None:
    """Its items cannot refer back to it, so the cyclic collector need not walk the million
    partitions of a large image after a load; reference counting still frees it."""
    dirs = [uuid.UUID(int=5)]
    part = cdelta.partition_from_record({"replicas": [1], "isr": [1], "directories": dirs}, {})
    assert not gc.is_tracked(part)
    ref = weakref.ref(dirs[0])
    del part, dirs
    assert ref() is None
