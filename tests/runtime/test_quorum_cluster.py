"""A 3-process controller quorum on loopback: election, kill -9 fail-over, no acknowledged append
lost, and metadata log files that ``kraftwerk dump-log`` reads.

Acknowledged appends are real controller writes: BrokerRegistration requests from the test (as a
broker would send them) are answered only after their RegisterBrokerRecord has committed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.cli.main import main as cli_main
from kraftwerk.runtime.client import Connection
from kraftwerk.runtime.errors import NetworkError
from kraftwerk.runtime.local_cluster import LocalCluster, format_cluster, pid_alive, plan_cluster
from kraftwerk.storage.format import random_cluster_id
from kraftwerk.storage.metadata_log import MetadataLogDir
from kraftwerk.versions.software import SoftwareVersion

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]
log = logging.getLogger(__name__)

ELECTION_TIMEOUT_MS = 1000


async def _request(address: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    host, port = address.rsplit(":", 1)
    conn = await Connection.open(host, int(port), client_id="quorum-test", connect_timeout_s=2)
    try:
        return await conn.request(api_key, version, body, timeout_s=10)
    finally:
        await conn.close()


def describe_quorum(address: str) -> dict[str, Any] | None:
    try:
        body = asyncio.run(_request(address, 55, 0, {"topics": [
            {"topicName": "__cluster_metadata", "partitions": [{"partitionIndex": 0}]}]}))
    except NetworkError:
        return None
    part: dict[str, Any] = body["topics"][0]["partitions"][0]
    return part


def find_leader(cluster: LocalCluster, exclude: int | None = None, timeout_s: float = 30) -> tuple[int, int]:
    """(leader id, epoch) once a live node answers DescribeQuorum as leader."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for node in cluster.controllers:
            if node.node_id == exclude:
                continue
            part = describe_quorum(node.address)
            if part is not None and part["errorCode"] == 0 and part["leaderId"] == node.node_id:
                return node.node_id, part["leaderEpoch"]
        time.sleep(0.02)
    raise AssertionError("no leader elected")


def register_broker(address: str, broker_id: int) -> dict[str, Any]:
    features = [{"name": name, "minSupportedVersion": r.min, "maxSupportedVersion": r.max}
                for name, r in SoftwareVersion.latest().supported_features().items()]
    body = {
        "brokerId": broker_id, "clusterId": CLUSTER_ID[0], "incarnationId": uuid.uuid4(),
        "listeners": [{"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9000 + broker_id,
                       "securityProtocol": 0}],
        "features": features,
        "rack": None, "logDirs": [uuid.uuid4()], "previousBrokerEpoch": -1,
    }
    deadline = time.monotonic() + 10
    while True:  # the elected leader answers NOT_CONTROLLER until its activation has committed
        response = asyncio.run(_request(address, 62, 4, body))
        if response["errorCode"] != 41 or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


CLUSTER_ID = [""]


def registered_broker_ids(data_dir: Path) -> list[int]:
    ids = []
    for batch in MetadataLogDir(data_dir / "__cluster_metadata-0").log_batches():
        for record in batch.records:
            if record.spec.name == "RegisterBrokerRecord":
                ids.append(record.value["brokerId"])
    return ids


def committed_prefix(data_dir: Path) -> list[tuple[int, int, bytes]]:
    out = []
    for batch in MetadataLogDir(data_dir / "__cluster_metadata-0").log_batches():
        out.append((batch.base_offset, batch.leader_epoch, repr(batch.records).encode()))
    return out


def test_quorum_fails_over_after_kill_9_and_loses_no_acknowledged_append(tmp_path: Path) -> None:
    CLUSTER_ID[0] = random_cluster_id()
    cluster = plan_cluster(tmp_path, CLUSTER_ID[0], 3, 0,
                           extra={"controller.quorum.election.timeout.ms": str(ELECTION_TIMEOUT_MS)})
    format_cluster(cluster, None)
    for node in cluster.nodes:
        cluster.start(node)
    try:
        cluster.wait_ready(cluster.nodes, 60)
        leader_id, epoch = find_leader(cluster)
        leader = cluster.node(leader_id)

        acked: list[int] = []
        for broker_id in (101, 102, 103):
            response = register_broker(leader.address, broker_id)
            assert response["errorCode"] == 0, response
            acked.append(broker_id)

        # kill -9 the leader; another one is elected in a later epoch (how many election rounds that
        # takes depends on scheduling, so only the outcome is asserted).
        assert leader.pid is not None
        os.kill(leader.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        while pid_alive(leader.pid):
            time.sleep(0.01)
        new_leader_id, new_epoch = find_leader(cluster, exclude=leader_id)
        took_ms = (time.monotonic() - killed_at) * 1000
        log.info("fail-over took %.0f ms (election timeout %d ms)", took_ms, ELECTION_TIMEOUT_MS)
        assert new_leader_id != leader_id and new_epoch > epoch
        follower = next(n for n in cluster.controllers if n.node_id not in (leader_id, new_leader_id))
        deadline = time.monotonic() + 30
        while True:  # the surviving follower follows the new leader in that epoch
            part = describe_quorum(follower.address)
            if part is not None and (part["leaderId"], part["leaderEpoch"]) == (new_leader_id, new_epoch):
                break
            assert time.monotonic() < deadline, part
            time.sleep(0.05)

        new_leader = cluster.node(new_leader_id)
        for broker_id in (104, 105):
            response = register_broker(new_leader.address, broker_id)
            assert response["errorCode"] == 0, response
            acked.append(broker_id)

        # Restart the old leader; it rejoins as a follower and catches up.
        cluster.start(leader)
        cluster.wait_ready([leader], 60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            part = describe_quorum(new_leader.address)
            assert part is not None
            states = {s["replicaId"]: s["logEndOffset"] for s in part["currentVoters"]}
            if len(set(states.values())) == 1:
                break
            time.sleep(0.1)
    finally:
        cluster.stop(cluster.nodes)

    # Every acknowledged registration is in every node's log, and the logs agree.
    logs = {n.node_id: committed_prefix(n.data_dir(tmp_path)) for n in cluster.nodes}
    for node in cluster.nodes:
        ids = registered_broker_ids(node.data_dir(tmp_path))
        assert set(acked) <= set(ids), (node.node_id, acked, ids)
    shortest = min(len(v) for v in logs.values())
    prefixes = {tuple(v[:shortest]) for v in logs.values()}
    assert len(prefixes) == 1

    # kraftwerk dump-log reads the files.
    for node in cluster.nodes:
        segments = [p for p in sorted((node.data_dir(tmp_path) / "__cluster_metadata-0").glob("*.log"))
                    if p.stat().st_size > 0]
        assert segments
        files = ",".join(map(str, segments))
        assert cli_main(["dump-log", "--cluster-metadata-decoder", "--files", files]) == 0
