"""The client matrix: the three Python Kafka clients against ``kraftwerk cluster up``.

Each client makes the admin calls it has today; every (API, version) a broker advertises in
ApiVersions is then sent by a real client (kafka-python's protocol classes, at each version) or
replayed from a request Kafka's own client produced (the golden message vectors), and must be
answered. The brokers run with ``KRAFTWERK_LOG_LEVELS=kraftwerk.request=DEBUG``, so their logs show
every request as Kafka's request logger would.

What a client cannot do against kraftwerk yet, and why:

- all three: produce and consume are tests/cluster/test_data_plane.py's; the admin plane (topics
  and configs) is served and tested with the clients' own admin calls in ``test_admin_topics.py``
  and ``test_admin_configs.py``;
- confluent-kafka and aiokafka: describe_cluster works, but is answered from Metadata (librdkafka
  and aiokafka send no DescribeCluster);
- confluent-kafka: no feature API in librdkafka (describe/update features).
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime import framing
from kraftwerk.runtime.local_cluster import LocalCluster
from tests.cluster.helpers import cluster_up
from tests.conftest import golden_path

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KRAFTWERK_LOG_LEVELS", "kraftwerk.request=DEBUG")
        with cluster_up(tmp_path_factory.mktemp("clients"), "--controllers", "1", "--brokers", "2") as up:
            yield up


def _broker_ids(cluster: LocalCluster) -> list[int]:
    return sorted(b.node_id for b in cluster.brokers)


def _completed_requests(cluster: LocalCluster) -> list[dict[str, Any]]:
    """Every "Completed request:" line the brokers logged."""
    out = []
    for broker in cluster.brokers:
        for line in broker.log_path(cluster.root).read_text(errors="replace").splitlines():
            if "Completed request:" in line:
                out.append(json.loads(line.split("Completed request:", 1)[1].rsplit(" (kraftwerk.", 1)[0]))
    return out


# --------------------------------------------------------------------------------- admin calls


def test_confluent_kafka_admin(cluster: LocalCluster) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    # list_topics is two MetadataRequest v13; librdkafka puts three bytes after the second body,
    # which Kafka ignores and kraftwerk used to refuse (closing the connection: _TRANSPORT)
    metadata = admin.list_topics(timeout=20)
    assert sorted(metadata.brokers) == _broker_ids(cluster)
    described = admin.describe_cluster(request_timeout=10).result(timeout=20)
    assert sorted(n.id for n in described.nodes) == _broker_ids(cluster)
    broker = str(cluster.brokers[0].node_id)
    configs = admin.describe_configs([ConfigResource("BROKER", broker)])
    entries = next(iter(configs.values())).result(timeout=20)
    assert entries["node.id"].value == broker
    answered = [r for r in _completed_requests(cluster) if r["requestHeader"]["clientId"] == "rdkafka"
                and r["requestHeader"]["requestApiKey"] == 3]
    assert {r["requestHeader"]["requestApiVersion"] for r in answered} == {13} and len(answered) >= 2


def test_kafka_python_admin(cluster: LocalCluster) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    broker = str(cluster.brokers[0].node_id)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        assert sorted(b["broker_id"] for b in admin.describe_cluster()["brokers"]) == _broker_ids(cluster)
        assert admin.list_topics() == []
        assert {3, 18, 32, 57, 60} <= {int(k) for k in admin.api_versions()}
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, broker)],
                                         config_filter="all")
        assert configs["broker"][broker]["node.id"]["value"] == broker
    finally:
        admin.close()
    # older protocol generations: kafka-python then sends Metadata v0-v4 and DescribeConfigs v0
    for generation in ((0, 9), (0, 10, 0), (0, 10, 1), (0, 11)):
        old = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000,
                               api_version=generation)
        try:
            assert old.list_topics() == []
        finally:
            old.close()


def test_aiokafka_admin(cluster: LocalCluster) -> None:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    broker = str(cluster.brokers[0].node_id)

    async def calls() -> tuple[Any, Any, Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
        await admin.start()
        try:
            return (await admin.describe_cluster(), await admin.list_topics(),
                    await admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, broker)]))
        finally:
            await admin.close()

    described, topics, configs = asyncio.run(calls())
    assert sorted(b["node_id"] for b in described["brokers"]) == _broker_ids(cluster)
    assert topics == []
    assert any(c[0] == "node.id" and c[1] == broker for r in configs for c in r.resources[0][4])


# --------------------------------------------------------------------------------- every version


DROPPED_ON_4X = {(0, 0), (0, 1), (0, 2)}
"""Produce v0-2: advertised by a 4.x broker for librdkafka's sake, refused while parsing (KIP-896)."""


def _kafka_python_requests() -> dict[int, Callable[[int], Any]]:
    """kafka-python's request classes for the broker's APIs, built at any version. They run in
    (api key, version) order: CreateTopics creates ``matrix-<v>``, DeleteTopics deletes it again,
    the config and partition calls work on ``matrix-7``, CreateAcls creates an ACL that DeleteAcls
    then removes."""
    from kafka.protocol.admin import (
        AlterConfigsRequest,
        AlterUserScramCredentialsRequest,
        CreateAclsRequest,
        CreatePartitionsRequest,
        CreateTopicsRequest,
        DeleteAclsRequest,
        DeleteTopicsRequest,
        DescribeAclsRequest,
        DescribeClusterRequest,
        DescribeConfigsRequest,
        DescribeTopicPartitionsRequest,
        DescribeUserScramCredentialsRequest,
        IncrementalAlterConfigsRequest,
        UpdateFeaturesRequest,
    )
    from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
    from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
    from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

    def create_topic(v: int) -> Any:
        topic = CreateTopicsRequest.CreatableTopic(name=f"matrix-{v}", num_partitions=1, replication_factor=1,
                                                   assignments=[], configs=[])
        return CreateTopicsRequest(version=v, topics=[topic], timeout_ms=10000, validate_only=False)

    def delete_topic(v: int) -> Any:
        if v < 6:
            return DeleteTopicsRequest(version=v, topic_names=[f"matrix-{v}"], timeout_ms=10000)
        state = DeleteTopicsRequest.DeleteTopicState(name=f"matrix-{v}", topic_id=None)
        return DeleteTopicsRequest(version=v, topics=[state], timeout_ms=10000)

    def alter(cls: Any, v: int, **op: Any) -> Any:
        config = cls.AlterConfigsResource.AlterableConfig(name="retention.ms", value=str(1000 + v), **op)
        resource = cls.AlterConfigsResource(resource_type=2, resource_name="matrix-7", configs=[config])
        return cls(version=v, resources=[resource], validate_only=False)

    def create_partitions(v: int) -> Any:
        topic = CreatePartitionsRequest.CreatePartitionsTopic(name="matrix-7", count=2 + v, assignments=None)
        return CreatePartitionsRequest(version=v, topics=[topic], timeout_ms=10000, validate_only=False)

    def update_features(v: int) -> Any:  # group.version to its current level: validated, changes nothing
        key = UpdateFeaturesRequest.FeatureUpdateKey(feature="group.version", max_version_level=1,
                                                     allow_downgrade=False, upgrade_type=1)
        return UpdateFeaturesRequest(version=v, timeout_ms=10000, feature_updates=[key], validate_only=True)

    acl_filter = {"resource_type_filter": 2, "resource_name_filter": "matrix-acl", "pattern_type_filter": 3,
                  "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}

    def create_acl(v: int) -> Any:  # the same ACL each time: created once, then successes that write nothing
        creation = CreateAclsRequest.AclCreation(resource_type=2, resource_name="matrix-acl",
                                                 resource_pattern_type=3, principal="User:matrix", host="*",
                                                 operation=3, permission_type=3)
        return CreateAclsRequest(version=v, creations=[creation])

    def delete_acl(v: int) -> Any:  # found once, then nothing left to match
        return DeleteAclsRequest(version=v, filters=[DeleteAclsRequest.DeleteAclsFilter(**acl_filter)])

    return {
        0: lambda v: ProduceRequest(version=v, transactional_id=None, acks=1, timeout_ms=10000,
                                    topic_data=[]),
        1: lambda v: FetchRequest(version=v, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                                  session_id=0, session_epoch=-1, topics=[], forgotten_topics_data=[],
                                  rack_id=""),
        2: lambda v: ListOffsetsRequest(version=v, replica_id=-1, isolation_level=0, topics=[]),
        22: lambda v: InitProducerIdRequest(version=v, transactional_id=None, transaction_timeout_ms=60000),
        23: lambda v: OffsetForLeaderEpochRequest(version=v, replica_id=-1, topics=[]),
        3: lambda v: MetadataRequest(version=v, topics=[] if v == 0 else None),
        18: lambda v: ApiVersionsRequest(version=v, client_software_name="kafka-python",
                                         client_software_version="3"),
        32: lambda v: DescribeConfigsRequest(version=v, resources=[
            DescribeConfigsRequest.DescribeConfigsResource(resource_type=4, resource_name="",
                                                           configuration_keys=None)]),
        19: create_topic,
        20: delete_topic,
        33: lambda v: alter(AlterConfigsRequest, v),
        37: create_partitions,
        44: lambda v: alter(IncrementalAlterConfigsRequest, v, config_operation=0),
        50: lambda v: DescribeUserScramCredentialsRequest(version=v, users=None),
        # nothing to delete or upsert: answered, changes nothing
        51: lambda v: AlterUserScramCredentialsRequest(version=v, deletions=[], upsertions=[]),
        29: lambda v: DescribeAclsRequest(version=v, **acl_filter),
        30: create_acl,
        31: delete_acl,
        57: update_features,
        60: lambda v: DescribeClusterRequest(version=v),
        75: lambda v: DescribeTopicPartitionsRequest(
            version=v, topics=[DescribeTopicPartitionsRequest.TopicRequest(name="matrix-7")],
            response_partition_limit=100, cursor=None),
    }


def _golden_requests() -> list[tuple[int, int, bytes]]:
    """(api key, version, body) of every request row Kafka 4.3's own classes encoded."""
    rows = []
    for line in golden_path("message-vectors.tsv").read_text().splitlines()[1:]:
        api, kind, version, hex_text, _ = line.split("\t")
        if kind == "request":
            spec = next(s for s in _request_specs() if s.api_name == api)
            rows.append((spec.api_key, int(version), bytes.fromhex(hex_text)))
    return rows


def _request_specs() -> list[Any]:
    from kraftwerk.protocol.registry import all_specs
    from kraftwerk.protocol.schema import Kind

    return [s for s in all_specs() if s.kind is Kind.REQUEST]


def _send_kafka_bytes(address: str, api_key: int, version: int, body: bytes) -> dict[str, Any]:
    """One request whose body is Kafka's own bytes (the header is ours); the decoded response."""
    spec = framing.request_spec(api_key)
    from kraftwerk.protocol import header

    head = header.encode_request_header({"requestApiKey": api_key, "requestApiVersion": version,
                                         "correlationId": 7, "clientId": "kafka-golden"},
                                        header.request_header_version(spec, version))
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=20) as sock:
        sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(65536)
            assert chunk, f"{spec.api_name} v{version}: connection closed"
            data += chunk
    correlation, value = framing.parse_response(data[4:], api_key, version)
    assert correlation == 7
    return value


KRAFTWERK_EXTENSIONS = {(57, 3)}
"""kraftwerk's own request versions, which no real client has: UpdateFeatures v3 (KIP-920), sent by
kraftwerk's admin client in tests/cluster/test_auto_upgrade.py."""


def test_every_version_a_broker_advertises_is_answered(cluster: LocalCluster) -> None:
    from kafka.net.manager import KafkaConnectionManager
    from kafka.net.selector import NetworkSelector

    address = cluster.brokers[0].address
    builders = _kafka_python_requests()
    manager = KafkaConnectionManager(NetworkSelector(), bootstrap_servers=address, request_timeout_ms=10000)
    exercised: set[tuple[int, int]] = set()
    try:
        conn = manager.get_connection("bootstrap-0")

        async def send(request: Any) -> Any:
            await conn
            return await conn.send_request(request)

        manager.run(lambda: send(builders[18](4)))
        advertised = {(k, v) for k, (lo, hi) in conn.broker_version_data.api_versions.items()
                      for v in range(lo, hi + 1)}
        for api_key, version in sorted(advertised):
            if api_key not in builders or (api_key, version) in KRAFTWERK_EXTENSIONS | DROPPED_ON_4X:
                continue
            response = manager.run(lambda k=api_key, v=version: send(builders[k](v)))
            errors = [getattr(response, "error_code", 0),
                      *(r.error_code for part in ("results", "topics", "responses")
                        for r in getattr(response, part, None) or [])]
            assert set(errors) == {0}, (api_key, version, response)
            exercised.add((api_key, version))
    finally:
        manager.close()
    for api_key, version in sorted(DROPPED_ON_4X & advertised):  # KAFKA-18659: advertised, then refused
        host, port = address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            sock.sendall(framing.encode_request(api_key, version, 7, "kafka-python", {
                "acks": 1, "timeoutMs": 1000, "topicData": []}))
            assert sock.recv(4) == b"", f"Produce v{version} was answered"
        exercised.add((api_key, version))
    for api_key, version, body in _golden_requests():
        if (api_key, version) in advertised and (api_key, version) not in DROPPED_ON_4X:
            value = _send_kafka_bytes(address, api_key, version, body)
            assert Errors.for_code(value.get("errorCode", 0)) in (Errors.NONE, Errors.INVALID_UPDATE_VERSION)
            exercised.add((api_key, version))
    assert advertised - KRAFTWERK_EXTENSIONS == exercised, \
        f"not exercised by a real client: {sorted(advertised - exercised)}"
    # and the brokers saw them all, as their request log says
    logged = {(r["requestHeader"]["requestApiKey"], r["requestHeader"]["requestApiVersion"])
              for r in _completed_requests(cluster)}
    assert advertised - KRAFTWERK_EXTENSIONS - DROPPED_ON_4X <= logged
