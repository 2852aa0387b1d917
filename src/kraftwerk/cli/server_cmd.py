"""``kraftwerk server start --config server.properties``: run one KRaft node (``kafka-server-start.sh``).

The process logs to stderr (and to ``kraftwerk.log.file`` / ``--log-file`` when set), writes
``kraftwerk.ready`` into its metadata log dir once it serves, shuts down gracefully on SIGTERM or
SIGINT (exit 0), and exits 1 on a fatal fault (e.g. an unsupported FeatureLevelRecord).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from typing import Any

from kraftwerk.runtime.config import ServerConfig

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


def register(groups: Any) -> None:
    parser = groups.add_parser("server", help="run a KRaft node (controller, broker or both)")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    start = commands.add_parser(
        "start", help="start a node from server.properties",
        description="Start a node as kafka-server-start.sh does: process.roles, node.id, listeners, "
                    "controller.quorum.voters, log.dirs, metadata.log.dir, ... plus "
                    "kraftwerk.software.version (the Kafka release whose feature ranges the node supports).")
    start.add_argument("--config", "-c", required=True, metavar="FILE", help="the server.properties file")
    start.add_argument("--log-file", metavar="FILE",
                       help="also log to this file (overrides kraftwerk.log.file)")
    start.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                       help="override a property of the config file (repeatable), as Kafka's --override")
    start.set_defaults(func=_start)


def _configure_logging(level: str, log_file: str | None) -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    formatter = logging.Formatter(LOG_FORMAT)
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(level)


def _start(args: argparse.Namespace) -> int:
    from kraftwerk.runtime.errors import ConfigError

    config = ServerConfig.load(args.config)
    if args.override:
        props = dict(config.raw)
        for item in args.override:
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"Invalid override {item!r}: expected KEY=VALUE")
            props[key.strip()] = value.strip()
        config = ServerConfig.from_properties(props)
    level = args.log_level.upper() if args.log_level.upper() != "WARNING" else "INFO"
    _configure_logging(level, args.log_file or config.log_file)
    return asyncio.run(_run(config))


async def _run(config: ServerConfig) -> int:
    from kraftwerk.runtime.node import Node

    node = Node(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.stopped.set)
    try:
        await node.start()
    except BaseException:
        await node.stop()
        raise
    await node.stopped.wait()
    await node.stop()
    return node.exit_code


def main(argv: list[str] | None = None) -> int:
    """``python -m kraftwerk.cli.server_cmd start --config F``: what ``kraftwerk cluster`` launches.

    It builds only this group's parser, so a node process never depends on the other command
    groups importing cleanly; errors are one stderr line and exit 1, as in ``kraftwerk``.
    """
    import argparse as _argparse

    from kraftwerk.errors import KraftwerkError

    parser = _argparse.ArgumentParser(prog="kraftwerk")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    register(parser.add_subparsers(dest="group", metavar="<group>", required=True))
    args = parser.parse_args(["server", *(sys.argv[1:] if argv is None else argv)])
    try:
        code: int = args.func(args)
    except KraftwerkError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
