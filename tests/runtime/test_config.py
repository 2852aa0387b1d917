"""server.properties parsing with Kafka's names, defaults and validation texts."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from kraftwerk.runtime.config import ProcessRole, ServerConfig
from kraftwerk.runtime.errors import ConfigError
from kraftwerk.versions.software import SoftwareVersion

CONTROLLER = {
    "process.roles": "controller",
    "node.id": "1",
    "listeners": "CONTROLLER://127.0.0.1:9093",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9094,3@127.0.0.1:9095",
    "log.dirs": "/tmp/c1",
}
BROKER = {
    "process.roles": "broker",
    "node.id": "4",
    "listeners": "PLAINTEXT://127.0.0.1:9092",
    "controller.listener.names": "CONTROLLER",
    "controller.quorum.voters": "1@127.0.0.1:9093",
    "log.dirs": "/tmp/b4,/tmp/b4b",
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


def test_controller_config() -> None:
    config = ServerConfig.from_properties(CONTROLLER)
    assert config.process_roles == {ProcessRole.CONTROLLER}
    assert config.voter_ids == (1, 2, 3)
    assert config.voter(2) is not None and config.voter(2).port == 9094  # type: ignore[union-attr]
    assert config.metadata_log_dir == "/tmp/c1"
    assert config.controller_listeners[0].port == 9093
    assert config.software == SoftwareVersion.latest()
    assert config.election_timeout_ms == 1000


def test_broker_config_and_software_version(tmp_path: Path) -> None:
    props = dict(BROKER, **{"kraftwerk.software.version": "3.9", "metadata.log.dir": "/tmp/meta"})
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()) + "# comment\nextra.key = x\n")
    config = ServerConfig.load(path)
    assert config.is_broker and not config.is_controller
    assert config.software == SoftwareVersion.for_release("3.9")
    assert config.log_dirs == ("/tmp/b4", "/tmp/b4b") and config.metadata_log_dir == "/tmp/meta"
    assert config.broker_session_timeout_ms == 3000 and config.broker_heartbeat_interval_ms == 500
    assert [str(e) for e in config.effective_advertised_listeners] == ["PLAINTEXT://127.0.0.1:9092"]
    assert config.raw["extra.key"] == "x"


def test_combined_config() -> None:
    props = dict(CONTROLLER, **{"process.roles": "broker,controller",
                                "listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"})
    config = ServerConfig.from_properties(props)
    assert config.is_broker and config.is_controller
    assert config.roles_text == "broker,controller"
    assert [e.port for e in config.effective_advertised_listeners] == [9092]


SASL = {"listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093", "inter.broker.listener.name": "PLAINTEXT"}


@pytest.mark.parametrize(("base", "change", "message"), [
    (CONTROLLER, {"process.roles": None}, 'Missing required configuration "process.roles"'),
    (CONTROLLER, {"process.roles": "zookeeper"},
     "Invalid value zookeeper for configuration process.roles: String must be one of: broker, controller"),
    (CONTROLLER, {"process.roles": "controller,controller"}, "Duplicate role names found in `process.roles`"),
    (CONTROLLER, {"node.id": "-2"}, "Invalid value -2 for configuration node.id: Value must be at least 0"),
    (CONTROLLER, {"log.dirs": " , "}, "At least one log directory must be defined via log.dirs or log.dir."),
    (CONTROLLER, {"log.segment.bytes": "13"},
     "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"),
    (CONTROLLER, {"unstable.feature.versions.enable": "yes"},
     "Invalid value yes for configuration unstable.feature.versions.enable: Expected value to be either "
     "true or false"),
    (CONTROLLER, {"controller.quorum.election.timeout.ms": "0"},
     "Invalid value 0 for configuration controller.quorum.election.timeout.ms: Value must be at least 1"),
    (CONTROLLER, {"node.id": None}, 'Missing required configuration "node.id" which has no default value.'),
    (CONTROLLER, {"node.id": "x"}, "Invalid value x for configuration node.id: Not a number of type INT"),
    (CONTROLLER, {"node.id": "7"}, "the node id 7 must be included in the set of voters "
                                   "controller.quorum.voters={1, 2, 3}"),
    (CONTROLLER, {"controller.quorum.voters": ""},
     "controller.quorum.voters must contain a parseable set of controllers"),
    (CONTROLLER, {"controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "localhost"},
     "Failed to parse host name from localhost for the configuration controller.quorum.bootstrap.servers"),
    (CONTROLLER, {"controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "h:x"},
     "Failed to parse host port from h:x"),
    (CONTROLLER, {"controller.quorum.voters": "1@host"}, "Failed to parse voter entry '1@host'"),
    (CONTROLLER, {"controller.listener.names": "OTHER"},
     "controller.listener.names must contain at least one"),
    (CONTROLLER, {"listeners": "CONTROLLER://:9093,PLAINTEXT://:9092"},
     "The listeners config must only contain KRaft controller listeners"),
    (CONTROLLER, {"kraftwerk.software.version": "2.1"},
     "Invalid value 2.1 for configuration kraftwerk.software.version: Unknown software release"),
    (BROKER, {"node.id": "1"}, "If process.roles contains just the 'broker' role, the node id 1 must not"),
    (BROKER, {"listeners": "PLAINTEXT://127.0.0.1:nine"}, "Unable to parse PLAINTEXT://127.0.0.1:nine"),
    (BROKER, {"listeners": "SASL_PLAINTEXT://127.0.0.1:9092", "sasl.enabled.mechanisms": "PLAIN",
              "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                                  'user_a="b";'},
     "Listener SASL_PLAINTEXT (sasl.mechanism.inter.broker.protocol): sasl.mechanism=GSSAPI is not "
     "supported"),
    (BROKER, {"listeners": "PLAINTEXT://:9092,SSL://:9093", "inter.broker.listener.name": "PLAINTEXT"},
     "Listener SSL: kraftwerk reads PEM key stores only; set ssl.keystore.type=PEM"),
    (BROKER, {"listeners": "PLAINTEXT://:9092,SSL://:9093", "inter.broker.listener.name": "PLAINTEXT",
              "ssl.keystore.type": "PEM"}, "Listener SSL: an SSL listener needs ssl.keystore.location"),
    (BROKER, {"listeners": "PLAINTEXT://:9092,SSL://:9093", "inter.broker.listener.name": "PLAINTEXT",
              "ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent/ks.pem",
              "ssl.key.password": "s3cret-planted"}, "Listener SSL: unable to load the key store"),
    (BROKER, SASL, "Listener SASL_PLAINTEXT: SASL mechanism(s) GSSAPI are not supported"),
    (BROKER, {**SASL, "sasl.enabled.mechanisms": "PLAIN"},
     "Listener SASL_PLAINTEXT enables SASL PLAIN but has no JAAS"),
    (BROKER, {**SASL, "sasl.enabled.mechanisms": "PLAIN",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": 'M required user_a="s3cret-planted"'},
     "Invalid JAAS config for listener SASL_PLAINTEXT"),
    (BROKER, {"listeners": "PLAINTEXT://:9092,X://:9093", "inter.broker.listener.name": "PLAINTEXT",
              "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,X:KERBEROS,CONTROLLER:PLAINTEXT"},
     "Unknown security protocol KERBEROS for listener X"),
    (BROKER, {"broker.heartbeat.interval.ms": "5000"}, "must be less than broker.session.timeout.ms"),
    (BROKER, {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"),
    (CONTROLLER, {"zookeeper.metadata.migration.enable": "true"},
     "If using zookeeper.metadata.migration.enable in KRaft mode, zookeeper.connect must also be set."),
    (CONTROLLER, {"zookeeper.metadata.migration.enable": "true", "zookeeper.connect": "zk:2181",
                  "zookeeper.metadata.migration.max.lag.ms": "-5"},
     "zookeeper.metadata.migration.max.lag.ms"),
])
def test_invalid_configs(base: dict[str, str], change: dict[str, str | None], message: str) -> None:
    props = {k: v for k, v in {**base, **change}.items() if v is not None}
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        ServerConfig.from_properties(props)
    assert "s3cret-planted" not in str(raised.value)


def test_values_through_the_catalogue_and_unknown_names_logged(caplog: pytest.LogCaptureFixture) -> None:
    props = dict(BROKER, **{"metadata.max.idle.interval.ms": " 250 ", "ssl.keystore.password": "s3cret",
                            "my.custom.key": "v", "listener.name.plaintext.ssl.key.password": "k3y",
                            "log.dirs": "/a, ,/b"})
    config = ServerConfig.from_properties(props)
    assert config.metadata_max_idle_interval_ms == 250 and config.log_dirs == ("/a", "/b")
    assert config.unknown_configs == ("my.custom.key",)
    assert config.parsed is not None and config.parsed["num.partitions"] == 1
    assert config.raw["ssl.keystore.password"] == "s3cret"  # kept for the node, never printed:
    assert "s3cret" not in repr(config) and "k3y" not in repr(config) and "[hidden]" in repr(config)
    with caplog.at_level(logging.INFO):
        config.log_values(logging.getLogger("test"))
    text = caplog.text
    assert "These configurations '[my.custom.key]' were supplied but are not used yet." in text
    assert "\tssl.keystore.password = [hidden]" in text and "\tnum.partitions = 1" in text
    assert "s3cret" not in text


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Unable to read"):
        ServerConfig.load(tmp_path / "missing.properties")


def test_unlimited_metadata_retention_keeps_the_log() -> None:
    """Kafka keeps metadata log segments for metadata.max.retention.*; kraftwerk cleans behind each
    snapshot unless both are -1 (unlimited)."""
    assert not ServerConfig.from_properties(CONTROLLER).metadata_log_retained
    both = {"metadata.max.retention.ms": "-1", "metadata.max.retention.bytes": "-1"}
    assert ServerConfig.from_properties(dict(CONTROLLER, **both)).metadata_log_retained
    one = dict(CONTROLLER, **{"metadata.max.retention.ms": "-1"})
    assert not ServerConfig.from_properties(one).metadata_log_retained
    with pytest.raises(ConfigError, match=r"metadata\.max\.retention\.bytes: Not a number of type LONG"):
        ServerConfig.from_properties(dict(CONTROLLER, **{"metadata.max.retention.bytes": "lots"}))
