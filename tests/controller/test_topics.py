"""The controller's topic administration: CreateTopics, DeleteTopics, CreatePartitions (Kafka's
texts and error codes), placement over unfenced brokers, records at the metadata.version's versions."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kraftwerk.broker import BrokerNode
from kraftwerk.config import ConfigResourceType
from kraftwerk.controller import QuorumController
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.controller.quorum import default_bootstrap_records
from kraftwerk.controller.topics import place_replicas, topic_name_error
from kraftwerk.image.model import BrokerRegistration, ConfigResource
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import Log, activate, broker, call, controller, drive_broker


def _cluster(
    mv: str = "4.0-IV3", brokers: int = 3, racks: tuple[str | None, ...] = ()
) -> tuple[Log, QuorumController, list[BrokerNode]]:
    log = Log()
    ctl = controller(
        bootstrap_records=default_bootstrap_records(MetadataVersion.from_version_string(mv)),
        static_configs={"num.partitions": "2", "default.replication.factor": "2"},
    )
    log.controllers.append(ctl)
    activate(log, ctl)
    nodes = []
    for i in range(brokers):
        b = broker(10 + i, rack=racks[i] if i < len(racks) else None)
        log.join(b)
        nodes.append(b)
    for t in (0, 100, 200):
        for b in nodes:
            drive_broker(log, ctl, b, t)
    return log, ctl, nodes


def _create(
    log: Log, ctl: QuorumController, *topics: dict[str, Any], version: int = 7, validate_only: bool = False
) -> list[dict[str, Any]]:
    body = {
        "topics": [
            {"numPartitions": -1, "replicationFactor": -1, "assignments": [], "configs": [], **t}
            for t in topics
        ],
        "timeoutMs": 1000,
        "validateOnly": validate_only,
    }
    return list(call(log, ctl, 19, version, body)["topics"])


def test_create_topic_places_over_unfenced_brokers_at_the_mv_record_versions() -> None:
    log, ctl, brokers = _cluster()
    [result] = _create(
        log,
        ctl,
        {
            "name": "orders",
            "numPartitions": 3,
            "replicationFactor": 2,
            "configs": [{"name": "retention.ms", "value": "1000"}],
        },
    )
    assert result["errorCode"] == 0 and result["numPartitions"] == 3 and result["replicationFactor"] == 2
    assert {c["name"]: c["value"] for c in result["configs"]}["retention.ms"] == "1000"
    topic = ctl.image.topics.by_name["orders"]
    assert topic.id == result["topicId"]
    assert ctl.image.configs[next(r for r in ctl.image.configs if r.name == "orders")] == {
        "retention.ms": "1000"
    }
    leaders = [p.leader for p in topic.partitions.values()]
    assert len(set(leaders)) == 3  # leaders rotate over the three brokers
    for p in topic.partitions.values():
        assert len(set(p.replicas)) == 2 and p.isr == p.replicas and p.leader == p.replicas[0]
    written = [r for r in log.decoded() if r.spec.name in ("TopicRecord", "ConfigRecord", "PartitionRecord")]
    assert [r.spec.name for r in written][-5:] == ["TopicRecord", "ConfigRecord", *["PartitionRecord"] * 3]
    assert {r.version for r in written if r.spec.name == "PartitionRecord"} == {2}  # 4.0-IV3 has ELR
    assert brokers[0].image.topics.by_name["orders"].id == topic.id


def test_record_versions_follow_an_older_metadata_version() -> None:
    log, ctl, _ = _cluster("3.6-IV2")
    _create(log, ctl, {"name": "t"})
    parts = [r for r in log.decoded() if r.spec.name == "PartitionRecord"]
    assert len(parts) == 2 and {r.version for r in parts} == {0}  # the controller's num.partitions
    assert all(len(r.value["replicas"]) == 2 for r in parts)


@pytest.mark.parametrize(
    ("topic", "error", "message"),
    [
        (
            {"name": "x", "replicationFactor": 4},
            Errors.INVALID_REPLICATION_FACTOR,
            "Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be "
            "reached "
            "because only 3 broker(s) are registered.",
        ),
        (
            {"name": "x", "replicationFactor": 0},
            Errors.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        ),
        (
            {"name": "x", "numPartitions": 0},
            Errors.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        ),
        (
            {"name": "a b"},
            Errors.INVALID_TOPIC_EXCEPTION,
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII alphanumerics, "
            "'.', '_' "
            "and '-'",
        ),
        (
            {"name": "x", "configs": [{"name": "segment.bytes", "value": "12"}]},
            Errors.INVALID_CONFIG,
            "Invalid value 12 for configuration segment.bytes: Value must be at least 14",
        ),
        (
            {"name": "x", "configs": [{"name": "no.such", "value": "1"}]},
            Errors.INVALID_CONFIG,
            "Unknown topic config name: no.such",
        ),
        (
            {"name": "x", "assignments": [{"partitionIndex": 0, "brokerIds": [10, 10]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 10 more than once.",
        ),
        (
            {"name": "x", "assignments": [{"partitionIndex": 0, "brokerIds": [99]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 99, but no such broker is registered.",
        ),
        (
            {"name": "x", "replicationFactor": 1, "assignments": [{"partitionIndex": 0, "brokerIds": [10]}]},
            Errors.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1.",
        ),
        (
            {"name": "x", "assignments": [{"partitionIndex": 1, "brokerIds": [10]}]},
            Errors.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
    ],
)
def test_create_topic_errors(topic: dict[str, Any], error: Errors, message: str) -> None:
    log, ctl, _ = _cluster()
    before = log.end
    [result] = _create(log, ctl, topic)
    assert (Errors.for_code(result["errorCode"]), result["errorMessage"]) == (error, message)
    assert log.end == before


def test_existing_duplicate_colliding_and_validate_only() -> None:
    log, ctl, _ = _cluster()
    assert _create(log, ctl, {"name": "a.b"})[0]["errorCode"] == 0
    before = log.end
    dup, exists, collides, ok = (
        _create(log, ctl, {"name": "d"}, {"name": "a.b"}, {"name": "a_b"}, {"name": "v"}, validate_only=True)[
            :1
        ]
        + _create(log, ctl, {"name": "a.b"})
        + _create(log, ctl, {"name": "a_b"})
        + _create(log, ctl, {"name": "v"}, validate_only=True)
    )
    assert dup["errorCode"] == 0  # validate only: accepted, nothing written
    assert (exists["errorCode"], exists["errorMessage"]) == (
        Errors.TOPIC_ALREADY_EXISTS.code,
        "Topic 'a.b' already exists.",
    )
    assert (collides["errorCode"], collides["errorMessage"]) == (
        Errors.INVALID_TOPIC_EXCEPTION.code,
        "Topic 'a_b' collides with existing topic: a.b",
    )
    assert ok["errorCode"] == 0 and log.end == before and "v" not in ctl.image.topics.by_name
    twice = _create(log, ctl, {"name": "z"}, {"name": "z"})
    assert [r["errorCode"] for r in twice] == [Errors.INVALID_REQUEST.code] * 2


def test_explicit_assignment_and_all_fenced() -> None:
    log, ctl, _ = _cluster()
    [r] = _create(
        log,
        ctl,
        {
            "name": "m",
            "assignments": [
                {"partitionIndex": 0, "brokerIds": [12, 10]},
                {"partitionIndex": 1, "brokerIds": [11, 12]},
            ],
        },
    )
    assert r["errorCode"] == 0
    parts = ctl.image.topics.by_name["m"].partitions
    assert (parts[0].replicas, parts[0].leader, parts[1].replicas) == ((12, 10), 12, (11, 12))
    fenced = [BrokerRegistration(i, 1, uuid.UUID(int=i), fenced=True) for i in (1, 2)]
    with pytest.raises(Exception, match=r"All brokers are currently fenced\."):
        place_replicas(fenced, 0, 1, 1, 0)


def test_placement_is_rack_aware() -> None:
    brokers = [
        BrokerRegistration(i, 1, uuid.UUID(int=i), rack=r, fenced=False)
        for i, r in ((1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"))
    ]
    rack = {b.id: b.rack for b in brokers}
    for rotation in range(5):
        for replicas in place_replicas(brokers, 0, 10, 3, rotation):
            assert len({rack[r] for r in replicas}) == 3
    leaders = [r[0] for r in place_replicas(brokers, 0, 10, 2, 0)]
    assert sorted(set(leaders)) == [1, 2, 3, 4, 5]


def test_delete_topics_by_name_and_id() -> None:
    log, ctl, brokers = _cluster()
    _create(log, ctl, {"name": "a"}, {"name": "b"})
    a_id = ctl.image.topics.by_name["a"].id
    resp = call(
        log,
        ctl,
        20,
        6,
        {
            "topics": [{"name": None, "topicId": a_id}, {"name": "nope", "topicId": uuid.UUID(int=0)}],
            "timeoutMs": 1000,
        },
    )["responses"]
    assert [(r["name"], r["errorCode"]) for r in resp] == [
        ("a", 0),
        ("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION.code),
    ]
    assert call(log, ctl, 20, 3, {"topicNames": ["b"], "timeoutMs": 1})["responses"][0]["errorCode"] == 0
    assert not ctl.image.topics.by_name and not brokers[0].image.topics.by_name


def test_create_partitions() -> None:
    log, ctl, _ = _cluster()
    _create(log, ctl, {"name": "t", "numPartitions": 2, "replicationFactor": 3})

    def grow(count: int, assignments: list[dict[str, Any]] | None = None) -> tuple[int, str | None]:
        body = {
            "topics": [{"name": "t", "count": count, "assignments": assignments}],
            "timeoutMs": 1,
            "validateOnly": False,
        }
        r = call(log, ctl, 37, 3, body)["results"][0]
        return r["errorCode"], r["errorMessage"]

    assert grow(2) == (Errors.INVALID_PARTITIONS.code, "Topic already has 2 partition(s).")
    assert grow(1) == (
        Errors.INVALID_PARTITIONS.code,
        "The topic t currently has 2 partition(s); 1 would not be an increase.",
    )
    assert grow(4, [{"brokerIds": [10, 11, 12]}]) == (
        Errors.INVALID_REPLICA_ASSIGNMENT.code,
        "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
    )
    assert grow(4) == (0, None)
    parts = ctl.image.topics.by_name["t"].partitions
    assert sorted(parts) == [0, 1, 2, 3] and all(len(p.replicas) == 3 for p in parts.values())


def test_topic_names() -> None:
    assert topic_name_error("ok-Name_1.x") is None
    assert topic_name_error("") == "Topic name is invalid: the empty string is not allowed"
    assert topic_name_error("..") == "Topic name is invalid: '..' is not allowed"
    assert topic_name_error("x" * 250).endswith("is longer than the max allowed length 249")


def test_a_name_whose_deletion_is_in_flight_can_be_created_again() -> None:
    """Kafka's controller judges its uncommitted state, where the appended RemoveTopicRecord already
    took the name (and its collision key) out of ``topicsByName``: CreateTopics of the name is accepted
    with a new id, the old topic takes no second deletion and no new partitions, and the creation in
flight takes the name in turn (two TopicRecords for one name left an orphan topic id)."""
    log, ctl, _ = _cluster()
    topic = {"name": "a.b", "numPartitions": 1, "replicationFactor": 1, "assignments": [],
             "configs": [{"name": "retention.ms", "value": "5"}]}
    assert call(log, ctl, 19, 7, {"topics": [topic], "timeoutMs": 1})["topics"][0]["errorCode"] == 0
    old_id = ctl.image.topics.by_name["a.b"].id
    delete = ctl.handle_request(20, 6, {"topics": [{"name": "a.b", "topicId": None}], "timeoutMs": 1}, 0,
                                next_offset=log.end)
    assert isinstance(delete, AppendThenRespond)  # appended, not committed
    again = {"topics": [{"name": "a.b", "numPartitions": 2, "replicationFactor": 1, "assignments": [],
                         "configs": [{"name": "cleanup.policy", "value": "compact"}]}], "timeoutMs": 1}
    create = ctl.handle_request(19, 7, again, 0, next_offset=log.end + len(delete.records))
    assert isinstance(create, AppendThenRespond)
    [created] = create.response_body["topics"]
    assert created["errorCode"] == 0 and created["topicId"] != old_id
    # the creation in flight takes the name (and its collision key) in turn
    again["topics"].append({"name": "a_b", "numPartitions": 1, "replicationFactor": 1, "assignments": [],
                            "configs": []})
    refused = ctl.handle_request(19, 7, again, 0, next_offset=log.end)
    assert isinstance(refused, Respond)
    assert [t["errorCode"] for t in refused.body["topics"]] == [
        Errors.TOPIC_ALREADY_EXISTS.code, Errors.INVALID_TOPIC_EXCEPTION.code]
    for api_key, version, body in (
        (20, 6, {"topics": [{"name": "a.b", "topicId": None}], "timeoutMs": 1}),
        (37, 3, {"topics": [{"name": "a.b", "count": 3, "assignments": None}], "timeoutMs": 1,
                 "validateOnly": False}),
    ):
        refused = ctl.handle_request(api_key, version, body, 0, next_offset=log.end)
        assert isinstance(refused, Respond)
        result = refused.body["responses" if api_key == 20 else "results"][0]
        assert result["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code
    log.append(delete.records)
    log.append(create.records)
    new = ctl.image.topics.by_name["a.b"]
    assert new.id == created["topicId"] and old_id not in ctl.image.topics.by_id and len(new.partitions) == 2
    assert ctl.image.configs[ConfigResource(ConfigResourceType.TOPIC, "a.b")] == {"cleanup.policy": "compact"}
    assert not ctl.topics.deleting and not ctl.topics.creating
