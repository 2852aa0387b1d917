"""``kraftwerk topics``: ``kafka-topics.sh`` (``--create``, ``--list``, ``--describe``, ``--alter
--partitions``, ``--delete``) with the same flags, text output and error texts, and ``--output json``.

Writes go to a broker, which forwards them to the active controller. ``--describe`` reads the
partitions with DescribeTopicPartitions and the configs that are not defaults with DescribeConfigs,
as Kafka 4's tool does. ``--topic`` names one topic (Kafka's tool also takes a regular expression).
"""

from __future__ import annotations

import argparse
import uuid
from collections.abc import Mapping
from typing import Any

from kraftwerk.cli.args import key_value, positive_int, replica_assignment, topic_name
from kraftwerk.cli.features_cmd import add_connection_flags, client_settings, open_client
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.config import ConfigResourceType, ConfigSource
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.runtime.admin_client import AdminClient, AdminClientError

COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
    "('_') could collide. To avoid issues it is best to use either, but not both."
)


class TopicCommandError(KraftwerkError):
    """A kafka-topics failure: ``Error while executing topic command : <msg>``, exit 1."""

    def __init__(self, message: str) -> None:
        super().__init__(f"Error while executing topic command : {message}")


def register(groups: Any) -> None:
    parser = groups.add_parser(
        "topics",
        help="create, list, describe, alter and delete topics (kafka-topics)",
        description="Create, delete, describe, or change a topic.",
    )
    add_connection_flags(parser, None)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true", help="Create a new topic.")
    action.add_argument("--list", action="store_true", help="List all available topics.")
    action.add_argument("--describe", action="store_true", help="List details for the given topics.")
    action.add_argument("--alter", action="store_true", help="Alter the number of partitions of a topic.")
    action.add_argument("--delete", action="store_true", help="Delete a topic.")
    parser.add_argument("--topic", type=topic_name, help="The topic to create, alter, describe or delete.")
    parser.add_argument(
        "--partitions",
        type=positive_int,
        help="The number of partitions for the topic being created or altered (default: the "
        "cluster's num.partitions).",
    )
    parser.add_argument(
        "--replication-factor",
        type=positive_int,
        help="The replication factor for each partition (default: the cluster's default.replication.factor).",
    )
    parser.add_argument(
        "--replica-assignment",
        type=replica_assignment,
        help="Manual assignment: broker_id_for_part1_replica1:broker_id_for_part1_replica2, "
        "broker_id_for_part2_replica1:broker_id_for_part2_replica2, ...",
    )
    parser.add_argument(
        "--config",
        type=key_value,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="A topic configuration override for the topic being created (repeatable).",
    )
    parser.add_argument(
        "--if-not-exists",
        action="store_true",
        help="With --create: only create the topic if it does not exist.",
    )
    parser.add_argument(
        "--if-exists",
        action="store_true",
        help="With --alter, --describe or --delete: only act if the topic exists.",
    )
    parser.add_argument(
        "--exclude-internal", action="store_true", help="Leave internal topics out of --list and --describe."
    )
    add_output_flag(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    _check_options(args)
    with open_client(client_settings(args)) as admin:
        try:
            if args.create:
                return _create(admin, args)
            names = _topic_names(admin, args)
            if args.list:
                return _list(names, args)
            if args.describe:
                return _describe(admin, names, args)
            if args.alter:
                return _alter(admin, names, args)
            return _delete(admin, names, args)
        except AdminClientError as exc:
            raise TopicCommandError(str(exc)) from None


def _check_options(args: argparse.Namespace) -> None:
    needs_topic = args.create or args.alter or args.delete
    if needs_topic and args.topic is None:
        raise TopicCommandError("--topic must be specified with --create, --alter and --delete")
    if args.config and not args.create:
        raise TopicCommandError("Option --config can only be used with --create")
    if args.alter and args.partitions is None:
        raise TopicCommandError("--partitions must be specified with --alter")
    if (
        (args.replication_factor is not None or args.partitions is not None)
        and args.replica_assignment
        and args.create
    ):
        raise TopicCommandError(
            "Option --replica-assignment can't be used with --partitions or --replication-factor"
        )
    if args.if_not_exists and not args.create:
        raise TopicCommandError("Option --if-not-exists can only be used with --create")
    if args.if_exists and not (args.alter or args.describe or args.delete):
        raise TopicCommandError("Option --if-exists can only be used with --alter, --describe or --delete")


def _result_error(result: Mapping[str, Any]) -> str | None:
    error = Errors.for_code(result["errorCode"])
    if error is Errors.NONE:
        return None
    return str(result.get("errorMessage") or error.describe())


# ---------------------------------------------------------------------- create


def _create(admin: AdminClient, args: argparse.Namespace) -> int:
    name = args.topic
    if args.output == "text" and ("." in name or "_" in name):
        print(COLLISION_WARNING)
    assignment = args.replica_assignment or []
    topic = {
        "name": name,
        "numPartitions": -1 if assignment or args.partitions is None else args.partitions,
        "replicationFactor": -1 if assignment or args.replication_factor is None else args.replication_factor,
        "assignments": [{"partitionIndex": i, "brokerIds": ids} for i, ids in enumerate(assignment)],
        "configs": [{"name": k, "value": v} for k, v in args.config],
    }
    body = {"topics": [topic], "timeoutMs": 30000, "validateOnly": False}
    [result] = admin.call(ApiKey.CREATE_TOPICS, body)["topics"]
    error = _result_error(result)
    if error is not None:
        if args.if_not_exists and result["errorCode"] == Errors.TOPIC_ALREADY_EXISTS.code:
            return 0
        raise TopicCommandError(error)
    if args.output == "json":
        print_json(
            {"created": name, "topicId": uuid_to_str(result["topicId"]) if "topicId" in result else None}
        )
    else:
        print(f"Created topic {name}.")
    return 0


# ---------------------------------------------------------------------- list / describe


def _topic_names(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    """The topics the command acts on: the named one (which must exist unless --if-exists), or all."""
    body = {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
    topics = admin.call(ApiKey.METADATA, body)["topics"]
    names = sorted(t["name"] for t in topics if not (args.exclude_internal and t.get("isInternal")))
    if args.topic is None:
        return names
    if args.topic not in names:
        if args.if_exists:
            return []
        raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")
    return [args.topic]


def _list(names: list[str], args: argparse.Namespace) -> int:
    if args.output == "json":
        print_json(names)
    else:
        for name in names:
            print(name)
    return 0


def _ids(ids: Any) -> str:
    return ",".join(str(i) for i in ids or ())


def _describe_partitions(admin: AdminClient, names: list[str]) -> dict[str, dict[str, Any]]:
    """DescribeTopicPartitions, or Metadata from a broker without it (a ZooKeeper-mode 3.x broker:
    Kafka's Admin falls back the same way; there is no ELR then)."""
    topics: dict[str, dict[str, Any]] = {}
    if not any(k["apiKey"] == ApiKey.DESCRIBE_TOPIC_PARTITIONS for k in admin.api_versions()["apiKeys"]):
        request = {"topics": [{"name": n, "topicId": uuid.UUID(int=0)} for n in names],
                   "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
        value = admin.call(ApiKey.METADATA, request)
        return {t["name"]: t for t in value["topics"]}
    body = {"topics": [{"name": n} for n in names], "responsePartitionLimit": 2000, "cursor": None}
    while True:
        value = admin.call(ApiKey.DESCRIBE_TOPIC_PARTITIONS, body)
        for t in value["topics"]:
            seen = topics.setdefault(t["name"], {**t, "partitions": []})
            seen["partitions"] += t["partitions"]
        if value.get("nextCursor") is None:
            return topics
        body["cursor"] = value["nextCursor"]


def _describe(admin: AdminClient, names: list[str], args: argparse.Namespace) -> int:
    if not names:
        if args.output == "json":
            print_json([])
        return 0
    topics = _describe_partitions(admin, names)
    configs = _non_default_configs(admin, names)
    out: list[dict[str, Any]] = []
    for name in names:
        topic = topics.get(name)
        if topic is None or topic["errorCode"] != 0:
            continue
        parts = sorted(topic["partitions"], key=lambda p: p["partitionIndex"])
        out.append(
            {
                "name": name,
                "topicId": uuid_to_str(topic["topicId"]),
                "partitionCount": len(parts),
                "replicationFactor": len(parts[0]["replicaNodes"]) if parts else 0,
                "configs": configs.get(name, {}),
                "partitions": [
                    {
                        "partition": p["partitionIndex"],
                        "leader": p["leaderId"],
                        "replicas": p["replicaNodes"],
                        "isr": p["isrNodes"],
                        "elr": p.get("eligibleLeaderReplicas"),
                        "lastKnownElr": p.get("lastKnownElr"),
                    }
                    for p in parts
                ],
            }
        )
    if args.output == "json":
        print_json(out)
        return 0
    for t in out:
        config_text = ",".join(f"{k}={v}" for k, v in t["configs"].items())
        print(
            f"Topic: {t['name']}\tTopicId: {t['topicId']}\tPartitionCount: {t['partitionCount']}\t"
            f"ReplicationFactor: {t['replicationFactor']}\tConfigs: {config_text}"
        )
        for p in t["partitions"]:
            leader = "none" if p["leader"] < 0 else str(p["leader"])
            elr = "N/A" if p["elr"] is None else _ids(p["elr"])
            last = "N/A" if p["lastKnownElr"] is None else _ids(p["lastKnownElr"])
            print(
                f"\tTopic: {t['name']}\tPartition: {p['partition']}\tLeader: {leader}\tReplicas: "
                f"{_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}\tElr: {elr}\tLastKnownElr: {last}"
            )
    return 0


def _non_default_configs(admin: AdminClient, names: list[str]) -> dict[str, dict[str, str]]:
    """Every config of each topic whose source is not DEFAULT_CONFIG, in the server's order."""
    body = {
        "resources": [
            {"resourceType": int(ConfigResourceType.TOPIC), "resourceName": n, "configurationKeys": None}
            for n in names
        ],
        "includeSynonyms": False,
        "includeDocumentation": False,
    }
    out: dict[str, dict[str, str]] = {}
    for result in admin.call(ApiKey.DESCRIBE_CONFIGS, body)["results"]:
        out[result["resourceName"]] = {
            c["name"]: "null" if c["value"] is None else c["value"]
            for c in result["configs"]
            if c["configSource"] != ConfigSource.DEFAULT_CONFIG
        }
    return out


# ---------------------------------------------------------------------- alter / delete


def _alter(admin: AdminClient, names: list[str], args: argparse.Namespace) -> int:
    for name in names:
        assignment = args.replica_assignment
        topic = {
            "name": name,
            "count": args.partitions,
            "assignments": None if assignment is None else [{"brokerIds": ids} for ids in assignment],
        }
        [result] = admin.call(
            ApiKey.CREATE_PARTITIONS, {"topics": [topic], "timeoutMs": 30000, "validateOnly": False}
        )["results"]
        error = _result_error(result)
        if error is not None:
            raise TopicCommandError(error)
    if args.output == "json":
        print_json({"altered": names, "partitions": args.partitions})
    return 0


def _delete(admin: AdminClient, names: list[str], args: argparse.Namespace) -> int:
    if names:
        body = {
            "topicNames": names,
            "topics": [{"name": n, "topicId": uuid.UUID(int=0)} for n in names],
            "timeoutMs": 30000,
        }
        for result in admin.call(ApiKey.DELETE_TOPICS, body)["responses"]:
            error = _result_error(result)
            if error is not None:
                raise TopicCommandError(error)
    if args.output == "json":
        print_json({"deleted": names})
    return 0
