"""The admin RPCs a broker answers itself: DescribeTopicPartitions from its image and the
BROKER_LOGGER resource of the config RPCs (its own log levels, never persisted, as Kafka's
``RuntimeLoggerManager``). Topic and config writes are forwarded to the controller instead.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller.configs import APPEND, DELETE, OP_NAMES, SET, SUBTRACT
from kraftwerk.controller.effects import Body
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.error_codes import Errors

ROOT_LOGGER = "root"
LOG4J_LEVELS = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
_TO_PYTHON = {
    "OFF": logging.CRITICAL + 10,
    "FATAL": logging.CRITICAL,
    "ERROR": logging.ERROR,
    "WARN": logging.WARNING,
    "INFO": logging.INFO,
    "DEBUG": logging.DEBUG,
    "TRACE": 5,
}
_FROM_PYTHON = {v: k for k, v in _TO_PYTHON.items()}


def _level_name(level: int) -> str:
    """A Python level as the log4j name Kafka reports (the nearest at or above it)."""
    for value in sorted(_FROM_PYTHON):
        if level <= value:
            return _FROM_PYTHON[value]
    return "OFF"


def logger_levels(prefix: str = "kraftwerk") -> dict[str, str]:
    """The live loggers as Kafka's DescribeConfigs on BROKER_LOGGER lists them: ``root`` and every
    logger under ``prefix``, with its effective level."""
    out = {ROOT_LOGGER: _level_name(logging.getLogger().getEffectiveLevel())}
    for name in sorted(logging.root.manager.loggerDict):  # package names (placeholders) included
        if name == prefix or name.startswith(prefix + "."):
            out[name] = _level_name(logging.getLogger(name).getEffectiveLevel())
    return out


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)


def alter_broker_loggers(node_id: int, body: Mapping[str, Any], *, incremental: bool) -> Body:
    """IncrementalAlterConfigs (or legacy AlterConfigs, which Kafka refuses for loggers) on this
    broker's BROKER_LOGGER resources: SET a level, DELETE (back to the root's level)."""
    known = logger_levels()
    responses = []
    validate_only = bool(body.get("validateOnly", False))
    for res in body.get("resources") or ():
        rname = res["resourceName"]
        error, message = Errors.NONE, None
        try:
            if not incremental:
                raise _Refused(
                    Errors.INVALID_REQUEST,
                    "AlterConfigs does not support the BROKER_LOGGER "
                    "resource type; use IncrementalAlterConfigs.",
                )
            if rname != str(node_id):
                raise _Refused(
                    Errors.INVALID_REQUEST, f"Unexpected broker id, expected {node_id}, but received {rname}"
                )
            changes = _logger_changes(res.get("configs") or (), known)
            if not validate_only:
                for name, level in changes.items():
                    _logger(name).setLevel(logging.NOTSET if level is None else _TO_PYTHON[level])
                    logging.getLogger(__name__).info(
                        "Updated the log level of %s to %s", name, level or "the root's"
                    )
        except _Refused as err:
            error, message = err.error, err.message
        responses.append(
            {
                "errorCode": error.code,
                "errorMessage": message,
                "resourceType": int(ConfigResourceType.BROKER_LOGGER),
                "resourceName": rname,
            }
        )
    return {"throttleTimeMs": 0, "responses": responses}


def _logger_changes(configs: Any, known: Mapping[str, str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for c in configs:
        name, op, value = c["name"], c.get("configOperation", SET), c.get("value")
        if op in (APPEND, SUBTRACT):
            raise _Refused(
                Errors.INVALID_REQUEST,
                f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource",
            )
        if name not in known and not name.startswith("kraftwerk"):
            raise _Refused(Errors.INVALID_CONFIG, f"Logger {name} does not exist!")
        if op == DELETE:
            if name == ROOT_LOGGER:
                raise _Refused(
                    Errors.INVALID_REQUEST, "Removing the log level of the root logger is not allowed"
                )
            out[name] = None
            continue
        level = (value or "").upper()
        if level not in _TO_PYTHON:
            raise _Refused(
                Errors.INVALID_CONFIG,
                f"Cannot set the log level of {name} to {value} as it is "
                f"not a supported log level. Valid log4j levels are {', '.join(LOG4J_LEVELS)}",
            )
        out[name] = level
    return out


class _Refused(Exception):
    def __init__(self, error: Errors, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def describe_topic_partitions_body(image: MetadataImage, body: Mapping[str, Any], alive: set[int]) -> Body:
    """DescribeTopicPartitions (KIP-966): the requested topics (all when none is named) in name
    order, paged by ``ResponsePartitionLimit`` with a cursor."""
    requested = [t["name"] for t in body.get("topics") or ()]
    names = sorted(requested) if requested else sorted(image.topics.by_name)
    cursor = body.get("cursor")
    if cursor is not None:
        names = [n for n in names if n >= cursor["topicName"]]
    limit = max(1, int(body.get("responsePartitionLimit", 2000)))
    topics: list[Body] = []
    next_cursor = None
    budget = limit
    for name in names:
        topic = image.topics.by_name.get(name)
        if topic is None:
            topics.append(
                {
                    "errorCode": Errors.UNKNOWN_TOPIC_OR_PARTITION.code,
                    "name": name,
                    "topicId": uuid.UUID(int=0),
                    "isInternal": False,
                    "partitions": [],
                    "topicAuthorizedOperations": -2147483648,
                }
            )
            continue
        start = cursor["partitionIndex"] if cursor is not None and cursor["topicName"] == name else 0
        pids = [p for p in sorted(topic.partitions) if p >= start]
        if budget <= 0:
            next_cursor = {"topicName": name, "partitionIndex": start}
            break
        shown, rest = pids[:budget], pids[budget:]
        budget -= len(shown)
        parts = []
        for pid in shown:
            p = topic.partitions[pid]
            parts.append(
                {
                    "errorCode": 0 if p.leader in alive else Errors.LEADER_NOT_AVAILABLE.code,
                    "partitionIndex": pid,
                    "leaderId": p.leader,
                    "leaderEpoch": p.leader_epoch,
                    "replicaNodes": list(p.replicas),
                    "isrNodes": list(p.isr),
                    "eligibleLeaderReplicas": list(p.elr),
                    "lastKnownElr": list(p.last_known_elr),
                    "offlineReplicas": [r for r in p.replicas if r not in alive],
                }
            )
        topics.append(
            {
                "errorCode": 0,
                "name": name,
                "topicId": topic.id,
                "isInternal": name.startswith("__"),
                "partitions": parts,
                "topicAuthorizedOperations": -2147483648,
            }
        )
        if rest:
            next_cursor = {"topicName": name, "partitionIndex": rest[0]}
            break
    return {"throttleTimeMs": 0, "topics": topics, "nextCursor": next_cursor}
