"""``kraftwerk server start``: the README's command runs a node as it is written (no --log-level)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftwerk.runtime.local_cluster import format_cluster, plan_cluster
from kraftwerk.runtime.node import READY_FILE
from kraftwerk.storage.format import random_cluster_id

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]


def test_server_start_without_log_level_serves_and_stops_cleanly(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, random_cluster_id(), 1, 0)
    format_cluster(cluster, None)
    node = cluster.nodes[0]
    config = cluster.write_config(node)
    proc = subprocess.Popen([sys.executable, "-m", "kraftwerk.cli.main", "server", "start", "--config",
                             str(config)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready = node.data_dir(tmp_path) / READY_FILE
    try:
        while not ready.exists() and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        assert json.loads(ready.read_text())["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    # a node logs at INFO by default, and never a traceback
    assert "INFO [KafkaRaftServer nodeId=1] Kafka Server started" in err and "Traceback" not in err


def test_a_zookeeper_broker_with_the_migration_flag_but_no_quorum_refuses_to_start(tmp_path: Path) -> None:
    """Kafka 3.9's KafkaConfig refuses it before touching ZooKeeper (none runs at this address)."""
    config = tmp_path / "server.properties"
    config.write_text("broker.id=1\nzookeeper.connect=127.0.0.1:1\nzookeeper.metadata.migration.enable=true\n"
                      f"log.dirs={tmp_path / 'data'}\nlisteners=PLAINTEXT://127.0.0.1:0\n")
    proc = subprocess.run([sys.executable, "-m", "kraftwerk.cli.main", "server", "start", "--config",
                           str(config)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr == (
        "If using zookeeper.metadata.migration.enable, either controller.quorum.bootstrap.servers must "
        "contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set "
        "of controllers.\n")
    assert not (tmp_path / "data").exists()
