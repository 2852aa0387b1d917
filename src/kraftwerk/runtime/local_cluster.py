"""A local cluster of real node processes on loopback under one directory (``kraftwerk cluster``).

Layout of ``D``::

    D/cluster.json                  the nodes, their ports, roles, software versions and pids
    D/node-<id>/server.properties   the node's config (Kafka's names)
    D/node-<id>/data/               log.dirs = metadata.log.dir (meta.properties, bootstrap, metadata log)
    D/node-<id>/server.log          the node's log (stderr of the process)

Controllers get ids 1..C, brokers C+1..C+B. Every node is formatted with the storage layer's
``format_node`` (what ``kraftwerk storage format`` runs). The quorum is dynamic by default, as in
Kafka 4.x's quick start: controllers are formatted with ``--initial-controllers`` (each with a
fresh directory id; kraft.version 1) and every node names ``controller.quorum.bootstrap.servers``;
``static_quorum`` keeps the older ``controller.quorum.voters`` form (kraft.version 0). Nodes are
started detached with
``python -m kraftwerk.cli.server_cmd start`` (``kraftwerk server start``
without the other command groups); a node is ready once its ``kraftwerk.ready`` file
names its pid, and *fenced* once its ``kraftwerk.fenced`` file does (a broker whose software
cannot support a finalized feature level: the controller refuses its registration, so waiting
for it would never end).

:meth:`LocalCluster.roll` restarts nodes one at a time on another software version (SIGTERM,
wait for the exit, start, wait until ready), the rehearsal of a rolling upgrade of binaries.
:func:`wait_finalized` polls ApiVersions on every live node until all report the same finalized
levels and epoch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kraftwerk.config import properties_values
from kraftwerk.config.errors import ConfigError
from kraftwerk.config.secrets import is_sensitive
from kraftwerk.config.types import ConfigResourceType
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.runtime.admin_client import AdminClient
from kraftwerk.runtime.client_security import PLAINTEXT, PROTOCOLS, ClientSecurity, inter_node_security
from kraftwerk.runtime.config import _parse_endpoints, _parse_protocol_map
from kraftwerk.runtime.errors import NetworkError, NodeError
from kraftwerk.runtime.node import FENCED_FILE, READY_FILE

BROKER = ConfigResourceType.BROKER
STATE_FILE = "cluster.json"
CONTROLLER_LISTENER = "CONTROLLER"
BROKER_LISTENER = "PLAINTEXT"
HOST = "127.0.0.1"


ZK_SOFTWARE_VERSION = "3.9"
ZK_BROKER_ROLE = "zk-broker"
"""A ZooKeeper-mode broker's default software: ZooKeeper mode ended with Kafka 4.0."""


@dataclass(slots=True)
class ZooKeeperProcess:
    """The ZooKeeper server of a ZooKeeper-mode cluster (Debian's, in ``D/zookeeper``)."""

    port: int = 0
    pid: int | None = None

    @property
    def connect_string(self) -> str:
        return f"{HOST}:{self.port}"

    def ensure_running(self, cluster: LocalCluster) -> None:
        """Start the server unless it runs (a restart picks a new port; the data stays), and make
        sure ``/cluster/id`` names the cluster, as its first broker would have created it."""
        from kraftwerk.runtime.zookeeper import ZooKeeperServer

        if self.pid is None or not pid_alive(self.pid):
            server = ZooKeeperServer(cluster.root / "zookeeper").start()
            self.port, self.pid = server.port, server.pid
            cluster.save()
        from kraftwerk.migration import encode
        from kraftwerk.migration.reader import connect

        with connect(self.connect_string) as client:
            if client.exists("/cluster/id") is None:
                client.create("/cluster/id", encode.encode_cluster_id(cluster.cluster_id), makepath=True)

    def stop(self, grace_s: float) -> None:
        if self.pid is not None and pid_alive(self.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace_s
            while pid_alive(self.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pid_alive(self.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
        self.pid = None


@dataclass(slots=True)
class LocalNode:
    node_id: int
    roles: str
    port: int
    software_version: str | None = None
    pid: int | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def directory(self, root: Path) -> Path:
        return root / f"node-{self.node_id}"

    def data_dir(self, root: Path) -> Path:
        return self.directory(root) / "data"

    def config_path(self, root: Path) -> Path:
        return self.directory(root) / "server.properties"

    def log_path(self, root: Path) -> Path:
        return self.directory(root) / "server.log"

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"


@dataclass(slots=True)
class LocalCluster:
    root: Path
    cluster_id: str
    nodes: list[LocalNode]
    static_quorum: bool = False
    zookeeper: ZooKeeperProcess | None = None
    """A ZooKeeper-mode cluster's ZooKeeper (its brokers have no controllers beside them)."""

    # --- persistence ------------------------------------------------------------------------

    def save(self) -> None:
        """Write the cluster's state; a node's possibly secret extra configs (passwords, JAAS
        configs, unknown names) are left out: they live in its server.properties only."""
        nodes = [asdict(n) for n in self.nodes]
        for node in nodes:
            node["extra"] = {k: v for k, v in node["extra"].items() if not is_sensitive(BROKER, k)}
        state: dict[str, Any] = {"clusterId": self.cluster_id, "staticQuorum": self.static_quorum,
                                 "nodes": nodes}
        if self.zookeeper is not None:
            state["zookeeper"] = asdict(self.zookeeper)
        tmp = self.root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.root / STATE_FILE)

    @classmethod
    def load(cls, root: Path) -> LocalCluster:
        path = root / STATE_FILE
        try:
            state = json.loads(path.read_text())
        except FileNotFoundError:
            raise NodeError(f"No cluster found in {root} (missing {STATE_FILE}); run `kraftwerk cluster up` "
                            "first") from None
        except (OSError, ValueError) as exc:
            raise NodeError(f"Unable to read {path}: {exc}") from None
        try:
            zookeeper = state.get("zookeeper")
            cluster = cls(root, str(state["clusterId"]), [LocalNode(**n) for n in state["nodes"]],
                          bool(state.get("staticQuorum", True)),
                          None if zookeeper is None else ZooKeeperProcess(**zookeeper))
        except (KeyError, TypeError) as exc:
            raise NodeError(f"Unable to read {path}: not a cluster state written by `kraftwerk cluster up` "
                            f"({type(exc).__name__}: {exc})") from None
        for node in cluster.nodes:  # the secrets save() left out, back from server.properties
            with contextlib.suppress(OSError, KraftwerkError):
                written = properties_values(node.config_path(root).read_text(encoding="latin-1"))
                node.extra.update({k: v for k, v in written.items()
                                   if is_sensitive(BROKER, k) and k not in node.extra})
        return cluster

    # --- layout -----------------------------------------------------------------------------

    @property
    def controllers(self) -> list[LocalNode]:
        return [n for n in self.nodes if n.is_controller]

    @property
    def brokers(self) -> list[LocalNode]:
        return [n for n in self.nodes if n.is_broker]

    def node(self, node_id: int) -> LocalNode:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise NodeError(f"No node {node_id} in {self.root}")

    @property
    def quorum_voters(self) -> str:
        return ",".join(f"{n.node_id}@{HOST}:{n.port}" for n in self.controllers)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.brokers)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(n.address for n in self.controllers)

    def properties(self, node: LocalNode) -> dict[str, str]:
        if node.roles == ZK_BROKER_ROLE:
            return self._zk_properties(node)
        listener = CONTROLLER_LISTENER if node.is_controller else BROKER_LISTENER
        props = {
            "process.roles": node.roles,
            "node.id": str(node.node_id),
            "listeners": f"{listener}://{HOST}:{node.port}",
            "controller.listener.names": CONTROLLER_LISTENER,
            "listener.security.protocol.map": f"{CONTROLLER_LISTENER}:PLAINTEXT,{BROKER_LISTENER}:PLAINTEXT",
            "log.dirs": str(node.data_dir(self.root)),
            "metadata.log.dir": str(node.data_dir(self.root)),
        }
        if self.static_quorum:
            props["controller.quorum.voters"] = self.quorum_voters
        else:
            props["controller.quorum.bootstrap.servers"] = self.bootstrap_controllers
        if node.is_broker:
            props["inter.broker.listener.name"] = BROKER_LISTENER
            props["advertised.listeners"] = f"{BROKER_LISTENER}://{HOST}:{node.port}"
        if node.software_version:
            props["kraftwerk.software.version"] = node.software_version
        props.update(node.extra)
        return props

    def _zk_properties(self, node: LocalNode) -> dict[str, str]:
        """A ZooKeeper-mode broker (Kafka 3.x's names; no process.roles)."""
        assert self.zookeeper is not None
        props = {
            "broker.id": str(node.node_id),
            "zookeeper.connect": self.zookeeper.connect_string,
            "listeners": f"{BROKER_LISTENER}://{HOST}:{node.port}",
            "advertised.listeners": f"{BROKER_LISTENER}://{HOST}:{node.port}",
            "inter.broker.listener.name": BROKER_LISTENER,
            "log.dirs": str(node.data_dir(self.root)),
            "kraftwerk.software.version": node.software_version or ZK_SOFTWARE_VERSION,
            "inter.broker.protocol.version": node.software_version or ZK_SOFTWARE_VERSION,
        }
        props.update(node.extra)
        return props

    def client_security(self, node: LocalNode) -> ClientSecurity:
        """How a client reaches ``node.address``: as the node's own config secures that listener
        (its protocol, and the trust store and SASL login the node itself uses there: Kafka's
        inter-node settings), so that the commands reading a cluster work on a secured one."""
        props = self.properties(node)
        controller_names = {n.strip().upper() for n in props.get("controller.listener.names", "").split(",")}
        try:
            listeners = _parse_endpoints(props.get("listeners"), "listeners")
            listener = next((e.listener for e in listeners if e.port == node.port), None)
            if listener is None:
                return PLAINTEXT
            kafka_default = ",".join(f"{p}:{p}" for p in PROTOCOLS)  # each protocol's own name
            protocols = _parse_protocol_map(props.get("listener.security.protocol.map", kafka_default), (),
                                            explicit=True)
            mechanism_config = ("sasl.mechanism.controller.protocol" if listener in controller_names
                                else "sasl.mechanism.inter.broker.protocol")
            protocol = protocols.get(listener, "PLAINTEXT")
            return inter_node_security(props, listener, protocol, mechanism_config)
        except ConfigError as exc:
            raise NodeError(f"Node {node.node_id}: {exc} (or give the client settings with "
                            "--command-config)") from None

    def controller_admin(self, *, security: ClientSecurity | None = None, api_timeout_s: float = 60.0
                         ) -> AdminClient:
        """An admin client of the controllers, secured as their listener is (or as ``security``)."""
        if security is None:
            security = self.client_security(self.controllers[0]) if self.controllers else PLAINTEXT
        return AdminClient(self.bootstrap_controllers, controllers=True, api_timeout_s=api_timeout_s,
                           security=security)

    def write_config(self, node: LocalNode) -> Path:
        node.directory(self.root).mkdir(parents=True, exist_ok=True)
        path = node.config_path(self.root)
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties(node).items()))
        return path

    # --- processes --------------------------------------------------------------------------

    def start(self, node: LocalNode) -> int:
        """Start one node detached (its own session, output to ``server.log``); returns its pid."""
        self.write_config(node)
        ready = node.data_dir(self.root) / READY_FILE
        with contextlib.suppress(FileNotFoundError):
            ready.unlink()
        with open(node.log_path(self.root), "ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kraftwerk.cli.server_cmd", "start", "--config",
                 str(node.config_path(self.root))],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            )
        node.pid = proc.pid
        self.save()
        return proc.pid

    def start_all(self, timeout_s: float = 60.0) -> dict[int, str]:
        """Start every node that is not running (controllers first) and wait until each is ready
        or fenced; returns the fenced ones (id → reason). A failure stops what this call started."""
        stopped = [n for n in self.nodes if n.pid is None or not pid_alive(n.pid)]
        if self.zookeeper is not None:
            self.zookeeper.ensure_running(self)
        try:
            controllers = [n for n in stopped if n.is_controller]
            for node in controllers:
                self.start(node)
            fenced = self.wait_ready(controllers, timeout_s)
            for node in stopped:
                if not node.is_controller:
                    self.start(node)
            fenced.update(self.wait_ready(self.brokers, timeout_s))
            self.wait_brokers_visible([b for b in self.brokers if b.node_id not in fenced], timeout_s)
        except BaseException:
            self.stop(stopped, grace_s=5)
            raise
        return fenced

    def ready_info(self, node: LocalNode) -> dict[str, Any] | None:
        """The node's ready file, if it names the node's current pid."""
        try:
            info: dict[str, Any] = json.loads((node.data_dir(self.root) / READY_FILE).read_text())
        except (OSError, ValueError):
            return None
        return info if info.get("pid") == node.pid else None

    def fenced_info(self, node: LocalNode) -> dict[str, Any] | None:
        """The node's fenced file (Kafka's refusal text in ``reason``), if it names its current pid."""
        try:
            info: dict[str, Any] = json.loads((node.data_dir(self.root) / FENCED_FILE).read_text())
        except (OSError, ValueError):
            return None
        return info if info.get("pid") == node.pid else None

    def wait_ready(self, nodes: Iterable[LocalNode], timeout_s: float = 60.0) -> dict[int, str]:
        """Wait until every node is ready or fenced; returns the fenced ones (id → reason)."""
        pending = list(nodes)
        fenced: dict[int, str] = {}
        deadline = time.monotonic() + timeout_s
        while pending:
            for node in list(pending):
                if self.ready_info(node) is not None:
                    pending.remove(node)
                    continue
                refused = self.fenced_info(node)
                if refused is not None:
                    fenced[node.node_id] = str(refused.get("reason"))
                    pending.remove(node)
                elif node.pid is not None and not pid_alive(node.pid):
                    where = node.log_path(self.root)
                    raise NodeError(f"Node {node.node_id} exited during start-up; see {where}:\n"
                                    f"{tail(where)}")
            if pending and time.monotonic() > deadline:
                ids = ", ".join(str(n.node_id) for n in pending)
                raise NodeError(f"Timed out after {timeout_s:g}s waiting for node(s) {ids} to be ready")
            if pending:
                time.sleep(0.05)
        return fenced

    def wait_brokers_visible(self, brokers: Sequence[LocalNode], timeout_s: float = 60.0) -> None:
        """Wait until every broker's DescribeCluster lists all of ``brokers``: each answers from its
        own image, which learns of the others' unfencing a moment after they are ready, and a client
        must see the whole cluster whichever broker it bootstraps from."""
        expected = sorted(b.node_id for b in brokers)
        deadline = time.monotonic() + timeout_s
        for broker in brokers:
            security = self.client_security(broker)  # a config it cannot use fails here, not in the loop
            while True:
                seen: list[int] = []
                with contextlib.suppress(KraftwerkError), \
                        AdminClient(broker.address, request_timeout_s=5, api_timeout_s=5,
                                    security=security) as admin:
                    seen = sorted(n.node_id for n in admin.describe_cluster().nodes if not n.fenced)
                if seen == expected:
                    break
                if time.monotonic() > deadline:
                    raise NodeError(f"Timed out after {timeout_s:g}s waiting for broker {broker.node_id} to "
                                    f"list brokers {expected} (it lists {seen})")
                time.sleep(0.05)

    def active_controller(self) -> int | None:
        """The leader the controllers' ``quorum-state`` files name in the highest epoch."""
        from kraftwerk.storage.quorum_state import read_quorum_state

        best: tuple[int, int] | None = None
        for node in self.controllers:
            path = node.data_dir(self.root) / "__cluster_metadata-0" / "quorum-state"
            try:
                state = read_quorum_state(path)
            except (OSError, ValueError, KraftwerkError):
                continue
            if state.leader_id >= 0 and (best is None or state.leader_epoch > best[0]):
                best = (state.leader_epoch, state.leader_id)
        return None if best is None else best[1]

    def roll_order(self, node_ids: Sequence[int] = ()) -> list[LocalNode]:
        """Standby controllers, then the active controller, then brokers (or ``node_ids`` as given)."""
        if node_ids:
            return [self.node(i) for i in node_ids]
        active = self.active_controller()
        controllers = sorted(self.controllers, key=lambda n: (n.node_id == active, n.node_id))
        return controllers + [n for n in self.brokers if not n.is_controller]

    def roll(self, software_version: str | None, node_ids: Sequence[int] = (), *, timeout_s: float = 60.0,
             grace_s: float = 10.0,
             on_restart: Callable[[LocalNode, float], None] | None = None,
             keep_software: bool = False) -> list[int]:
        """Restart nodes one at a time on ``software_version`` (None: this software; with
        ``keep_software`` each node keeps its own): SIGTERM, wait for the exit, start, wait until
        ready. Stops at a node that comes back fenced (NodeError with Kafka's refusal text).
        Returns the restarted ids."""
        done: list[int] = []
        for node in self.roll_order(node_ids):
            started = time.monotonic()
            self.stop([node], grace_s=grace_s)
            if not keep_software:
                node.software_version = software_version
            self.start(node)
            fenced = self.wait_ready([node], timeout_s)
            if fenced:
                raise NodeError(
                    f"Broker {node.node_id} restarted on software {software_version or 'latest'} but stays "
                    f"fenced: {fenced[node.node_id]}")
            done.append(node.node_id)
            if on_restart is not None:
                on_restart(node, time.monotonic() - started)
        return done

    def stop(self, nodes: Sequence[LocalNode], grace_s: float = 10.0) -> list[int]:
        """SIGTERM, then SIGKILL after ``grace_s``; returns the ids that had to be killed."""
        for node in nodes:
            if node.pid is not None and pid_alive(node.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        killed: list[int] = []
        for node in nodes:
            if node.pid is None:
                continue
            while pid_alive(node.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pid_alive(node.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(node.pid, signal.SIGKILL)
                killed.append(node.node_id)
                while pid_alive(node.pid):
                    time.sleep(0.01)
            node.pid = None
        self.save()
        zk_killed = [n for n in nodes if n.node_id in killed and n.roles == ZK_BROKER_ROLE]
        if zk_killed and self.zookeeper is not None and self.zookeeper.port:
            # its session outlives a killed ZooKeeper broker until ZooKeeper expires it, and with it
            # /brokers/ids/<id>: a restart before then would find its id taken
            from kraftwerk.runtime.zookeeper import wait_znodes_gone

            session_ms = max(int(self.properties(b).get("zookeeper.session.timeout.ms", "18000"))
                             for b in zk_killed)
            timeout_s = 2 * session_ms / 1000 + 5
            left = wait_znodes_gone(self.zookeeper.connect_string,
                                    [f"/brokers/ids/{b.node_id}" for b in zk_killed], timeout_s)
            if left:
                raise NodeError(f"{', '.join(left)} of killed broker(s) still registered after "
                                f"{timeout_s:g}s (the ZooKeeper session did not expire)")
        return killed


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (reaping it if it is our exited child)."""
    with contextlib.suppress(ChildProcessError, OSError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie that is not our child still answers kill(0); check /proc when we can.
    stat = Path(f"/proc/{pid}/stat")
    with contextlib.suppress(OSError):
        if stat.read_text().split(") ", 1)[1].startswith("Z"):
            return False
    return True


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def free_ports(count: int) -> list[int]:
    """Ports the OS hands out now (bound together, so they are distinct)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def plan_cluster(root: Path, cluster_id: str, controllers: int, brokers: int, *,
                 software_version: str | None = None, combined: bool = False,
                 extra: Mapping[str, str] | None = None, static_quorum: bool = False) -> LocalCluster:
    """Assign ids, roles and free ports (nothing is written)."""
    if controllers < 1:
        raise NodeError("A cluster needs at least one controller")
    ports = free_ports(controllers + brokers)
    nodes = [LocalNode(i + 1, "broker,controller" if combined else "controller", ports[i], software_version,
                       extra=dict(extra or {})) for i in range(controllers)]
    nodes += [LocalNode(controllers + i + 1, "broker", ports[controllers + i], software_version,
                        extra=dict(extra or {})) for i in range(brokers)]
    return LocalCluster(root, cluster_id, nodes, static_quorum)


def plan_zk_cluster(root: Path, cluster_id: str, brokers: int, *, software_version: str | None = None,
                    extra: Mapping[str, str] | None = None) -> LocalCluster:
    """A ZooKeeper-mode cluster: brokers 1..B and their ZooKeeper (nothing is written or started)."""
    if brokers < 1:
        raise NodeError("A ZooKeeper-mode cluster needs at least one broker")
    nodes = [LocalNode(i + 1, "zk-broker", port, software_version, extra=dict(extra or {}))
             for i, port in enumerate(free_ports(brokers))]
    return LocalCluster(root, cluster_id, nodes, zookeeper=ZooKeeperProcess())


def format_cluster(cluster: LocalCluster, release_version: str | None, *,
                   scram: Sequence[MetadataRecord] = ()) -> None:
    """Format every node's directory as ``kraftwerk storage format`` does: controllers of a dynamic
    quorum with ``--initial-controllers`` (every controller, a fresh directory id each); ``scram``
    are ``--add-scram``'s credential records. Every node's ``server.properties`` is checked against
    the release's config rules (KIP-1294) first: one that breaks them refuses the whole cluster with
    nothing written."""
    from kraftwerk.storage.format import (
        FormatError,
        InitialController,
        check_static_configs,
        format_node,
        random_uuid,
    )
    from kraftwerk.versions.software import SoftwareVersion

    def software(node: LocalNode) -> SoftwareVersion | None:
        # the node's own release bounds --release-version (4.4-IV1 needs software 4.4)
        return SoftwareVersion.for_release(node.software_version) if node.software_version else None

    refused = []
    for node in cluster.nodes:
        try:
            check_static_configs(release_version, cluster.properties(node), software(node))
        except FormatError as exc:
            refused.append(f"node {node.node_id}: {exc}".replace("\n", f"\nnode {node.node_id}: "))
    if refused:
        raise FormatError("\n".join(refused))
    initial = None if cluster.static_quorum else tuple(
        InitialController(n.node_id, HOST, n.port, random_uuid()) for n in cluster.controllers)
    for node in cluster.nodes:
        cluster.write_config(node)
        data = node.data_dir(cluster.root)
        format_node(cluster_id=cluster.cluster_id, node_id=node.node_id, log_dirs=[data],
                    metadata_log_dir=data, release_version=release_version,
                    initial_controllers=initial if node.is_controller else None,
                    controller_listener_name=CONTROLLER_LISTENER, scram=scram, software=software(node))


def add_controller_node(cluster: LocalCluster, software_version: str | None = None) -> LocalNode:
    """Plan, configure and format one more controller (not started): the next id, a free port, its
    metadata dir formatted with ``--no-initial-controllers``, so that it starts as an observer and
    joins the voters only through AddRaftVoter."""
    from kraftwerk.storage.format import format_node

    node_id = max(n.node_id for n in cluster.nodes) + 1
    (port,) = free_ports(1)
    node = LocalNode(node_id, "controller", port, software_version)
    cluster.nodes.append(node)
    cluster.write_config(node)
    data = node.data_dir(cluster.root)
    format_node(cluster_id=cluster.cluster_id, node_id=node_id, log_dirs=[data], metadata_log_dir=data,
                no_initial_controllers=True, controller_listener_name=CONTROLLER_LISTENER)
    cluster.save()
    return node


def metadata_directory_id(cluster: LocalCluster, node: LocalNode) -> uuid.UUID:
    """The ``directory.id`` of a node's metadata dir (its voter key with the node id)."""
    from kraftwerk.storage.properties import read_meta_properties

    meta = read_meta_properties(node.data_dir(cluster.root) / "meta.properties")
    if meta.directory_id is None:
        raise NodeError(f"No directory id found in {node.data_dir(cluster.root)}")
    return meta.directory_id


# --- feature polling (ApiVersions on each node) -----------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeFeatures:
    """What one node's ApiVersions reports: finalized levels (0-level features absent) and epoch."""

    node_id: int
    finalized: Mapping[str, int]
    epoch: int


async def _api_versions_async(address: str, timeout_s: float, security: ClientSecurity) -> dict[str, Any]:
    from kraftwerk.protocol.error_codes import Errors
    from kraftwerk.runtime.client import Connection

    host, port = address.rsplit(":", 1)
    conn = await Connection.open(host, int(port), client_id="kraftwerk-cluster",
                                 connect_timeout_s=timeout_s, security=security)
    try:
        body: dict[str, Any] = await conn.request(
            18, 3, {"clientSoftwareName": "kraftwerk", "clientSoftwareVersion": "0"}, timeout_s=timeout_s)
    finally:
        await conn.close()
    if body.get("errorCode", 0) != 0:
        raise NetworkError(f"ApiVersions to {address} failed: {Errors.for_code(body['errorCode']).name}")
    return body


def ask_api_versions(address: str, timeout_s: float = 5.0, security: ClientSecurity = PLAINTEXT
                     ) -> dict[str, Any]:
    """One ApiVersions v3 call; NetworkError saying why the node did not answer (refused, timed
    out, wrong credentials, an error code), which ``cluster status`` shows."""
    import asyncio

    return asyncio.run(_api_versions_async(address, timeout_s, security))


def api_versions(address: str, timeout_s: float = 5.0, security: ClientSecurity = PLAINTEXT
                 ) -> dict[str, Any] | None:
    """One ApiVersions v3 call (None when the node does not answer: :func:`ask_api_versions` says why)."""
    try:
        return ask_api_versions(address, timeout_s, security)
    except NetworkError:
        return None


def node_features(node: LocalNode, security: ClientSecurity = PLAINTEXT) -> NodeFeatures | None:
    body = api_versions(node.address, security=security)
    return None if body is None else _features(node.node_id, body)


def _features(node_id: int, body: Mapping[str, Any]) -> NodeFeatures:
    levels = {f["name"]: f["maxVersionLevel"] for f in body.get("finalizedFeatures", [])}
    return NodeFeatures(node_id, levels, int(body.get("finalizedFeaturesEpoch", -1)))


def wait_finalized(cluster: LocalCluster, expected: Mapping[str, int], *, timeout_s: float = 30.0,
                   nodes: Sequence[LocalNode] | None = None) -> dict[int, NodeFeatures]:
    """Poll ApiVersions on every node (controllers and brokers) until each reports ``expected``
    (level 0 = absent) and all report the same FinalizedFeaturesEpoch; NodeError after
    ``timeout_s`` naming the nodes that lag. A failure bound, not a performance target."""
    targets = list(nodes if nodes is not None else cluster.nodes)
    security = {node.node_id: cluster.client_security(node) for node in targets}
    deadline = time.monotonic() + timeout_s
    while True:
        seen: dict[int, NodeFeatures] = {}
        unanswered: dict[int, str] = {}
        for node in targets:
            try:
                got = _features(node.node_id, ask_api_versions(node.address, security=security[node.node_id]))
            except NetworkError as exc:
                unanswered[node.node_id] = str(exc)
                continue
            if all(got.finalized.get(k, 0) == v for k, v in expected.items()):
                seen[node.node_id] = got
        epochs = {f.epoch for f in seen.values()}
        if len(seen) == len(targets) and len(epochs) == 1:
            return seen
        if time.monotonic() > deadline:
            lagging = sorted(n.node_id for n in targets if n.node_id not in seen)
            why = "".join(f"; node {i} did not answer: {text}" for i, text in sorted(unanswered.items()))
            raise NodeError(f"Timed out after {timeout_s:g}s waiting for {dict(expected)} on every node: "
                            f"lagging {lagging}, epochs {sorted(epochs)}{why}")
        time.sleep(0.1)
