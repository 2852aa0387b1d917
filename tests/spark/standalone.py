"""A real Spark standalone master and workers on loopback, for the cluster tests and the cluster bench.

Master and workers are started from PySpark's own ``bin/spark-class``, installed in a separate virtual
environment that holds only ``pyspark`` and ``pyarrow`` (no kraftwerk, no numpy): the workers' Python.
That environment is built once under ``.kraftwerk/test-cache`` (ignored by git) with pip, which takes
the wheels from its cache on a second build. Where mount namespaces are available (root), the workers
run in their own, in which :attr:`StandaloneCluster.hidden` is an empty tmpfs: a directory the driver
sees and the executors do not, like a path mounted on the driver's host only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata as metadata
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kraftwerk.runtime.local_cluster import free_ports, tail

REPO = Path(__file__).resolve().parent.parent.parent
CACHE = REPO / ".kraftwerk" / "test-cache"
#: what the workers' virtual environment is asked to hold
WORKER_PACKAGES = ("pyspark", "pyarrow")
#: what pip may install for them (their own dependencies and the venv's tools), and nothing else
WORKER_DISTRIBUTIONS = frozenset({"pyspark", "py4j", "pyarrow", "pip", "setuptools", "wheel"})
HOST = "127.0.0.1"


class ClusterStartError(Exception):
    """The master or a worker did not come up; the message holds the end of its log."""


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def worker_python(cache: Path = CACHE) -> Path:
    """The Python of a virtual environment with only this driver's pyspark and pyarrow versions."""
    versions = {p: metadata.version(p) for p in WORKER_PACKAGES}
    key = hashlib.sha256(json.dumps([sys.version, versions]).encode()).hexdigest()[:12]
    root = cache / f"spark-worker-venv-{key}"
    python = root / "bin" / "python"
    done = root / ".complete"
    with _locked(cache / f"{root.name}.lock"):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                            *(f"{p}=={v}" for p, v in versions.items())], check=True)
            done.write_text(json.dumps(versions))
    listed = subprocess.run([str(python), "-c", "import importlib.metadata as m; "
                             "print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))"],
                            check=True, capture_output=True, text=True).stdout.split()
    extra = set(listed) - WORKER_DISTRIBUTIONS
    if extra:
        raise ClusterStartError(f"the workers' environment {root} holds more than pyspark and pyarrow: "
                                f"{sorted(extra)}")
    return python


def _spark_home(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import pyspark, os; print(os.path.dirname(pyspark.__file__))"],
                         check=True, capture_output=True, text=True).stdout.strip()
    return Path(out)


#: runs the rest of the command line in a new mount namespace with an empty tmpfs over ``$0``
_HIDE = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs -o size=1m kraftwerk-hidden "$0" && exec "$@"']


def _can_hide(directory: Path) -> bool:
    """True where this process may start others in a new mount namespace (and mount a tmpfs there)."""
    if shutil.which("unshare") is None:
        return False
    return subprocess.run([*_HIDE, str(directory), "true"], capture_output=True).returncode == 0


@dataclass
class StandaloneCluster:
    root: Path
    python: Path
    """the workers' Python (the cluster's own)"""
    spark_home: Path
    master_url: str = ""
    hidden: Path | None = None
    """a directory the workers see empty (None where mount namespaces are not available)"""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def driver_env(self) -> dict[str, str]:
        """The environment for a driver process: loopback only, bundles cached in the repo, the
        driver's scratch files (where it unpacks what it ships) where the workers cannot see them,
        and no Spark or Python settings of this shell leaking in."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
        env.update(SPARK_LOCAL_IP=HOST, KRAFTWERK_CACHE_DIR=str(CACHE / "bundles"))
        if self.hidden is not None:
            local = self.hidden / "driver-local"
            local.mkdir(exist_ok=True)
            env["SPARK_LOCAL_DIRS"] = str(local)
        return env

    def _start(self, name: str, argv: list[str], ready: str, timeout: float) -> None:
        log = self.root / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYTHONPATH")}
        env.update(SPARK_HOME=str(self.spark_home), SPARK_LOCAL_IP=HOST,
                   SPARK_CONF_DIR=str(self.root / "conf"), SPARK_DAEMON_MEMORY="256m",
                   PYSPARK_PYTHON=str(self.python),
                   SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout
        while ready not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ClusterStartError(f"{name} did not start:\n{tail(log)}")
            time.sleep(0.2)

    def start(self, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120) -> None:
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        spark_class = str(self.spark_home / "bin" / "spark-class")
        (port,) = free_ports(1)
        self._start("master", [spark_class, "org.apache.spark.deploy.master.Master", "--host", HOST,
                               "--port", str(port), "--webui-port", "0"],
                    "I have been elected leader", timeout)
        self.master_url = f"spark://{HOST}:{port}"
        prefix: list[str] = []
        hidden = self.root / "driver-only"
        hidden.mkdir()
        if _can_hide(hidden):
            self.hidden = hidden
            prefix = [*_HIDE, str(hidden)]
        for i in range(workers):
            self._start(f"worker-{i}", [*prefix, spark_class, "org.apache.spark.deploy.worker.Worker",
                                        "--host", HOST, "--port", "0", "--webui-port", "0",
                                        "--cores", str(cores), "--memory", memory,
                                        "--work-dir", str(self.root / f"work-{i}"), self.master_url],
                        "Successfully registered with master", timeout)

    def stop(self) -> None:
        """Stop every process started here (each leads its own process group, executors included)."""
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs.clear()

    def work_dirs(self) -> list[Path]:
        return sorted(self.root.glob("work-*"))


def start_cluster(root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores each; stopped again if any fails to start."""
    python = worker_python()
    cluster = StandaloneCluster(root, python, _spark_home(python))
    try:
        cluster.start(workers, cores, memory)
    except BaseException:
        cluster.stop()
        raise
    return cluster
