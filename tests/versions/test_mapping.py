"""version-mapping / feature-dependencies values and Kafka's parse errors (FeatureCommandTest)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftwerk.versions import (
    FeatureSpecError,
    UnknownFeatureError,
    UnknownFeatureLevelError,
    UnknownMetadataVersionError,
    VersionError,
    feature_dependencies,
    parse_feature_spec,
    render_feature_dependencies,
    render_version_mapping,
    version_mapping,
)


def test_parse_feature_spec() -> None:
    assert parse_feature_spec("kraft.version=1") == ("kraft.version", 1)
    assert parse_feature_spec(" kraft.version = 1 ") == ("kraft.version", 1)
    assert parse_feature_spec("x=+5") == ("x", 5)
    assert parse_feature_spec("x=-32768") == ("x", -32768)
    with pytest.raises(FeatureSpecError) as info:
        parse_feature_spec("kraft.version")
    assert str(info.value) == "Can't parse feature=level string kraft.version: equals sign not found."
    for spec, text in (("x=abc", "abc"), ("x=", ""), ("x=32768", "32768"), ("x=1_0", "1_0"),
                       ("x=1.0", "1.0"), ("a=b=1", "b=1")):
        with pytest.raises(FeatureSpecError) as info:
            parse_feature_spec(spec)
        assert str(info.value) == (
            f"Can't parse feature=level string {spec}: unable to parse {text} as a short."
        )


@given(st.text(max_size=20))
def test_parse_feature_spec_total(spec: str) -> None:
    try:
        name, level = parse_feature_spec(spec)
    except FeatureSpecError:
        return
    assert -(2**15) <= level < 2**15 and "=" not in name


def test_version_mapping_default_is_latest_production() -> None:
    mapping = version_mapping()
    assert mapping.release_version == "4.3-IV0"
    assert render_version_mapping()[0] == "metadata.version=30 (4.3-IV0)"
    assert mapping.to_json() == {
        "release_version": "4.3-IV0",
        "metadata_version": {"level": 30, "version": "4.3-IV0"},
        "features": {
            "kraft.version": 1, "transaction.version": 2, "group.version": 1,
            "eligible.leader.replicas.version": 1, "share.version": 1, "streams.version": 1,
        },
    }


def test_version_mapping_prints_as_typed_and_allows_unstable() -> None:
    assert render_version_mapping("3.9.2")[0] == "metadata.version=21 (3.9.2)"
    assert render_version_mapping("4.4-IV2")[0] == "metadata.version=33 (4.4-IV2)"
    assert render_version_mapping("4.4-IV2")[5] == "share.version=2"
    with pytest.raises(UnknownMetadataVersionError, match=r"^Unknown metadata.version '4.4'\. .*4\.5-IV0$"):
        render_version_mapping("4.4")
    with pytest.raises(UnknownMetadataVersionError, match=r"^Unknown metadata.version '3.2'\. "):
        render_version_mapping("3.2")


def test_feature_dependencies() -> None:
    """FeatureCommandTest.testHandleFeatureDependencies*."""
    assert feature_dependencies("metadata.version=17").lines() == [
        "metadata.version=17 (3.7-IV2) has no dependencies."
    ]
    assert render_feature_dependencies(["eligible.leader.replicas.version=1", "share.version=2"]) == [
        "eligible.leader.replicas.version=1 requires:",
        "    metadata.version=23 (4.0-IV1)",
        "share.version=2 has no dependencies.",
    ]
    assert feature_dependencies("eligible.leader.replicas.version=1").to_json() == {
        "feature": "eligible.leader.replicas.version", "level": 1,
        "dependencies": [{"feature": "metadata.version", "level": 23, "version": "4.0-IV1"}],
    }
    assert feature_dependencies("metadata.version=7").to_json() == {
        "feature": "metadata.version", "level": 7, "version": "3.3-IV3", "dependencies": [],
    }


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("foo.bar=1", UnknownFeatureError, "Unknown feature: foo.bar"),
        ("group.version=2", UnknownFeatureLevelError, "No feature:group.version with feature level 2"),
        ("metadata.version=6", UnknownMetadataVersionError, "Unknown metadata.version 6"),
        ("metadata.version=35", UnknownMetadataVersionError, "Unknown metadata.version 35"),
        ("metadata.version", FeatureSpecError,
         "Can't parse feature=level string metadata.version: equals sign not found."),
    ],
)
def test_feature_dependencies_errors(spec: str, error: type[VersionError], message: str) -> None:
    with pytest.raises(error) as info:
        feature_dependencies(spec)
    assert str(info.value) == message
