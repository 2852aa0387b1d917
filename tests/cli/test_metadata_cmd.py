"""``kraftwerk metadata show|rewrite`` on real Kafka metadata logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from kraftwerk.config import ConfigResourceType, redact
from kraftwerk.image.describe import describe_image
from kraftwerk.image.model import MetadataImage
from kraftwerk.image.source import load_snapshot_file
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.conftest import golden_path
from tests.image.helpers import mv_record, rec, replay


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_show_text_43(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["metadata", "show", "--log-dir", str(golden_path("kafka-4.3-standalone"))], capsys)
    assert code == 0
    lines = out.splitlines()
    assert "Feature: metadata.version\tFinalizedVersionLevel: 4.3-IV0\tEpoch: 111" in lines
    assert "Feature: transaction.version\tFinalizedVersionLevel: 2\tEpoch: 111" in lines
    assert any(
        line.startswith("Broker: 1\tEpoch: 13\t") and "metadata.version=7-30" in line for line in lines
    )
    assert any(line.startswith("Controller: 1\t") for line in lines)
    assert "ZkMigrationState: NONE" in lines


def test_show_json_43(capsys: pytest.CaptureFixture[str]) -> None:
    path = golden_path("kafka-4.3-standalone")
    code, out, _ = _run(["metadata", "show", "--log-dir", str(path), "--output", "json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["metadataVersion"] == "4.3-IV0"
    assert doc["features"][0] == {"name": "metadata.version", "level": 30, "version": "4.3-IV0"}
    assert doc["featuresEpoch"] == 111
    assert [b["id"] for b in doc["brokers"]] == [1]
    assert doc["brokers"][0]["supportedFeatures"]["metadata.version"]["maxVersion"] == "4.3-IV0"
    assert doc["topics"] == []
    assert doc["configs"][0]["configs"] == {"min.insync.replicas": "1"}


def test_sensitive_configs_are_hidden() -> None:
    image: MetadataImage = replay(
        [mv_record(MetadataVersion.IBP_3_7_IV4)]
        + [
            rec("ConfigRecord", resourceType=4, resourceName="1", name=n, value="v")
            for n in (
                "ssl.keystore.password",
                "sasl.jaas.config",
                "delegation.token.secret.key",
                "log.retention.ms",
            )
        ]
    )
    configs = describe_image(image)["configs"][0]["configs"]
    assert configs == {
        "delegation.token.secret.key": "[hidden]",
        "log.retention.ms": "v",
        "sasl.jaas.config": "[hidden]",
        "ssl.keystore.password": "[hidden]",
    }
    jaas = "listener.name.x.scram-sha-256.sasl.jaas.config"
    assert redact(ConfigResourceType.BROKER, jaas, "x") == "[hidden]"


LOSSES_43_AT_36 = [
    "the feature flag eligible.leader.replicas.version=1, which depends on metadata.version level 23",
    "the online log directories of one or more brokers",
    "controller registration data",
]


def test_rewrite_refuses_lossy_then_unsafe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_file = tmp_path / "snap.checkpoint"
    argv = ["metadata", "rewrite", "--log-dir", str(golden_path("kafka-4.3-standalone")),
            "--metadata-version", "3.6-IV2", "--out", str(out_file)]
    code, _, err = _run(argv, capsys)
    assert code == 1 and not out_file.exists()
    assert err.startswith(
        "Metadata has been lost because the following could not be represented in metadata.version 3.6-IV2: "
    )
    assert "controller registration data" in err
    code, out, _ = _run([*argv, "--output", "json"], capsys)
    doc = json.loads(out)
    assert code == 1 and doc["written"] is False
    assert doc["losses"] == LOSSES_43_AT_36
    code, out, _ = _run([*argv, "--unsafe", "--output", "json"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["written"] is True and doc["losses"] == LOSSES_43_AT_36
    assert load_snapshot_file(out_file).metadata_version.version == "3.6-IV2"  # type: ignore[union-attr]


def test_rewrite_lossless(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["metadata", "rewrite", "--log-dir", str(golden_path("kafka-4.3-standalone")),
            "--metadata-version", "4.2-IV1", "--out", str(tmp_path)]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "No metadata was lost." in out
    (snap,) = tmp_path.iterdir()
    assert snap.name == "00000000000000000150-0000000001.checkpoint"
    code, out, _ = _run(["metadata", "show", "--snapshot", str(snap)], capsys)
    assert "Feature: metadata.version\tFinalizedVersionLevel: 4.2-IV1\tEpoch: 149" in out.splitlines()


def test_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["metadata", "show", "--log-dir", str(tmp_path)], capsys)
    assert code == 1 and "holds no metadata log segment or snapshot" in err
    code, _, err = _run(
        [
            "metadata",
            "rewrite",
            "--log-dir",
            str(tmp_path),
            "--metadata-version",
            "9.9",
            "--out",
            str(tmp_path / "x"),
        ],
        capsys,
    )
    assert code == 1 and "Unknown metadata.version '9.9'" in err
