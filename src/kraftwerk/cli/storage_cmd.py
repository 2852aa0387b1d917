"""``kraftwerk storage <command>``: the offline commands of ``kafka-storage``.

Each subcommand is one ``_add_*`` function in ``SUBCOMMANDS``; to add one (``format``,
``random-uuid``, ``info``), write its ``_add_*`` and handler and append it to the tuple.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.mapping import feature_dependencies, version_mapping


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
    sub.add_argument("--release-version", "-r", metavar="VERSION",
                     help=f"release version, e.g. 3.9 or 3.9-IV0 (default {mvs.LATEST_PRODUCTION})")
    add_output_flag(sub)
    sub.set_defaults(func=_version_mapping)


def _version_mapping(args: argparse.Namespace) -> int:
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
    sub.add_argument("--feature", "-f", action="append", required=True, metavar="NAME=LEVEL",
                     help="feature and level to look up, e.g. eligible.leader.replicas.version=1 "
                          "(repeatable)")
    add_output_flag(sub)
    sub.set_defaults(func=_feature_dependencies)


def _feature_dependencies(args: argparse.Namespace) -> int:
    specs: list[str] = args.feature
    if args.output == "json":
        print_json([feature_dependencies(spec).to_json() for spec in specs])
        return 0
    for spec in specs:  # print as we go: like Kafka, lines before a bad spec stay printed
        for line in feature_dependencies(spec).lines():
            print(line)
    return 0


SUBCOMMANDS: tuple[Callable[[Any], None], ...] = (_add_version_mapping, _add_feature_dependencies)
