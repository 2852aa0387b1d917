"""How a delta's changes fold into the image's maps: persistent maps copy only the changed paths."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from immutables import Map

_K = TypeVar("_K")
_V = TypeVar("_V")


def merge_small(base: Mapping[int, Any], changes: Mapping[int, Any]) -> dict[int, Any]:
    """Node registrations are few (a cluster has brokers in the hundreds): copy and sort by id."""
    merged = dict(base)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return dict(sorted(merged.items()))


def merge_map(base: Map[_K, _V], changes: Mapping[_K, _V | None]) -> Map[_K, _V]:
    """``base`` with the changes applied; a None value removes its key."""
    if not changes:
        return base
    return updated(base, {k: v for k, v in changes.items() if v is not None},
                    [k for k, v in changes.items() if v is None])


def updated(base: Map[_K, _V], changes: Mapping[_K, _V], removed: Iterable[_K] = ()) -> Map[_K, _V]:
    """``base`` without ``removed``, then with ``changes``: one mutation of the persistent map,
    which copies only the paths to the changed keys (the rest is shared with ``base``)."""
    mutation = base.mutate()
    for key in removed:
        mutation.pop(key, None)
    for key, value in changes.items():
        mutation[key] = value
    return mutation.finish()

