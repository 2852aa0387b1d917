# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""``kraftwerk storage format|info|random-uuid`` transcripts: Kafka's messages, streams and exit codes."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from kraftwerk.cli.main import main
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.storage import read_bootstrap, read_meta_properties

CLUSTER = "co8Lz5qWSCe6yEg4UfbcVw"


def _config(tmp_path: Path, **extra: str) -> Path:
    props = {"process.roles": "broker,controller", "node.id": "1",
             "controller.quorum.voters": "1@localhost:9093", "controller.listener.names": "CONTROLLER",
             "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
             "log.dirs": f"{tmp_path}/d1,{tmp_path}/d2", "metadata.log.dir": f"{tmp_path}/meta", **extra}
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items() if v != "-"))
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], list[str]]:
    code = main(["storage", *argv])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_format_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    code, out, err = _run(capsys, "format", "-c", str(config), "-t", CLUSTER)
    assert (code, err) == (0, [])
    assert out[0].startswith("Bootstrap metadata: BootstrapMetadata(records=[ApiMessageAndVersion(FeatureLevelRecord(name='metadata.version', featureLevel=30) at version 0), ")
    assert out[0].endswith("metadataVersionLevel=30, source=format command)")
    assert out[1:] == [f"Formatting data directory {tmp_path}/d1 with metadata.version 4.3-IV0.",
                       f"Formatting data directory {tmp_path}/d2 with metadata.version 4.3-IV0.",
                       f"Formatting metadata directory {tmp_path}/meta with metadata.version 4.3-IV0."]
    for d in ("d1", "d2", "meta"):
        assert read_meta_properties(tmp_path / d).cluster_id == CLUSTER
        assert read_bootstrap(tmp_path / d).records[0].value["featureLevel"] == 30
    code, out, err = _run(capsys, "format", "-c", str(config), "-t", CLUSTER)
    assert (code, out) == (1, [])
    assert err == [f"Log directory {tmp_path}/d1 is already formatted. Use --ignore-formatted to ignore this directory and format the others."]
    code, out, err = _run(capsys, "format", "-c", str(config), "-t", CLUSTER, "-g")
    assert (code, out, err) == (0, ["All of the log directories are already formatted."], [])
    code, out, _ = _run(capsys, "info", "-c", str(config))
    meta = read_meta_properties(tmp_path / "d1")
    assert code == 0
    assert out == ["Found log directories:", f"  {tmp_path}/d1", f"  {tmp_path}/d2", f"  {tmp_path}/meta", "",
                   f"Found metadata: {{cluster.id={CLUSTER}, directory.id={_kafka_id(meta.directory_id)}, node.id=1, version=1}}", ""]


def _kafka_id(value: uuid.UUID | None) -> str:
    assert value is not None
    return uuid_to_str(value)


@pytest.mark.parametrize(("args", "message"), [
    (["-r", "3.3-IV1"], "Unknown metadata.version '3.3-IV1'. Supported metadata.version are: 3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, 3.7-IV2, 3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, 4.1-IV1, 4.2-IV0, 4.2-IV1, 4.3-IV0"),
    (["-f", "non.existent.feature=20"], "Unsupported feature: non.existent.feature. Supported features are: eligible.leader.replicas.version, group.version, kraft.version, share.version, streams.version, transaction.version"),
    (["-f", "metadata.version=31"], "metadata.version 4.4-IV0 is not yet stable."),
    (["-r", "3.9", "-f", "metadata.version=20"], "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."),
    (["-r", "3.9", "-f", "eligible.leader.replicas.version=1"], "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"),
    (["-f", "group.version"], "Can't parse feature=level string group.version: equals sign not found."),
    (["-f", "kraft.version=1"], "Cannot set kraft.version to 1 unless controller.quorum.voters is empty and one of the flags --standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try using one of --standalone, --initial-controllers, or --no-initial-controllers and removing controller.quorum.voters."),
    (["--standalone"], "You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and specify controller.quorum.bootstrap.servers instead."),
    (["--metadata-version", "4.4-IV0"], "Unknown metadata.version '4.4-IV0'. Supported metadata.version are: 3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, 3.7-IV2, 3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, 4.1-IV1, 4.2-IV0, 4.2-IV1, 4.3-IV0"),
])
def test_format_refusals(args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "format", "-c", str(_config(tmp_path)), "-t", CLUSTER, *args)
    assert (code, out, err) == (1, [], [message])
    assert not (tmp_path / "d1" / "meta.properties").exists()


def test_format_levels_and_aliases(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """StorageToolTest.testFormatWithReleaseVersionAsFeature and KIP-778's --metadata-version alias."""
    for i, args in enumerate((["-f", "metadata.version=20"], ["--metadata-version", "20"],
                              ["--metadata-version", "3.8"], ["-r", "3.8-IV0"])):
        config = _config(tmp_path / str(i))
        code, out, _ = _run(capsys, "format", "-c", str(config), "-t", CLUSTER, *args)
        assert code == 0 and out[-1].endswith("with metadata.version 3.8-IV0.")
        assert [r.value["featureLevel"] for r in read_bootstrap(tmp_path / str(i) / "meta").records] == [20]


def test_unstable_enabled_by_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, **{"unstable.feature.versions.enable": "true"})
    code, out, _ = _run(capsys, "format", "-c", str(config), "-t", CLUSTER, "-r", "4.4-IV0")
    assert code == 0 and out[-1].endswith("with metadata.version 4.4-IV0.")


def test_standalone_and_dynamic_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, **{"controller.quorum.voters": "-", "process.roles": "controller"})
    code, _, err = _run(capsys, "format", "-c", str(config), "-t", CLUSTER)
    assert (code, err) == (1, ["Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers."])
    code, out, _ = _run(capsys, "format", "-c", str(config), "-t", CLUSTER, "--standalone")
    assert code == 0 and out[-1] == f"Formatting dynamic metadata voter directory {tmp_path}/meta with metadata.version 4.3-IV0."
    assert (tmp_path / "meta" / "__cluster_metadata-0" / "00000000000000000000-0000000000.checkpoint").exists()
    broker = _config(tmp_path / "b", **{"controller.quorum.voters": "-", "process.roles": "broker"})
    code, _, err = _run(capsys, "format", "-c", str(broker), "-t", CLUSTER, "-s")
    assert (code, err) == (1, ["You can only use --standalone on a controller."])
    code, _, _ = _run(capsys, "format", "-c", str(broker), "-t", CLUSTER, "-N")
    assert code == 0


def test_legacy_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path, **{"process.roles": "-"})), "-t", CLUSTER)
    assert (code, err) == (1, ["The kafka configuration file appears to be for a legacy cluster. Formatting is only supported for clusters in KRaft mode."])


def test_info_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    (tmp_path / "d1").mkdir()
    code, out, _ = _run(capsys, "info", "-c", str(config))
    assert code == 1
    assert out == ["Found log directory:", f"  {tmp_path}/d1", "", "Found problems:",
                   f"  {tmp_path}/d1 is not formatted.", f"  {tmp_path}/d2 does not exist",
                   f"  {tmp_path}/meta does not exist", ""]
    code, out, _ = _run(capsys, "info", "-c", str(config), "--output", "json")
    assert json.loads("\n".join(out))["problems"][0].endswith("is not formatted.")


def test_random_uuid_and_json_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "random-uuid")
    assert code == 0 and len(out) == 1 and len(out[0]) == 22
    code, out, _ = _run(capsys, "format", "-c", str(_config(tmp_path)), "-t", out[0], "--output", "json")
    result = json.loads(out[0])
    assert result["metadata_version"] == {"level": 30, "version": "4.3-IV0"}
    assert [d["type"] for d in result["formatted"]] == ["data directory", "data directory", "metadata directory"]


def test_format_checks_the_file_against_the_release_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """KIP-1294's format scenario: log.segment.bytes=1048576 formats at 4.3 and is refused at 4.4
    (4.4-IV1's 3 MiB minimum) before anything is written; 4.4 software knows release 4.4."""
    extra = {"log.segment.bytes": "1048576", "kraftwerk.software.version": "4.4"}
    code, out, err = _run(capsys, "format", "-c", str(_config(tmp_path / "a", **extra)), "-t", CLUSTER, "-r", "4.3")
    assert (code, err) == (0, []) and out[-1].endswith("with metadata.version 4.3-IV0.")
    config = _config(tmp_path / "b", **extra)
    code, out, err = _run(capsys, "format", "-c", str(config), "-t", CLUSTER, "-r", "4.4")
    assert (code, out) == (1, [])
    assert err == ["Invalid value 1048576 for configuration log.segment.bytes: Value must be at least 3145728 (since metadata.version 4.4-IV1)"]
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == ["server.properties"]  # no directory created
    code, out, _ = _run(capsys, "format", "-c", str(_config(tmp_path / "c", **{**extra, "log.segment.bytes": "3145728"})),
                        "-t", CLUSTER, "-r", "4.4", "--output", "json")
    assert code == 0 and json.loads("\n".join(out))["metadata_version"] == {"level": 32, "version": "4.4-IV1"}


def test_format_applies_kafka_4_0_minimums_as_rules_of_4_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 3.x file (1000-byte segments, 100-byte metadata segments) formats at 3.9 on 4.3 software;
    at 4.0 both KIP-1030 / KAFKA-19080 minimums apply, each named on its own line."""
    extra = {"log.segment.bytes": "1000", "metadata.log.segment.bytes": "100"}
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path / "a", **extra)), "-t", CLUSTER, "-r", "3.9")
    assert (code, err) == (0, [])
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path / "b", **extra)), "-t", CLUSTER, "-r", "4.0")
    assert code == 1 and err == [
        "Invalid value 1000 for configuration log.segment.bytes: Value must be at least 1048576 (since metadata.version 4.0-IV0)",
        "Invalid value 100 for configuration metadata.log.segment.bytes: Value must be at least 8388608 (since metadata.version 4.0-IV0)"]
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path / "c", **{"log.segment.bytes": "13"})), "-t", CLUSTER)
    assert (code, err) == (1, ["Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"])
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path / "d", **{"kraftwerk.software.version": "9.9"})),
                        "-t", CLUSTER)
    assert code == 1 and err[0].startswith("Invalid value 9.9 for configuration kraftwerk.software.version: Unknown")
    code, _, err = _run(capsys, "format", "-c", str(_config(tmp_path / "e")), "-t", CLUSTER, "-r", "4.4")
    assert code == 1 and err[0].startswith("Unknown metadata.version '4.4'.")  # 4.3 software has no stable 4.4
    assert not any((tmp_path / d / "d1").exists() for d in "bcde")


@pytest.mark.parametrize(("args", "message"), [
    (["-S", "SCRAM-SHA-256=[name=alice,password=alice-secret]", "-r", "3.5-IV1"], "SCRAM is only supported in metadata.version 3.5-IV2 or later."),
    (["-S", "SCRAM-SHA-1=[name=alice,password=alice-secret]"], "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    (["-S", "SCRAM-SHA-256"], "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256=...'"),
    (["-S", "SCRAM-SHA-256=name=alice"], "Expected configuration string to start with ["),
    (["-S", "SCRAM-SHA-256=[name=alice,password=alice-secret"], "Expected configuration string to end with ]"),
    (["-S", "SCRAM-SHA-256=[password=alice-secret]"], "You must supply 'name' to add-scram"),
    (["-S", "SCRAM-SHA-256=[name=alice]"], "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    (["-S", "SCRAM-SHA-256=[name=alice,saltedpassword=YWxpY2Utc2VjcmV0]"], "You must supply 'salt' with 'saltedpassword' to add-scram"),
    (["-S", "SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=10]"], "The 'iterations' value must be >= 4096 for add-scram using SCRAM-SHA-256"),
    (["-S", "SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=20000]"], "The 'iterations' value must be <= 16384 for add-scram using SCRAM-SHA-512"),
    (["-S", "SCRAM-SHA-256=[name=alice,password=alice-secret,colour=red]"], "Unknown SCRAM configurations: colour"),
    (["-S", "SCRAM-SHA-256=[name=alice,salt=N3E=,saltedpassword=alice-secret!]"], "Failed to decode given saltedPassword (not base64)"),
])
def test_add_scram_refusals(args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "format", "-c", str(_config(tmp_path)), "-t", CLUSTER, *args)
    assert (code, out, err) == (1, [], [message])
    assert not (tmp_path / "d1" / "meta.properties").exists()


def test_add_scram_writes_credential_records_and_prints_no_secret(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--add-scram`` as Kafka's: a password, or a salt and salted password giving the same keys."""
    import base64
    import hashlib

    salt = b"7q"
    salted = hashlib.pbkdf2_hmac("sha512", b"alice-secret", salt, 8192)
    code, out, err = _run(capsys, "format", "-c", str(_config(tmp_path)), "-t", CLUSTER,
                          "-S", f"SCRAM-SHA-256=[name=alice,password=alice-secret,salt={base64.b64encode(salt).decode()}]",
                          "-S", f'SCRAM-SHA-512=[name=alice,iterations=8192,salt="{base64.b64encode(salt).decode()}",'
                                f'saltedpassword="{base64.b64encode(salted).decode()}"]')
    assert (code, err) == (0, [])
    assert "UserScramCredentialRecord(name='alice', mechanism=1, salt=[redacted], storedKey=[redacted], serverKey=[redacted], iterations=4096) at version 0)" in out[0]
    assert "alice-secret" not in "\n".join(out)
    records = [r.value for r in read_bootstrap(tmp_path / "meta").records if r.spec.name == "UserScramCredentialRecord"]
    from kraftwerk.protocol.sasl_mechanisms import scram_credential

    expected = [scram_credential("SCRAM-SHA-256", "alice-secret", salt=salt),
                scram_credential("SCRAM-SHA-512", "alice-secret", iterations=8192, salt=salt)]
    assert [(r["mechanism"], r["salt"], r["storedKey"], r["serverKey"], r["iterations"]) for r in records] == [
        (m, c.salt, c.stored_key, c.server_key, c.iterations) for m, c in zip((1, 2), expected, strict=True)]
