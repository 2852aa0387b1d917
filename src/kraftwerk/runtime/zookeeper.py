"""A real ZooKeeper server (Debian's ``zookeeper`` package) as a throwaway process on loopback.

ZooKeeper-mode clusters and the KIP-866 migration tools need a real ZooKeeper, never an imitation.
Debian's ``zkServer.sh`` reads a hard-coded environment file (``/etc/zookeeper/conf/environment``)
and logs to ``/var/log/zookeeper``, so the server is started here directly with ``java``: the jar's
manifest pulls in its dependencies, a log4j binding sends the server's log to ``server.log`` in the
server's own directory, and the config file is written fresh (standalone, loopback only, the Jetty
admin server off). The client port is one the OS hands out; if another process takes it between
asking and binding, the start is retried on a new one.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kraftwerk.runtime.errors import NodeError
from kraftwerk.runtime.local_cluster import HOST, free_ports, tail

log = logging.getLogger(__name__)

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
#: The SLF4J → log4j 1.2 binding Debian ships; without it the server logs nothing.
LOG_JARS = (Path("/usr/share/java/slf4j-log4j12.jar"), Path("/usr/share/java/log4j-1.2.jar"))
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0

_LOG4J = """log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.ConsoleAppender
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
"""


class ZooKeeperUnavailableError(NodeError):
    """Debian's ZooKeeper is not installed, or the server did not start."""


def zookeeper_installed() -> bool:
    return ZOOKEEPER_JAR.is_file() and shutil.which("java") is not None


def _config(data_dir: Path, port: int) -> str:
    return "\n".join([
        "tickTime=2000",
        f"dataDir={data_dir}",
        f"clientPort={port}",
        f"clientPortAddress={HOST}",
        "admin.enableServer=false",
        "4lw.commands.whitelist=ruok,srvr,stat",
        "maxClientCnxns=0",
        "",
    ])


def _serving(port: int) -> bool:
    """``srvr`` names the server's mode only once it takes sessions (``ruok`` answers ``imok``
    earlier, while a client's session is still refused with "ZooKeeperServer not running")."""
    try:
        with socket.create_connection((HOST, port), timeout=0.5) as sock:
            sock.sendall(b"srvr")
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            return b"Mode: " in answer
    except OSError:
        return False


@dataclass
class ZooKeeperServer:
    """One standalone ZooKeeper server process under ``root`` (``conf/``, ``data/``, ``server.log``)."""

    root: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        """``host:port``, what ``zookeeper.connect`` and ``--zookeeper`` take."""
        return f"{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def start(self, attempts: int = 3, *, same_port: bool = False) -> ZooKeeperServer:
        """Start the server and wait until it serves sessions (on the port it had before with
        ``same_port``: a restart its clients reconnect to)."""
        if not zookeeper_installed():
            raise ZooKeeperUnavailableError(
                f"ZooKeeper is not installed ({ZOOKEEPER_JAR} or java missing): run scripts/setup.sh, or "
                "apt-get install zookeeper")
        for attempt in range(attempts):
            if not (same_port and self.port):
                self.port = free_ports(1)[0]
            if self._start_once():
                log.info("ZooKeeper started on %s (pid %d)", self.connect_string, self.pid)
                return self
            log.info("ZooKeeper did not start on port %d (attempt %d)", self.port, attempt + 1)
        raise ZooKeeperUnavailableError(f"ZooKeeper did not start; its log ends:\n{tail(self.log_path)}")

    @property
    def pid(self) -> int:
        return -1 if self.process is None else self.process.pid

    def _start_once(self) -> bool:
        conf = self.root / "conf"
        data = self.root / "data"
        conf.mkdir(parents=True, exist_ok=True)
        data.mkdir(parents=True, exist_ok=True)
        (conf / "zoo.cfg").write_text(_config(data, self.port))
        (conf / "log4j.properties").write_text(_LOG4J)
        classpath = os.pathsep.join(str(p) for p in (conf, ZOOKEEPER_JAR, *LOG_JARS) if p.exists())
        argv = ["java", "-Xmx256m", f"-Dzookeeper.log.dir={self.root}", "-Dzookeeper.jmx.log4j.disable=true",
                "-cp", classpath, MAIN_CLASS, str(conf / "zoo.cfg")]
        with self.log_path.open("ab") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if _serving(self.port):
                return True
            time.sleep(0.1)
        self.stop()
        return False

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT_S`; the data directory stays."""
        proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_znodes_gone(connect_string: str, paths: Sequence[str], timeout_s: float) -> list[str]:
    """Wait until none of ``paths`` exists (the ephemerals of a session ZooKeeper has yet to expire);
    returns those still there after ``timeout_s``. An unreachable ZooKeeper returns []: it expires
    the sessions itself once it is back, before anyone can register again."""
    from kraftwerk.migration.errors import ZooKeeperError
    from kraftwerk.migration.reader import connect

    deadline = time.monotonic() + timeout_s
    try:
        with connect(connect_string) as client:
            left = [p for p in paths if client.exists(p) is not None]
            while left and time.monotonic() < deadline:
                time.sleep(0.1)
                left = [p for p in left if client.exists(p) is not None]
            return left
    except ZooKeeperError:
        return []
