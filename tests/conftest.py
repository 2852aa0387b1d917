"""Shared test fixtures: where the bytes real Kafka produced live, and a real ZooKeeper.

Everything the tests need is in ``tests/data/kafka/`` (its README says which Kafka release and
command produced each file). Only the Kafka 3.7 data dir of another project stays outside the
repository, at ``../shared/golden/kafka-3.7-cluster``; ``tests/kafka37`` reads it and skips as a
whole when it is absent.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from kraftwerk.runtime.zookeeper import ZooKeeperServer, zookeeper_installed

# CI runs every hypothesis test derandomized (the same examples every run, no example database), so a
# failure there is reproducible; set CI=1 locally to get the same. Mutation testing
# (scripts/mutation.sh) also skips shrinking: it only needs to know that a test fails.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("mutation", derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.generate])
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI"):
    settings.load_profile("ci")

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
