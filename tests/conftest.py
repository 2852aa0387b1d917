"""Shared test fixtures: where the bytes real Kafka produced live, and a real ZooKeeper.

Everything the tests need is in ``tests/data/kafka/`` (its README says which Kafka release and
command produced each file). Only the Kafka 3.7 data dir of another project stays outside the
repository, at ``../shared/golden/kafka-3.7-cluster``; ``tests/kafka37`` reads it and skips as a
whole when it is absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.runtime.zookeeper import ZooKeeperServer, zookeeper_installed

REPO = Path(__file__).resolve().parent.parent
KAFKA_DATA = REPO / "tests" / "data" / "kafka"
KAFKA_37_CLUSTER = REPO.parent / "shared" / "golden" / "kafka-3.7-cluster"


def golden_path(*parts: str) -> Path:
    """A file or directory under ``tests/data/kafka``; a missing one is a broken checkout, not a skip."""
    path = KAFKA_DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the checkout (see tests/data/kafka/README.md)")
    return path


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server (Debian's package) on a loopback port the OS chose, one per test module;
    the module skips when the package is missing (``scripts/setup.sh`` installs it)."""
    if not zookeeper_installed():
        pytest.skip("Debian's zookeeper package is not installed (scripts/setup.sh installs it)")
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server
    finally:
        server.stop()
