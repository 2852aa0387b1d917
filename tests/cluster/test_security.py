"""Authenticated listeners on real processes (issue 25): a broker with a SASL_SSL listener (SCRAM
users from ``storage format --add-scram``, PLAIN users from the JAAS config) and an SSL listener
that requires a client certificate, reached by kafka-python and confluent-kafka with right and
wrong credentials; then the planted secrets (``ssl.key.password``, the JAAS config's passwords,
the SCRAM password) are looked for in every file the cluster left and in every command's output.

The certificates are made here with ``cryptography`` (nothing checked in). The cluster's own
traffic (controller quorum, broker to controller) stays on PLAINTEXT listeners.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kraftwerk.runtime.local_cluster import (
    LocalCluster,
    format_cluster,
    free_ports,
    plan_cluster,
)
from kraftwerk.storage.format import random_cluster_id
from kraftwerk.storage.scram import scram_records
from tests.cluster.helpers import cli

pytestmark = [pytest.mark.cluster, pytest.mark.interop, pytest.mark.timeout(240)]

KEY_PASSWORD = "planted-key-password-5e1f"
PLAIN_PASSWORD = "planted-plain-password-77ab"
SCRAM_PASSWORD = "planted-scram-password-c0de"
BOB_PASSWORD = "planted-bob-password-9a9a"
SECRETS = (KEY_PASSWORD, PLAIN_PASSWORD, SCRAM_PASSWORD, BOB_PASSWORD)


@dataclass(frozen=True)
class Pki:
    ca: Path
    server: Path
    client_cert: Path
    client_key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(subject: str, key: Any, issuer: str, issuer_key: Any, *,
                 ca: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _make_pki(directory: Path) -> Pki:
    directory.mkdir()
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("kraftwerk-test-ca", ca_key, "kraftwerk-test-ca", ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    client_key = ec.generate_private_key(ec.SECP256R1())
    pem = serialization.Encoding.PEM
    pki = Pki(*(directory / name for name in ("ca.pem", "server.pem", "client.pem", "client.key")))
    pki.ca.write_bytes(ca_cert.public_bytes(pem))
    pki.server.write_bytes(  # Kafka's PEM key store: the certificate chain and the encrypted key
        _certificate("broker", server_key, "kraftwerk-test-ca", ca_key).public_bytes(pem)
        + ca_cert.public_bytes(pem)
        + server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                   serialization.BestAvailableEncryption(KEY_PASSWORD.encode())))
    client_cert = _certificate("client", client_key, "kraftwerk-test-ca", ca_key)
    pki.client_cert.write_bytes(client_cert.public_bytes(pem))
    pki.client_key.write_bytes(client_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                        serialization.NoEncryption()))
    return pki


@dataclass(frozen=True)
class SecureCluster:
    cluster: LocalCluster
    pki: Pki
    sasl_ssl: str
    ssl: str
    outputs: list[str]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureCluster]:
    pki = _make_pki(tmp_path_factory.mktemp("pki") / "certs")
    root = tmp_path_factory.mktemp("secure")
    cluster = plan_cluster(root, random_cluster_id(), 1, 1)
    broker = cluster.brokers[0]
    sasl_port, ssl_port = free_ports(2)
    listeners = (f"PLAINTEXT://127.0.0.1:{broker.port},SASL_SSL://127.0.0.1:{sasl_port},"
                 f"SSL://127.0.0.1:{ssl_port}")
    broker.extra.update({
        "listeners": listeners, "advertised.listeners": listeners,
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,"
                                          "SSL:SSL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server),
        "ssl.key.password": KEY_PASSWORD,
        "listener.name.ssl.ssl.client.auth": "required", "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="admin" password="{PLAIN_PASSWORD}" user_admin="{PLAIN_PASSWORD}";',
    })
    cluster.save()
    format_cluster(cluster, None, scram=scram_records([
        f"SCRAM-SHA-256=[name=alice,password={SCRAM_PASSWORD}]",
        f"SCRAM-SHA-512=[name=alice,password={SCRAM_PASSWORD},iterations=8192]"]))
    cluster.start_all()
    try:
        yield SecureCluster(cluster, pki, f"127.0.0.1:{sasl_port}", f"127.0.0.1:{ssl_port}", [])
    finally:
        cli("cluster", "down", "--dir", str(root))


def _kafka_python_admin(secure: SecureCluster, **config: Any) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=secure.sasl_ssl, security_protocol="SASL_SSL",
                            ssl_cafile=str(secure.pki.ca), request_timeout_ms=10000, **config)


@pytest.mark.parametrize(("mechanism", "user", "password"), [
    ("SCRAM-SHA-256", "alice", SCRAM_PASSWORD), ("SCRAM-SHA-512", "alice", SCRAM_PASSWORD),
    ("PLAIN", "admin", PLAIN_PASSWORD)])
def test_kafka_python_over_sasl_ssl(secure: SecureCluster, mechanism: str, user: str, password: str,
                                    caplog: pytest.LogCaptureFixture) -> None:
    from kafka.errors import KafkaError

    admin = _kafka_python_admin(secure, sasl_mechanism=mechanism, sasl_plain_username=user,
                                sasl_plain_password=password)
    try:
        described = admin.describe_cluster()
        assert [b["port"] for b in described["brokers"]] == [int(secure.sasl_ssl.rsplit(":", 1)[1])]
    finally:
        admin.close()
    with caplog.at_level(logging.INFO, "kafka"), pytest.raises(KafkaError) as refused:
        _kafka_python_admin(secure, sasl_mechanism=mechanism, sasl_plain_username=user,
                            sasl_plain_password="wrong-password", bootstrap_timeout_ms=3000)
    expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN" else
                f"Authentication failed during authentication due to invalid credentials with SASL mechanism "
                f"{mechanism}")
    assert expected in caplog.text  # the broker's SaslAuthenticate error, as kafka-python logged it
    secure.outputs.extend([str(refused.value), caplog.text])


def _confluent_metadata(secure: SecureCluster, password: str, errors: list[Any], timeout_s: float) -> Any:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": secure.sasl_ssl, "security.protocol": "SASL_SSL",
                         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
                         "sasl.password": password, "ssl.ca.location": str(secure.pki.ca),
                         "log_level": 0, "error_cb": errors.append})
    try:
        return admin.list_topics(timeout=timeout_s)
    finally:
        admin.poll(0.5)  # serves error_cb


def test_confluent_kafka_over_sasl_ssl(secure: SecureCluster) -> None:
    from confluent_kafka import KafkaError, KafkaException

    errors: list[Any] = []
    metadata = _confluent_metadata(secure, SCRAM_PASSWORD, errors, 10)
    assert [b.port for b in metadata.brokers.values()] == [int(secure.sasl_ssl.rsplit(":", 1)[1])]
    assert errors == []
    with pytest.raises(KafkaException):  # librdkafka reports the refusal through error_cb
        _confluent_metadata(secure, "wrong-password", errors, 3)
    refusals = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
    assert refusals, errors
    assert ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            "SCRAM-SHA-512") in refusals[0].str()
    secure.outputs.extend(e.str() for e in errors)


def test_ssl_listener_requires_a_client_certificate(secure: SecureCluster) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    ca = str(secure.pki.ca)
    admin = KafkaAdminClient(bootstrap_servers=secure.ssl, security_protocol="SSL", ssl_cafile=ca,
                             ssl_certfile=str(secure.pki.client_cert), ssl_keyfile=str(secure.pki.client_key),
                             request_timeout_ms=10000)
    try:
        assert admin.describe_cluster()["brokers"]
    finally:
        admin.close()
    with pytest.raises(KafkaError):
        KafkaAdminClient(bootstrap_servers=secure.ssl, security_protocol="SSL", ssl_cafile=ca,
                         request_timeout_ms=5000, bootstrap_timeout_ms=3000)


def test_sasl_listener_serves_nothing_before_authentication(secure: SecureCluster) -> None:
    """A client that skips SaslHandshake gets its connection closed, not an answer."""
    import socket
    import ssl
    import struct

    from kraftwerk.runtime import framing

    context = ssl.create_default_context(cafile=str(secure.pki.ca))
    host, port = secure.sasl_ssl.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as sock:
        sock.sendall(framing.encode_request(60, 0, 1, "x", {"includeClusterAuthorizedOperations": False}))
        assert sock.recv(4) == b""
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=host) as sock:
        sock.sendall(framing.encode_request(17, 1, 2, "x", {"mechanism": "GSSAPI"}))
        size = struct.unpack(">i", sock.recv(4))[0]
        _, body = framing.parse_response(sock.recv(size), 17, 1)
        assert body == {"errorCode": 33, "mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"]}
        assert sock.recv(4) == b""


def _scram(secure: SecureCluster, *argv: str) -> tuple[int, str, str]:
    code, out, err = cli("scram", *argv, "--bootstrap-server", secure.cluster.brokers[0].address)
    secure.outputs.append(out + err)
    return code, out, err


def _broker_sees(secure: SecureCluster, user: str, expected: dict[str, Any]) -> dict[str, Any]:
    """The broker's DescribeUserScramCredentials of ``user``, polled until it is ``expected`` (the
    broker's image follows the log a moment after the controller commits) or 20 s have passed."""
    deadline = time.monotonic() + 20
    while True:
        code, out, err = _scram(secure, "describe", "--user", user, "--output", "json")
        assert code == 0, err
        seen: dict[str, Any] = json.loads(out)
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


def test_scram_users_managed_while_running(secure: SecureCluster) -> None:
    """``kraftwerk scram``: the format-time users are listed; a user added through a broker (forwarded
    to the controller) can log in once the broker has the record, and not after its deletion."""
    from kafka.errors import KafkaError

    listed = ("SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=4096, "
              "SCRAM-SHA-512=iterations=8192\n")
    assert _scram(secure, "describe") == (0, listed, "")
    add = f"SCRAM-SHA-256=[iterations=8192,password={BOB_PASSWORD}]"
    assert _scram(secure, "alter", "--user", "bob", "--add", add) == (
        0, "Completed updating config for user bob.\n", "")
    bob = {"bob": {"SCRAM-SHA-256": {"iterations": 8192}}}
    assert _broker_sees(secure, "bob", bob) == bob
    login = {"sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "bob", "bootstrap_timeout_ms": 5000}
    _kafka_python_admin(secure, sasl_plain_password=BOB_PASSWORD, **login).close()
    assert _scram(secure, "alter", "--user", "bob", "--delete", "SCRAM-SHA-256")[0] == 0
    assert _broker_sees(secure, "bob", {}) == {}
    code, _, err = _scram(secure, "alter", "--user", "bob", "--delete", "SCRAM-SHA-256")
    assert (code, err) == (1, "Error while altering SCRAM credentials of user bob: Attempt to delete a user "
                              "credential that does not exist\n")
    with pytest.raises(KafkaError):
        _kafka_python_admin(secure, sasl_plain_password=BOB_PASSWORD, **login)
    code, _, err = _scram(secure, "alter", "--user", "carol", "--add",
                          "SCRAM-SHA-256=[password=x,iterations=10]")
    assert (code, err) == (1, "Error while altering SCRAM credentials of user carol: Too few iterations\n")


def test_planted_secrets_appear_nowhere(secure: SecureCluster) -> None:
    """Runs last in this module: every file under the cluster directory except the broker's
    server.properties, and the output of the commands an operator runs, hold none of the secrets."""
    cluster = secure.cluster
    data = cluster.controllers[0].data_dir(cluster.root) / "__cluster_metadata-0"
    for argv in (["cluster", "status", "--dir", str(cluster.root)],
                 ["features", "describe", "--bootstrap-server", cluster.brokers[0].address],
                 ["metadata", "show", "--log-dir", str(data)],
                 ["metadata", "show", "--log-dir", str(data), "--output", "json"]):
        code, out, err = cli(*argv)
        assert code == 0, (argv, err)
        secure.outputs.append(out + err)
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = _kafka_python_admin(secure, sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="alice",
                                sasl_plain_password=SCRAM_PASSWORD)
    broker_id = str(cluster.brokers[0].node_id)
    try:
        configs = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, broker_id)],
                                         config_filter="all")["broker"][broker_id]
    finally:
        admin.close()
    secure.outputs.append(repr(configs))
    for name in ("ssl.key.password", "listener.name.sasl_ssl.plain.sasl.jaas.config"):
        assert configs[name]["value"] is None and configs[name]["is_sensitive"], configs[name]
    assert configs["ssl.keystore.location"]["value"] == str(secure.pki.server)
    assert len(secure.outputs) >= 5 + 3  # the commands, DescribeConfigs and the clients' refusals
    allowed = cluster.brokers[0].config_path(cluster.root)
    scanned = 0
    for path in cluster.root.rglob("*"):
        if path.is_file() and path != allowed:
            content = path.read_bytes()
            scanned += 1
            for secret in SECRETS:
                assert secret.encode() not in content, f"{secret} found in {path}"
    assert scanned > 10
    for output in secure.outputs:
        for secret in SECRETS:
            assert secret not in output
    assert KEY_PASSWORD in allowed.read_text()  # the scan looks where the secret really is
