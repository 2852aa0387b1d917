"""``kraftwerk configs``: ``kafka-configs.sh`` for topics, brokers (a node or the cluster default)
and broker loggers, with the same flags and text output, and ``--output json``.

Describing sends DescribeConfigs with synonyms (a broker's own entity to that broker); altering
sends IncrementalAlterConfigs, DELETE operations first, then SET, as Kafka's tool does. Without
``--all`` only the entity's own dynamic configs are shown.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import (
    config_keys,
    config_pairs,
    entity_name,
    input_file,
    non_negative_int,
    release_version,
    topic_name,
)
from kraftwerk.cli.features_cmd import add_connection_flags, audit_lines, client_settings, open_client
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.config import ConfigResourceType, ConfigSource, properties_values
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import AdminClient, AdminClientError, FeatureUpdate, UpgradeType
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import MetadataVersion

SET, DELETE = 0, 1
RESOURCE_TYPES = {
    "topics": ConfigResourceType.TOPIC,
    "brokers": ConfigResourceType.BROKER,
    "broker-loggers": ConfigResourceType.BROKER_LOGGER,
}
OWN_DYNAMIC_SOURCE = {
    "topics": ConfigSource.DYNAMIC_TOPIC_CONFIG,
    "brokers": ConfigSource.DYNAMIC_BROKER_CONFIG,
}


class ConfigCommandError(KraftwerkError):
    """A kafka-configs failure: one stderr line, exit 1."""


def register(groups: Any) -> None:
    parser = groups.add_parser(
        "configs",
        help="describe and alter topic, broker and broker-logger configs (kafka-configs)",
        description="Change configs for topics, brokers and broker loggers.",
    )
    parser.add_argument("command", nargs="?", choices=("audit",),
                        help="kraftwerk (KIP-1294): audit every effective config against --metadata's rules.")
    parser.add_argument("--metadata", type=release_version,
                        help="audit: the metadata.version to audit against, e.g. 4.4-IV1.")
    add_connection_flags(parser, None)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--describe", action="store_true", help="List configs for the given entity.")
    action.add_argument("--alter", action="store_true", help="Alter the configuration for the entity.")
    parser.add_argument("--entity-type", choices=tuple(RESOURCE_TYPES), help="Type of entity.")
    parser.add_argument("--entity-name", type=entity_name, help="Name of entity (topic name or broker id).")
    parser.add_argument(
        "--entity-default",
        action="store_true",
        help="Default entity name for brokers (applies to every broker without its own value).",
    )
    parser.add_argument(
        "--topic", type=topic_name, help="The topic's name (--entity-type topics --entity-name)."
    )
    parser.add_argument("--broker", type=non_negative_int, help="The broker's id (--entity-type brokers).")
    parser.add_argument(
        "--broker-defaults",
        action="store_true",
        help="The config defaults for all brokers (--entity-type brokers --entity-default).",
    )
    parser.add_argument(
        "--broker-logger",
        type=non_negative_int,
        help="The broker's id for its loggers (--entity-type broker-loggers).",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="List all configs for the given entity, including static and default ones.",
    )
    parser.add_argument(
        "--add-config",
        type=config_pairs,
        help="Key value pairs of configs to add: k1=v1,k2=[v1,v2,v3],k3=v3.",
    )
    parser.add_argument(
        "--add-config-file", type=input_file, help="Path to a properties file of configs to add."
    )
    parser.add_argument("--delete-config", type=config_keys, help="Config keys to remove: k1,k2.")
    add_output_flag(parser)
    parser.set_defaults(func=_run)


@dataclass(frozen=True, slots=True)
class Entity:
    """What the command works on: its type (``topics``...) and name (None: all; "" the default)."""

    type: str
    name: str | None

    @property
    def label(self) -> str:
        """kafka-configs' header word: the entity type without its last letter."""
        return self.type[:-1]


def resolve_entity(args: argparse.Namespace) -> Entity:
    """The one entity the flags name, with kafka-configs' checks and texts."""
    named: list[Entity] = []
    if args.entity_type is not None:
        name = "" if args.entity_default else args.entity_name
        named.append(Entity(args.entity_type, name))
    elif args.entity_name is not None or args.entity_default:
        raise ConfigCommandError("--entity-type must be specified with --entity-name or --entity-default")
    if args.topic is not None:
        named.append(Entity("topics", args.topic))
    if args.broker is not None:
        named.append(Entity("brokers", str(args.broker)))
    if args.broker_defaults:
        named.append(Entity("brokers", ""))
    if args.broker_logger is not None:
        named.append(Entity("broker-loggers", str(args.broker_logger)))
    if len(named) != 1:
        raise ConfigCommandError(
            "Exactly one entity type (--entity-type, --topic, --broker, --broker-defaults or "
            "--broker-logger) must be specified"
        )
    entity = named[0]
    if args.entity_default and entity.type != "brokers":
        raise ConfigCommandError(f"--entity-default must not be specified with --entity-type {entity.type}")
    if args.entity_name is not None and args.entity_default:
        raise ConfigCommandError("--entity-name and --entity-default cannot be specified together")
    numeric = entity.name is not None and entity.name.isascii() and entity.name.isdigit()
    if entity.type in ("brokers", "broker-loggers") and entity.name and not numeric:
        raise ConfigCommandError(
            f"The entity name for {entity.type} must be a valid integer broker id, but it is: {entity.name}"
        )
    if entity.type == "topics" and entity.name:
        try:
            topic_name(entity.name)
        except argparse.ArgumentTypeError as exc:
            raise ConfigCommandError(str(exc)) from None
    return entity


def _run(args: argparse.Namespace) -> int:
    if args.command == "audit":
        return _audit(args)
    if not (args.describe or args.alter):
        raise ConfigCommandError("Command must include exactly one action: --describe, --alter or audit")
    entity = resolve_entity(args)
    settings = client_settings(args)
    with open_client(settings) as admin:
        try:
            if args.describe:
                return _describe(admin, entity, args)
            return _alter(admin, entity, args)
        except AdminClientError as exc:
            raise ConfigCommandError(f"Error while executing config command: {exc}") from None


def _audit(args: argparse.Namespace) -> int:
    """KIP-1294's pre-flight audit alone: a validate-only metadata.version change the controller audits."""
    if args.metadata is None:
        raise ConfigCommandError("configs audit needs --metadata, e.g. --metadata 4.4-IV1")
    try:
        target = MetadataVersion.from_version_string(args.metadata, unstable=True)
    except VersionError as exc:
        raise ConfigCommandError(str(exc)) from None
    with open_client(client_settings(args)) as admin:
        try:
            current = admin.describe_features().finalized.get("metadata.version")
            downgrade = current is not None and target.feature_level < current[1]
            utype = UpgradeType.SAFE_DOWNGRADE if downgrade else UpgradeType.UPGRADE
            update = {"metadata.version": FeatureUpdate(target.feature_level, utype)}
            result = admin.update_features(update, validate_only=True)["metadata.version"]
        except AdminClientError as exc:
            raise ConfigCommandError(f"Error while executing config command: {exc}") from None
    audit = result.config_audit
    if audit is None:
        why = "metadata.version is already at that level" if result.ok else result.describe()
        raise ConfigCommandError(f"No config audit for metadata.version {target}: {why}")
    if args.output == "json":
        print_json(audit)
    else:
        for line in audit_lines(audit):
            print(line)
    return 1 if audit["refused"] else 0


# ---------------------------------------------------------------------- describe


def _describe(admin: AdminClient, entity: Entity, args: argparse.Namespace) -> int:
    if args.add_config is not None or args.add_config_file is not None or args.delete_config is not None:
        raise ConfigCommandError("--add-config, --add-config-file and --delete-config need --alter")
    names = [entity.name] if entity.name is not None else _all_names(admin, entity)
    described = []
    for name in names:
        result = describe_entity(admin, Entity(entity.type, name))
        error = Errors.for_code(result["errorCode"])
        if error is Errors.UNKNOWN_TOPIC_OR_PARTITION and not args.all:
            if args.output == "text":
                print(f"The {entity.label} '{name}' doesn't exist and doesn't have dynamic config.")
            continue
        if error is not Errors.NONE:
            raise ConfigCommandError(
                f"Error while executing config command: {error.name}: "
                f"{result.get('errorMessage') or error.describe()}"
            )
        configs = [c for c in result["configs"] if args.all or _shown_without_all(entity, name, c)]
        described.append((name, sorted(configs, key=lambda c: c["name"])))
    if args.output == "json":
        print_json(
            [
                {"entityType": entity.type, "entityName": name, "configs": [_json_entry(c) for c in configs]}
                for name, configs in described
            ]
        )
        return 0
    for name, configs in described:
        if entity.type == "brokers" and name == "":
            header = (
                "All default configs for brokers in the cluster are:"
                if args.all
                else "Default configs for brokers in the cluster are:"
            )
        else:
            header = f"{'All' if args.all else 'Dynamic'} configs for {entity.label} {name} are:"
        print(header)
        for c in configs:
            print(
                f"  {c['name']}={_text(c['value'])} sensitive={str(c['isSensitive']).lower()} "
                f"synonyms={{{', '.join(_synonym_text(s) for s in c['synonyms'])}}}"
            )
    return 0


def _shown_without_all(entity: Entity, name: str, config: Mapping[str, Any]) -> bool:
    if entity.type == "broker-loggers":
        return True
    wanted = (
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if entity.type == "brokers" and name == ""
        else OWN_DYNAMIC_SOURCE[entity.type]
    )
    return bool(config["configSource"] == wanted)


def _text(value: str | None) -> str:
    return "null" if value is None else value


def _source_name(code: int) -> str:
    try:
        return ConfigSource(code).name
    except ValueError:
        return ConfigSource.UNKNOWN.name


def _synonym_text(s: Mapping[str, Any]) -> str:
    return f"{_source_name(s['source'])}:{s['name']}={_text(s['value'])}"


def _json_entry(c: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": c["name"],
        "value": c["value"],
        "source": _source_name(c["configSource"]),
        "sensitive": c["isSensitive"],
        "readOnly": c["readOnly"],
        "synonyms": [
            {"name": s["name"], "value": s["value"], "source": _source_name(s["source"])}
            for s in c["synonyms"]
        ],
    }


def _all_names(admin: AdminClient, entity: Entity) -> list[str]:
    """Every topic, or every broker id and then the default (kafka-configs without a name)."""
    if entity.type == "topics":
        body = {"topics": None, "allowAutoTopicCreation": False, "includeTopicAuthorizedOperations": False}
        return sorted(t["name"] for t in admin.call(ApiKey.METADATA, body)["topics"])
    ids = [str(n.node_id) for n in sorted(admin.describe_cluster().nodes, key=lambda n: n.node_id)]
    return [*ids, ""] if entity.type == "brokers" else ids


def describe_entity(admin: AdminClient, entity: Entity) -> dict[str, Any]:
    """The DescribeConfigs result of one entity (a node's own entity is asked of that node)."""
    assert entity.name is not None
    node = int(entity.name) if entity.type != "topics" and entity.name else None
    body = {
        "resources": [
            {
                "resourceType": int(RESOURCE_TYPES[entity.type]),
                "resourceName": entity.name,
                "configurationKeys": None,
            }
        ],
        "includeSynonyms": True,
        "includeDocumentation": False,
    }
    [result] = admin.call(ApiKey.DESCRIBE_CONFIGS, body, node_id=node)["results"]
    return dict(result)


# ---------------------------------------------------------------------- alter


def _alter(admin: AdminClient, entity: Entity, args: argparse.Namespace) -> int:
    if entity.name is None:
        raise ConfigCommandError("An entity name must be specified with --alter of " + entity.type)
    if args.all:
        raise ConfigCommandError("--all can only be used with --describe")
    if args.add_config is not None and args.add_config_file is not None:
        raise ConfigCommandError("Only one of --add-config or --add-config-file must be specified")
    sets = dict(args.add_config or {})
    if args.add_config_file is not None:
        sets = properties_values(
            Path(args.add_config_file).read_text(encoding="latin-1"), args.add_config_file
        )
    deletes = list(args.delete_config or [])
    if not sets and not deletes:
        raise ConfigCommandError(
            "At least one of --add-config, --add-config-file or --delete-config must be "
            "specified with --alter"
        )
    if deletes:
        current = describe_entity(admin, entity)
        if entity.type == "broker-loggers":
            present = {c["name"] for c in current["configs"]}
        else:
            present = {c["name"] for c in current["configs"] if _shown_without_all(entity, entity.name, c)}
        missing = [k for k in deletes if k not in present]
        if missing:
            raise ConfigCommandError(f"Invalid config(s): {','.join(missing)}")
    if entity.type == "broker-loggers" and sets:
        loggers = {c["name"] for c in describe_entity(admin, entity)["configs"]}
        unknown = sorted(k for k in sets if k not in loggers)
        if unknown:
            raise ConfigCommandError(f"Invalid broker logger(s): {','.join(unknown)}")
    ops = [{"name": k, "configOperation": DELETE, "value": ""} for k in deletes]
    ops += [{"name": k, "configOperation": SET, "value": v} for k, v in sets.items()]
    body = {
        "resources": [
            {"resourceType": int(RESOURCE_TYPES[entity.type]), "resourceName": entity.name, "configs": ops}
        ],
        "validateOnly": False,
    }
    node = int(entity.name) if entity.type == "broker-loggers" else None
    [result] = admin.call(ApiKey.INCREMENTAL_ALTER_CONFIGS, body, node_id=node)["responses"]
    error = Errors.for_code(result["errorCode"])
    if error is not Errors.NONE:
        raise ConfigCommandError(
            f"Error while executing config command: {error.name}: "
            f"{result.get('errorMessage') or error.describe()}"
        )
    if args.output == "json":
        print_json(
            {"entityType": entity.type, "entityName": entity.name, "set": sorted(sets), "deleted": deletes}
        )
    elif entity.type == "brokers" and entity.name == "":
        print("Completed updating default config for brokers in the cluster.")
    else:
        print(f"Completed updating config for {entity.label} {entity.name}.")
    return 0
