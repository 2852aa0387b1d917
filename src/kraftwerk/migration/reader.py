"""The one place the migration layer talks to ZooKeeper: a consistent read of a whole tree (kazoo).

Reads are pipelined in pages of up to ``page_size`` requests in flight (Kafka's ZooKeeper client
pipelines the same way) and set no watches. Consistency without a ZooKeeper transaction: when the
connected server's last zxid did not move during the read, nothing changed. Otherwise each znode's
stat is read again; a znode whose ``mzxid`` (data) or ``pzxid`` (children) moved is read again and
the pass repeats. When a pass finds nothing changed, every value read held at the moment between the
last read and the first re-check (zxids only grow, so a change and its undo cannot hide), which is
one consistent cut of the tree.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kraftwerk.migration.errors import ZooKeeperError
from kraftwerk.migration.tree import ZOOKEEPER_INTERNAL, ZkTree, Znode, ZnodeStat, join

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_PAGE_SIZE = 500
MAX_PASSES = 5
_HOST_PORT = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$")

Progress = Callable[[int], None]


def parse_connect(text: str) -> tuple[list[tuple[str, int]], str]:
    """``host:port[,host:port...][/chroot]`` → the servers and the chroot ("" for none), as Kafka's
    ``zookeeper.connect``; raises ValueError naming what is wrong."""
    hosts_text, slash, chroot = text.partition("/")
    chroot = slash + chroot if slash else ""
    if chroot and (chroot.endswith("/") or "//" in chroot or len(chroot) == 1):
        raise ValueError(f"invalid chroot {chroot!r} (a path like /kafka, no trailing slash)")
    servers = []
    for part in hosts_text.split(","):
        m = _HOST_PORT.match(part.strip())
        if not m or not 0 < int(m[2]) < 65536:
            raise ValueError(f"invalid ZooKeeper server {part!r} (expected HOST:PORT)")
        servers.append((m[1].strip("[]"), int(m[2])))
    return servers, chroot


def _reachable(servers: Sequence[tuple[str, int]], timeout: float) -> str | None:
    """None when one server accepts a TCP connection, else the last reason (fails fast on a refused
    port, where kazoo would retry until its timeout)."""
    reason = "no server"
    for host, port in servers:
        try:
            with socket.create_connection((host, port), timeout=min(timeout, 5.0)):
                return None
        except OSError as exc:
            reason = exc.strerror or str(exc)
    return reason


@contextmanager
def connect(text: str, timeout: float = DEFAULT_TIMEOUT_S) -> Iterator[Any]:
    """A started KazooClient on ``text`` (chroot applied), stopped on exit; any failure to reach
    ZooKeeper is one ZooKeeperError line."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    servers, chroot = parse_connect(text)
    reason = _reachable(servers, timeout)
    if reason is not None:
        raise ZooKeeperError(f"Unable to connect to ZooKeeper at {text}: {reason}")
    client = KazooClient(hosts=",".join(f"{h}:{p}" for h, p in servers), timeout=timeout,
                         connection_retry={"max_tries": 1}, logger=log)
    try:
        client.start(timeout=timeout)
    except KazooTimeoutError:
        client.close()
        raise ZooKeeperError(f"Timed out waiting for a connection to ZooKeeper at {text} after "
                             f"{timeout:g} s") from None
    try:
        if chroot and client.exists(chroot) is None:
            raise ZooKeeperError(f"The chroot {chroot} does not exist in ZooKeeper at {text}")
        client.chroot = chroot
        yield client
    except (KazooException, KazooTimeoutError) as exc:  # the session was lost while reading
        detail = f": {exc}" if str(exc) else ""
        raise ZooKeeperError(f"Lost the connection to ZooKeeper at {text} ({type(exc).__name__}{detail})"
                             ) from None
    finally:
        client.stop()
        client.close()


def znode_stat(s: Any) -> ZnodeStat:
    return ZnodeStat(s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion, s.ephemeralOwner,
                     s.dataLength, s.numChildren, s.pzxid)


def _pages(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


class _TreeReader:
    def __init__(self, client: Any, page_size: int, progress: Progress | None) -> None:
        from kazoo.exceptions import NoNodeError

        self.client = client
        self.page_size = max(1, page_size)
        self.progress = progress
        self.no_node = NoNodeError
        self.nodes: dict[str, Znode] = {}

    def read(self, paths: Sequence[str]) -> None:
        """Read data and stat of ``paths``, the children of those that have any, and recursively every
        child not yet read. Leaves (most znodes) cost one request: their stat says they have no child."""
        todo = list(paths)
        while todo:
            found: list[str] = []
            for page in _pages(todo, self.page_size):
                gets = [(p, self.client.get_async(p)) for p in page]
                parents = []
                for path, req in gets:
                    try:
                        data, stat = req.get()
                    except self.no_node:  # deleted since its parent was listed
                        self._forget(path)
                        continue
                    self.nodes[path] = Znode(path, data, znode_stat(stat))
                    if stat.numChildren:
                        parents.append((path, self.client.get_children_async(path)))
                for path, req in parents:
                    try:
                        names = req.get()
                    except self.no_node:
                        self._forget(path)
                        continue
                    found += [c for c in (join(path, n) for n in names)
                              if c not in self.nodes and c != ZOOKEEPER_INTERNAL]
                if self.progress is not None:
                    self.progress(len(self.nodes))
            todo = found

    def _forget(self, path: str) -> None:
        for p in [p for p in self.nodes if p == path or p.startswith(path.rstrip("/") + "/")]:
            del self.nodes[p]

    def changed(self) -> list[str]:
        """The znodes whose data or children moved since they were read (deleted ones are dropped)."""
        moved = []
        paths = sorted(self.nodes)
        for page in _pages(paths, self.page_size):
            pending = [(p, self.client.exists_async(p)) for p in page]
            for path, req in pending:
                stat = req.get()
                old = self.nodes.get(path)
                if old is None:
                    continue  # dropped with a deleted ancestor during this pass
                if stat is None:
                    self._forget(path)
                    moved.append(path)
                elif stat.mzxid != old.stat.mzxid or stat.pzxid != old.stat.pzxid:
                    moved.append(path)
        return moved


def server_zxid(client: Any) -> int | None:
    """The last zxid the connected server applied (the ``srvr`` four-letter word, which ZooKeeper
    allows by default), or None when the server refuses it."""
    try:
        text = client.command(b"srvr")
    except Exception:  # kazoo raises socket errors and its own; either way there is no answer
        return None
    m = re.search(r"^Zxid: 0x([0-9a-fA-F]+)$", text, re.MULTILINE)
    return int(m[1], 16) if m else None


def read_tree(client: Any, *, page_size: int = DEFAULT_PAGE_SIZE, progress: Progress | None = None) -> ZkTree:
    """The whole tree under the client's chroot at one consistent moment (see the module docstring).

    Fast path: reads are served by the connected server, so when its last applied zxid is the same
    before and after the read, no write happened in between and no znode needs checking again."""
    reader = _TreeReader(client, page_size, progress)
    before = server_zxid(client)
    reader.read(["/"])
    if before is not None and server_zxid(client) == before:
        return ZkTree(reader.nodes.values())
    for attempt in range(MAX_PASSES):
        moved = reader.changed()
        if not moved:
            return ZkTree(reader.nodes.values())
        log.info("ZooKeeper read pass %d: %d znodes changed while reading; reading them again",
                 attempt + 1, len(moved))
        reader.read(moved)  # a deleted one raises NoNode and is forgotten; its parent moved too
    raise ZooKeeperError(f"The ZooKeeper tree kept changing while it was read ({MAX_PASSES} passes); "
                         "retry when the cluster is quieter")
