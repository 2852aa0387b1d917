"""A tiny threaded Kafka node for tests: real frames through ``kraftwerk.protocol``, canned state.

It answers ApiVersions (with SupportedFeatures / FinalizedFeatures / epoch, and v0
UNSUPPORTED_VERSION for a version above its range, as Kafka does), DescribeCluster and
UpdateFeatures. UpdateFeatures runs a small model of Kafka 4.x's FeatureControlManager checks
(local support, direction, metadata.version downgrade rules, kraft.version upgrade-only,
all-or-nothing with the "The update failed for all features ..." wrapper) so that the texts come
from "the server" and the client under test only has to print them. Every request is recorded.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.protocol import codec, header, registry
from kraftwerk.protocol.schema import Kind
from kraftwerk.versions.metadata_version import MetadataVersion, check_if_metadata_changed

_SIZE = struct.Struct(">i")
INVALID_UPDATE_VERSION = 95
NOT_CONTROLLER = 41


@dataclass
class Recorded:
    api_key: int
    version: int
    body: dict[str, Any]
    client_id: str | None


@dataclass
class FakeState:
    """What the fake node knows: its id, ranges, finalized levels and the API versions it speaks."""

    node_id: int = 1
    supported: dict[str, tuple[int, int]] = field(default_factory=lambda: {
        "eligible.leader.replicas.version": (0, 1), "group.version": (0, 1), "kraft.version": (0, 1),
        "metadata.version": (7, 30), "share.version": (0, 1), "streams.version": (0, 1),
        "transaction.version": (0, 2)})
    finalized: dict[str, int] = field(default_factory=lambda: {
        "eligible.leader.replicas.version": 1, "group.version": 1, "kraft.version": 1,
        "metadata.version": 30, "share.version": 1, "streams.version": 1, "transaction.version": 2})
    epoch: int = 98
    api_ranges: dict[int, tuple[int, int]] = field(default_factory=lambda: {
        18: (0, 4), 57: (0, 2), 60: (0, 2)})
    not_controller: bool = False
    cluster_id: str = "co8Lz5qWSCe6yEg4UfbcVw"
    controller_id: int = 1
    nodes: list[tuple[int, str, int]] = field(default_factory=list)
    """DescribeCluster's node list; empty means just this node."""


def _reason(state: FakeState, name: str, level: int, upgrade_type: int) -> str | None:
    """Kafka 4.x's per-feature checks; None when the update is acceptable."""
    prefix = f"Invalid update version {level} for feature {name}. "
    if upgrade_type not in (1, 2, 3):
        return prefix + "The controller does not support the given upgrade type."
    if level < 0:
        return prefix + "A feature version cannot be less than 0."
    low, high = state.supported.get(name, (0, 0))
    if high == 0 and name not in state.supported:
        if level != 0:
            return prefix + f"Local controller {state.node_id} does not support this feature."
    elif not low <= level <= high:
        return prefix + f"Local controller {state.node_id} only supports versions {low}-{high}"
    current = state.finalized.get(name, 0)
    if level < current and upgrade_type == 1:
        return prefix + ("Can't downgrade the version of this feature without setting the upgrade type to "
                         "either safe or unsafe downgrade.")
    if level > current and upgrade_type != 1:
        return prefix + "Can't downgrade to a newer version."
    if name == "metadata.version" and level < current:
        cur = MetadataVersion.from_feature_level(current)
        new = MetadataVersion.from_feature_level(level)
        if check_if_metadata_changed(cur, new):
            head = f"Unsupported metadata.version downgrade from {current} to {level}. "
            if upgrade_type == 2:
                return head + ("Refusing to perform the requested downgrade because it might delete "
                               "metadata information.")
            return head + "Unsafe metadata downgrade is not supported in this version."
    if name == "kraft.version" and level < current:
        return prefix + "Can't downgrade the version of this feature."
    return None


class FakeKafkaNode:
    """Listens on 127.0.0.1 (a free port); ``with FakeKafkaNode() as node: node.address``."""

    def __init__(self, state: FakeState | None = None,
                 on_request: Callable[[Recorded], None] | None = None) -> None:
        self.state = state or FakeState()
        self.requests: list[Recorded] = []
        self.on_request = on_request
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closing = False
        self._conns: list[socket.socket] = []

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> FakeKafkaNode:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing = True
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._server.close()

    def of(self, api_key: int) -> list[Recorded]:
        return [r for r in self.requests if r.api_key == api_key]

    # --- serving -----------------------------------------------------------------------------

    def _accept(self) -> None:
        self._server.settimeout(0.02)  # closing a socket does not wake accept(); poll instead
        while not self._closing:
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _recv(self, conn: socket.socket, n: int) -> bytes | None:
        data = bytearray()
        while len(data) < n:
            try:
                chunk = conn.recv(n - len(data))
            except OSError:
                return None
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def _serve(self, conn: socket.socket) -> None:
        while True:
            size_bytes = self._recv(conn, 4)
            if size_bytes is None:
                return
            frame = self._recv(conn, _SIZE.unpack(size_bytes)[0])
            if frame is None:
                return
            api_key, version = struct.unpack(">hh", frame[:4])
            spec = registry.by_api_key(Kind.REQUEST, api_key)
            low, high = self.state.api_ranges.get(api_key, (0, -1))
            hv = header.request_header_version(spec, min(version, spec.valid_versions.highest or 0))
            head, pos = header.decode_request_header(frame, hv)
            correlation = head["correlationId"]
            if api_key == 18 and version > high:  # Kafka: v0 UNSUPPORTED_VERSION with our ranges
                body = self._api_versions_body(error=35)
                reply_version = 0
            else:
                assert low <= version <= high, (api_key, version)
                request = codec.decode(spec, version, frame[pos:])
                record = Recorded(api_key, version, request, head.get("clientId"))
                with self._lock:
                    self.requests.append(record)
                if self.on_request is not None:
                    self.on_request(record)
                body = self._handle(api_key, version, request)
                if api_key == 57 and version >= 2:
                    body.pop("results", None)  # v2 has only the top-level error
                reply_version = version
            response_spec = registry.by_api_key(Kind.RESPONSE, api_key)
            out = header.encode_response_header(
                {"correlationId": correlation}, header.response_header_version(response_spec, reply_version))
            out += codec.encode(response_spec, reply_version, body)
            try:
                conn.sendall(_SIZE.pack(len(out)) + out)
            except OSError:
                return

    def _api_versions_body(self, error: int = 0) -> dict[str, Any]:
        state = self.state
        return {
            "errorCode": error,
            "apiKeys": [{"apiKey": k, "minVersion": lo, "maxVersion": hi}
                        for k, (lo, hi) in sorted(state.api_ranges.items())],
            "throttleTimeMs": 0,
            "supportedFeatures": [{"name": n, "minVersion": lo, "maxVersion": hi}
                                  for n, (lo, hi) in sorted(state.supported.items())],
            "finalizedFeaturesEpoch": state.epoch,
            "finalizedFeatures": [{"name": n, "maxVersionLevel": v, "minVersionLevel": v}
                                  for n, v in sorted(state.finalized.items()) if v > 0],
        }

    def _handle(self, api_key: int, version: int, request: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        if api_key == 18:
            return self._api_versions_body()
        if api_key == 60:
            nodes = state.nodes or [(state.node_id, "127.0.0.1", self.port)]
            return {"errorCode": 0, "clusterId": state.cluster_id, "controllerId": state.controller_id,
                    "endpointType": request.get("endpointType", 1),
                    "brokers": [{"brokerId": i, "host": h, "port": p} for i, h, p in nodes]}
        if api_key == 57:
            return self._update_features(version, request)
        raise AssertionError(f"unexpected api key {api_key}")

    def _update_features(self, version: int, request: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        updates = request["featureUpdates"]
        if state.not_controller:
            return {"errorCode": NOT_CONTROLLER, "errorMessage": None,
                    "results": [{"feature": u["feature"], "errorCode": NOT_CONTROLLER} for u in updates]}
        for u in updates:
            upgrade_type = u.get("upgradeType", 1) if version >= 1 else (2 if u["allowDowngrade"] else 1)
            reason = _reason(state, u["feature"], u["maxVersionLevel"], upgrade_type)
            if reason is not None:
                message = ("The update failed for all features since the following feature had an error: "
                           + reason)
                return {"errorCode": INVALID_UPDATE_VERSION, "errorMessage": message,
                        "results": [{"feature": x["feature"], "errorCode": INVALID_UPDATE_VERSION,
                                     "errorMessage": message} for x in updates]}
        if not request.get("validateOnly", False):
            for u in updates:
                if u["maxVersionLevel"] == 0:
                    state.finalized.pop(u["feature"], None)
                else:
                    state.finalized[u["feature"]] = u["maxVersionLevel"]
            state.epoch += 1
        return {"errorCode": 0, "errorMessage": None,
                "results": [{"feature": u["feature"], "errorCode": 0} for u in updates]}
