"""A ZooKeeper-mode broker's link to the KRaft quorum during a KIP-866 migration: its registration
and heartbeats, sent to whichever controller is active.

A ZK broker runs no raft client, so it does not learn the leader from the quorum; it asks the
controllers it is configured with in turn, moving on when one answers NOT_CONTROLLER or cannot be
reached (see docs/compatibility.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from kraftwerk.broker.node import ControllerCall
from kraftwerk.broker.zk_broker import MigratingZkBrokerLifecycle
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.errors import NetworkError
from kraftwerk.runtime.raft_host import wall_clock_ms

log = logging.getLogger(__name__)

TICK_S = 0.05
REQUEST_TIMEOUT_S = 10.0


class KRaftQuorumLink:
    """Drives ``lifecycle``'s registration and heartbeats against the controllers at ``addresses``."""

    def __init__(self, lifecycle: MigratingZkBrokerLifecycle, addresses: Sequence[tuple[str, int]]) -> None:
        self.lifecycle = lifecycle
        self._clients = [ReconnectingClient(h, p, client_id=f"zk-broker-{lifecycle.node_id}")
                         for h, p in addresses]
        self._current = 0

    @property
    def broker_epoch(self) -> int:
        """The broker epoch the KRaft controller gave this broker (-1 until registered)."""
        return self.lifecycle.broker_epoch

    async def run(self) -> None:
        try:
            while True:
                for call in self.lifecycle.poll(wall_clock_ms()):
                    await self._send(call)
                await asyncio.sleep(TICK_S)
        finally:
            for client in self._clients:
                await client.close()

    async def _send(self, call: ControllerCall) -> None:
        lifecycle = self.lifecycle
        client = self._clients[self._current]
        try:
            response = await client.request(call.api_key, call.max_version, call.body_for(call.max_version),
                                            timeout_s=REQUEST_TIMEOUT_S)
        except NetworkError as exc:
            log.debug("controller %s:%d unreachable: %s", client.host, client.port, exc)
            self._next_controller()
            lifecycle.handle_controller_failure(wall_clock_ms())
            return
        if response.get("errorCode", 0) == Errors.NOT_CONTROLLER.code:
            self._next_controller()
            lifecycle.handle_controller_failure(wall_clock_ms())
            return
        if call.api_key == ApiKey.BROKER_REGISTRATION:
            lifecycle.handle_registration_response(response, wall_clock_ms())
        else:
            lifecycle.handle_heartbeat_response(response, wall_clock_ms())

    async def controlled_shutdown(self, timeout_s: float = 5.0) -> None:
        """SIGTERM: a heartbeat with ``wantShutDown``, so the controller fences this registration now
        and the next process (a KRaft broker with this id, or this broker again) registers at once
        instead of waiting out the session."""
        lifecycle = self.lifecycle
        lifecycle.handle_controller_failure(wall_clock_ms())  # a call cut short by the cancelled loop
        lifecycle.begin_controlled_shutdown(wall_clock_ms())
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not lifecycle.is_shutdown_complete and asyncio.get_running_loop().time() < deadline:
            for call in lifecycle.poll(wall_clock_ms()):
                await self._send(call)
            await asyncio.sleep(TICK_S)

    async def request(self, api_key: int, version: int, body: codec.Value) -> codec.Value:
        """One request to the active controller, trying each configured one in turn."""
        for _ in range(2 * len(self._clients)):
            client = self._clients[self._current]
            try:
                response = await client.request(api_key, version, body, timeout_s=REQUEST_TIMEOUT_S)
            except NetworkError:
                self._next_controller()
                continue
            if response.get("errorCode", 0) != Errors.NOT_CONTROLLER.code:
                return response
            self._next_controller()
            await asyncio.sleep(TICK_S)
        raise NetworkError("no active KRaft controller answered")

    def _next_controller(self) -> None:
        self._current = (self._current + 1) % len(self._clients)
