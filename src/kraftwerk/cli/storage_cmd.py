"""``kraftwerk storage <command>``: the offline commands of ``kafka-storage``.

Each subcommand is one ``_add_*`` function in ``SUBCOMMANDS``; to add one (``format``,
``random-uuid``, ``info``), write its ``_add_*`` and handler and append it to the tuple.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import (
    cluster_id,
    feature_level,
    initial_controllers,
    input_file,
    release_or_level,
    release_version,
    scram_credential,
)
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.format import (
    FormatError,
    StorageConfig,
    check_quorum_flags,
    format_node,
    random_cluster_id,
)
from kraftwerk.storage.properties import META_PROPERTIES_FILE, read_meta_properties
from kraftwerk.storage.scram import scram_records
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.mapping import feature_dependencies, parse_feature_spec, version_mapping


def register(groups: Any) -> None:
    parser = groups.add_parser("storage", help="format and inspect storage; offline version look-ups")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    for add in SUBCOMMANDS:
        add(commands)


def _add_version_mapping(commands: Any) -> None:
    sub = commands.add_parser(
        "version-mapping",
        help="the feature levels a release version implies",
        description="Look up the feature levels that correspond to a release version. Without "
                    "--release-version, the latest stable metadata.version is used.",
    )
    sub.add_argument("--release-version", "-r", type=release_version, metavar="VERSION",
                     help=f"release version, e.g. 3.9 or 3.9-IV0 (default {mvs.LATEST_PRODUCTION})")
    add_output_flag(sub)
    sub.set_defaults(func=print_version_mapping)


def print_version_mapping(args: argparse.Namespace) -> int:
    """``version-mapping`` (kafka-storage and kafka-features both have it)."""
    mapping = version_mapping(args.release_version)
    if args.output == "json":
        print_json(mapping.to_json())
    else:
        for line in mapping.lines():
            print(line)
    return 0


def _add_feature_dependencies(commands: Any) -> None:
    sub = commands.add_parser(
        "feature-dependencies",
        help="the dependencies of feature levels",
        description="Look up the dependencies of one or more feature levels (any defined level).",
    )
    sub.add_argument("--feature", "-f", action="append", required=True, type=feature_level,
                     metavar="NAME=LEVEL",
                     help="feature and level to look up, e.g. eligible.leader.replicas.version=1 "
                          "(repeatable)")
    add_output_flag(sub)
    sub.set_defaults(func=print_feature_dependencies)


def print_feature_dependencies(args: argparse.Namespace) -> int:
    """``feature-dependencies`` (kafka-storage and kafka-features both have it)."""
    specs: list[str] = args.feature
    if args.output == "json":
        print_json([feature_dependencies(spec).to_json() for spec in specs])
        return 0
    for spec in specs:  # print as we go: like Kafka, lines before a bad spec stay printed
        for line in feature_dependencies(spec).lines():
            print(line)
    return 0


# ---------------------------------------------------------------------- format

def _add_format(commands: Any) -> None:
    sub = commands.add_parser(
        "format",
        help="format the log directories of this node",
        description="Format the Kafka log directories on this node: write meta.properties and "
                    "bootstrap.checkpoint (and, with a dynamic quorum, the zero snapshot).",
    )
    sub.add_argument("--config", "-c", required=True, type=input_file,
                     help="the Kafka configuration file to use")
    sub.add_argument("--cluster-id", "-t", required=True, type=cluster_id,
                     help="the cluster ID to use (what random-uuid prints)")
    sub.add_argument("--ignore-formatted", "-g", action="store_true",
                     help="skip directories that are already formatted instead of failing")
    sub.add_argument("--release-version", "-r", type=release_version, metavar="VERSION",
                     help=f"the release version for the initial feature settings; the minimum is "
                          f"{mvs.MINIMUM_VERSION}, the default {mvs.LATEST_PRODUCTION}")
    sub.add_argument("--metadata-version", type=release_or_level, metavar="VERSION_OR_LEVEL",
                     help="KIP-778's flag: a metadata.version string (like --release-version) or a "
                          "numeric level (like --feature metadata.version=N)")
    sub.add_argument("--feature", "-f", action="append", type=feature_level, metavar="NAME=LEVEL",
                     help="a feature level, e.g. kraft.version=1 (repeatable)")
    sub.add_argument("--add-scram", "-S", action="append", default=[], metavar="SCRAM_CREDENTIAL",
                     type=scram_credential,
                     help="a SCRAM credential to add to the __cluster_metadata log, e.g. "
                          "'SCRAM-SHA-256=[name=alice,password=alice-secret]' or "
                          "'SCRAM-SHA-512=[name=alice,iterations=8192,salt=\"N3E=\",saltedpassword=\"YCE=\"]'")
    quorum = sub.add_mutually_exclusive_group()
    quorum.add_argument("--standalone", "-s", action="store_true",
                        help="initialize a controller as a single-node dynamic quorum")
    quorum.add_argument("--no-initial-controllers", "-N", action="store_true",
                        help="initialize a server without specifying a dynamic quorum")
    quorum.add_argument("--initial-controllers", "-I", type=initial_controllers,
                        metavar="ID@HOST:PORT:DIR,...",
                        help="initialize a server with this dynamic quorum")
    add_output_flag(sub)
    sub.set_defaults(func=_format)


_LEVEL = re.compile(r"[+-]?[0-9]+")


def _format(args: argparse.Namespace) -> int:
    config = StorageConfig.load(args.config)
    if not config.process_roles:
        raise FormatError("The kafka configuration file appears to be for a legacy cluster. Formatting is "
                          "only supported for clusters in KRaft mode.")
    release: str | None = args.release_version
    features: dict[str, int] = {}
    for spec in args.feature or ():
        name, level = parse_feature_spec(spec)
        features[name] = level  # later wins, as Kafka's toMap
    if args.metadata_version is not None:
        if release is not None:
            raise FormatError("Use --release-version or --metadata-version, not both.")
        if _LEVEL.fullmatch(args.metadata_version.strip()):
            if mvs.FEATURE_NAME in features:
                raise FormatError(f"Use --metadata-version or --feature {mvs.FEATURE_NAME}=X, not both.")
            features[mvs.FEATURE_NAME] = int(args.metadata_version)
        else:
            release = args.metadata_version
    if release is not None:
        try:
            config.software.parse_metadata_version(release)
        except VersionError as exc:
            raise FormatError(str(exc)) from None
    voters = check_quorum_flags(config, standalone=args.standalone,
                                initial_controllers=args.initial_controllers,
                                no_initial_controllers=args.no_initial_controllers)
    if config.node_id < 0:
        raise FormatError('Missing required configuration "node.id" which has no default value.')
    text = args.output != "json"
    result = format_node(
        cluster_id=args.cluster_id,
        node_id=config.node_id,
        log_dirs=config.log_dirs,
        metadata_log_dir=config.effective_metadata_log_dir,
        release_version=release,
        features=features,
        unstable_enabled=config.unstable_feature_versions_enable,
        ignore_formatted=args.ignore_formatted,
        initial_controllers=voters,
        no_initial_controllers=args.no_initial_controllers,
        controller_listener_name=(config.controller_listener_names or ("CONTROLLER",))[0],
        software=config.software,
        static_configs=config.static_configs,
        scram=scram_records(args.add_scram),
        out=print if text else None,
    )
    if not text:
        print_json({
            "metadata_version": {"level": result.metadata_version.feature_level,
                                 "version": result.metadata_version.version},
            "features": dict(result.feature_levels),
            "formatted": [{"path": str(d.path), "type": d.directory_type.description,
                           "directory_id": uuid_to_str(d.directory_id)} for d in result.formatted],
            "skipped": [str(p) for p in result.skipped],
        })
    return 0


# ---------------------------------------------------------------------- random-uuid

def _add_random_uuid(commands: Any) -> None:
    sub = commands.add_parser("random-uuid", help="print a random cluster id (Kafka's base64 Uuid)",
                              description="Print a random UUID in Kafka's form, for --cluster-id.")
    add_output_flag(sub)
    sub.set_defaults(func=_random_uuid)


def _random_uuid(args: argparse.Namespace) -> int:
    value = random_cluster_id()
    if args.output == "json":
        print_json({"uuid": value})
    else:
        print(value)
    return 0


# ---------------------------------------------------------------------- info

def _add_info(commands: Any) -> None:
    sub = commands.add_parser("info", help="information about the log directories of this node",
                              description="Get information about the Kafka log directories on this node.")
    sub.add_argument("--config", "-c", required=True, type=input_file,
                     help="the Kafka configuration file to use")
    add_output_flag(sub)
    sub.set_defaults(func=_info)


def storage_info(config: StorageConfig) -> tuple[list[str], dict[str, Any], int]:
    """Kafka's ``infoCommand``: its lines, the same facts as JSON, and the exit code."""
    directories = list(config.directories)
    problems: list[str] = []
    found: list[str] = []
    first: dict[str, str] | None = None
    for directory in sorted(directories):
        path = Path(directory)
        if not path.is_dir():
            problems.append(f"{directory} {'is not a directory' if path.exists() else 'does not exist'}")
            continue
        found.append(directory)
        meta_path = path / META_PROPERTIES_FILE
        if not meta_path.exists():
            problems.append(f"{directory} is not formatted.")
            continue
        try:
            meta = read_meta_properties(meta_path)
        except StorageError as exc:
            problems.append(f"Error loading {meta_path}: {exc}")
            continue
        props = meta.to_properties()
        if first is None:
            first = props
        elif first.get("cluster.id") != props.get("cluster.id"):
            problems.append("Mismatched cluster IDs between storage directories.")
        elif first.get("node.id", first.get("broker.id")) != props.get("node.id", props.get("broker.id")):
            problems.append("Mismatched node IDs between storage directories.")
    if first is not None:
        kraft = bool(config.process_roles)
        if kraft and first.get("version") == "0":
            problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but "
                            "the directories are formatted for legacy mode.")
        elif not kraft and first.get("version") == "1":
            problems.append("The kafka configuration file appears to be for a legacy cluster, but the "
                            "directories are formatted for a cluster in KRaft mode.")
    lines: list[str] = []
    if not directories:
        lines.append("No directories specified.")
    else:
        if found:
            lines.append("Found log directory:" if len(found) == 1 else "Found log directories:")
            lines.extend(f"  {d}" for d in found)
            lines.append("")
        if first is not None:
            body = ", ".join(f"{k}={first[k]}" for k in sorted(first))
            lines.append(f"Found metadata: {{{body}}}")
            lines.append("")
        if problems:
            lines.append("Found problem:" if len(problems) == 1 else "Found problems:")
            lines.extend(f"  {p}" for p in problems)
            lines.append("")
    code = 1 if problems and directories else 0
    facts = {"directories": found, "metadata": first, "problems": problems}
    return lines, facts, code


def _info(args: argparse.Namespace) -> int:
    config = StorageConfig.load(args.config)
    if config.node_id < 0:  # Kafka's KafkaConfig refuses the file before the tool looks at anything
        raise FormatError('Missing required configuration "node.id" which has no default value.')
    lines, facts, code = storage_info(config)
    if args.output == "json":
        print_json(facts)
    else:
        for line in lines:
            print(line)
    return code


SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (
    _add_format, _add_info, _add_random_uuid, _add_version_mapping, _add_feature_dependencies)
