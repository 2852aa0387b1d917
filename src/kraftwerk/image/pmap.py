"""A small persistent (immutable, structure-sharing) hash map for metadata images.

Images are replaced, never mutated, and a cluster can hold tens of thousands of topics. Copying a
plain dict per applied delta would make a one-partition change cost as much as the whole image;
a hash trie copies only the path to the changed key: at most ``ceil(64 / 5)`` nodes of 32 slots
plus one small bucket, whatever the map's size.

Nodes are 32-slot lists (never mutated once shared); a slot holds ``None``, a child node or a
bucket (a small dict of keys with the same hash prefix). A bucket splits into a child node when it
grows past ``_BUCKET_MAX`` entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast, overload

K = TypeVar("K")
V = TypeVar("V")
_T = TypeVar("_T")

_BITS = 5
_WIDTH = 1 << _BITS
_MASK = _WIDTH - 1
_MAX_SHIFT = 60  # below this shift a full bucket splits; at the deepest level buckets just grow
_BUCKET_MAX = 8

_Node = list[Any]


def _new_node() -> _Node:
    return [None] * _WIDTH


class PMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping whose ``set``/``remove``/``update`` return new maps sharing structure.

    Iteration order is the hash order, not insertion order; callers that need a stable order sort.
    Equality is by content, like ``dict``.
    """

    __slots__ = ("_len", "_root")

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        root = _new_node()
        length = 0
        source = items.items() if isinstance(items, Mapping) else items
        for key, value in source:
            if _insert_mut(root, key, hash(key), value, 0):
                length += 1
        self._root = root
        self._len = length

    @classmethod
    def _make(cls, root: _Node, length: int) -> PMap[K, V]:
        new = cls.__new__(cls)
        new._root = root
        new._len = length
        return new

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, key: K) -> V:
        h = hash(key)
        node = self._root
        while True:
            slot = node[h & _MASK]
            if slot is None:
                raise KeyError(key)
            if type(slot) is dict:
                return cast(V, slot[key])
            node = slot
            h >>= _BITS

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, /, default: V | _T) -> V | _T: ...

    def get(self, key: K, /, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[K]:
        stack: list[_Node] = [self._root]
        while stack:
            node = stack.pop()
            for slot in node:
                if slot is None:
                    continue
                if type(slot) is dict:
                    yield from slot
                else:
                    stack.append(slot)

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Mapping) or len(self) != len(other):
            return False
        return all(key in other and other[key] == self[key] for key in self)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{k!r}: {v!r}" for k, v in self.items())
        return f"PMap({{{inner}}})"

    # ---------------------------------------------------------------- persistent updates

    def set(self, key: K, value: V) -> PMap[K, V]:
        root = list(self._root)
        added = _insert_path_copy(root, key, hash(key), value, 0)
        return PMap._make(root, self._len + (1 if added else 0))

    def remove(self, key: K) -> PMap[K, V]:
        """A map without ``key`` (the same map when the key is absent)."""
        if key not in self:
            return self
        root = list(self._root)
        _remove_path_copy(root, key, hash(key))
        return PMap._make(root, self._len - 1)

    def update(self, changes: Mapping[K, V | None] | Iterable[tuple[K, V | None]],
               *, removed: Iterable[K] = ()) -> PMap[K, V]:
        """Apply many changes at once: copied nodes are copied once and then mutated in place.

        A value of ``None`` in ``changes`` does not remove (values may legitimately be falsy);
        pass keys to drop in ``removed``.
        """
        fresh: set[int] = set()  # ids of nodes/buckets created during this update (safe to mutate)
        root = list(self._root)
        fresh.add(id(root))
        length = self._len
        for key in removed:
            if _remove_batch(root, key, hash(key), fresh):
                length -= 1
        source = changes.items() if isinstance(changes, Mapping) else changes
        for key, value in source:
            if _insert_batch(root, key, hash(key), value, 0, fresh):
                length += 1
        return PMap._make(root, length)

    def transform(self, key: K, fn: Callable[[V | None], V]) -> PMap[K, V]:
        return self.set(key, fn(self.get(key)))


def _split(bucket: dict[Any, Any], shift: int) -> _Node:
    node = _new_node()
    for k, v in bucket.items():
        _insert_mut(node, k, hash(k) >> shift, v, shift)
    return node


def _insert_mut(node: _Node, key: Any, h: int, value: Any, shift: int) -> bool:
    """Insert into nodes owned by the caller (building a fresh map)."""
    while True:
        i = h & _MASK
        slot = node[i]
        if slot is None:
            node[i] = {key: value}
            return True
        if type(slot) is dict:
            added = key not in slot
            slot[key] = value
            if added and len(slot) > _BUCKET_MAX and shift + _BITS < _MAX_SHIFT:
                node[i] = _split(slot, shift + _BITS)
            return added
        node = slot
        h >>= _BITS
        shift += _BITS


def _insert_path_copy(node: _Node, key: Any, h: int, value: Any, shift: int) -> bool:
    """Insert into ``node`` (already a private copy), copying each child on the way down."""
    while True:
        i = h & _MASK
        slot = node[i]
        if slot is None:
            node[i] = {key: value}
            return True
        if type(slot) is dict:
            bucket = dict(slot)
            added = key not in bucket
            bucket[key] = value
            if added and len(bucket) > _BUCKET_MAX and shift + _BITS < _MAX_SHIFT:
                node[i] = _split(bucket, shift + _BITS)
            else:
                node[i] = bucket
            return added
        child = list(slot)
        node[i] = child
        node = child
        h >>= _BITS
        shift += _BITS


def _remove_path_copy(node: _Node, key: Any, h: int) -> None:
    while True:
        i = h & _MASK
        slot = node[i]
        if type(slot) is dict:
            bucket = dict(slot)
            del bucket[key]
            node[i] = bucket if bucket else None
            return
        child = list(slot)
        node[i] = child
        node = child
        h >>= _BITS


def _insert_batch(node: _Node, key: Any, h: int, value: Any, shift: int, fresh: set[int]) -> bool:
    while True:
        i = h & _MASK
        slot = node[i]
        if slot is None:
            bucket: dict[Any, Any] = {key: value}
            fresh.add(id(bucket))
            node[i] = bucket
            return True
        if type(slot) is dict:
            if id(slot) not in fresh:
                slot = dict(slot)
                fresh.add(id(slot))
                node[i] = slot
            added = key not in slot
            slot[key] = value
            if added and len(slot) > _BUCKET_MAX and shift + _BITS < _MAX_SHIFT:
                child = _split(slot, shift + _BITS)
                _mark_fresh(child, fresh)
                node[i] = child
            return added
        if id(slot) not in fresh:
            slot = list(slot)
            fresh.add(id(slot))
            node[i] = slot
        node = slot
        h >>= _BITS
        shift += _BITS


def _mark_fresh(node: _Node, fresh: set[int]) -> None:
    fresh.add(id(node))
    for slot in node:
        if slot is None:
            continue
        if type(slot) is dict:
            fresh.add(id(slot))
        else:
            _mark_fresh(slot, fresh)


def _remove_batch(node: _Node, key: Any, h: int, fresh: set[int]) -> bool:
    probe = node
    hh = h
    while True:  # find first, so that absent keys copy nothing
        slot = probe[hh & _MASK]
        if slot is None:
            return False
        if type(slot) is dict:
            if key not in slot:
                return False
            break
        probe = slot
        hh >>= _BITS
    while True:
        i = h & _MASK
        slot = node[i]
        if type(slot) is dict:
            if id(slot) not in fresh:
                slot = dict(slot)
                fresh.add(id(slot))
            del slot[key]
            node[i] = slot if slot else None
            return True
        if id(slot) not in fresh:
            slot = list(slot)
            fresh.add(id(slot))
            node[i] = slot
        node = slot
        h >>= _BITS


EMPTY: PMap[Any, Any] = PMap()


def empty() -> PMap[Any, Any]:
    """The shared empty map."""
    return EMPTY
