"""Entry point of the ``kraftwerk`` command: ``kraftwerk <group> <command> ...``.

Each command group lives in its own module exposing ``register(subparsers)``; a command sets
``func(args) -> int``. Every option that takes a value has a type from :mod:`kraftwerk.cli.args`,
so a wrong value is refused before any work starts. Every deliberate failure (a usage error, a
``KraftwerkError``, a file the system refuses) is one line on stderr and a non-zero exit, never a
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from kraftwerk import __version__
from kraftwerk.cli.args import log_level
from kraftwerk.errors import KraftwerkError

#: Command-group modules, in the order ``--help`` lists them.
GROUP_MODULES = (
    "kraftwerk.cli.protocol_cmd",
    "kraftwerk.cli.storage_cmd",
    "kraftwerk.cli.features_cmd",
    "kraftwerk.cli.topics_cmd",
    "kraftwerk.cli.configs_cmd",
    "kraftwerk.cli.scram_cmd",
    "kraftwerk.cli.acls_cmd",
    "kraftwerk.cli.dump_log_cmd",
    "kraftwerk.cli.metadata_cmd",
    "kraftwerk.cli.sim_cmd",
    "kraftwerk.cli.pipeline_cmd",
    "kraftwerk.cli.server_cmd",
    "kraftwerk.cli.cluster_cmd",
    "kraftwerk.cli.produce_cmd",
    "kraftwerk.cli.consume_cmd",
    "kraftwerk.cli.migration_cmd",
)


class UsageError(KraftwerkError):
    """Bad command-line input detected after argparse (exit code 1, like Kafka's tools)."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one stderr line (exit 2) instead of a usage block; the
    sub-command parsers inherit it (``add_subparsers`` builds them with this class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="kraftwerk",
        description="Apache Kafka's KRaft metadata.version lifecycle: tools, nodes and pipelines.",
    )
    parser.add_argument("--version", action="version", version=f"kraftwerk {__version__}")
    parser.add_argument("--log-level", type=log_level, default=None,
                        help="logging level (default WARNING; simulations default to CRITICAL, since their "
                             "simulated nodes log every fault they are put through)")
    groups = parser.add_subparsers(dest="group", metavar="<group>")
    for name in GROUP_MODULES:
        importlib.import_module(name).register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 0 if args.group is None else 2
    # Log records go to this call's stderr (also when main runs in-process, as in the tests).
    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(levelname)s %(message)s"))
    saved_level = root.level
    root.addHandler(handler)
    root.setLevel(args.log_level or getattr(args, "default_log_level", "WARNING"))
    try:
        return _run(func, args)
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_level)


def _run(func: Any, args: argparse.Namespace) -> int:
    """Run one command; every failure it means to report becomes one stderr line."""
    try:
        code: int = func(args)
    except KraftwerkError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    except OSError as exc:  # a file or socket the system refused: its path and reason, as Kafka's tools
        print(describe_os_error(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


def describe_os_error(exc: OSError) -> str:
    """``path: reason`` (or ``path -> other: reason``) on one line."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return f"{exc.filename}{target}: {reason}"


if __name__ == "__main__":
    sys.exit(main())
