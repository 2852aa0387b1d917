"""Waiting until every node reports committed feature levels (``features upgrade --wait-converged``).

A committed UpdateFeatures reaches each broker when its metadata fetch delivers the record; an
operator who rolls the next step right after wants to know it has. Kafka has no such wait (an
extension, see docs/compatibility.md): each node's finalized levels are read from a fresh
ApiVersions, since a connection's negotiated response is only renewed when the node closes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from kraftwerk.runtime.admin_client import AdminClient, AdminClientError, Connection, NodeInfo

Progress = Callable[[int, int, float], None]
"""(nodes converged, nodes polled, seconds waited so far)."""


@dataclass(frozen=True, slots=True)
class Convergence:
    """The outcome of a wait: which nodes report ``levels`` and what the others still report."""

    levels: Mapping[str, int]
    converged: tuple[int, ...]
    laggards: Mapping[int, str]
    """node id → what it reports instead (or why it could not be asked)."""
    fenced: tuple[int, ...] = field(default=())
    """Fenced brokers are not polled: they fetch no metadata until they are unfenced."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.laggards

    def as_json(self) -> dict[str, object]:
        return {"levels": dict(self.levels), "converged": list(self.converged),
                "laggards": {str(k): v for k, v in sorted(self.laggards.items())},
                "fencedNotPolled": list(self.fenced), "seconds": round(self.seconds, 3), "ok": self.ok}

    def error_line(self) -> str:
        """One line naming the laggards (the CLI's error when the time ran out)."""
        named = "; ".join(f"node {k}: {v}" for k, v in sorted(self.laggards.items()))
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(self.levels.items()))
        return (f"{len(self.laggards)} of {len(self.laggards) + len(self.converged)} node(s) did not "
                f"report {wanted} within {self.seconds:.1f} s: {named}")


def finalized_levels(client: AdminClient, node: NodeInfo, timeout_s: float) -> dict[str, int]:
    """A node's finalized feature levels from a new connection's ApiVersions (with the client's
    TLS/SASL settings)."""
    conn = Connection(node.host, node.port, client_id=client.client_id, timeout_s=timeout_s,
                      security=client.security)
    try:
        body = conn.api_versions_response
    finally:
        conn.close()
    return {f["name"]: f["maxVersionLevel"] for f in body.get("finalizedFeatures") or ()}


def _mismatch(levels: Mapping[str, int], seen: Mapping[str, int]) -> str | None:
    """What differs ('metadata.version=20'), or None when every level is reported (0: absent)."""
    off = [f"{name}={seen.get(name, 0)}" for name, level in sorted(levels.items())
           if seen.get(name, 0) != level]
    return ", ".join(off) if off else None


def wait_converged(client: AdminClient, levels: Mapping[str, int], timeout_s: float, *,
                   poll_interval_s: float = 0.05, progress: Progress | None = None) -> Convergence:
    """Poll every unfenced node the client's DescribeCluster lists (brokers through
    ``--bootstrap-server``, controllers through ``--bootstrap-controller``) until each reports
    ``levels`` or ``timeout_s`` passes. Each node is polled on its own thread, so that a stalled
    one does not keep the others from being asked again."""
    start = time.monotonic()
    deadline = start + timeout_s
    described = client.describe_cluster().nodes
    polled = [n for n in described if not n.fenced]
    fenced = tuple(sorted(n.node_id for n in described if n.fenced))

    def watch(node: NodeInfo) -> str | None:
        """None once ``node`` reports the levels; what it last reported when the time runs out."""
        while True:
            # a stalled node must not hold the wait past its deadline
            wait_s = min(client.request_timeout_s, max(0.1, deadline - time.monotonic()))
            try:
                off = _mismatch(levels, finalized_levels(client, node, wait_s))
                behind = None if off is None else f"reports {off}"
            except AdminClientError as exc:
                behind = f"unreachable ({exc})"
            if behind is None or time.monotonic() + poll_interval_s > deadline:
                return behind
            time.sleep(poll_interval_s)

    with ThreadPoolExecutor(max_workers=max(1, len(polled)), thread_name_prefix="converge") as pool:
        futures = {pool.submit(watch, node): node.node_id for node in polled}
        pending = set(futures)
        while pending:
            _, pending = wait(pending, timeout=poll_interval_s)
            if progress is not None:
                done = sum(1 for f in futures if f.done() and f.result() is None)
                progress(done, len(polled), time.monotonic() - start)
    outcomes = {futures[f]: f.result() for f in futures}
    converged = tuple(sorted(nid for nid, behind in outcomes.items() if behind is None))
    laggards = {nid: behind for nid, behind in outcomes.items() if behind is not None}
    return Convergence(dict(levels), converged, laggards, fenced, time.monotonic() - start)
