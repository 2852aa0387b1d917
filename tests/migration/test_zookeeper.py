"""KIP-866's ZooKeeper side against a real ZooKeeper: a tree in Kafka 3.x's layout, written with kazoo,
is dumped, checked and exported; the export reads back through ``metadata show``."""

from __future__ import annotations

import contextlib
import io
import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from kraftwerk.cli.main import main
from kraftwerk.migration.errors import ZooKeeperError
from kraftwerk.migration.reader import connect, read_tree
from kraftwerk.migration.tree import parse_dump
from kraftwerk.runtime.zookeeper import ZooKeeperServer
from tests.migration.layout import Layout, kafka_uuid, sample_layout

pytestmark = pytest.mark.zookeeper

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qk"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def client(zookeeper: ZooKeeperServer) -> Iterator[KazooClient]:
    """The session that owns the trees' ephemeral broker znodes, as live brokers' sessions would."""
    c = KazooClient(hosts=zookeeper.connect_string)
    c.start(10)
    yield c
    c.stop()
    c.close()


def write(client: KazooClient, zookeeper: ZooKeeperServer, chroot: str, layout: Layout) -> str:
    client.ensure_path(chroot)
    client.chroot = chroot
    try:
        layout.write(client)
    finally:
        client.chroot = ""
    return f"{zookeeper.connect_string}{chroot}"


@pytest.fixture(scope="module")
def sample(client: KazooClient, zookeeper: ZooKeeperServer) -> tuple[str, Layout, dict[str, Any]]:
    layout, ids = sample_layout(CLUSTER_ID)
    return write(client, zookeeper, "/kafka", layout), layout, ids


def test_export_reads_back_through_metadata_show(sample: tuple[str, Layout, dict[str, Any]], tmp_path: Path
                                                 ) -> None:
    connect_string, _, ids = sample
    out = tmp_path / "migrated.checkpoint"
    code, stdout, err = run("migration", "export", "--zookeeper", connect_string, "--metadata-version", "3.9",
                            "--out", str(out), "--output", "json")
    assert code == 0, err
    report = json.loads(stdout)
    assert report["clusterId"] == CLUSTER_ID and report["losses"] == [] and report["written"]
    code, stdout, err = run("metadata", "show", "--snapshot", str(out), "--output", "json")
    assert code == 0, err
    image = json.loads(stdout)
    assert image["metadataVersion"] == "3.9-IV0" and image["zkMigrationState"] == "MIGRATION"
    topics = {t["name"]: t for t in image["topics"]}
    assert {n: t["topicId"] for n, t in topics.items()} == {n: kafka_uuid(u) for n, u in ids.items()}
    orders = {p["partition"]: p for p in topics["orders"]["partitions"]}
    assert [orders[p]["replicas"] for p in range(3)] == [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    assert [orders[p]["isr"] for p in range(3)] == [[1, 2, 3], [2, 3], [3, 1, 2]]
    assert [orders[p]["leader"] for p in range(3)] == [1, 2, 3]
    # leader epoch from the state JSON, partition epoch from the state znode's dataVersion (6 sets)
    assert {(p["leaderEpoch"], p["partitionEpoch"]) for p in orders.values()} == {(4, 6)}
    assert topics["payments"]["partitions"][0]["leaderRecoveryState"] == "RECOVERING"
    configs = {(c["resourceType"], c["resourceName"]): c["configs"] for c in image["configs"]}
    assert configs == {("TOPIC", "orders"): {"cleanup.policy": "compact", "retention.ms": "86400000"},
                       ("TOPIC", "audit"): {"min.insync.replicas": "1"},
                       ("BROKER", ""): {"log.cleaner.threads": "2"},
                       ("BROKER", "2"): {"log.retention.bytes": "1073741824"}}
    acls = {(a["resourceType"], a["resourceName"], a["patternType"], a["principal"], a["host"],
             a["operation"], a["permissionType"]) for a in image["acls"]}
    assert acls == {("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
                    ("TOPIC", "orders", "LITERAL", "User:bob", "10.0.0.1", "WRITE", "DENY"),
                    ("CLUSTER", "kafka-cluster", "LITERAL", "User:admin", "*", "CLUSTER_ACTION", "ALLOW"),
                    ("GROUP", "app-", "PREFIXED", "User:alice", "*", "READ", "ALLOW")}
    quotas = {tuple(sorted(q["entity"].items(), key=str)): q["quotas"] for q in image["clientQuotas"]}
    assert quotas[(("user", "alice"),)] == {"producer_byte_rate": 1048576.0}
    assert quotas[(("user", None),)] == {"consumer_byte_rate": 2097152.0}
    assert quotas[(("client-id", "app1"), ("user", "bob@EX.COM"))] == {"producer_byte_rate": 4096.0}
    assert image["scramCredentialCount"] == 1 and image["nextProducerId"] == 6000


def test_dump_keeps_data_and_stats_and_checks_alike(sample: tuple[str, Layout, dict[str, Any]],
                                                    tmp_path: Path) -> None:
    connect_string, layout, _ = sample
    dump = tmp_path / "cluster.jsonl"
    code, _, err = run("migration", "dump", "--zookeeper", connect_string, "--out", str(dump))
    assert code == 0, err
    tree = parse_dump(dump.read_text().splitlines(), str(dump))
    assert {s.path for s in layout.specs} <= {z.path for z in tree}
    for spec in layout.specs:
        if not spec.sequential:
            z = tree.get(spec.path)
            assert z is not None and (z.data or b"") == (spec.data or b"")
            assert z.stat.version == spec.updates
            assert (z.stat.ephemeral_owner != 0) == spec.ephemeral
    live = run("migration", "check", "--zookeeper", connect_string, "--output", "json")
    offline = run("migration", "check", "--dump", str(dump), "--output", "json")
    assert live[0] == offline[0] == 1  # the brokers' flags and IBP are unknown without their configs
    assert json.loads(live[1]) == json.loads(offline[1])


def _broker_config(tmp_path: Path, broker_id: int, flag: bool) -> str:
    path = tmp_path / f"broker-{broker_id}.properties"
    lines = [f"broker.id={broker_id}", "zookeeper.connect=localhost:2181",
             "inter.broker.protocol.version=3.9",
             "controller.quorum.voters=3000@localhost:9093", "controller.listener.names=CONTROLLER"]
    if flag:
        lines.append("zookeeper.metadata.migration.enable=true")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_readiness_flags_offline_broker_pending_deletion_and_missing_flag(
        client: KazooClient, zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    layout, _ = sample_layout(CLUSTER_ID)
    layout.topic("moving", {0: [3, 4]}, topic_id=uuid.UUID(int=7))  # broker 4 is not registered
    layout.topic("doomed", {0: [1]}, topic_id=uuid.UUID(int=8)).delete_topic("doomed")
    connect_string = write(client, zookeeper, "/flagged", layout)
    configs = [a for b in (1, 2, 3) for a in ("--broker-config", _broker_config(tmp_path, b, flag=b != 3))]
    code, stdout, _ = run("migration", "check", "--zookeeper", connect_string, *configs, "--output", "json")
    assert code == 1
    checks = {c["check"]: c for c in json.loads(stdout)["checks"]}
    failed = {name for name, c in checks.items() if c["status"] == "FAIL"}
    assert failed == {"offline-brokers", "pending-deletions", "migration-enabled"}
    assert "4 (1 partition(s), e.g. moving-0)" in checks["offline-brokers"]["reason"]
    assert "doomed" in checks["pending-deletions"]["reason"]
    assert checks["migration-enabled"]["reason"].endswith("brokers 3")
    assert checks["inter-broker-protocol"]["status"] == "PASS"
    code, text, _ = run("migration", "check", "--zookeeper", connect_string, *configs)
    assert code == 1 and "NOT ready for migration: 3 check(s) failed" in text
    assert any(line.split()[:2] == ["FAIL", "offline-brokers"] for line in text.splitlines())


def test_invalid_znodes_are_named_and_skipped_only_on_request(
        client: KazooClient, zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    layout, _ = sample_layout(CLUSTER_ID)
    layout.put("/config/topics/orders", b'{"version":1,"config":{"retention.ms":')  # cut short
    layout.put("/brokers/ids/2", b'{"version":9,"host":"b2","port":9092,"jmx_port":-1}')
    layout.topic("stateless", {0: [1]}, topic_id=uuid.UUID(int=9), states=False)
    connect_string = write(client, zookeeper, "/bad", layout)
    out = tmp_path / "bad.checkpoint"
    code, _, err = run("migration", "export", "--zookeeper", connect_string, "--metadata-version", "3.9",
                       "--out", str(out))
    assert code == 1 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "--skip-invalid" in err
    code, stdout, err = run("migration", "export", "--zookeeper", connect_string, "--metadata-version", "3.9",
                            "--out", str(out), "--skip-invalid", "--output", "json")
    assert code == 0, err
    skipped = {s["path"]: s["reason"] for s in json.loads(stdout)["skipped"]}
    assert set(skipped) == {"/config/topics/orders", "/brokers/ids/2",
                            "/brokers/topics/stateless/partitions/0/state"}
    assert "malformed JSON" in skipped["/config/topics/orders"]
    assert "unknown version 9" in skipped["/brokers/ids/2"]
    assert all(f"Skipped invalid znode {p}:" in err for p in skipped)
    code, stdout, _ = run("metadata", "show", "--snapshot", str(out), "--output", "json")
    topics = {t["name"] for t in json.loads(stdout)["topics"]}
    assert topics == {"orders", "payments", "audit"}  # the topic without a partition state is left out


def test_a_tree_changing_during_the_read_is_read_again(client: KazooClient, zookeeper: ZooKeeperServer
                                                       ) -> None:
    layout, _ = sample_layout(CLUSTER_ID)
    connect_string = write(client, zookeeper, "/moving", layout)
    changes: list[int] = []

    def change_once(read_so_far: int) -> None:
        # Past the 28 znodes of depth <= 2 (BFS): change one already read, add a child to a parent
        # already listed. Without the re-check pass the tree would hold the old values.
        if read_so_far >= 40 and not changes:
            changes.append(read_so_far)
            client.set("/moving/controller_epoch", b"2")
            client.create("/moving/admin/delete_topics/audit", b"")

    with connect(connect_string) as zk:
        tree = read_tree(zk, page_size=4, progress=change_once)
    epoch = tree.get("/controller_epoch")
    assert changes and epoch is not None and epoch.data == b"2"
    assert "/admin/delete_topics/audit" in tree


def test_unreachable_zookeeper_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        for argv in (("check",), ("dump", "--out", str(tmp_path / "d.jsonl")),
                     ("export", "--metadata-version", "3.9", "--out", str(tmp_path / "x"))):
            code, stdout, err = run("migration", *argv, "--zookeeper", address)
            assert code == 1 and stdout == ""
            assert err.strip().splitlines() == [
                f"Unable to connect to ZooKeeper at {address}: Connection refused"]


def test_missing_chroot_is_one_line(zookeeper: ZooKeeperServer) -> None:
    code, _, err = run("migration", "check", "--zookeeper", f"{zookeeper.connect_string}/nowhere")
    assert code == 1
    where = f"{zookeeper.connect_string}/nowhere"
    assert err.strip() == f"The chroot /nowhere does not exist in ZooKeeper at {where}"


def test_zookeeper_lost_during_the_read_is_one_error(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "zk").start()  # its own server: this test stops it
    try:
        writer = KazooClient(hosts=server.connect_string)
        writer.start(10)
        sample_layout(CLUSTER_ID)[0].write(writer)
        writer.stop()
        writer.close()

        def stop_server(read_so_far: int) -> None:
            server.stop()

        lost = f"^Lost the connection to ZooKeeper at {server.connect_string} "
        with pytest.raises(ZooKeeperError, match=lost), connect(server.connect_string, timeout=2) as zk:
            read_tree(zk, page_size=4, progress=stop_server)
    finally:
        server.stop()
