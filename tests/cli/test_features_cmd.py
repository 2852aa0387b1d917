"""``kraftwerk features`` against the production controller and broker cores behind real frames
(:mod:`tests.cli.inprocess_kafka`): the golden transcript of real ``kafka-features.sh`` output, the
UpdateFeatures requests on the wire, parse errors, exit codes."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kraftwerk.cli.features_cmd import describe_line, describe_lines
from kraftwerk.cli.main import main
from kraftwerk.controller.features import feature_level_record
from kraftwerk.runtime.admin_client import FeatureMetadata
from tests.cli.inprocess_kafka import GOLDEN_FINALIZED, InProcessKafka
from tests.conftest import golden_path

GOLDEN_NAME = "kafka-features-behaviour.txt"
BOOTSTRAP_FEATURES_END = 6
"""BeginTransaction at offset 0, then the six bootstrapped FeatureLevelRecords at 1-6."""

#: The UpdateFeatures each golden command must send: (ValidateOnly, {feature: (level, UpgradeType)}).
UP, SAFE, UNSAFE = 1, 2, 3
EXPECTED_WIRE: list[tuple[bool, dict[str, tuple[int, int]]] | None] = [
    (True, {"metadata.version": (25, SAFE)}),
    (False, {"metadata.version": (25, SAFE)}),
    (True, {"metadata.version": (25, UNSAFE)}),
    (False, {"metadata.version": (31, UP)}),
    (False, {"metadata.version": (31, UP)}),
    (True, {"transaction.version": (1, SAFE)}),
    (False, {"transaction.version": (0, SAFE)}),
    (True, {"group.version": (0, SAFE)}),
    (False, {"foo.bar": (1, UP)}),
    (True, {"metadata.version": (30, UP), "kraft.version": (1, UP), "transaction.version": (2, UP),
            "group.version": (1, UP), "eligible.leader.replicas.version": (1, UP),
            "share.version": (1, UP), "streams.version": (1, UP)}),
    (False, {"kraft.version": (0, SAFE)}),
    None,  # describe
]


def _blocks(path: Path) -> list[tuple[list[str], list[str]]]:
    """(argv after the tool name, expected output lines) per ``$`` block; NOTE lines are dropped."""
    blocks: list[tuple[list[str], list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] == "kafka-features.sh", line
            blocks.append((words[1:], []))
        elif line.startswith("NOTE"):
            continue
        elif blocks:
            blocks[-1][1].append(line)
    for _, expected in blocks:
        while expected and not expected[-1]:
            expected.pop()
    return blocks


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(["features", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_golden_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _blocks(golden_path("cli", GOLDEN_NAME))
    assert len(blocks) == len(EXPECTED_WIRE)
    with InProcessKafka() as cluster:
        node = cluster.node(1)
        for (argv, expected), wire in zip(blocks, EXPECTED_WIRE, strict=True):
            argv = [node.address if a == "127.0.0.1:9092" else a for a in argv]
            before = len(node.of(57))
            code, out, err = _run(capsys, argv)
            failures = [line for line in expected if line.endswith("operation(s) failed.")]
            assert out.splitlines() + err.splitlines() == expected, argv
            assert err.splitlines() == failures, argv
            assert code == (1 if failures else 0), argv
            sent = node.of(57)[before:]
            if wire is None:
                assert sent == []
                continue
            validate_only, features = wire
            assert len(sent) == 1, argv
            request = sent[0]
            assert request.version == 3  # KIP-920's version (Kafka's own tool, which has no v3, sends v2)
            assert request.body["validateOnly"] is validate_only
            assert {u["feature"]: (u["maxVersionLevel"], u["upgradeType"])
                    for u in request.body["featureUpdates"]} == features


def test_describe_padding_is_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    """The golden describe block, from a cluster in the same state (transaction.version disabled by
    the record at offset 99), byte for byte."""
    text = golden_path("cli", GOLDEN_NAME).read_text()
    golden = [line + "\n" for line in text.splitlines() if line.startswith("Feature: ")]
    with InProcessKafka() as cluster:
        cluster.log.append([feature_level_record("transaction.version", 0)])
        code, out, err = _run(capsys, ["--bootstrap-server", cluster.node(1).address, "describe"])
    assert (code, err) == (0, "")
    assert out == "".join(golden)
    assert out.encode() == "".join(golden).encode()


def test_describe_line_layout() -> None:
    line = describe_line("metadata.version", "3.3-IV3", "4.3-IV0", "4.3-IV0", "7")
    assert line.index("SupportedMinVersion") == 51
    assert line.index("SupportedMaxVersion") == 89
    assert line.index("FinalizedVersionLevel") == 127
    assert line.index("Epoch") == 167
    meta = FeatureMetadata({"metadata.version": (7, 40), "a.b": (0, 3)}, {"metadata.version": (30, 30)}, None)
    lines = describe_lines(meta)
    assert lines[0].startswith("Feature: a.b ") and "FinalizedVersionLevel: 0 " in lines[0]
    assert lines[0].endswith("Epoch: -")
    assert "SupportedMaxVersion: UNKNOWN 40" in lines[1]


def test_describe_json_and_node_id(capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka() as cluster:
        node = cluster.node(1)
        code, out, _ = _run(capsys, ["--bootstrap-server", node.address, "describe", "--node-id", "1",
                                     "--output", "json"])
        assert node.of(60) and node.of(60)[0].body["endpointType"] == 1
        code7, _, err = _run(capsys, ["--bootstrap-server", node.address, "describe", "--node-id", "7"])
    assert code == 0
    rows = json.loads(out)
    mv = next(r for r in rows if r["feature"] == "metadata.version")
    assert mv["finalized_level"] == 30 and mv["versions"]["finalized"] == "4.3-IV0"
    assert mv["epoch"] == BOOTSTRAP_FEATURES_END  # the offset of the bootstrap's last FeatureLevelRecord
    assert code7 == 1 and "No node with id 7" in err


def test_bootstrap_controller_goes_to_active_controller(capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka(controllers=(1, 2), brokers=(), leader=2) as cluster:
        standby, active = cluster.node(1), cluster.node(2)
        code, out, err = _run(capsys, ["--bootstrap-controller", standby.address, "upgrade",
                                       "--feature", "group.version=1", "--dry-run"])
        assert standby.of(60)[0].body["endpointType"] == 2
        assert standby.of(57) == []
        assert (code, out, err) == (0, "group.version can be upgraded to 1.\n", "")
        assert len(active.of(57)) == 1


def test_release_version_downgrade_sends_zero_levels(capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka(finalized={**GOLDEN_FINALIZED, "metadata.version": 29}) as cluster:
        node = cluster.node(1)
        code, out, err = _run(capsys, ["--bootstrap-server", node.address, "downgrade",
                                       "--release-version", "4.1", "--dry-run"])
        sent = node.of(57)[0].body
    levels = {u["feature"]: (u["maxVersionLevel"], u["upgradeType"]) for u in sent["featureUpdates"]}
    assert levels["metadata.version"] == (27, SAFE)
    assert levels["kraft.version"] == (1, SAFE) and levels["share.version"] == (0, SAFE)
    assert code == 0 and err == ""
    assert out.splitlines()[3] == "metadata.version can be downgraded to 27."
    with InProcessKafka() as cluster:
        node = cluster.node(1)
        _run(capsys, ["--bootstrap-server", node.address, "downgrade", "--release-version", "3.8",
                      "--dry-run"])
        sent = node.of(57)[0].body
    assert {u["feature"]: u["maxVersionLevel"] for u in sent["featureUpdates"]}["group.version"] == 0


def test_partial_failure_on_v1_per_feature_results(capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka(api_versions={18: (0, 4), 57: (0, 1), 60: (0, 2)}) as cluster:
        node = cluster.node(1)
        code, out, err = _run(capsys, ["--bootstrap-server", node.address, "upgrade",
                                       "--feature", "group.version=1", "--feature", "foo.bar=1"])
        assert node.of(57)[0].version == 1
    reason = ("The update failed for all features since the following feature had an error: Invalid update "
              "version 1 for feature foo.bar. Local controller 1 does not support this feature.")
    assert out.splitlines() == [f"Could not upgrade foo.bar to 1. {reason}",
                                f"Could not upgrade group.version to 1. {reason}"]
    assert (code, err) == (1, "2 out of 2 operation(s) failed.\n")


def test_disable_and_v0_allow_downgrade(capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka(api_versions={18: (0, 2), 57: (0, 0), 60: (0, 0)}) as cluster:
        node = cluster.node(1)
        code, out, err = _run(capsys, ["--bootstrap-server", node.address, "disable",
                                       "--feature", "share.version"])
        request = node.of(57)[0]
        assert [r.version for r in node.of(18)] == [2]  # negotiated down from v4 (UNSUPPORTED_VERSION)
        finalized = cluster.finalized()
    assert request.version == 0
    (update,) = request.body["featureUpdates"]
    assert (update["feature"], update["maxVersionLevel"]) == ("share.version", 0)
    assert update["allowDowngrade"] is True
    assert (code, out, err) == (0, "share.version was disabled.\n", "")
    assert "share.version" not in finalized and finalized["group.version"] == 1


@pytest.mark.parametrize(("argv", "message"), [
    (["upgrade"], "You must specify at least one feature to upgrade"),
    (["disable"], "You must specify at least one feature to disable"),
    (["upgrade", "--feature", "group.version"],
     "Can't parse feature=level string group.version: equals sign not found."),
    (["upgrade", "--feature", "group.version=x"],
     "Can't parse feature=level string group.version=x: unable to parse x as a short."),
    (["upgrade", "--feature", "group.version=1", "--feature", "group.version=1"],
     "Feature group.version was specified more than once."),
    (["upgrade", "--metadata", "4.0", "--feature", "metadata.version=25"],
     "Feature metadata.version was specified more than once."),
    (["disable", "--feature", "a", "--feature", "a"], "Feature a was specified more than once."),
    (["upgrade", "--release-version", "4.0", "--feature", "metadata.version=20"],
     "Can not specify `release-version` with other feature flags."),
    (["upgrade", "--feature", "group.version=0"],
     "The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
     "maxVersionLevel:0 is < 1."),
    (["downgrade", "--feature", "group.version=-1"], "Cannot specify a negative version level."),
    (["upgrade", "--metadata", "3.3-IV1"], "Unknown metadata.version '3.3-IV1'. Supported metadata.version "
     "are: 3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, "
     "3.7-IV2, 3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, 4.1-IV1, "
     "4.2-IV0, 4.2-IV1, 4.3-IV0, 4.4-IV0, 4.4-IV1, 4.4-IV2, 4.5-IV0"),
])
def test_parse_errors_send_nothing(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with InProcessKafka() as cluster:
        node = cluster.node(1)
        code, out, err = _run(capsys, ["--bootstrap-server", node.address, *argv])
        assert node.of(57) == []
    assert (code, out, err) == (1, "", message + "\n")


def test_bootstrap_flags(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, ["describe"])
    assert code == 1 and "one of the arguments --bootstrap-server --bootstrap-controller is required" in err
    code, _, err = _run(capsys, ["--bootstrap-server", "a:1", "--bootstrap-controller", "b:1", "describe"])
    assert code == 1 and "not allowed with argument --bootstrap-server" in err
    config = tmp_path / "admin.properties"
    config.write_text("client.id=ops\nsasl.kerberos.service.name=kafka\nrequest.timeout.ms=5000\n")
    with InProcessKafka() as cluster:
        node = cluster.node(1)
        code, out, err = _run(capsys, ["--bootstrap-server", node.address, "--command-config", str(config),
                                       "describe"])
        assert node.of(18)[0].client_id == "ops"
    assert code == 0 and len(out.splitlines()) == 7
    assert err.endswith("WARNING Ignoring admin client config(s) that kraftwerk does not support: "
                        "sasl.kerberos.service.name\n") and len(err.splitlines()) == 1
    config.write_text("security.protocol=SASL_SSL\n")  # Kafka's default mechanism, GSSAPI
    code, _, err = _run(capsys, ["--bootstrap-server", "a:1", "--command-config", str(config), "describe"])
    assert code == 1 and "sasl.mechanism=GSSAPI is not supported" in err


def test_unreachable_cluster_fails_every_feature(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    with InProcessKafka() as cluster:
        port = cluster.node(1).port
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=300\nretry.backoff.ms=50\n")
    code, out, err = _run(capsys, ["--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(config),
                                   "upgrade", "--feature", "group.version=1"])
    assert code == 1 and out.startswith("Could not upgrade group.version to 1. ")
    assert err == "1 out of 1 operation(s) failed.\n"


def test_offline_lookups_match_storage(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, ["version-mapping", "--release-version", "3.9"])
    assert code == 0 and out.splitlines()[:2] == ["metadata.version=21 (3.9)", "kraft.version=1"]
    code, out, _ = _run(capsys, ["feature-dependencies", "--feature", "metadata.version=17"])
    assert out == "metadata.version=17 (3.7-IV2) has no dependencies.\n"
