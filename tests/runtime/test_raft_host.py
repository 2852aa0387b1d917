"""Three in-process RaftNodes (in-memory logs) talking over real loopback TCP."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from kraftwerk.protocol import codec
from kraftwerk.raft import CommittedBatch, MemoryQuorumStateStore, MemoryRaftLog, RaftConfig, RaftNode
from kraftwerk.runtime.raft_host import RAFT_APIS, RaftHost, wall_clock_ms
from kraftwerk.runtime.server import KafkaServer, Request


class RaftOnly:
    def __init__(self) -> None:
        self.host: RaftHost | None = None

    def supported_apis(self, listener: str) -> Mapping[int, tuple[int, int]]:
        return RAFT_APIS

    async def handle(self, request: Request) -> codec.Value | None:
        assert self.host is not None
        return await self.host.handle(request)


async def _quorum() -> None:
    handlers = {i: RaftOnly() for i in (1, 2, 3)}
    servers = {i: KafkaServer(h, "127.0.0.1", 0, listener="CONTROLLER") for i, h in handlers.items()}
    for server in servers.values():
        await server.start()
    peers = {i: ("127.0.0.1", s.port) for i, s in servers.items()}
    committed: dict[int, list[bytes]] = {i: [] for i in peers}
    hosts: dict[int, RaftHost] = {}
    for i in peers:
        config = RaftConfig(node_id=i, voters=(1, 2, 3), cluster_id="c", election_timeout_ms=300,
                            fetch_timeout_ms=600)
        node = RaftNode(config, MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=wall_clock_ms(), seed=i)

        def sink(batches: list, i: int = i) -> None:  # type: ignore[type-arg]
            for b in batches:
                if isinstance(b, CommittedBatch) and not b.is_control:
                    committed[i].extend(b.records)

        hosts[i] = RaftHost(node, peers, on_committed=sink, request_timeout_ms=1000)
        handlers[i].host = hosts[i]
        hosts[i].start()
    try:
        async with asyncio.timeout(15):
            while not any(h.is_leader for h in hosts.values()):
                await asyncio.sleep(0.02)
            leader = next(h for h in hosts.values() if h.is_leader)
            offsets = [leader.append([f"record-{n}".encode()]) for n in range(5)]
            assert await leader.wait_committed(offsets[-1], timeout_s=10)
            while any(len(c) < 5 for c in committed.values()):
                await asyncio.sleep(0.02)
        expected = [f"record-{n}".encode() for n in range(5)]
        assert all(c == expected for c in committed.values())
        assert {h.node.leader_id for h in hosts.values()} == {leader.node.node_id}
    finally:
        for host in hosts.values():
            await host.close()
        for server in servers.values():
            await server.close()


def test_three_voters_elect_and_commit_over_tcp() -> None:
    asyncio.run(_quorum())


async def _observer_learns_each_commit() -> None:
    """Fetches long-poll for a minute here: the observer, whose fetch is parked again as soon as
    it has the (uncommitted) record, sees each commit within the timeout below only if the
    leader answers parked fetches when its high watermark advances."""
    voters = (1, 2)
    handlers = {i: RaftOnly() for i in voters}
    servers = {i: KafkaServer(handlers[i], "127.0.0.1", 0, listener="CONTROLLER") for i in voters}
    for server in servers.values():
        await server.start()
    peers = {i: ("127.0.0.1", s.port) for i, s in servers.items()}
    seen: list[bytes] = []
    hosts: dict[int, RaftHost] = {}
    for i in (*voters, 4):
        config = RaftConfig(node_id=i, voters=voters, cluster_id="c", election_timeout_ms=300,
                            fetch_timeout_ms=120_000, fetch_max_wait_ms=60_000)
        node = RaftNode(config, MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=wall_clock_ms(), seed=i)

        def sink(batches: list, i: int = i) -> None:  # type: ignore[type-arg]
            if i == 4:
                seen.extend(r for b in batches if isinstance(b, CommittedBatch) and not b.is_control
                            for r in b.records)

        hosts[i] = RaftHost(node, peers, on_committed=sink, request_timeout_ms=120_000)
        if i in handlers:
            handlers[i].host = hosts[i]
        hosts[i].start()
    try:
        async with asyncio.timeout(20):
            while not any(h.is_leader for h in hosts.values()):
                await asyncio.sleep(0.02)
            leader = next(h for h in hosts.values() if h.is_leader)
            for n in range(8):
                record = f"record-{n}".encode()
                assert await leader.wait_committed(leader.append([record]), timeout_s=10)
                while record not in seen:
                    await asyncio.sleep(0.005)
        assert seen == [f"record-{n}".encode() for n in range(8)]
    finally:
        for host in hosts.values():
            await host.close()
        for server in servers.values():
            await server.close()


def test_an_observer_learns_each_commit_long_before_its_fetch_max_wait() -> None:
    asyncio.run(_observer_learns_each_commit())
