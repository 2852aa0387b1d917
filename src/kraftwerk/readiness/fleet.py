"""The fleet's readiness: every cluster's report in one document, and the one-process run.

A fleet is the metadata copies found under ``--metadata-dirs`` (grouped by the cluster id of their
``meta.properties``) and, optionally, broker log dirs whose old-format data the fleet scan measures
(attributed to a cluster by their own ``meta.properties``). :func:`assess_local` is the
``--no-spark`` run of what :mod:`kraftwerk.spark.readiness` spreads over a cluster: the same
row functions on the same rows. :func:`fleet_document` puts the reports together with the fleet's
counts (clusters by status, findings by kind, metadata.versions, old-format bytes).

Every cluster report names its ``source`` (``kraft-metadata``): a ZooKeeper-mode cluster read from a
ZooKeeper dump would be another source with its own section, counted in the same fleet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwerk.errors import KraftwerkError
from kraftwerk.readiness.assess import FindingKind, Status, assess_cluster, finish_cluster, legacy_section
from kraftwerk.storage.metadata_rows import MetadataCopy, choose_source, copy_stats
from kraftwerk.storage.metadata_scan import (
    MetadataFile,
    MetadataRow,
    discover_metadata_files,
    iter_metadata_rows,
    plan_metadata_splits,
)
from kraftwerk.storage.properties import META_PROPERTIES_FILE, read_meta_properties
from kraftwerk.storage.scan_summary import PartitionSummary
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

Progress = Callable[[int, int], None]


class ReadinessError(KraftwerkError):
    """Bad input to the readiness report (an unknown target, nothing to read)."""


def target_version(text: str) -> MetadataVersion:
    """``4.3-IV0``, ``4.3`` or ``4.4``: a metadata.version, or a release's latest production one
    (releases newer than this software's included, as ``cluster roll`` knows them)."""
    try:
        return mvs.parse_version_string(text, unstable=True, minimum=mvs.MINIMUM_KRAFT_VERSION)
    except VersionError as exc:
        try:
            return SoftwareVersion.for_release(text).latest_production
        except (VersionError, ValueError):
            raise ReadinessError(str(exc)) from None


# ---------------------------------------------------------------------- one process

@dataclass(frozen=True, slots=True)
class Assessment:
    """What the metadata part of a run found: every copy, and one report per cluster."""

    copies: list[MetadataCopy]
    reports: list[dict[str, Any]]


def _rows(files: Iterable[MetadataFile]) -> Iterator[MetadataRow]:
    for f in files:
        for split in plan_metadata_splits(f):
            yield from iter_metadata_rows(split)


def assess_local(metadata_dirs: Sequence[str], target: MetadataVersion,
                 progress: Progress | None = None) -> Assessment:
    """Every cluster under ``metadata_dirs`` assessed in this process, one cluster at a time (the
    rows of at most two copies in memory)."""
    nodes: dict[str | None, dict[int | None, list[MetadataFile]]] = defaultdict(lambda: defaultdict(list))
    for f in discover_metadata_files(metadata_dirs):
        nodes[f.cluster_id][f.node_id].append(f)
    copies: list[MetadataCopy] = []
    reports = []
    clusters = sorted(c for c in nodes if c is not None)
    for i, cluster_id in enumerate(clusters):
        best: tuple[MetadataCopy, list[MetadataRow]] | None = None
        for node_files in nodes[cluster_id].values():
            rows = list(_rows(node_files))
            copy = copy_stats(rows)
            copies.append(copy)
            if best is None or choose_source([best[0], copy]) is copy:
                best = (copy, rows)
        assert best is not None
        reports.append(assess_cluster(cluster_id, best[1], target))
        if progress is not None:
            progress(i + 1, len(clusters))
    for node_files in nodes.get(None, {}).values():
        copies.append(copy_stats(_rows(node_files)))
    return Assessment(copies, reports)


# ---------------------------------------------------------------------- the document

def cluster_of_log_dir(log_dir: str) -> str | None:
    """The cluster id in a broker log dir's ``meta.properties`` (None when it has none)."""
    path = Path(log_dir) / META_PROPERTIES_FILE
    if not path.is_file():
        return None
    try:
        return read_meta_properties(path).cluster_id
    except (KraftwerkError, ValueError):
        return None


def fleet_document(assessment: Assessment, target: MetadataVersion, *, metadata_dirs: Sequence[str],
                   log_dirs: Sequence[str] | None, missing_dirs: Sequence[str],
                   partitions: Sequence[PartitionSummary] = ()) -> dict[str, Any]:
    """The summary document of a run: the target, the inputs, the fleet's counts, every cluster."""
    by_cluster: dict[str | None, list[MetadataCopy]] = defaultdict(list)
    for c in assessment.copies:
        by_cluster[c.cluster_id].append(c)
    owner = {d: cluster_of_log_dir(d) for d in (log_dirs or ())}
    parts: dict[str | None, list[PartitionSummary]] = defaultdict(list)
    for p in partitions:
        parts[owner.get(p.log_dir)].append(p)
    clusters = []
    for report in sorted(assessment.reports, key=lambda r: r["clusterId"]):
        cid = report["clusterId"]
        legacy = None
        if log_dirs is not None:
            legacy = legacy_section(parts.get(cid, []), [d for d, c in owner.items() if c == cid])
        clusters.append(finish_cluster(report, target, by_cluster[cid], legacy))
    known = {r["clusterId"] for r in clusters}
    orphans = sorted(d for d, c in owner.items() if c not in known)
    orphan_legacy = None
    if orphans:
        orphan_legacy = legacy_section([p for p in partitions if p.log_dir in orphans], orphans)
    return {
        "target": {"metadataVersion": str(target), "featureLevel": target.feature_level},
        "metadataDirs": list(metadata_dirs),
        "logDirs": None if log_dirs is None else list(log_dirs),
        "missingDirs": list(missing_dirs),
        "fleet": _fleet(clusters, by_cluster.get(None, []), orphan_legacy),
        "clusters": clusters,
    }


def _fleet(clusters: Sequence[Mapping[str, Any]], unattributed: Sequence[MetadataCopy],
           orphan_legacy: dict[str, Any] | None) -> dict[str, Any]:
    """The fleet's counts; ``orphan_legacy`` is the old-format data of log dirs that belong to no
    cluster of the report (no ``meta.properties``, or a cluster whose metadata was not given)."""
    by_status = {s.value: 0 for s in Status}
    for c in clusters:
        by_status[c["status"]] += 1
    kinds: dict[str, dict[str, Any]] = {
        k.value: {"severity": k.severity.value, "title": k.title, "findings": 0, "clusters": 0}
        for k in FindingKind}
    for c in clusters:
        seen = set()
        for f in c["findings"]:
            kinds[f["kind"]]["findings"] += 1
            seen.add(f["kind"])
        for k in seen:
            kinds[k]["clusters"] += 1
    versions: dict[str, int] = {}
    for c in sorted(clusters, key=lambda c: c["featureLevel"] or 1 << 15):  # unknown last
        key = c["metadataVersion"] or "unknown"
        versions[key] = versions.get(key, 0) + 1
    legacy = [c["legacy"] for c in clusters if c["legacy"] is not None] + (
        [orphan_legacy] if orphan_legacy is not None else [])
    return {
        "clusters": len(clusters),
        "byStatus": by_status,
        "blockers": sum(c["blockers"] for c in clusters),
        "warnings": sum(c["warnings"] for c in clusters),
        "findingsByKind": kinds,
        "metadataVersions": versions,
        "legacyBytes": sum(x["legacyBytes"] for x in legacy),
        "legacyPartitions": sum(x["legacyPartitions"] for x in legacy),
        "unattributedMetadataCopies": [c.to_json() for c in unattributed],
        "logDirsOfNoCluster": orphan_legacy,
    }
