"""What a broker answers itself on the admin plane: DescribeTopicPartitions (paged by a cursor),
BROKER_LOGGER describe/alter (live, never persisted), and forwarding of every topic/config write."""

from __future__ import annotations

import logging
from typing import Any

from kraftwerk.controller.effects import Forward
from kraftwerk.protocol.error_codes import Errors
from tests.broker.test_broker_node import add_topic, ask, running_cluster


def _create(log: Any, ctl: Any, b: Any, name: str, partitions: int) -> None:
    from tests.controller.harness import call

    body = {
        "topics": [
            {
                "name": name,
                "numPartitions": partitions,
                "replicationFactor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeoutMs": 1,
    }
    assert call(log, ctl, 19, 7, body)["topics"][0]["errorCode"] == 0


def test_describe_topic_partitions_pages_with_a_cursor() -> None:
    log, ctl, b = running_cluster()
    _create(log, ctl, b, "a", 3)
    _create(log, ctl, b, "b", 2)
    first = ask(b, 75, 0, {"topics": [], "responsePartitionLimit": 4, "cursor": None})
    assert [(t["name"], [p["partitionIndex"] for p in t["partitions"]]) for t in first["topics"]] == [
        ("a", [0, 1, 2]),
        ("b", [0]),
    ]
    assert first["nextCursor"] == {"topicName": "b", "partitionIndex": 1}
    rest = ask(b, 75, 0, {"topics": [], "responsePartitionLimit": 4, "cursor": first["nextCursor"]})
    assert [(t["name"], [p["partitionIndex"] for p in t["partitions"]]) for t in rest["topics"]] == [
        ("b", [1])
    ]
    assert rest["nextCursor"] is None
    missing = ask(b, 75, 0, {"topics": [{"name": "zz"}], "responsePartitionLimit": 10, "cursor": None})
    assert missing["topics"][0]["errorCode"] == Errors.UNKNOWN_TOPIC_OR_PARTITION.code


def test_broker_logger_levels_are_changed_live() -> None:
    _log, _ctl, b = running_cluster()
    target = logging.getLogger("kraftwerk.test_admin_probe")
    before = target.level

    def alter(*configs: dict[str, Any], name: str = "2") -> tuple[int, str | None]:
        body = {
            "resources": [{"resourceType": 8, "resourceName": name, "configs": list(configs)}],
            "validateOnly": False,
        }
        r = ask(b, 44, 1, body)["responses"][0]
        return r["errorCode"], r["errorMessage"]

    try:
        assert alter({"name": target.name, "configOperation": 0, "value": "TRACE"}) == (0, None)
        assert target.level == 5
        described = ask(
            b, 32, 4, {"resources": [{"resourceType": 8, "resourceName": "2", "configurationKeys": None}]}
        )
        entries = {c["name"]: c for c in described["results"][0]["configs"]}
        assert entries[target.name]["value"] == "TRACE" and entries[target.name]["configSource"] == 6
        assert (
            alter({"name": target.name, "configOperation": 0, "value": "LOUD"})[0]
            == Errors.INVALID_CONFIG.code
        )
        assert alter({"name": "root", "configOperation": 1, "value": None}) == (
            Errors.INVALID_REQUEST.code,
            "Removing the log level of the root logger is not allowed",
        )
        assert (
            alter({"name": target.name, "configOperation": 2, "value": "x"})[0] == Errors.INVALID_REQUEST.code
        )
        assert (
            alter({"name": target.name, "configOperation": 0, "value": "INFO"}, name="7")[0]
            == Errors.INVALID_REQUEST.code
        )
        assert alter({"name": target.name, "configOperation": 1, "value": None}) == (0, None)
        assert target.level == logging.NOTSET
    finally:
        target.setLevel(before)


def test_topic_and_config_writes_are_forwarded() -> None:
    log, _ctl, b = running_cluster()
    add_topic(log)
    for api_key, version, body in (
        (19, 7, {"topics": [], "timeoutMs": 1, "validateOnly": False}),
        (20, 6, {"topics": [], "timeoutMs": 1}),
        (37, 3, {"topics": [], "timeoutMs": 1, "validateOnly": False}),
        (
            33,
            2,
            {
                "resources": [{"resourceType": 2, "resourceName": "orders", "configs": []}],
                "validateOnly": False,
            },
        ),
        (
            44,
            1,
            {"resources": [{"resourceType": 4, "resourceName": "", "configs": []}], "validateOnly": False},
        ),
    ):
        assert b.handle_request(api_key, version, body, 0) == Forward(api_key, version, body)
