# ruff: noqa: E501  (Kafka's messages read better unwrapped)
"""``kraftwerk.storage.format``: Kafka's Formatter rules (FormatterTest scenarios) and the files written."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraftwerk.protocol.control_records import ControlRecordType
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.storage import format as fmt
from kraftwerk.storage import read_bootstrap, read_meta_properties, read_snapshot
from kraftwerk.storage.format import (
    DirectoryType,
    FormatError,
    InitialController,
    StorageConfig,
    check_quorum_flags,
    format_node,
    random_cluster_id,
)
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion
from tests.conftest import golden_path

CLUSTER = "co8Lz5qWSCe6yEg4UfbcVw"


def _levels(path: Path) -> list[tuple[str, int]]:
    return [(r.value["name"], r.value["featureLevel"]) for r in read_bootstrap(path).records]


def test_default_format_matches_golden_bootstrap(tmp_path: Path) -> None:
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path / "a"])
    golden = read_bootstrap(golden_path("kafka-4.3-standalone", "bootstrap.checkpoint"))
    expected = [(r.value["name"], r.value["featureLevel"]) for r in golden.records]
    assert _levels(tmp_path / "a") == expected
    assert [(r.value["name"], r.value["featureLevel"]) for r in result.bootstrap_records] == expected
    assert result.metadata_version is MetadataVersion.IBP_4_3_IV0
    assert result.feature_levels["kraft.version"] == 0
    assert [(d.path, d.directory_type) for d in result.formatted] == [
        (tmp_path / "a", DirectoryType.STATIC_METADATA_DIRECTORY)]
    assert not list((tmp_path / "a").glob("*.tmp"))


def test_meta_properties_like_kafka(tmp_path: Path) -> None:
    result = format_node(cluster_id=CLUSTER, node_id=3, log_dirs=[tmp_path / "a", tmp_path / "b"])
    ids = set()
    for d in result.formatted:
        meta = read_meta_properties(d.path)
        assert (meta.version, meta.cluster_id, meta.node_id) == (1, CLUSTER, 3)
        assert meta.directory_id == d.directory_id
        ids.add(meta.directory_id)
    assert len(ids) == 2
    golden_keys = [line.split("=")[0] for line in golden_path("kafka-4.3-standalone", "meta.properties")
                   .read_text().splitlines() if not line.startswith("#")]
    ours = [line.split("=")[0] for line in (tmp_path / "a" / "meta.properties").read_text().splitlines()
            if not line.startswith("#")]
    assert ours == golden_keys == ["node.id", "directory.id", "version", "cluster.id"]


def test_feature_levels_sorted_zero_and_kraft_omitted(tmp_path: Path) -> None:
    """FormatterTest.testFeatureFlag: MV first, the rest sorted, zero levels and kraft.version absent."""
    format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path],
                features={"transaction.version": 1, "group.version": 0, "share.version": 0})
    assert _levels(tmp_path) == [("metadata.version", 30), ("eligible.leader.replicas.version", 1),
                                 ("streams.version", 1), ("transaction.version", 1)]


def test_output_lines(tmp_path: Path) -> None:
    lines: list[str] = []
    meta, data = tmp_path / "m", tmp_path / "d"
    format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[data], metadata_log_dir=meta,
                release_version="3.9", out=lines.append)
    assert lines == [
        "Bootstrap metadata: BootstrapMetadata(records=[ApiMessageAndVersion(FeatureLevelRecord("
        "name='metadata.version', featureLevel=21) at version 0)], metadataVersionLevel=21, "
        "source=format command)",
        f"Formatting data directory {data} with metadata.version 3.9-IV0.",
        f"Formatting metadata directory {meta} with metadata.version 3.9-IV0.",
    ]


def test_unstable_versions(tmp_path: Path) -> None:
    """FormatterTest.testFormatWithUnstableReleaseVersionFailsWithoutEnableUnstable."""
    with pytest.raises(FormatError, match=r"^metadata.version 4.5-IV0 is not yet stable.$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], release_version=MetadataVersion.IBP_4_5_IV0)
    with pytest.raises(FormatError, match=r"^metadata.version 4.4-IV0 is not yet stable.$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"metadata.version": 31})
    with pytest.raises(FormatError, match=r"^Unknown metadata.version '4.4-IV0'. Supported metadata.version "
                                          r"are: 3.3-IV3, .*, 4.3-IV0$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], release_version="4.4-IV0")
    assert not (tmp_path / "meta.properties").exists()
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], unstable_enabled=True)
    assert result.metadata_version is MetadataVersion.IBP_4_5_IV0


@pytest.mark.parametrize("release", ["3.9-IV0", "4.0-IV0"])
def test_elr_needs_40_iv1(release: str, tmp_path: Path) -> None:
    """FormatterTest.testFormatElrEnabledWithMetadataVersions."""
    with pytest.raises(FormatError, match=r"^eligible.leader.replicas.version could not be set to 1 because it "
                                          r"depends on metadata.version level 23$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], release_version=release,
                    features={"eligible.leader.replicas.version": 1})
    format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], release_version="4.0-IV1",
                features={"eligible.leader.replicas.version": 1})
    assert ("eligible.leader.replicas.version", 1) in _levels(tmp_path)


def test_feature_errors(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"^Unsupported feature: non.existent.feature. Supported features are: "
                                          r"eligible.leader.replicas.version, group.version, kraft.version, "
                                          r"share.version, streams.version, transaction.version$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"non.existent.feature": 20})
    with pytest.raises(FormatError, match=r"^Use --release-version instead of --feature metadata.version=X to "
                                          r"avoid ambiguity.$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], release_version="3.9",
                    features={"metadata.version": 20})
    with pytest.raises(FormatError, match=r"^No feature:group.version with feature level 7$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"group.version": 7})
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"metadata.version": 20})
    assert result.metadata_version is MetadataVersion.IBP_3_8_IV0
    assert _levels(tmp_path) == [("metadata.version", 20)]


def test_kraft_version_rules(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"^Cannot set kraft.version to 1 unless controller.quorum.voters is empty"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"kraft.version": 1})
    with pytest.raises(FormatError, match=r"^Cannot set kraft.version to 0 if controller.quorum.voters is empty"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], features={"kraft.version": 0},
                    no_initial_controllers=True)
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], no_initial_controllers=True)
    assert result.feature_levels["kraft.version"] == 1
    assert result.formatted[0].directory_type is DirectoryType.STATIC_METADATA_DIRECTORY
    assert "kraft.version" not in dict(_levels(tmp_path))


def test_already_formatted(tmp_path: Path) -> None:
    """FormatterTest.testFormatterFailsOnAlreadyFormatted / testIgnoreFormatted."""
    a, b = tmp_path / "a", tmp_path / "b"
    format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[a])
    before = (a / "meta.properties").read_bytes()
    with pytest.raises(FormatError, match=rf"^Log directory {a} is already formatted. Use --ignore-formatted to "
                                          r"ignore this directory and format the others.$"):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[a, b])
    assert not b.exists()
    lines: list[str] = []
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[a], ignore_formatted=True, out=lines.append)
    assert lines == ["All of the log directories are already formatted."] and result.skipped == (a,)
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[a, b], ignore_formatted=True)
    assert [d.path for d in result.formatted] == [b] and result.skipped == (a,)
    assert (a / "meta.properties").read_bytes() == before
    assert read_meta_properties(a).directory_id != read_meta_properties(b).directory_id
    with pytest.raises(FormatError, match=r"Invalid cluster\.id"):
        format_node(cluster_id="MkU3OEVBNTcwNTJENDM2Qk", node_id=1, log_dirs=[a], ignore_formatted=True)


@pytest.mark.parametrize(("cluster_id", "why"), [
    ("abc", "Input string `abc` decoded as 2 bytes, which is not equal to the expected 16 bytes of a "
            "base64-encoded UUID"),
    ("not/base64!", "Illegal base64 character 2f"),
    ("MkU3OEVBNTcwNTJENDM2QkMkU3OEVB", "Input string with prefix `MkU3OEVBNTcwNTJENDM2QkMk` is too long to "
                                      "be decoded as a base64 UUID"),
])
def test_a_cluster_id_that_is_not_a_uuid_is_refused_before_anything_is_written(
        tmp_path: Path, cluster_id: str, why: str) -> None:
    with pytest.raises(FormatError) as refused:
        format_node(cluster_id=cluster_id, node_id=1, log_dirs=[tmp_path / "a"])
    assert str(refused.value) == f"Cluster ID string {cluster_id} does not appear to be a valid UUID: {why}"
    assert not (tmp_path / "a").exists()


def test_crash_before_meta_properties_leaves_dir_unformatted(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(fmt, "write_meta_properties", boom)
    with pytest.raises(OSError):
        format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path])
    assert (tmp_path / "bootstrap.checkpoint").exists() and not (tmp_path / "meta.properties").exists()
    monkeypatch.undo()
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path])
    assert result.formatted and (tmp_path / "meta.properties").exists()


def test_standalone_writes_voter_snapshot_like_golden(tmp_path: Path) -> None:
    voter = InitialController(1, "127.0.0.1", 9093, uuid.UUID("ccbcc793-f87d-4072-a5ac-6ff1425543c5"))
    lines: list[str] = []
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], initial_controllers=[voter],
                         out=lines.append, clock=lambda: 1795347061376)
    assert result.formatted[0].directory_type is DirectoryType.DYNAMIC_METADATA_VOTER_DIRECTORY
    assert lines[-1] == f"Formatting dynamic metadata voter directory {tmp_path} with metadata.version 4.3-IV0."
    assert result.feature_levels["kraft.version"] == 1
    assert read_meta_properties(tmp_path).directory_id == voter.directory_id
    name = "00000000000000000000-0000000000.checkpoint"
    ours = read_snapshot(tmp_path / "__cluster_metadata-0" / name)
    golden = read_snapshot(golden_path("kafka-4.3-standalone", name))
    assert [c.type for c in ours.control_records] == [c.type for c in golden.control_records]
    assert [c.value for c in ours.control_records] == [c.value for c in golden.control_records]
    assert ours.control_records[2].type is ControlRecordType.KRAFT_VOTERS


def test_non_voter_dynamic_directory(tmp_path: Path) -> None:
    voters = InitialController.parse_list(
        f"2@h:1:{uuid_to_str(uuid.uuid4())},3@[::1]:2:{uuid_to_str(uuid.uuid4())}")
    assert voters[1].host == "::1"
    result = format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path], initial_controllers=voters)
    assert result.formatted[0].directory_type is DirectoryType.DYNAMIC_METADATA_NON_VOTER_DIRECTORY
    with pytest.raises(FormatError, match="No @ found"):
        InitialController.parse_list("1-h:1:x")
    with pytest.raises(FormatError, match="Failed to parse directory ID"):
        InitialController.parse_list("1@h:1:notauuid")


def _config(**extra: str) -> StorageConfig:
    props = {"process.roles": "controller", "node.id": "1", "log.dirs": "/x",
             "listeners": "CONTROLLER://:9093", "controller.listener.names": "CONTROLLER", **extra}
    return StorageConfig.from_properties(props)


def test_quorum_flag_rules() -> None:
    static = _config(**{"controller.quorum.voters": "1@localhost:9093"})
    with pytest.raises(FormatError, match=r"^You cannot specify controller.quorum.voters and format the node"):
        check_quorum_flags(static, standalone=True, initial_controllers=None, no_initial_controllers=False)
    assert check_quorum_flags(static, standalone=False, initial_controllers=None,
                              no_initial_controllers=False) is None
    dynamic = _config()
    with pytest.raises(FormatError, match=r"^Because controller.quorum.voters is not set on this controller"):
        check_quorum_flags(dynamic, standalone=False, initial_controllers=None, no_initial_controllers=False)
    (voter,) = check_quorum_flags(dynamic, standalone=True, initial_controllers=None,
                                  no_initial_controllers=False) or ()
    assert (voter.node_id, voter.host, voter.port) == (1, "localhost", 9093)
    broker = _config(**{"process.roles": "broker"})
    with pytest.raises(FormatError, match=r"^You can only use --standalone on a controller.$"):
        check_quorum_flags(broker, standalone=True, initial_controllers=None, no_initial_controllers=False)


def test_config_defaults() -> None:
    config = StorageConfig.from_properties({"process.roles": "broker", "node.id": "2",
                                            "log.dirs": "/b,/a"})
    assert config.effective_metadata_log_dir == "/b" and config.directories == ("/a", "/b")
    assert StorageConfig.from_properties({"node.id": "1"}).log_dirs == ("/tmp/kafka-logs",)


def test_software_bounds_and_static_config_rules(tmp_path: Path) -> None:
    """4.4 software formats 4.4-IV1 as stable; the file's values must obey that level's rules."""
    sw44 = SoftwareVersion.for_release("4.4")
    result = fmt.format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path / "a"], software=sw44,
                             features={"metadata.version": 32}, static_configs={"log.segment.bytes": "4194304"})
    assert result.metadata_version is MetadataVersion.IBP_4_4_IV1
    assert fmt.format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path / "b"],
                           software=sw44).metadata_version is MetadataVersion.IBP_4_4_IV1
    with pytest.raises(FormatError, match=r"^metadata.version 4.4-IV1 is not yet stable\.$"):
        fmt.format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path / "c"], features={"metadata.version": 32})
    with pytest.raises(FormatError, match=r"^Invalid value 2097152 for configuration log\.segment\.bytes: Value must "
                                          r"be at least 3145728 \(since metadata\.version 4\.4-IV1\)$"):
        fmt.format_node(cluster_id=CLUSTER, node_id=1, log_dirs=[tmp_path / "d"], software=sw44,
                        static_configs={"log.segment.bytes": "2097152", "ssl.keystore.password": "s3cret"})
    assert not (tmp_path / "d").exists()
    config = StorageConfig.from_properties({"node.id": "1", "ssl.keystore.password": "s3cret",
                                            "kraftwerk.software.version": "4.4",
                                            "unstable.feature.versions.enable": "true"})
    assert config.software == sw44.with_unstable() and config.static_configs["ssl.keystore.password"] == "s3cret"
    assert "s3cret" not in repr(config)
    with pytest.raises(FormatError, match=r"^Invalid value x for configuration node\.id: Not a number of type INT$"):
        StorageConfig.from_properties({"node.id": "x"})


def test_random_cluster_id() -> None:
    values = {random_cluster_id() for _ in range(50)}
    assert len(values) == 50 and all(len(v) == 22 and not v.startswith("-") for v in values)
    # the first draw would print as "-..." (a flag, to a shell) and is redrawn; v4 bits are set
    draws = iter([bytes([0xF8]) + bytes(15), bytes(range(16))])
    value = random_cluster_id(lambda n: next(draws))
    expected = bytes([0, 1, 2, 3, 4, 5, 0x46, 7, 0x88, 9, 10, 11, 12, 13, 14, 15])
    assert value == uuid_to_str(uuid.UUID(bytes=expected))
