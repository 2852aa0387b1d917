"""One lifecycle scenario through both drivers of the node host: real node processes on loopback
(the asyncio runtime) and the seeded simulator. Both run ``NodeHost``, so both must answer every
UpdateFeatures the same way and commit the same feature records, in the same order."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.runtime.admin_client import AdminClient, FeatureUpdate, UpgradeType
from kraftwerk.runtime.local_cluster import format_cluster, plan_cluster, wait_finalized
from kraftwerk.sim.lifecycle import LifecycleSim
from kraftwerk.sim.lifecycle_types import LifecycleConfig, Mix, UpdateOutcome
from kraftwerk.storage.format import random_uuid
from kraftwerk.storage.metadata_log import iter_log_entries
from kraftwerk.storage.segment import list_segments

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

MV = "metadata.version"
RELEASE, LEVEL = "3.7", 19  # the cluster is formatted at 3.7 (metadata.version 3.7-IV4)
SCENARIO: tuple[tuple[str, int, UpgradeType, bool], ...] = (
    (MV, 25, UpgradeType.UPGRADE, False),  # to 4.0-IV3
    ("group.version", 1, UpgradeType.UPGRADE, True),  # a dry run: nothing is written
    ("group.version", 1, UpgradeType.UPGRADE, False),
    (MV, 21, UpgradeType.SAFE_DOWNGRADE, False),  # refused: group.version 1 needs 4.0
    ("transaction.version", 2, UpgradeType.UPGRADE, False),
    ("group.version", 0, UpgradeType.SAFE_DOWNGRADE, False),
)
FINAL = {MV: 25, "group.version": 0, "transaction.version": 2}
Answer = tuple[str, str | None]
Run = tuple[list[Answer], list[tuple[str, int]]]


def feature_records(log_dir: Path) -> list[tuple[str, int]]:
    """(feature, level) of every FeatureLevelRecord in a metadata log directory, in log order."""
    out = []
    for segment in list_segments(log_dir):
        for entry in iter_log_entries(segment.log_path):
            record = entry.record
            if isinstance(record, MetadataRecord) and record.spec.name == "FeatureLevelRecord":
                out.append((record.value["name"], record.value["featureLevel"]))
    return out


def run_in_simulator(seed: int) -> Run:
    sim = LifecycleSim(LifecycleConfig(seed=seed, voters=3, brokers=1, mix=Mix.NONE, events=0,
                                       initial_level=LEVEL, software=("4.3",) * 4, retain_log=True))
    answers: list[Answer] = []

    def send(step: int) -> None:
        if step == len(SCENARIO):
            return
        name, level, utype, dry = SCENARIO[step]

        def done(outcome: UpdateOutcome) -> None:
            answers.append((outcome.error, outcome.message))
            send(step + 1)

        sim.update_features([(name, level, int(utype))], validate_only=dry, on_done=done)

    sim.at(3000, lambda: send(0))
    sim.run_until(60_000)
    assert len(answers) == len(SCENARIO), answers
    assert sim.committed_levels() == {n: lv for n, lv in FINAL.items() if lv}
    raft = sim.raft_of(1)
    assert raft is not None
    with tempfile.TemporaryDirectory() as tmp:
        # the simulated disk's log, read back by the same reader as the runtime's files
        data = b"".join(b for _info, b in raft.log.batches(raft.log.start_offset, raft.log.end_offset))
        (Path(tmp) / f"{raft.log.start_offset:020d}.log").write_bytes(data)
        return answers, feature_records(Path(tmp))


@pytest.fixture(scope="module")
def runtime_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    root = tmp_path_factory.mktemp("two-drivers")
    retained = {"metadata.max.retention.ms": "-1", "metadata.max.retention.bytes": "-1"}
    cluster = plan_cluster(root, uuid_to_str(random_uuid()), 3, 1, extra=retained, static_quorum=True)
    format_cluster(cluster, RELEASE)
    try:
        assert cluster.start_all() == {}
        wait_finalized(cluster, {MV: LEVEL})
        answers: list[Answer] = []
        with AdminClient(cluster.bootstrap_servers) as admin:
            for name, level, utype, dry in SCENARIO:
                result = admin.update_features({name: FeatureUpdate(level, utype)}, validate_only=dry)[name]
                answers.append((result.error.name, result.message))
        wait_finalized(cluster, FINAL)
        yield answers, feature_records(cluster.controllers[0].data_dir(root) / "__cluster_metadata-0")
    finally:
        cluster.stop(cluster.nodes)


def test_both_drivers_commit_the_same_feature_records(runtime_run: Run) -> None:
    runtime_answers, runtime_records = runtime_run
    sim_answers, sim_records = run_in_simulator(seed=7)
    assert [error for error, _ in runtime_answers] == [
        "NONE", "NONE", "NONE", "INVALID_UPDATE_VERSION", "NONE", "NONE",
    ]
    assert sim_answers == runtime_answers
    assert runtime_records == sim_records
    assert runtime_records[0] == (MV, LEVEL) and (MV, 25) in runtime_records


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_simulator_commits_the_same_records_for_every_seed(runtime_run: Run, seed: int) -> None:
    """The schedule of the simulated network changes with the seed; what is committed does not."""
    assert run_in_simulator(seed) == runtime_run
