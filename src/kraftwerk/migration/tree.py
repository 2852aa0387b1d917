"""A ZooKeeper tree as read at one consistent moment: each znode's path, data and stat.

The same value comes from a live read (:mod:`.reader`) and from a ``migration dump`` file (one JSON
line per znode), so every check and translation runs offline on a dump exactly as on a live cluster.
Stat fields carry meaning for the migration (a partition state's ``version`` is its partition epoch,
a broker znode's ``czxid`` its broker epoch), which is why a dump keeps the whole stat.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.migration.errors import DumpError

#: ZooKeeper's own subtree (quotas, config): never part of Kafka's data.
ZOOKEEPER_INTERNAL = "/zookeeper"

_STAT_FIELDS = ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeralOwner",
                "dataLength", "numChildren", "pzxid")


@dataclass(frozen=True, slots=True)
class ZnodeStat:
    """ZooKeeper's ``Stat`` (the field names are ZooKeeper's, as ``zkCli stat`` prints them)."""

    czxid: int = 0
    mzxid: int = 0
    ctime: int = 0
    mtime: int = 0
    version: int = 0
    cversion: int = 0
    aversion: int = 0
    ephemeral_owner: int = 0
    data_length: int = 0
    num_children: int = 0
    pzxid: int = 0

    def to_json(self) -> dict[str, int]:
        return dict(zip(_STAT_FIELDS, (self.czxid, self.mzxid, self.ctime, self.mtime, self.version,
                                       self.cversion, self.aversion, self.ephemeral_owner,
                                       self.data_length, self.num_children, self.pzxid), strict=True))

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ZnodeStat:
        values = []
        for name in _STAT_FIELDS:
            v = obj.get(name, 0)
            if not isinstance(v, int) or isinstance(v, bool):
                raise ValueError(f"stat field {name} is not an integer")
            values.append(v)
        return cls(*values)


@dataclass(frozen=True, slots=True)
class Znode:
    """One znode: ``data`` is None for a znode created with null data (most of Kafka's parents)."""

    path: str
    data: bytes | None
    stat: ZnodeStat

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.data is None:
            out["data"] = None
        else:
            try:
                out["data"] = self.data.decode("utf-8")
            except UnicodeDecodeError:
                out["dataBase64"] = base64.b64encode(self.data).decode("ascii")
        out["stat"] = self.stat.to_json()
        return out

    @classmethod
    def from_json(cls, obj: Any) -> Znode:
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        path = obj.get("path")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError("no absolute 'path'")
        data: bytes | None
        if "dataBase64" in obj:
            raw = obj["dataBase64"]
            if not isinstance(raw, str):
                raise ValueError("'dataBase64' is not a string")
            try:
                data = base64.b64decode(raw, validate=True)
            except binascii.Error as exc:
                raise ValueError(f"'dataBase64' is not base64: {exc}") from None
        else:
            text = obj.get("data")
            if text is not None and not isinstance(text, str):
                raise ValueError("'data' is neither a string nor null")
            data = None if text is None else text.encode("utf-8")
        stat = obj.get("stat", {})
        if not isinstance(stat, dict):
            raise ValueError("'stat' is not an object")
        return cls(path, data, ZnodeStat.from_json(stat))


def parent_of(path: str) -> str:
    head = path.rsplit("/", 1)[0]
    return head or "/"


def join(parent: str, child: str) -> str:
    return f"{parent.rstrip('/')}/{child}"


class ZkTree:
    """The znodes of one cluster (paths relative to its chroot), with a children index."""

    def __init__(self, znodes: Iterable[Znode]) -> None:
        self._nodes: dict[str, Znode] = {}
        self._children: dict[str, list[str]] = {}
        for z in znodes:
            if z.path == ZOOKEEPER_INTERNAL or z.path.startswith(ZOOKEEPER_INTERNAL + "/"):
                continue
            if z.path in self._nodes:
                raise DumpError(f"{z.path}: appears twice")
            self._nodes[z.path] = z
        for path in self._nodes:
            if path != "/":
                self._children.setdefault(parent_of(path), []).append(path.rsplit("/", 1)[1])
        for names in self._children.values():
            names.sort()

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[Znode]:
        return iter(self._nodes[p] for p in sorted(self._nodes))

    def __contains__(self, path: object) -> bool:
        return path in self._nodes

    def get(self, path: str) -> Znode | None:
        return self._nodes.get(path)

    def children(self, path: str) -> list[str]:
        """Child names, sorted (ZooKeeper lists them unordered; sorting makes every run alike)."""
        return list(self._children.get(path, ()))

    @property
    def data_bytes(self) -> int:
        return sum(len(z.data or b"") for z in self._nodes.values())


# ---------------------------------------------------------------------------- dump files


def dump_lines(tree: ZkTree) -> Iterator[str]:
    """The lines of a ``migration dump`` file: one JSON object per znode, in path order."""
    for z in tree:
        yield json.dumps(z.to_json(), separators=(",", ":"), ensure_ascii=False)


def iter_dump(lines: Iterable[str], source: str) -> Iterator[Znode]:
    """The znodes of dump lines; a line that is not a znode record is a :class:`DumpError` naming it."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield Znode.from_json(json.loads(line))
        except (ValueError, RecursionError) as exc:
            raise DumpError(f"{source}:{number}: not a znode record of a migration dump: {exc}") from None


def tree_of(znodes: Iterable[Znode], source: str) -> ZkTree:
    """The tree of a dump's znodes (DumpError for an empty dump or a path given twice)."""
    tree = ZkTree(znodes)
    if not len(tree):
        raise DumpError(f"{source}: holds no znodes (a migration dump has at least the root znode)")
    return tree


def parse_dump(lines: Iterable[str], source: str) -> ZkTree:
    """The tree of a whole dump file's lines."""
    return tree_of(iter_dump(lines, source), source)


def read_dump_file(path: str) -> list[Znode]:
    """The znodes of a dump file; DumpError (naming the file) for a bad line or non-UTF-8 bytes."""
    try:
        with open(path, encoding="utf-8") as f:
            return list(iter_dump(f, path))
    except UnicodeDecodeError as exc:
        raise DumpError(f"{path}: not a UTF-8 dump file ({exc.reason})") from None
