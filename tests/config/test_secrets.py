"""What is a secret, and the views of a config that never show one."""

from __future__ import annotations

from kraftwerk.config import HIDDEN, ConfigMap, ConfigResourceType, is_sensitive, redact, redacted

R = ConfigResourceType


def test_is_sensitive_follows_kafkas_maybe_sensitive() -> None:
    assert is_sensitive(R.BROKER, "ssl.keystore.password") and is_sensitive(R.BROKER, "my.plugin.token")
    assert is_sensitive(R.BROKER, "listener.name.sasl_ssl.plain.sasl.jaas.config")
    assert not is_sensitive(R.BROKER, "log.segment.bytes")
    assert not is_sensitive(R.TOPIC, "segment.bytes") and is_sensitive(R.TOPIC, "custom")
    assert not is_sensitive(R.BROKER_LOGGER, "kafka.server") and not is_sensitive(R.CLIENT_METRICS, "metrics")
    assert is_sensitive(R.GROUP, "consumer.session.timeout.ms") and is_sensitive(R.UNKNOWN, "x")


def test_redacted_views() -> None:
    props = {"ssl.key.password": "k3y", "log.segment.bytes": "1", "custom": "c", "sasl.jaas.config": None}
    assert redacted(props) == {"ssl.key.password": HIDDEN, "log.segment.bytes": "1", "custom": HIDDEN,
                               "sasl.jaas.config": None}
    assert redacted({"segment.bytes": "1"}, R.TOPIC) == {"segment.bytes": "1"}
    assert redact(R.BROKER, "ssl.key.password", None) is None
    view = ConfigMap({"ssl.keystore.password": "s3cret", "node.id": "1"})
    assert view["ssl.keystore.password"] == "s3cret" and dict(view) == {"ssl.keystore.password": "s3cret",
                                                                         "node.id": "1"}
    assert len(view) == 2 and list(view) == ["ssl.keystore.password", "node.id"]
    assert repr(view) == str(view) == "ConfigMap({'ssl.keystore.password': '[hidden]', 'node.id': '1'})"
    topic = ConfigMap({"segment.bytes": "1", "x": "y"}, R.TOPIC)
    assert repr(topic) == "ConfigMap({'segment.bytes': '1', 'x': '[hidden]'})"
