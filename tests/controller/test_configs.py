"""The controller's config changes: IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) and
legacy AlterConfigs on topics, brokers and the cluster default, with Kafka's texts, KIP-1294's
rules at the finalized level, and DescribeConfigs as a controller answers it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller import QuorumController
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.image.model import ConfigResource
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker

TOPIC, BROKER = int(ConfigResourceType.TOPIC), int(ConfigResourceType.BROKER)


def _cluster(mv: str = "4.3-IV0") -> tuple[Log, QuorumController]:
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.from_version_string(mv)))
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2)
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    body = {
        "topics": [
            {
                "name": "t",
                "numPartitions": 1,
                "replicationFactor": 1,
                "assignments": [],
                "configs": [{"name": "cleanup.policy", "value": "delete"}],
            }
        ],
        "timeoutMs": 1,
    }
    assert call(log, ctl, 19, 7, body)["topics"][0]["errorCode"] == 0
    return log, ctl


def _incremental(
    log: Log,
    ctl: QuorumController,
    rtype: int,
    rname: str,
    *ops: tuple[str, int, str | None],
    validate_only: bool = False,
) -> tuple[int, str | None]:
    body = {
        "resources": [
            {
                "resourceType": rtype,
                "resourceName": rname,
                "configs": [{"name": n, "configOperation": op, "value": v} for n, op, v in ops],
            }
        ],
        "validateOnly": validate_only,
    }
    r = call(log, ctl, 44, 1, body)["responses"][0]
    return r["errorCode"], r["errorMessage"]


def _configs(ctl: QuorumController, rtype: int, rname: str) -> dict[str, str]:
    return dict(ctl.image.configs.get(ConfigResource(rtype, rname), {}))


def test_set_delete_append_subtract_on_a_topic() -> None:
    log, ctl = _cluster()
    assert _incremental(
        log, ctl, TOPIC, "t", ("retention.ms", 0, "1000"), ("cleanup.policy", 2, "compact")
    ) == (0, None)
    assert _configs(ctl, TOPIC, "t") == {"retention.ms": "1000", "cleanup.policy": "delete,compact"}
    assert _incremental(log, ctl, TOPIC, "t", ("cleanup.policy", 3, "delete"), ("retention.ms", 1, None)) == (
        0,
        None,
    )
    assert _configs(ctl, TOPIC, "t") == {"cleanup.policy": "compact"}
    before = log.end
    assert _incremental(log, ctl, TOPIC, "t", ("retention.ms", 0, "5"), validate_only=True) == (0, None)
    assert log.end == before


@pytest.mark.parametrize(
    ("rtype", "rname", "ops", "error", "message"),
    [
        (
            TOPIC,
            "t",
            [("segment.bytes", 0, "1")],
            Errors.INVALID_CONFIG,
            "Invalid value 1 for configuration segment.bytes: Value must be at least 14",
        ),
        (
            TOPIC,
            "t",
            [("retention.ms", 2, "1")],
            Errors.INVALID_CONFIG,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (
            TOPIC,
            "nope",
            [("retention.ms", 0, "1")],
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            "The topic 'nope' does not exist.",
        ),
        (
            TOPIC,
            "",
            [("retention.ms", 0, "1")],
            Errors.INVALID_REQUEST,
            "Default topic resources are not allowed.",
        ),
        (
            TOPIC,
            "t",
            [("retention.ms", 0, None)],
            Errors.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        ),
        (
            BROKER,
            "",
            [("node.id", 0, "3")],
            Errors.INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(node.id)",
        ),
        (
            BROKER,
            "",
            [("listeners", 0, "PLAINTEXT://:1")],
            Errors.INVALID_REQUEST,
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "Set(listeners)",
        ),
        (
            BROKER,
            "7",
            [("log.retention.ms", 0, "1")],
            Errors.BROKER_ID_NOT_REGISTERED,
            "No broker with id 7 found.",
        ),
        (
            BROKER,
            "x",
            [("log.retention.ms", 0, "1")],
            Errors.INVALID_REQUEST,
            "Broker id must be an integer, but it is: x",
        ),
        (
            BROKER,
            "",
            [("message.max.bytes", 0, "big")],
            Errors.INVALID_REQUEST,
            "Invalid value big for configuration message.max.bytes: Not a number of type INT",
        ),
    ],
)
def test_refused_changes_write_nothing(
    rtype: int, rname: str, ops: list[tuple[str, int, str | None]], error: Errors, message: str
) -> None:
    log, ctl = _cluster()
    before = log.end
    assert _incremental(log, ctl, rtype, rname, *ops) == (error.code, message)
    assert log.end == before


def test_mv_rule_in_force_is_invalid_config() -> None:
    """KIP-1294 (#20 item 5): at 4.0 the 3.x segment.bytes minimum of 14 became 1 MiB."""
    log, ctl = _cluster("3.9-IV0")
    assert _incremental(log, ctl, TOPIC, "t", ("segment.bytes", 0, "1000")) == (0, None)
    log2, ctl2 = _cluster("4.0-IV3")
    code, message = _incremental(log2, ctl2, TOPIC, "t", ("segment.bytes", 0, "1000"))
    assert code == Errors.INVALID_CONFIG.code and message is not None
    assert "segment.bytes" in message and "since metadata.version 4.0-IV0" in message
    code, message = _incremental(log2, ctl2, BROKER, "", ("log.segment.bytes", 0, "1000"))
    assert code == Errors.INVALID_CONFIG.code and "since metadata.version 4.0-IV0" in str(message)


def test_broker_and_cluster_default_records_and_legacy_alter(caplog: pytest.LogCaptureFixture) -> None:
    log, ctl = _cluster()
    caplog.set_level(logging.INFO)
    assert _incremental(log, ctl, BROKER, "", ("log.retention.ms", 0, "60000")) == (0, None)
    assert _incremental(
        log, ctl, BROKER, "2", ("listener.name.plaintext.ssl.keystore.password", 0, "s3cret")
    ) == (0, None)
    assert "s3cret" not in caplog.text
    assert _configs(ctl, BROKER, "") == {"log.retention.ms": "60000"}
    before = log.end  # a BROKER resource always writes its records (KAFKA-14136)
    assert _incremental(log, ctl, BROKER, "", ("log.retention.ms", 0, "60000")) == (0, None)
    assert log.end == before + 1
    body: dict[str, Any] = {
        "resources": [
            {
                "resourceType": TOPIC,
                "resourceName": "t",
                "configs": [{"name": "retention.bytes", "value": "5"}],
            }
        ],
        "validateOnly": False,
    }
    assert call(log, ctl, 33, 2, body)["responses"][0]["errorCode"] == 0
    assert _configs(ctl, TOPIC, "t") == {"retention.bytes": "5"}  # the legacy call replaced cleanup.policy


def test_controller_describes_configs() -> None:
    log, ctl = _cluster()
    _incremental(log, ctl, BROKER, "", ("log.retention.ms", 0, "60000"))
    body = {
        "resources": [
            {"resourceType": BROKER, "resourceName": "", "configurationKeys": None},
            {"resourceType": TOPIC, "resourceName": "t", "configurationKeys": ["retention.ms"]},
        ],
        "includeSynonyms": True,
        "includeDocumentation": True,
    }
    default, topic = call(log, ctl, 32, 4, body)["results"]
    assert [(c["name"], c["value"], c["configSource"]) for c in default["configs"]] == [
        ("log.retention.ms", "60000", 3)
    ]
    [entry] = topic["configs"]
    assert (entry["value"], entry["configSource"], entry["configType"]) == ("60000", 3, 5)
    assert entry["documentation"] and [s["source"] for s in entry["synonyms"]][:1] == [3]


def test_kip_1294_rule_at_4_4_iv1_on_alter_and_create() -> None:
    """#20 item 5: at 4.4-IV1 a topic's segment.bytes below 3 MiB is INVALID_CONFIG naming the rule
    and the level, on AlterConfigs and on CreateTopics; nothing is written; 4 MiB passes."""
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.IBP_4_4_IV1), release="4.4")
    log.controllers.append(ctl)
    activate(log, ctl)
    b = broker(2, release="4.4")
    log.join(b)
    for t in (0, 100):
        drive_broker(log, ctl, b, t)
    body = {
        "topics": [
            {
                "name": "t",
                "numPartitions": 1,
                "replicationFactor": 1,
                "assignments": [],
                "configs": [{"name": "segment.bytes", "value": "1048576"}],
            }
        ],
        "timeoutMs": 1,
    }
    before = log.end
    [refused] = call(log, ctl, 19, 7, body)["topics"]
    assert refused["errorCode"] == Errors.INVALID_CONFIG.code and log.end == before
    assert refused["errorMessage"].startswith("Invalid value 1048576 for configuration segment.bytes")
    assert refused["errorMessage"].endswith("(since metadata.version 4.4-IV1)")
    body["topics"][0]["configs"] = []
    assert call(log, ctl, 19, 7, body)["topics"][0]["errorCode"] == 0
    code, message = _incremental(log, ctl, TOPIC, "t", ("segment.bytes", 0, "1048576"))
    assert code == Errors.INVALID_CONFIG.code and str(message).endswith("(since metadata.version 4.4-IV1)")
    assert "segment.bytes" not in _configs(ctl, TOPIC, "t")
    assert _incremental(log, ctl, TOPIC, "t", ("segment.bytes", 0, "4194304")) == (0, None)


def test_a_topic_whose_deletion_is_in_flight_takes_no_config_change() -> None:
    """Found by the migration simulation: IncrementalAlterConfigs right after DeleteTopics (appended,
    not committed yet) was judged on the committed image, so a ConfigRecord for the deleted topic
    committed after its RemoveTopicRecord and the image kept a config for a topic that is gone.
    Kafka's controller judges its uncommitted state: the topic is unknown."""
    log, ctl = _cluster()
    delete = ctl.handle_request(20, 6, {"topics": [{"name": "t", "topicId": None}], "timeoutMs": 1}, 0,
                                next_offset=log.end)
    assert isinstance(delete, AppendThenRespond)  # appended, not committed
    body = {"resources": [{"resourceType": TOPIC, "resourceName": "t",
                           "configs": [{"name": "retention.ms", "configOperation": 0, "value": "1"}]}],
            "validateOnly": False}
    refused = ctl.handle_request(44, 1, body, 0, next_offset=log.end + len(delete.records))
    assert isinstance(refused, Respond)
    assert refused.body["responses"][0]["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    log.append(delete.records)
    assert "t" not in ctl.image.topics.by_name and not ctl.topics.deleting


def test_fencing_a_broker_changes_no_partition_of_a_topic_whose_deletion_is_in_flight() -> None:
    """Found by the migration simulation (seed 202): a broker fenced right after DeleteTopics was
    appended got a PartitionChangeRecord for the deleted topic's partition, committed after its
    RemoveTopicRecord: every node's replay failed (no topic with that id)."""
    log, ctl = _cluster()
    delete = ctl.handle_request(20, 6, {"topics": [{"name": "t", "topicId": None}], "timeoutMs": 1}, 0,
                                next_offset=log.end)
    assert isinstance(delete, AppendThenRespond)
    b = ctl.image.cluster.brokers[2]
    beat = {"brokerId": 2, "brokerEpoch": b.epoch, "currentMetadataOffset": log.end, "wantFence": True,
            "wantShutDown": False}
    fence = ctl.handle_request(63, 1, beat, 0, next_offset=log.end + len(delete.records))
    assert isinstance(fence, AppendThenRespond)
    assert "PartitionChangeRecord" not in [r.spec.name for r in fence.records]
    log.append(delete.records)
    log.append(fence.records)
    assert ctl.image.cluster.brokers[2].fenced and "t" not in ctl.image.topics.by_name
