"""Three in-process RaftNodes (in-memory logs) talking over real loopback TCP."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Mapping

import pytest

from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.raft import CommittedBatch, MemoryQuorumStateStore, MemoryRaftLog, RaftConfig, RaftNode
from kraftwerk.runtime.framing import encode_request
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


class StopsAfterFirst(RaftOnly):
    """Answers the first request, then stops the node as ``Node.stop`` does (the listener, then
    the raft host) before serving anything else: whatever was read behind it arrives during the
    shutdown."""

    def __init__(self) -> None:
        super().__init__()
        self.server: KafkaServer | None = None
        self.after_stop: list[int] = []  # the api keys handed over once the node stopped

    async def handle(self, request: Request) -> codec.Value | None:
        assert self.host is not None and self.server is not None
        if self.host.closed:
            self.after_stop.append(request.api_key)
            return await self.host.handle(request)
        body = await self.host.handle(request)
        await self.server.close()
        await self.host.close()
        return body


async def _requests_during_shutdown(handler: StopsAfterFirst) -> None:
    server = handler.server = KafkaServer(handler, "127.0.0.1", 0, listener="CONTROLLER")
    await server.start()
    config = RaftConfig(node_id=1, voters=(1,), cluster_id="c")
    host = handler.host = RaftHost(RaftNode(config, MemoryRaftLog(), MemoryQuorumStateStore(),
                                            now_ms=wall_clock_ms(), seed=1))
    host.start()
    async with asyncio.timeout(10):
        while not host.is_leader:
            await asyncio.sleep(0.01)
    # an observer's Fetch and a DescribeQuorum behind a first DescribeQuorum, in one segment
    observer = RaftNode(RaftConfig(node_id=7, voters=(1,), cluster_id="c"), MemoryRaftLog(),
                        MemoryQuorumStateStore(), now_ms=wall_clock_ms(), seed=7)
    describe = {"topics": [{"topicName": "__cluster_metadata", "partitions": [{"partitionIndex": 0}]}]}
    frames = (encode_request(ApiKey.DESCRIBE_QUORUM, 2, 1, "tool", describe)
              + encode_request(ApiKey.FETCH, 17, 2, "raft-client", observer.q.fetch_request_body())
              + encode_request(ApiKey.DESCRIBE_QUORUM, 2, 3, "tool", describe))
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(frames)
    await writer.drain()
    await asyncio.wait_for(reader.read(), 10)  # until the node closes the connection
    writer.close()
    async with asyncio.timeout(10):
        while server.close_connections():  # the node's side of it finishes closing
            await asyncio.sleep(0.01)


def test_requests_arriving_during_shutdown_are_dropped_without_a_traceback(
        caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's stopped socket server closes the connection: no request read behind the shutdown
    reaches the closed raft host, and nothing but DEBUG lines are logged (a traceback was)."""
    handler = StopsAfterFirst()
    with caplog.at_level(logging.DEBUG):
        asyncio.run(_requests_during_shutdown(handler))
        gc.collect()  # a task whose exception nobody took is reported when it is collected
    assert handler.after_stop == []
    loud = [r for r in caplog.records if r.levelno >= logging.INFO and r.name.startswith(
        ("kraftwerk.runtime.server", "asyncio"))]
    assert not loud, [r.getMessage() for r in loud]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert "raft host is closed" not in caplog.text


@pytest.mark.parametrize("turns", range(4))
def test_a_cancelled_commit_wait_stays_cancelled_even_if_the_commit_just_landed(turns: int) -> None:
    """Python 3.11's wait_for returned True when the commit landed in the same loop turn as the
    cancellation, and a waiter cancelled at shutdown went on to reply or record the migration."""
    async def run() -> None:
        config = RaftConfig(node_id=1, voters=(1, 2, 3), cluster_id="c")
        host = RaftHost(RaftNode(config, MemoryRaftLog(), MemoryQuorumStateStore(), now_ms=wall_clock_ms(),
                                  seed=1))
        waiting = asyncio.ensure_future(host.wait_committed(5, timeout_s=30))
        while not host._waiters:
            await asyncio.sleep(0)
        host._waiters[0].future.set_result(True)  # what the host does once the high watermark passes
        for _ in range(turns):
            await asyncio.sleep(0)
        if waiting.cancel():
            with pytest.raises(asyncio.CancelledError):
                await waiting
        else:
            assert waiting.result() is True
        await host.close()

    asyncio.run(run())
