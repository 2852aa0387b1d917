"""Topics end to end on ``cluster up``: kafka-python's and confluent-kafka's admin clients create,
describe, grow and delete topics through the brokers, which forward the writes to the active
controller; Kafka's errors come back unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from kraftwerk.cli.topics_cmd import COLLISION_WARNING
from kraftwerk.runtime.local_cluster import LocalCluster
from tests.cluster.helpers import cli, cluster_up, wait_topic_on_brokers

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with cluster_up(
        tmp_path_factory.mktemp("topics"),
        "--controllers",
        "1",
        "--brokers",
        "3",
        "--config",
        "num.partitions=2",
    ) as up:
        yield up


def test_kafka_python_topics(cluster: LocalCluster) -> None:
    from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
    from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic("kp-orders", 3, 2, topic_configs={"retention.ms": "60000"})])
        described = {t["name"]: t for t in admin.describe_topics(["kp-orders"])}
        parts = described["kp-orders"]["partitions"]
        broker_ids = {b.node_id for b in cluster.brokers}
        assert len(parts) == 3 and all(
            len(p["replica_nodes"]) == 2 and set(p["replica_nodes"]) <= broker_ids for p in parts
        )
        assert len({p["leader_id"] for p in parts}) == 3  # leaders spread over the brokers
        assert "kp-orders" in admin.list_topics()
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("kp-orders", 1, 1)])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("kp-too-wide", 1, 4)])
        admin.create_partitions({"kp-orders": NewPartitions(5)})
        assert len(admin.describe_topics(["kp-orders"])[0]["partitions"]) == 5
        admin.delete_topics(["kp-orders"])
        assert "kp-orders" not in admin.list_topics()
    finally:
        admin.close()


def test_confluent_kafka_topics(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    ids = [b.node_id for b in cluster.brokers]
    futures = admin.create_topics(
        [
            NewTopic("ck-a", num_partitions=2, replication_factor=3),
            NewTopic("ck-manual", num_partitions=2, replica_assignment=[[ids[2], ids[0]], [ids[1], ids[2]]]),
            NewTopic("ck-bad", num_partitions=1, replication_factor=1, config={"segment.bytes": "1"}),
        ],
        request_timeout=20,
    )
    futures["ck-a"].result(timeout=30)
    futures["ck-manual"].result(timeout=30)
    with pytest.raises(KafkaException) as refused:
        futures["ck-bad"].result(timeout=30)
    error = refused.value.args[0]
    assert error.name() == "INVALID_CONFIG"
    assert error.str() == "Invalid value 1 for configuration segment.bytes: Value must be at least 14"
    validated = admin.create_topics([NewTopic("ck-dry", 1, 1)], validate_only=True)
    validated["ck-dry"].result(timeout=30)
    metadata = admin.list_topics(timeout=20)
    assert "ck-dry" not in metadata.topics
    manual = metadata.topics["ck-manual"].partitions
    assert [manual[0].replicas, manual[1].replicas] == [[ids[2], ids[0]], [ids[1], ids[2]]]
    assert manual[0].leader == ids[2] and sorted(manual[0].isrs) == sorted([ids[2], ids[0]])
    admin.create_partitions([NewPartitions("ck-a", 3)])["ck-a"].result(timeout=30)
    with pytest.raises(KafkaException, match="Topic already has 3 partition"):
        admin.create_partitions([NewPartitions("ck-a", 3)])["ck-a"].result(timeout=30)
    for future in admin.delete_topics(["ck-a", "ck-manual"], operation_timeout=20).values():
        future.result(timeout=30)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.delete_topics(["ck-a"], operation_timeout=20)["ck-a"].result(timeout=30)
    assert not {"ck-a", "ck-manual"} & set(admin.list_topics(timeout=20).topics)


def test_kraftwerk_topics_matches_kafka_topics(cluster: LocalCluster) -> None:
    bs = ("--bootstrap-server", cluster.bootstrap_servers)
    ids = sorted(b.node_id for b in cluster.brokers)
    code, out, _ = cli(
        "topics",
        *bs,
        "--create",
        "--topic",
        "cli.t",
        "--partitions",
        "2",
        "--replication-factor",
        "2",
        "--config",
        "retention.ms=1000",
    )
    assert code == 0 and out.splitlines() == [COLLISION_WARNING, "Created topic cli.t."]
    assignment = f"{ids[0]}:{ids[1]},{ids[1]}:{ids[2]}"
    assert cli("topics", *bs, "--create", "--topic", "cli-m", "--replica-assignment", assignment)[0] == 0
    wait_topic_on_brokers(cluster, "cli-m")
    code, out, _ = cli("topics", *bs, "--describe", "--topic", "cli-m")
    head, p0, p1 = out.splitlines()
    assert re.fullmatch(
        r"Topic: cli-m\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 2\t"
        r"Configs: .*",
        head,
    )
    assert (
        p0 == f"\tTopic: cli-m\tPartition: 0\tLeader: {ids[0]}\tReplicas: {ids[0]},{ids[1]}\tIsr: "
        f"{ids[0]},{ids[1]}\tElr: \tLastKnownElr: "
    )
    assert p1.startswith(f"\tTopic: cli-m\tPartition: 1\tLeader: {ids[1]}\t")
    code, out, _ = cli("topics", *bs, "--describe", "--topic", "cli.t", "--output", "json")
    [described] = json.loads(out)
    assert described["configs"]["retention.ms"] == "1000" and described["partitionCount"] == 2
    assert cli("topics", *bs, "--alter", "--topic", "cli.t", "--partitions", "4") == (0, "", "")
    code, _, err = cli("topics", *bs, "--alter", "--topic", "cli.t", "--partitions", "4")
    assert (code, err.strip()) == (
        1,
        "Error while executing topic command : Topic already has 4 partition(s).",
    )
    code, _, err = cli("topics", *bs, "--create", "--topic", "cli-m")
    assert (code, err.strip()) == (1, "Error while executing topic command : Topic 'cli-m' already exists.")
    assert cli("topics", *bs, "--create", "--topic", "cli-m", "--if-not-exists")[0] == 0
    # no --partitions: the controller's num.partitions, set by `cluster up --config`
    assert cli("topics", *bs, "--create", "--topic", "cli-default")[0] == 0
    wait_topic_on_brokers(cluster, "cli-default")
    assert "\tPartitionCount: 2\t" in cli("topics", *bs, "--describe", "--topic", "cli-default")[1]
    code, out, _ = cli("topics", *bs, "--list")
    assert {"cli.t", "cli-m"} <= set(out.splitlines())
    assert cli("topics", *bs, "--delete", "--topic", "cli.t") == (0, "", "")
    code, _, err = cli("topics", *bs, "--describe", "--topic", "nope")
    assert (code, err.strip()) == (
        1,
        "Error while executing topic command : Topic 'nope' does not exist as expected",
    )
    assert cli("topics", *bs, "--delete", "--topic", "nope", "--if-exists")[0] == 0
