"""Issue #7 acceptance: every case of real ``kafka-features.sh``'s transcript against a real
``kraftwerk cluster up`` cluster formatted at 4.3 (one controller, two brokers), through a broker
(``--bootstrap-server``, forwarded in an Envelope) and through the controller
(``--bootstrap-controller``); then kafka-python's ``describe_features`` / ``update_features``.

Differences from the transcript, each on purpose:

- the unsafe downgrade succeeds (kraftwerk's documented KIP-778 extension; any loss report follows
  the result line);
- none for kraft.version: like the transcript's cluster, ``cluster up`` formats a dynamic quorum
  (kraft.version 1), whose downgrade is refused with Kafka's text;
- the epoch is the cluster's own (the transcript's 99 came from Kafka's run): it must be the same on
  every node.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftwerk.cli.main import main as cli_main
from kraftwerk.runtime.local_cluster import LocalCluster, node_features, wait_finalized
from tests.conftest import golden_path

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]

GOLDEN = ("cli", "kafka-features-behaviour.txt")
TRANSCRIPT_SERVER = "127.0.0.1:9092"


def blocks() -> list[tuple[list[str], list[str]]]:
    """(argv after the tool name, expected lines) of each ``$`` block of the transcript."""
    out: list[tuple[list[str], list[str]]] = []
    for line in golden_path(*GOLDEN).read_text().splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] == "kafka-features.sh"
            out.append((words[1:], []))
        elif line.startswith("NOTE") or not line.strip():
            continue
        elif out:
            out[-1][1].append(line)
    return out


def kraftwerk_expectation(argv: list[str], expected: list[str]) -> tuple[list[str], bool]:
    """The transcript's lines adjusted for kraftwerk's documented differences; True when the
    expected lines are only a prefix of each actual line (a loss report may follow)."""
    if "--unsafe" in argv and "--metadata" in argv:
        level = re.search(r"downgrade metadata.version to (\d+)\.", expected[0])
        assert level is not None
        verb = "can be" if "--dry-run" in argv else "was"
        return [f"metadata.version {verb} downgraded to {level.group(1)}."], True
    return expected, False


def run(argv: list[str]) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(["features", *argv])
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    golden_path(*GOLDEN)  # skip early without the transcript
    root: Path = tmp_path_factory.mktemp("features-golden")
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli_main(["cluster", "up", "--dir", str(root), "--controllers", "1", "--brokers", "2",
                         "--release-version", "4.3"]) == 0
    try:
        yield LocalCluster.load(root)
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            cli_main(["cluster", "down", "--dir", str(root)])


@pytest.mark.parametrize("flag", ["--bootstrap-server", "--bootstrap-controller"])
def test_golden_transcript(cluster: LocalCluster, flag: str) -> None:
    address = cluster.brokers[0].address if flag == "--bootstrap-server" else cluster.bootstrap_controllers
    # the transcript starts from the formatted levels (transaction.version 2): restore them
    assert run([flag, address, "upgrade", "--feature", "transaction.version=2"])[:2] == (
        0, ["transaction.version was upgraded to 2."])
    wait_finalized(cluster, {"metadata.version": 30, "transaction.version": 2})
    for argv, golden in blocks():
        argv = [flag, address, *argv[2:]] if argv[:2] == ["--bootstrap-server", TRANSCRIPT_SERVER] else argv
        expected, prefix_only = kraftwerk_expectation(argv, golden)
        code, out, err = run(argv)
        failures = [line for line in expected if line.endswith("operation(s) failed.")]
        assert err == failures, argv
        assert code == (1 if failures else 0), argv
        got = out + err
        if argv[-1] == "describe":
            epochs = {line.rsplit("Epoch: ", 1)[1] for line in out}
            assert len(epochs) == 1, out
            epoch = int(epochs.pop())
            got = [line.rsplit("Epoch: ", 1)[0] + "Epoch: 99" for line in out]
            # the epoch printed is the one every controller and broker reports
            reported = wait_finalized(cluster, {"metadata.version": 30, "transaction.version": 0})
            assert {f.epoch for f in reported.values()} == {epoch}
        if prefix_only:
            assert len(got) == len(expected), argv
            assert all(g.startswith(e) for g, e in zip(got, expected, strict=True)), argv
        else:
            assert got == expected, argv
    # the successful update of the transcript (transaction.version=0) reached every node
    reported = wait_finalized(cluster, {"metadata.version": 30, "transaction.version": 0})
    assert sorted(reported) == [n.node_id for n in cluster.nodes]


@pytest.mark.interop
def test_kafka_python_features(cluster: LocalCluster) -> None:
    """The same cases through kafka-python's KafkaAdminClient (UpdateFeatures via a broker, which
    forwards it to the controller in an Envelope)."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, request_timeout_ms=10000)
    try:
        # start from the formatted levels: transaction.version back to 2 (an upgrade)
        assert admin.update_features({"transaction.version": 2}) == {"transaction.version": "OK"}
        polled = wait_finalized(cluster, {"metadata.version": 30, "transaction.version": 2})
        epoch = polled[cluster.brokers[0].node_id].epoch
        described = admin.describe_features()
        assert described["metadata.version"]["supported"] == (7, 30)
        assert described["metadata.version"]["finalized"] == (30, 30)
        assert described["transaction.version"]["finalized_epoch"] == epoch
        assert described["kraft.version"]["finalized"] == (1, 1)  # a dynamic quorum
        via_controller = admin.describe_features(send_request_to_controller=True)
        assert via_controller["metadata.version"]["finalized"] == (30, 30)

        refused = ("Unsupported metadata.version downgrade from 30 to 25. Refusing to perform the requested "
                   "downgrade because it might delete metadata information.")
        cases: list[tuple[dict[str, object], bool, str | None]] = [
            ({"metadata.version": ("SAFE_DOWNGRADE", 25)}, True, refused),
            ({"metadata.version": ("SAFE_DOWNGRADE", 25)}, False, refused),
            ({"metadata.version": ("UNSAFE_DOWNGRADE", 25)}, True, None),  # kraftwerk's extension
            ({"metadata.version": 31}, False,
             "Invalid update version 31 for feature metadata.version. Local controller 1 only supports "
             "versions 7-30"),
            ({"transaction.version": ("SAFE_DOWNGRADE", 1)}, True, None),
            ({"transaction.version": ("SAFE_DOWNGRADE", 0)}, False, None),
            ({"group.version": ("SAFE_DOWNGRADE", 0)}, True, None),
            ({"foo.bar": 1}, False,
             "Invalid update version 1 for feature foo.bar. Local controller 1 does not support this "
             "feature."),
            ({"metadata.version": 30, "kraft.version": 1, "transaction.version": 2, "group.version": 1,
              "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1}, True, None),
            ({"kraft.version": ("SAFE_DOWNGRADE", 0)}, False,
             "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this "
             "feature."),
        ]
        prefix = "The update failed for all features since the following feature had an error: "
        for updates, validate_only, error in cases:
            if error is None:
                result = admin.update_features(updates, validate_only=validate_only)
                assert result == dict.fromkeys(updates, "OK"), updates
            else:
                with pytest.raises(KafkaError) as info:
                    admin.update_features(updates, validate_only=validate_only)
                assert type(info.value).__name__ == "InvalidUpdateVersionError"
                assert prefix + error in str(info.value), updates
        reported = wait_finalized(cluster, {"metadata.version": 30, "transaction.version": 0})
        assert len({f.epoch for f in reported.values()}) == 1
    finally:
        admin.close()


def test_every_node_reports_its_software_ranges(cluster: LocalCluster) -> None:
    for node in cluster.nodes:
        features = node_features(node)
        assert features is not None and features.finalized["metadata.version"] == 30
