"""Entry point of the ``kraftwerk`` command: ``kraftwerk <group> <command> ...``.

Each command group lives in its own module exposing ``register(subparsers)``; a command sets
``func(args) -> int``. Every deliberate failure is a ``KraftwerkError`` and is printed as one
line on stderr with a non-zero exit, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from kraftwerk import __version__
from kraftwerk.errors import KraftwerkError

#: Command-group modules, in the order ``--help`` lists them.
GROUP_MODULES = (
    "kraftwerk.cli.protocol_cmd",
    "kraftwerk.cli.storage_cmd",
    "kraftwerk.cli.features_cmd",
    "kraftwerk.cli.dump_log_cmd",
    "kraftwerk.cli.metadata_cmd",
    "kraftwerk.cli.sim_cmd",
    "kraftwerk.cli.pipeline_cmd",
    "kraftwerk.cli.server_cmd",
    "kraftwerk.cli.cluster_cmd",
)


class UsageError(KraftwerkError):
    """Bad command-line input detected after argparse (exit code 1, like Kafka's tools)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kraftwerk",
        description="Apache Kafka's KRaft metadata.version lifecycle: tools, nodes and pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"kraftwerk {__version__}")
    parser.add_argument("--log-level", default=None,
                        help="logging level (default WARNING; simulations default to CRITICAL, since their "
                             "simulated nodes log every fault they are put through)")
    groups = parser.add_subparsers(dest="group", metavar="<group>")
    for name in GROUP_MODULES:
        importlib.import_module(name).register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = args.log_level or getattr(args, "default_log_level", "WARNING")
    logging.basicConfig(level=level.upper(), format="[%(asctime)s] %(levelname)s %(message)s")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.group is None else 2
    try:
        code: int = func(args)
    except KraftwerkError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
