"""``kraftwerk server start --config server.properties``: run one KRaft node (``kafka-server-start.sh``),
or a ZooKeeper-mode broker when the file sets ``zookeeper.connect`` and no ``process.roles``.

The process logs to stderr (and to ``kraftwerk.log.file`` / ``--log-file`` when set) at INFO or
``--log-level``, with per-logger levels from ``KRAFTWERK_LOG_LEVELS`` (``logger=LEVEL,...``, e.g.
``kraftwerk.request=DEBUG`` for one line per request, as Kafka's ``KAFKA_LOG4J_OPTS`` points its
scripts at a log4j file), writes
``kraftwerk.ready`` into its metadata log dir once it serves, shuts down gracefully on SIGTERM or
SIGINT (exit 0), and exits 1 on a fatal fault (e.g. an unsupported FeatureLevelRecord).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from typing import Any

from kraftwerk.cli.args import input_file, key_value, log_level, output_file
from kraftwerk.config import properties_values
from kraftwerk.runtime.config import ServerConfig
from kraftwerk.runtime.errors import ConfigError
from kraftwerk.runtime.zk_config import ZkServerConfig, is_zookeeper_mode

LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"
LOG_LEVELS_ENV = "KRAFTWERK_LOG_LEVELS"


def register(groups: Any) -> None:
    parser = groups.add_parser("server", help="run a KRaft node (controller, broker or both)")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    start = commands.add_parser(
        "start", help="start a node from server.properties",
        description="Start a node as kafka-server-start.sh does: process.roles, node.id, listeners, "
                    "controller.quorum.voters, log.dirs, metadata.log.dir, ... plus "
                    "kraftwerk.software.version (the Kafka release whose feature ranges the node supports).")
    start.add_argument("--config", "-c", required=True, type=input_file, metavar="FILE",
                       help="the server.properties file")
    start.add_argument("--log-file", type=output_file, metavar="FILE",
                       help="also log to this file (overrides kraftwerk.log.file)")
    start.add_argument("--override", action="append", type=key_value, default=[], metavar="KEY=VALUE",
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
    for item in os.environ.get(LOG_LEVELS_ENV, "").split(","):
        name, sep, value = item.partition("=")
        if sep:
            try:
                logging.getLogger(name.strip()).setLevel(log_level(value))
            except argparse.ArgumentTypeError as exc:
                raise ConfigError(f"{LOG_LEVELS_ENV}: {exc}") from None


def _start(args: argparse.Namespace) -> int:
    props = {**properties_values(args.config.read_text(encoding="latin-1"), str(args.config)),
             **dict(args.override)}
    config: ServerConfig | ZkServerConfig = (ZkServerConfig.from_properties(props) if is_zookeeper_mode(props)
                                             else ServerConfig.from_properties(props))
    # A node logs at INFO unless --log-level says otherwise (kraftwerk's own default is WARNING).
    log_file = args.log_file or config.log_file
    _configure_logging(args.log_level or "INFO", str(log_file) if log_file else None)
    return asyncio.run(_run(config))


async def _run(config: ServerConfig | ZkServerConfig) -> int:
    """Start the node (KRaft, or ZooKeeper-mode for a ZkServerConfig), serve until SIGTERM or
    SIGINT or a fatal fault, stop it."""
    from kraftwerk.runtime.node import Node
    from kraftwerk.runtime.zk_node import ZkNode

    node = ZkNode(config) if isinstance(config, ZkServerConfig) else Node(config)
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
    from kraftwerk.cli.main import ArgumentParser, describe_os_error
    from kraftwerk.errors import KraftwerkError

    parser = ArgumentParser(prog="kraftwerk")
    parser.add_argument("--log-level", type=log_level, default="INFO", help="logging level (default INFO)")
    register(parser.add_subparsers(dest="group", metavar="<group>", required=True))
    args = parser.parse_args(["server", *(sys.argv[1:] if argv is None else argv)])
    try:
        code: int = args.func(args)
    except KraftwerkError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:
        print(describe_os_error(exc), file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
