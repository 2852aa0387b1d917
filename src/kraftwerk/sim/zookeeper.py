"""A deterministic in-memory ZooKeeper for the simulator: the kazoo client subset the migration uses,
with ZooKeeper's semantics (data versions, zxids, ephemeral and sequential znodes, all-or-nothing
multi-ops with kazoo's result list) and the faults a seed turns on (unreachable, session expiry, slow).

It is the environment, not the rules under test: nothing here knows about Kafka or the migration.
Exceptions are kazoo's own types, so the code under test cannot tell it from a real server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    ConnectionLoss,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
)
from kazoo.protocol.states import ZnodeStat

Undo = Callable[[], None]
PIPELINE = 500
"""Asynchronous requests one round trip carries (the tree reader's page size)."""


@dataclass(slots=True)
class _Znode:
    data: bytes
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    pzxid: int
    version: int = 0
    cversion: int = 0
    ephemeral_owner: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> ZnodeStat:
        return ZnodeStat(self.czxid, self.mzxid, self.ctime, self.mtime, self.version, self.cversion, 0,
                         self.ephemeral_owner, len(self.data), len(self.children), self.pzxid)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise BadArgumentsError(f"invalid path {path!r}")


class SimZooKeeper:
    """One ZooKeeper ensemble as the clients see it (a single consistent tree): ``reachable`` and
    ``latency_ms`` are the seed's faults, :meth:`expire_sessions` ends every open session."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self.clock = clock
        self.zxid = 0
        self.nodes: dict[str, _Znode] = {"/": _Znode(b"", 0, 0, 0, 0, 0)}
        self.reachable = True
        self.latency_ms = 0
        self._next_session = 0x100
        self.live_sessions: set[int] = set()
        self.commits: list[tuple[int, int, tuple[str, ...]]] = []
        """Every successful write: (zxid, the writing session's owner, paths written), for checkers."""
        self.owners: dict[int, int] = {}

    # ------------------------------------------------------------------ sessions and faults
    def connect(self, owner: int, client: type[SimZkClient] | None = None) -> SimZkClient:
        """A new session for ``owner`` (an id the checkers use to attribute writes); ``client``: the
        client class (the simulator's sabotage subclasses it)."""
        if not self.reachable:
            raise ConnectionLoss("ZooKeeper is unreachable")
        self._next_session += 1
        self.live_sessions.add(self._next_session)
        self.owners[self._next_session] = owner
        return (client or SimZkClient)(self, self._next_session)

    def expire_sessions(self) -> None:
        """Every session expires (as after a partition longer than the session timeout): its
        ephemeral znodes go, and its client sees SessionExpiredError from then on."""
        for session in sorted(self.live_sessions):
            self._close_session(session)

    def _close_session(self, session: int) -> None:
        if session not in self.live_sessions:
            return
        self.live_sessions.discard(session)
        doomed = sorted((p for p, n in self.nodes.items() if n.ephemeral_owner == session), reverse=True)
        if doomed:
            self.zxid += 1
            for path in doomed:
                self._delete(path, -1)
            self.commits.append((self.zxid, self.owners[session], tuple(doomed)))

    # ------------------------------------------------------------------ one operation (with its undo)
    def _node(self, path: str) -> _Znode:
        _check_path(path)
        node = self.nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    def _create(self, path: str, data: bytes, session: int, ephemeral: bool, sequence: bool
                ) -> tuple[str, Undo]:
        _check_path(path)
        if not isinstance(data, bytes):
            raise TypeError("value must be a byte string")
        parent = self.nodes.get(_parent(path))
        if parent is None:
            raise NoNodeError(_parent(path))
        if parent.ephemeral_owner:
            raise NoChildrenForEphemeralsError(path)
        if sequence:
            path = f"{path}{parent.cversion:010d}"
        if path in self.nodes:
            raise NodeExistsError(path)
        now = self.clock()
        self.nodes[path] = _Znode(data, self.zxid, self.zxid, now, now, self.zxid,
                                  ephemeral_owner=session if ephemeral else 0)
        name = path.rsplit("/", 1)[1]
        before = (parent.cversion, parent.pzxid)
        parent.children.add(name)
        parent.cversion += 1
        parent.pzxid = self.zxid

        def undo() -> None:
            del self.nodes[path]
            parent.children.discard(name)
            parent.cversion, parent.pzxid = before

        return path, undo

    def _set(self, path: str, data: bytes, version: int) -> tuple[ZnodeStat, Undo]:
        node = self._node(path)
        if not isinstance(data, bytes):
            raise TypeError("value must be a byte string")
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        before = (node.data, node.version, node.mzxid, node.mtime)
        node.data, node.version, node.mzxid, node.mtime = data, node.version + 1, self.zxid, self.clock()

        def undo() -> None:
            node.data, node.version, node.mzxid, node.mtime = before

        return node.stat(), undo

    def _delete(self, path: str, version: int) -> Undo:
        node = self._node(path)
        if path == "/":
            raise BadArgumentsError("cannot delete /")
        if version != -1 and version != node.version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        parent = self.nodes[_parent(path)]
        name = path.rsplit("/", 1)[1]
        before = (parent.cversion, parent.pzxid)
        del self.nodes[path]
        parent.children.discard(name)
        parent.cversion += 1
        parent.pzxid = self.zxid

        def undo() -> None:
            self.nodes[path] = node
            parent.children.add(name)
            parent.cversion, parent.pzxid = before

        return undo

    def _check(self, path: str, version: int) -> None:
        node = self._node(path)
        if version != -1 and version != node.version:
            raise BadVersionError(path)

    def multi(self, session: int, ops: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """All of ``ops`` under one zxid, or none: kazoo's results (a path, a stat or True each), or on
        a failure RolledBackError for the ops before it, its error, RuntimeInconsistency after it."""
        self.zxid += 1
        undos: list[Undo] = []
        results: list[Any] = []
        written: list[str] = []
        for i, (kind, args) in enumerate(ops):
            try:
                if kind == "create":
                    path, undo = self._create(args[0], args[1], session, args[2], args[3])
                    results.append(path)
                    written.append(path)
                elif kind == "set":
                    stat, undo = self._set(*args)
                    results.append(stat)
                    written.append(args[0])
                elif kind == "delete":
                    undo = self._delete(*args)
                    results.append(True)
                    written.append(args[0])
                else:
                    self._check(*args)
                    results.append(True)
                    continue
            except (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError,
                    NoChildrenForEphemeralsError, BadArgumentsError) as exc:
                for u in reversed(undos):
                    u()
                return [RolledBackError() for _ in range(i)] + [exc] + [
                    RuntimeInconsistency() for _ in range(len(ops) - i - 1)]
            undos.append(undo)
        if written:
            self.commits.append((self.zxid, self.owners[session], tuple(written)))
        return results

    # ------------------------------------------------------------------ the checker's view
    def data(self, path: str) -> bytes | None:
        node = self.nodes.get(path)
        return None if node is None else node.data


class _Result:
    """kazoo's ``IAsyncResult`` for a call already answered."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        try:
            self._value, self._error = fn(), None
        except Exception as exc:  # handed back by get(), as kazoo's async results do
            self._value, self._error = None, exc

    def get(self, block: bool = True, timeout: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, fn: Callable[[Any], Any]) -> _Result:
        if self._error is None:
            self._value = fn(self._value)
        return self


class SimZkClient:
    """One session's client, with the ``KazooClient`` methods the migration and the tree reader use.
    ``spent_ms`` adds up the simulated time its calls took (the server's latency each)."""

    def __init__(self, server: SimZooKeeper, session: int) -> None:
        self.server = server
        self.session = session
        self.spent_ms = 0
        self.calls = 0
        self._pipelined = 0

    def _call(self, pipelined: bool = False) -> SimZooKeeper:
        """One request: a round trip each, except that asynchronous ones pipeline (one round trip
        per :data:`PIPELINE` of them in a row, as kazoo keeps them in flight together)."""
        server = self.server
        self.calls += 1
        if not pipelined or self._pipelined % PIPELINE == 0:
            self.spent_ms += server.latency_ms
        self._pipelined = self._pipelined + 1 if pipelined else 0
        if not server.reachable:
            raise ConnectionLoss("ZooKeeper is unreachable")
        if self.session not in server.live_sessions:
            raise SessionExpiredError("session expired")
        return server

    def stop(self) -> None:
        """Closing the session deletes its ephemeral znodes (when the server can be told)."""
        if self.server.reachable:
            self.server._close_session(self.session)

    close = stop

    def exists(self, path: str) -> ZnodeStat | None:
        node = self._call().nodes.get(path)
        _check_path(path)
        return None if node is None else node.stat()

    def get(self, path: str) -> tuple[bytes, ZnodeStat]:
        node = self._call()._node(path)
        return node.data, node.stat()

    def get_children(self, path: str) -> list[str]:
        return sorted(self._call()._node(path).children)

    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False, makepath: bool = False) -> str:
        server = self._call()
        if makepath:
            parts = path.strip("/").split("/")[:-1]
            for i in range(len(parts)):
                ancestor = "/" + "/".join(parts[:i + 1])
                if ancestor not in server.nodes:
                    server.multi(self.session, [("create", (ancestor, b"", False, False))])
        result = server.multi(self.session, [("create", (path, value, ephemeral, sequence))])[0]
        if isinstance(result, Exception):
            raise result
        return str(result)

    def ensure_path(self, path: str) -> bool:
        if self.exists(path) is None:
            self.create(path, makepath=True)
        return True

    def set(self, path: str, value: bytes, version: int = -1) -> ZnodeStat:
        result = self._call().multi(self.session, [("set", (path, value, version))])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def delete(self, path: str, version: int = -1, recursive: bool = False) -> bool:
        server = self._call()
        if recursive:
            for child in self.get_children(path):
                self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
        result = server.multi(self.session, [("delete", (path, version))])[0]
        if isinstance(result, Exception):
            raise result
        return True

    def transaction(self) -> SimTransaction:
        return SimTransaction(self)

    def get_async(self, path: str) -> _Result:
        return _Result(lambda: self._call(pipelined=True)._node(path)).then(lambda n: (n.data, n.stat()))

    def get_children_async(self, path: str) -> _Result:
        return _Result(lambda: self._call(pipelined=True)._node(path)).then(lambda n: sorted(n.children))

    def exists_async(self, path: str) -> _Result:
        def stat() -> ZnodeStat | None:
            node = self._call(pipelined=True).nodes.get(path)
            return None if node is None else node.stat()

        return _Result(stat)

    def command(self, cmd: bytes = b"ruok") -> str:
        """The four-letter words the tree reader uses (``srvr``: the last zxid)."""
        server = self._call()
        if cmd != b"srvr":
            raise ValueError(f"unsupported four-letter word {cmd!r}")
        return f"Zookeeper version: sim\nZxid: 0x{server.zxid:x}\nMode: standalone\n"


class SimTransaction:
    """kazoo's ``TransactionRequest``: ops queued, then committed as one multi-op."""

    def __init__(self, client: SimZkClient) -> None:
        self.client = client
        self.ops: list[tuple[str, tuple[Any, ...]]] = []
        self.committed = False

    def create(self, path: str, value: bytes = b"", acl: Any = None, ephemeral: bool = False,
               sequence: bool = False) -> None:
        self.ops.append(("create", (path, value, ephemeral, sequence)))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self.ops.append(("set", (path, value, version)))

    def delete(self, path: str, version: int = -1) -> None:
        self.ops.append(("delete", (path, version)))

    def check(self, path: str, version: int) -> None:
        self.ops.append(("check", (path, version)))

    def commit(self) -> list[Any]:
        if self.committed:
            raise ValueError("Transaction already committed")
        server = self.client._call()
        self.committed = True
        return server.multi(self.client.session, self.ops)
