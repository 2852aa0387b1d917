"""ACLs on real processes (issue 25): a controller and a broker with the StandardAuthorizer, clients
on a SASL_SSL listener with SCRAM users. ``admin`` is a super user and grants ``alice`` produce and
consume on one topic (``kraftwerk acls`` and kafka-python's ``create_acls``); kafka-python and
confluent-kafka then produce and consume as alice, a wrong password fails to authenticate, a topic
without an ACL is refused, and ``bob`` (authenticated, no ALTER on the cluster) cannot upgrade
``metadata.version`` through ``kraftwerk features upgrade --command-config``.

The cluster's own traffic is secured too: the controller listener is SASL_SSL with PLAIN (user
``controller``, which brokers log in as), the inter-broker listener is the SASL_SSL one (user
``broker``), and both users are super users; the broker's PLAINTEXT listener (``User:ANONYMOUS``)
is authorized nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kraftwerk.runtime.local_cluster import LocalCluster, format_cluster, free_ports, plan_cluster
from kraftwerk.storage.format import random_cluster_id
from kraftwerk.storage.scram import scram_records
from tests.cluster.helpers import cli
from tests.cluster.test_security import KEY_PASSWORD, Pki, _make_pki

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(240)]

PASSWORDS = {"admin": "admin-secret-1", "alice": "alice-secret-2", "bob": "bob-secret-3"}
TOPIC = "orders"
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:controller;User:broker",
}
CONTROLLER_PASSWORD, BROKER_PASSWORD = "controller-secret-4", "broker-secret-5"


def _plain_jaas(user: str, password: str) -> str:
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{password}" user_{user}="{password}";'
    )


@dataclass(frozen=True)
class AclCluster:
    cluster: LocalCluster
    pki: Pki
    sasl_ssl: str
    configs: dict[str, Path]

    def cli(self, user: str, *argv: str) -> tuple[int, str, str]:
        return cli(*argv, "--bootstrap-server", self.sasl_ssl, "--command-config", str(self.configs[user]))


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    pki = _make_pki(tmp_path_factory.mktemp("pki") / "certs")
    root = tmp_path_factory.mktemp("acls")
    # Every node: TLS stores, the controller listener on SASL_SSL with PLAIN (its JAAS entry is the
    # controller's user and the credentials brokers and controllers log in with).
    inter_node = {
        **AUTHORIZER,
        "listener.security.protocol.map": "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server),
        "ssl.key.password": KEY_PASSWORD,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _plain_jaas("controller", CONTROLLER_PASSWORD),
    }
    cluster = plan_cluster(root, random_cluster_id(), 1, 1, extra=inter_node)
    broker = cluster.brokers[0]
    (sasl_port,) = free_ports(1)
    listeners = f"PLAINTEXT://127.0.0.1:{broker.port},SASL_SSL://127.0.0.1:{sasl_port}"
    broker.extra.update(
        {
            "listeners": listeners,
            "advertised.listeners": listeners,
            "inter.broker.listener.name": "SASL_SSL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": _plain_jaas("broker", BROKER_PASSWORD),
        }
    )
    cluster.save()
    format_cluster(
        cluster,
        "3.9",
        scram=scram_records(
            [f"SCRAM-SHA-512=[name={user},password={password}]" for user, password in PASSWORDS.items()]
        ),
    )
    configs = {}
    for user, password in PASSWORDS.items():
        configs[user] = root / f"{user}.properties"
        configs[user].write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{user}" password="{password}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n"
        )
    cluster.start_all()
    try:
        yield AclCluster(cluster, pki, f"127.0.0.1:{sasl_port}", configs)
    finally:
        cli("cluster", "down", "--dir", str(root))


def _kafka_python(secure: AclCluster, user: str, password: str | None = None) -> dict[str, Any]:
    return {
        "bootstrap_servers": secure.sasl_ssl,
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(secure.pki.ca),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": user,
        "sasl_plain_password": password or PASSWORDS[user],
        "request_timeout_ms": 10000,
    }


def _eventually(check: Any, timeout_s: float = 20) -> Any:
    """Polls ``check()`` until it is truthy (the broker's image follows the controller's commit)."""
    deadline = time.monotonic() + timeout_s
    while not (result := check()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return result


def test_admin_grants_alice_who_produces_and_consumes(acl_cluster: AclCluster) -> None:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        NewTopic,
        ResourcePattern,
        ResourceType,
    )
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(**_kafka_python(acl_cluster, "admin"))
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1), NewTopic("secret", 1, 1)])
        code, out, err = acl_cluster.cli(
            "admin",
            "acls",
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--operation",
            "Describe",
            "--topic",
            TOPIC,
        )
        assert code == 0, err
        assert out == (
            "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
            "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=WRITE, "
            "permissionType=ALLOW)\n\t(principal=User:alice, host=*, operation=DESCRIBE, "
            "permissionType=ALLOW) \n\n"
        )
        read = ACL(
            "User:alice",
            "*",
            ACLOperation.READ,
            ACLPermissionType.ALLOW,
            ResourcePattern(ResourceType.TOPIC, TOPIC),
        )
        created = admin.create_acls([read])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        wanted = ACLFilter(
            None, None, ACLOperation.ANY, ACLPermissionType.ANY, ResourcePattern(ResourceType.TOPIC, TOPIC)
        )
        found = _eventually(
            lambda: len(admin.describe_acls(wanted)[0]) == 3 and admin.describe_acls(wanted)[0]
        )
        assert sorted(a.operation.name for a in found) == ["DESCRIBE", "READ", "WRITE"]
    finally:
        admin.close()

    producer = KafkaProducer(**_kafka_python(acl_cluster, "alice"), acks="all")
    try:
        producer.send(TOPIC, b"from kafka-python").get(timeout=20)
        with pytest.raises(KafkaError, match="TopicAuthorizationFailed"):
            producer.send("secret", b"nope").get(timeout=20)
    finally:
        producer.close()
    from confluent_kafka import Consumer, Producer

    confluent = {
        "bootstrap.servers": acl_cluster.sasl_ssl,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORDS["alice"],
        "ssl.ca.location": str(acl_cluster.pki.ca),
    }
    errors: list[Any] = []
    producer2 = Producer({**confluent, "error_cb": errors.append})
    producer2.produce(
        TOPIC, b"from confluent-kafka", on_delivery=lambda e, m: errors.append(e) if e else None
    )
    assert producer2.flush(20) == 0 and errors == []

    consumer = KafkaConsumer(
        **_kafka_python(acl_cluster, "alice"), enable_auto_commit=False, consumer_timeout_ms=10_000
    )
    consumer.assign([TopicPartition(TOPIC, 0)])
    consumer.seek_to_beginning()
    values = [m.value for m in consumer]
    consumer.close()
    assert values[:2] == [b"from kafka-python", b"from confluent-kafka"]
    consumer2 = Consumer({**confluent, "group.id": "assign-only", "enable.auto.commit": False})
    from confluent_kafka import TopicPartition as CTopicPartition

    consumer2.assign([CTopicPartition(TOPIC, 0, 0)])
    seen: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(seen) < 2 and time.monotonic() < deadline:
        message = consumer2.poll(1.0)
        if message is not None and message.error() is None:
            seen.append(message.value())
    consumer2.close()
    assert seen == [b"from kafka-python", b"from confluent-kafka"]

    with pytest.raises(KafkaError):
        KafkaProducer(**_kafka_python(acl_cluster, "alice", "wrong-password"), max_block_ms=3000).send(
            TOPIC, b"x"
        ).get(timeout=5)
    listed = KafkaConsumer(**_kafka_python(acl_cluster, "alice"))
    try:
        assert listed.topics() == {TOPIC}  # "secret" has no ACL for alice: left out of the listing
    finally:
        listed.close()


def test_bob_cannot_upgrade_metadata_version(acl_cluster: AclCluster) -> None:
    def level() -> str:
        code, out, err = acl_cluster.cli("admin", "features", "describe", "--output", "json")
        assert code == 0, err
        return str(json.loads(out))

    before = level()
    code, out, err = acl_cluster.cli("bob", "features", "upgrade", "--release-version", "4.0")
    assert code != 0
    assert "Cluster authorization failed." in out + err
    assert level() == before
    code, out, err = acl_cluster.cli("bob", "acls", "--list")
    assert (code, err) == (1, "Error while executing ACL command: Cluster authorization failed.\n")
    code, _, err = acl_cluster.cli("bob", "acls", "--add", "--allow-principal", "User:bob", "--cluster")
    assert (code, err.splitlines()[-1]) == (
        1,
        "Error while executing ACL command: Cluster authorization failed.",
    )


def test_list_and_remove(acl_cluster: AclCluster) -> None:
    code, out, err = acl_cluster.cli("admin", "acls", "--list", "--topic", TOPIC)
    assert code == 0, err
    assert out.startswith(
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation="
    )
    assert out.count("(principal=User:alice") == 3
    code, out, err = acl_cluster.cli(
        "admin",
        "acls",
        "--remove",
        "--force",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        TOPIC,
        "--output",
        "json",
    )
    assert code == 0, err
    assert json.loads(out) == {
        "removed": [
            {
                "resourceType": "TOPIC",
                "resourceName": TOPIC,
                "patternType": "LITERAL",
                "principal": "User:alice",
                "host": "*",
                "operation": "WRITE",
                "permissionType": "ALLOW",
            }
        ]
    }

    def remaining() -> list[str]:
        code, out, _ = acl_cluster.cli("admin", "acls", "--list", "--output", "json")
        return sorted(a["operation"] for a in json.loads(out)["acls"]) if code == 0 else []

    assert _eventually(lambda: remaining() == ["DESCRIBE", "READ"]) is True


def test_controller_listener_takes_sasl_ssl_only(acl_cluster: AclCluster) -> None:
    """The broker registered through the controller's SASL_SSL listener (it is ready); a PLAINTEXT
    client gets nothing there, the controller's PLAIN user over TLS gets its answers."""
    controller = acl_cluster.cluster.controllers[0].address
    code, _, _ = cli("features", "describe", "--bootstrap-controller", controller)
    assert code == 1
    config = acl_cluster.configs["admin"].with_name("controller.properties")
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
        f"sasl.jaas.config={_plain_jaas('controller', CONTROLLER_PASSWORD)}\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={acl_cluster.pki.ca}\n"
    )
    code, out, err = cli(
        "features", "describe", "--bootstrap-controller", controller, "--command-config", str(config)
    )
    assert code == 0, err
    assert "Feature: metadata.version" in out
