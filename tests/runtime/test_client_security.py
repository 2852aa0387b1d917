"""The client side of a secured listener, from ``--command-config`` or ``server.properties``: the
refusals with their texts, the JAAS credentials, and the inter-node lookups by listener."""

from __future__ import annotations

import pytest

from kraftwerk.config.errors import ConfigError
from kraftwerk.runtime.client_security import client_security, inter_node_security

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="s3cret";'


@pytest.mark.parametrize(
    ("props", "error"),
    [
        ({"security.protocol": "TLS"}, "Invalid value TLS for configuration security.protocol"),
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism=GSSAPI is not supported"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config is required"),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "nonsense",
            },
            "Invalid sasl.jaas.config",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": 'x.PlainLoginModule required username="a";',
            },
            "needs username and password",
        ),
        ({"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"}, "PEM trust stores only"),
        (
            {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/nonexistent.pem",
            },
            "Unable to load the client's SSL stores",
        ),
    ],
)
def test_refusals(props: dict[str, str], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        client_security(props)


def test_sasl_credentials_and_repr() -> None:
    security = client_security(
        {"security.protocol": "sasl_plaintext", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": JAAS}
    )
    assert (security.protocol, security.sasl, security.context) == ("SASL_PLAINTEXT", True, None)
    assert (security.mechanism, security.username, security.password) == ("SCRAM-SHA-512", "alice", "s3cret")
    assert "s3cret" not in repr(security)
    assert not client_security({}).sasl


def test_inter_node_lookup_by_listener() -> None:
    props = {
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": (
            'x.PlainLoginModule required username="controller" password="p" user_controller="p";'
        ),
        "sasl.jaas.config": JAAS,
    }
    controller = inter_node_security(
        props, "CONTROLLER", "SASL_PLAINTEXT", "sasl.mechanism.controller.protocol"
    )
    assert (controller.mechanism, controller.username) == ("PLAIN", "controller")
    with pytest.raises(
        ConfigError,
        match=r"Listener BROKER \(sasl.mechanism.inter.broker.protocol\): "
        "sasl.mechanism=GSSAPI",
    ):
        inter_node_security(props, "BROKER", "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol")
    assert (
        inter_node_security(props, "BROKER", "PLAINTEXT", "sasl.mechanism.inter.broker.protocol").sasl
        is False
    )
