"""The readiness report in one process (``kraftwerk.readiness``) on a generated fleet of 200 clusters:
every seeded blocker is found and nothing else, each cluster is read from its furthest copy, and
the history, levels and fleet counts are the generator's books."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from kraftwerk.readiness.assess import FindingKind, Status
from kraftwerk.readiness.fleet import ReadinessError, assess_local, fleet_document, target_version
from kraftwerk.storage.scan import scan_segments
from kraftwerk.storage.scan_summary import summarize
from kraftwerk.storage.segment_splits import discover_segments
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.readiness.generator import TARGET, MetadataFleet, fleet_on_tmpfs


@pytest.fixture(scope="module")
def fleet() -> Iterator[MetadataFleet]:
    with fleet_on_tmpfs(200) as f:
        yield f


@pytest.fixture(scope="module")
def doc(fleet: MetadataFleet) -> dict[str, Any]:
    dirs = [str(fleet.root / "metadata")]
    log_dirs = [str(d) for d in fleet.log_dirs]
    progress: list[tuple[int, int]] = []
    assessment = assess_local(dirs, TARGET, lambda done, total: progress.append((done, total)))
    assert progress == [(i, 200) for i in range(1, 201)]
    partitions = summarize(scan_segments(discover_segments(log_dirs)))
    return fleet_document(assessment, TARGET, metadata_dirs=dirs, log_dirs=log_dirs, missing_dirs=[],
                          partitions=partitions)


def test_every_seeded_blocker_is_found_and_nothing_else(fleet: MetadataFleet, doc: dict[str, Any]) -> None:
    assert [c["clusterId"] for c in doc["clusters"]] == sorted(b.cluster_id for b in fleet.clusters)
    for c in doc["clusters"]:
        books = fleet.books(c["clusterId"])
        assert {(f["kind"], f["subject"]) for f in c["findings"]} == books.seeded, c["clusterId"]
        assert c["status"] == books.status
        for f in c["findings"]:
            assert f["severity"] == FindingKind(f["kind"]).severity.value
    kinds = Counter(kind for b in fleet.clusters for kind, _ in b.seeded)
    assert set(kinds) == {k.value for k in FindingKind}, "the fleet seeds every kind"
    assert {k: v["findings"] for k, v in doc["fleet"]["findingsByKind"].items()} == {
        k.value: kinds[k.value] for k in FindingKind}


def test_each_cluster_is_its_furthest_copy_with_the_generators_history(fleet: MetadataFleet,
                                                                     doc: dict[str, Any]) -> None:
    readable = [c for c in doc["clusters"] if c["status"] != Status.UNREADABLE.value]
    assert sum(fleet.books(c["clusterId"]).snapshot for c in readable) > 10
    assert any(len(c["copies"]) > len(fleet.books(c["clusterId"]).controllers) for c in readable)
    for c in readable:
        books = fleet.books(c["clusterId"])
        assert c["sourceNode"] == books.source_node
        assert {k["nodeId"] for k in c["copies"]} == set(books.copies)
        assert c["lastOffset"] == max(k["lastOffset"] for k in c["copies"])
        assert c["metadataVersion"] == str(books.metadata_version)
        assert c["features"] == books.features
        levels = [h["toLevel"] for h in c["history"] if h["feature"] == "metadata.version"]
        if books.snapshot:  # a cleaned log starts from its snapshot's levels
            assert levels == books.levels[len(books.levels) - len(levels):] and levels
        else:
            assert levels == books.levels
        assert [b["id"] for b in c["brokers"]] == books.brokers
        assert [n["id"] for n in c["controllers"]] == (
            books.controllers if books.metadata_version.is_controller_registration_supported() else [])
        mv = books.metadata_version
        assert c["direction"] == ("upgrade" if mv < TARGET else "downgrade" if mv > TARGET else "none")


def test_the_fleet_counts(fleet: MetadataFleet, doc: dict[str, Any]) -> None:
    counts = doc["fleet"]
    assert counts["clusters"] == 200
    assert counts["byStatus"] == {s.value: sum(1 for b in fleet.clusters if b.status == s.value)
                                  for s in Status}
    assert sum(counts["metadataVersions"].values()) == 200
    assert counts["metadataVersions"]["unknown"] == counts["byStatus"]["unreadable"]
    legacy = sum(b.legacy_bytes for b in fleet.clusters)
    orphan = counts["logDirsOfNoCluster"]
    assert orphan["logDirs"] == [str(fleet.orphan_log_dir)] and orphan["legacyBytes"] > 0
    assert counts["legacyBytes"] == legacy + orphan["legacyBytes"]
    assert len(counts["unattributedMetadataCopies"]) == 1
    assert counts["blockers"] + counts["warnings"] == sum(len(b.seeded) for b in fleet.clusters)


def test_target_versions() -> None:
    assert target_version("4.3") is MV.IBP_4_3_IV0
    assert target_version("4.4") is MV.IBP_4_4_IV1  # a release newer than this software
    assert target_version("4.4-IV2") is MV.IBP_4_4_IV2
    assert target_version("3.0-IV1") is MV.IBP_3_0_IV1
    with pytest.raises(ReadinessError, match=r"^Unknown metadata.version '9.9'. Supported metadata.version"):
        target_version("9.9")
