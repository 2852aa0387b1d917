"""The local cluster's ApiVersions probe says why a node did not answer (``cluster status`` and
``wait_finalized``'s timeout show it): connection refused, a timeout, or an error code."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.runtime.errors import NetworkError, NodeError
from kraftwerk.runtime.local_cluster import (
    LocalCluster,
    LocalNode,
    api_versions,
    ask_api_versions,
    wait_finalized,
)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A listener that accepts and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        accepted: list[socket.socket] = []
        thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
        thread.start()
        yield server.getsockname()[1]
        thread.join(1)
        for conn in accepted:
            conn.close()


def test_a_refused_connection_is_named() -> None:
    port = _closed_port()
    with pytest.raises(NetworkError, match=rf"^Connection to 127\.0\.0\.1:{port} failed: .*refused"):
        ask_api_versions(f"127.0.0.1:{port}", 1.0)
    assert api_versions(f"127.0.0.1:{port}", 1.0) is None


def test_a_node_that_never_answers_times_out(silent_port: int) -> None:
    with pytest.raises(NetworkError, match=r"timed out after 0\.2s"):
        ask_api_versions(f"127.0.0.1:{silent_port}", 0.2)


def test_wait_finalized_names_why_a_lagging_node_did_not_answer(tmp_path: Path) -> None:
    port = _closed_port()
    cluster = LocalCluster(tmp_path, "c", [LocalNode(1, "broker,controller", port)])
    with pytest.raises(NodeError, match=rf"lagging \[1\], epochs \[\]; node 1 did not answer: "
                                        rf"Connection to 127\.0\.0\.1:{port} failed: Connection refused$"):
        wait_finalized(cluster, {"metadata.version": 1}, timeout_s=0)
