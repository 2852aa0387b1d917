"""``kraftwerk storage version-mapping|feature-dependencies`` against real Kafka transcripts."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from tests.conftest import golden_path


def _blocks(path: Path) -> list[tuple[list[str], list[str]]]:
    """(argv after ``kafka-storage``, expected stdout lines) for each ``$`` block."""
    blocks: list[tuple[list[str], list[str]]] = []
    for line in path.read_text().splitlines():
        if line.startswith("$ "):
            words = shlex.split(line[2:])
            assert words[0] in ("kafka-storage", "kafka-storage.sh"), line
            blocks.append((words[1:], []))
        elif blocks:
            blocks[-1][1].append(line)
    for _, expected in blocks:
        while expected and not expected[-1]:
            expected.pop()
    return blocks


def _golden(name: str) -> list[tuple[list[str], list[str]]]:
    return _blocks(golden_path("cli", name))


@pytest.mark.parametrize("name", ["version-mapping.txt", "feature-dependencies.txt"])
def test_golden_transcripts(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _golden(name)
    assert blocks
    for argv, expected in blocks:
        assert main(["storage", *argv]) == 0, argv
        out, err = capsys.readouterr()
        assert out.splitlines() == expected, argv
        assert err == ""


def test_version_mapping_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "version-mapping"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "metadata.version=30 (4.3-IV0)"


def test_version_mapping_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "version-mapping", "--release-version", "4.1", "--output", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["release_version"] == "4.1"
    assert data["metadata_version"] == {"level": 27, "version": "4.1-IV1"}
    assert data["features"]["eligible.leader.replicas.version"] == 1
    assert next(iter(data["features"])) == "kraft.version"


def test_version_mapping_unknown_release(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "version-mapping", "--release-version", "2.8"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        "Unknown metadata.version '2.8'. Supported metadata.version are: 3.3-IV3, 3.4-IV0, "
    )
    assert err.endswith(", 4.4-IV2, 4.5-IV0\n") and err.count("\n") == 1


def test_feature_dependencies_several_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["storage", "feature-dependencies", "--feature", "metadata.version=17",
            "--feature", "eligible.leader.replicas.version=1"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        "metadata.version=17 (3.7-IV2) has no dependencies.",
        "eligible.leader.replicas.version=1 requires:",
        "    metadata.version=23 (4.0-IV1)",
    ]
    assert main([*argv, "--output", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["feature"] for d in data] == ["metadata.version", "eligible.leader.replicas.version"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("foo.bar=1", "Unknown feature: foo.bar"),
        ("kraft.version=2", "No feature:kraft.version with feature level 2"),
        ("metadata.version=1", "Unknown metadata.version 1"),
        ("kraft.version", "Can't parse feature=level string kraft.version: equals sign not found."),
        ("kraft.version=x",
         "Can't parse feature=level string kraft.version=x: unable to parse x as a short."),
    ],
)
def test_feature_dependencies_errors(spec: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["storage", "feature-dependencies", "--feature", "group.version=1", "--feature", spec]) == 1
    out, err = capsys.readouterr()
    assert out == "group.version=1 has no dependencies.\n"  # earlier features stay printed, as in Kafka
    assert err == message + "\n"


def test_feature_dependencies_requires_a_feature(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["storage", "feature-dependencies"])
    assert info.value.code == 2
    capsys.readouterr()
