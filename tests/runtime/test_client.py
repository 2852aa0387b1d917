"""The async client's requests: a cancellation is never lost, even when the response lands in the
same loop turn (Python 3.11's ``wait_for`` returned the response instead, and a cancelled fetcher
loop ran on forever, hanging a broker's shutdown)."""

from __future__ import annotations

import asyncio

import pytest

from kraftwerk.runtime.client import Connection
from kraftwerk.runtime.errors import RequestTimeoutError

METADATA = 3


async def _silent_server() -> tuple[asyncio.Server, int]:
    """Accepts connections and never answers (the test completes requests itself)."""
    async def serve(reader: asyncio.StreamReader, _writer: asyncio.StreamWriter) -> None:
        await reader.read()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize("turns", range(6))
def test_a_cancelled_request_raises_cancelled_even_if_its_response_just_arrived(turns: int) -> None:
    async def run() -> None:
        server, port = await _silent_server()
        conn = await Connection.open("127.0.0.1", port)
        try:
            task = asyncio.ensure_future(conn.request(METADATA, 1, {"topics": []}, timeout_s=30))
            while not conn._pending:
                await asyncio.sleep(0)
            [pending] = conn._pending.values()
            pending.future.set_result({"answered": True})  # what the read loop does on a response
            for _ in range(turns):
                await asyncio.sleep(0)
            if task.cancel():  # the task had not finished: it must end cancelled
                with pytest.raises(asyncio.CancelledError):
                    await task
            else:
                assert task.result() == {"answered": True}
        finally:
            await conn.close()
            server.close()

    asyncio.run(run())


def test_a_request_still_times_out() -> None:
    async def run() -> None:
        server, port = await _silent_server()
        conn = await Connection.open("127.0.0.1", port)
        try:
            with pytest.raises(RequestTimeoutError, match=r"timed out after 0\.05s"):
                await conn.request(METADATA, 1, {"topics": []}, timeout_s=0.05)
            assert conn.closed
        finally:
            await conn.close()
            server.close()

    asyncio.run(run())
