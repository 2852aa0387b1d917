"""A ZooKeeper-mode broker's ``server.properties``: what Kafka 3.x reads, and the start refused with one
line where ZooKeeper mode cannot run."""

from __future__ import annotations

import pytest

from kraftwerk.config.errors import ConfigError
from kraftwerk.runtime.zk_config import ZkServerConfig, is_zookeeper_mode
from kraftwerk.versions.metadata_version import MetadataVersion

BASE = {"zookeeper.connect": "127.0.0.1:2181/kafka", "broker.id": "4", "log.dirs": "/tmp/a,/tmp/b",
        "listeners": "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"}
MIGRATING = {"zookeeper.metadata.migration.enable": "true", "controller.quorum.voters": "3000@127.0.0.1:9000",
             "controller.listener.names": "CONTROLLER",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"}


def test_a_3_9_broker() -> None:
    config = ZkServerConfig.from_properties({**BASE, **MIGRATING, "log.dirs": "/tmp/a",
                                             "inter.broker.protocol.version": "3.6", "broker.rack": "r1",
                                             "zookeeper.session.timeout.ms": "6000"})
    assert (config.broker_id, config.software.release, config.ibp) == (4, "3.9", MetadataVersion.IBP_3_6_IV2)
    assert config.migration_enabled and config.rack == "r1" and config.session_timeout_ms == 6000
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert config.controller_quorum == (("127.0.0.1", 9000),)
    assert config.security_protocol_map["INTERNAL"] == "PLAINTEXT"
    base = ZkServerConfig.from_properties(BASE)
    assert base.ibp == MetadataVersion.IBP_3_9_IV0 and base.log_dirs == ("/tmp/a", "/tmp/b")  # the release's
    assert not base.migration_enabled and base.controller_quorum == ()


def test_zookeeper_mode_is_zookeeper_connect_without_process_roles() -> None:
    assert is_zookeeper_mode(BASE)
    assert not is_zookeeper_mode({**BASE, "process.roles": "broker"})
    assert not is_zookeeper_mode({"broker.id": "1"})


@pytest.mark.parametrize(("override", "message"), [
    ({"kraftwerk.software.version": "4.0"}, "ZooKeeper mode was removed in Kafka 4.0"),
    ({"kraftwerk.software.version": "3.5", "inter.broker.protocol.version": "3.7"},
     "software 3.5 supports at most 3.5-IV2"),
    ({"inter.broker.protocol.version": "banana"}, "inter.broker.protocol.version"),
    ({"broker.id": "-1"}, "broker.id must be set"),
    ({"zookeeper.connect": "nohost"}, "invalid ZooKeeper server"),
    ({"inter.broker.listener.name": "OTHER"}, "inter.broker.listener.name must be a listener"),
])
def test_refusals(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ZkServerConfig.from_properties({**BASE, **override})


NO_QUORUM = ("If using zookeeper.metadata.migration.enable, either controller.quorum.bootstrap.servers "
             "must contain the set of bootstrap controllers or controller.quorum.voters must contain a "
             "parseable set of controllers.")


@pytest.mark.parametrize(("override", "message"), [
    # Kafka 3.9 KafkaConfig's texts, checked in its order
    ({"controller.quorum.voters": "", "controller.listener.names": ""}, NO_QUORUM),
    ({"controller.quorum.voters": ""}, NO_QUORUM),
    ({"controller.listener.names": ""},
     "controller.listener.names must not be empty when running in ZooKeeper migration mode: []"),
    ({"inter.broker.protocol.version": "3.3"},
     "Cannot enable ZooKeeper migration without setting 'inter.broker.protocol.version' to 3.4 or higher"),
    ({"inter.broker.protocol.version": "3.7-IV1"},
     "Cannot enable ZooKeeper migration with multiple log directories (aka JBOD) without setting "
     "'inter.broker.protocol.version' to 3.7-IV2 or higher"),
    ({"zookeeper.metadata.migration.enable": "false"},
     "controller.listener.names must be empty when not running in KRaft mode: [CONTROLLER]"),
])
def test_migration_refusals_are_kafkas(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ZkServerConfig.from_properties({**BASE, **MIGRATING, **override})
    assert str(caught.value) == message


def test_the_quorum_may_be_bootstrap_servers() -> None:
    config = ZkServerConfig.from_properties({**BASE, **MIGRATING, "controller.quorum.voters": "",
                                             "controller.quorum.bootstrap.servers": "127.0.0.1:9000"})
    assert config.migration_enabled and config.controller_quorum == (("127.0.0.1", 9000),)
