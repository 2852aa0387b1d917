"""One cluster's readiness for a target metadata.version, from the record rows of one copy of its log.

The rows are replayed into the cluster's final image by the image layer; the image then answers what
an operator asks before moving the cluster to the target: which registered brokers and controllers
cannot run it (Kafka's own range check and text), which brokers are fenced, which effective configs
break the target's KIP-1294 rules, what writing the image at the target would lose (the lossy
writer, for a downgrade), and the feature-level history the log records. The result is a JSON-ready
dict; :func:`finish_cluster` later adds what the driver knows (every copy's reach, old-format data),
the counts and the status, the same way whether Spark or one process assessed it.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from kraftwerk.controller.features import DISABLED, reason_range_not_supported
from kraftwerk.image.audit import audit_image
from kraftwerk.image.errors import ImageError, loss_message
from kraftwerk.image.model import BrokerRegistration, ControllerRegistration, MetadataImage, SupportedRange
from kraftwerk.image.source import load_rows
from kraftwerk.image.writer import ImageWriterOptions, LossPolicy, write_image
from kraftwerk.storage.metadata_rows import MetadataCopy, feature_changes
from kraftwerk.storage.metadata_scan import MetadataRow
from kraftwerk.storage.scan_summary import PartitionSummary
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.features import VersionRange
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion, check_if_metadata_changed

#: what produced a cluster report: KRaft metadata logs (a ZooKeeper dump would be another source)
KRAFT_SOURCE = "kraft-metadata"


class Severity(enum.Enum):
    BLOCKER = "blocker"
    """Kafka (or KIP-1294's audit) refuses the move, or the report cannot tell."""
    WARNING = "warning"
    """The move goes through; the operator should still act."""


class FindingKind(enum.Enum):
    """What can stand between a cluster and the target, in the order reports list them."""

    METADATA_ERROR = "metadata_error"
    BROKER_UNSUPPORTED = "broker_unsupported"
    CONTROLLER_UNSUPPORTED = "controller_unsupported"
    FENCED_BROKER = "fenced_broker"
    CONFIG_VIOLATION = "config_violation"
    LOSSY_DOWNGRADE = "lossy_downgrade"
    LEGACY_DATA = "legacy_data"

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self is FindingKind.LEGACY_DATA else Severity.BLOCKER

    @property
    def title(self) -> str:
        return _TITLES[self]


_TITLES = {
    FindingKind.METADATA_ERROR: "metadata log cannot be read",
    FindingKind.BROKER_UNSUPPORTED: "broker software does not support the target",
    FindingKind.CONTROLLER_UNSUPPORTED: "controller software does not support the target",
    FindingKind.FENCED_BROKER: "broker fenced or shutting down",
    FindingKind.CONFIG_VIOLATION: "config breaks the target's rules (KIP-1294)",
    FindingKind.LOSSY_DOWNGRADE: "metadata the target cannot express (downgrade)",
    FindingKind.LEGACY_DATA: "partition holds message format v0/v1 (KIP-724)",
}


class Status(enum.Enum):
    """Where a cluster stands toward the target, worst first."""

    UNREADABLE = "unreadable"
    BLOCKED = "blocked"
    READY = "ready"
    AT_TARGET = "at_target"


def finding(kind: FindingKind, subject: str, message: str) -> dict[str, Any]:
    return {"kind": kind.value, "severity": kind.severity.value, "subject": subject, "message": message}


def _mv_name(level: int) -> str:
    try:
        return str(MetadataVersion.from_feature_level(level, allow_legacy=True))
    except VersionError:
        return f"level {level}"


def _mv_range(rng: SupportedRange | None) -> VersionRange:
    if rng is None or rng.min > rng.max:
        return DISABLED
    return VersionRange(rng.min, rng.max)


def _range_json(rng: VersionRange) -> dict[str, Any]:
    return {"min": rng.min, "max": rng.max, "minVersion": _mv_name(rng.min), "maxVersion": _mv_name(rng.max)}


def _support(kind: FindingKind, who: str, node: BrokerRegistration | ControllerRegistration,
             target: MetadataVersion) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A node's metadata.version range and, when it excludes the target, Kafka's refusal text."""
    rng = _mv_range(node.feature_range(FEATURE_NAME))
    reason = reason_range_not_supported(target.feature_level, f"{who} {node.id}", rng)
    entry = {"id": node.id, "metadataVersionRange": _range_json(rng), "supportsTarget": reason is None}
    found = [] if reason is None else [finding(kind, f"{who.lower()} {node.id}", (
        f"{reason} ({_mv_name(rng.min)} to {_mv_name(rng.max)}); the target {target} is level "
        f"{target.feature_level}"))]
    return entry, found


def _nodes(image: MetadataImage, target: MetadataVersion
           ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    brokers, controllers, found = [], [], []
    for b in sorted(image.cluster.brokers.values(), key=lambda b: b.id):
        entry, problems = _support(FindingKind.BROKER_UNSUPPORTED, "Broker", b, target)
        entry.update(epoch=b.epoch, fenced=b.fenced, inControlledShutdown=b.in_controlled_shutdown,
                     rack=b.rack, staticConfigs=len(b.static_configs))
        brokers.append(entry)
        found += problems
        if b.fenced or b.in_controlled_shutdown:
            state = "fenced" if b.fenced else "in controlled shutdown"
            found.append(finding(FindingKind.FENCED_BROKER, f"broker {b.id}", (
                f"Broker {b.id} is {state}: it must rejoin the cluster, or be unregistered, before "
                "metadata.version changes")))
    for c in sorted(image.cluster.controllers.values(), key=lambda c: c.id):
        entry, problems = _support(FindingKind.CONTROLLER_UNSUPPORTED, "Controller", c, target)
        controllers.append(entry)
        found += problems
    return brokers, controllers, found


def _notes(image: MetadataImage, mv: MetadataVersion, target: MetadataVersion, losses: Sequence[str]
           ) -> list[str]:
    notes = []
    if not mv.is_controller_registration_supported():
        notes.append(f"Controllers register from metadata.version {MetadataVersion.IBP_3_7_IV0} on: at {mv} "
                     f"nothing shows whether the controllers support {target}")
    silent = sorted(b.id for b in image.cluster.brokers.values() if not b.static_configs)
    if silent:
        notes.append(f"Brokers {', '.join(map(str, silent))} reported no static configs (they do from "
                     f"metadata.version {MetadataVersion.IBP_4_4_IV1} on): the config audit sees their "
                     "dynamic configs and the defaults, not their server.properties")
    if target < mv and not losses and check_if_metadata_changed(mv, target):
        notes.append(f"The metadata format changed between {target} and {mv}: Kafka refuses a safe "
                     "downgrade; an unsafe one (kraftwerk features downgrade --unsafe) would lose nothing "
                     "here")
    return notes


def _history(rows: Sequence[MetadataRow]) -> list[dict[str, Any]]:
    return [{"offset": c.offset, "appendTimeMs": c.append_time_ms, "feature": c.feature,
             "fromLevel": c.from_level, "toLevel": c.to_level} for c in feature_changes(rows)]


def _base(cluster_id: str, node_id: int | None) -> dict[str, Any]:
    return {"clusterId": cluster_id, "source": KRAFT_SOURCE, "sourceNode": node_id, "status": None,
            "direction": None, "metadataVersion": None, "featureLevel": None, "features": {},
            "featuresEpoch": None, "lastOffset": None, "lastLogTimeMs": None, "image": None, "brokers": [],
            "controllers": [], "history": [], "configAudit": [], "downgradeLosses": [], "findings": [],
            "notes": [], "error": None}


def assess_cluster(cluster_id: str, rows: Sequence[MetadataRow], target: MetadataVersion) -> dict[str, Any]:
    """The readiness of the cluster whose chosen copy of the metadata log ``rows`` are (one node's)."""
    report = _base(cluster_id, rows[0].node_id if rows else None)
    try:
        image = load_rows(rows)
    except ImageError as exc:
        report["error"] = str(exc)
        report["findings"] = [finding(FindingKind.METADATA_ERROR, f"node {report['sourceNode']}", str(exc))]
        return report
    report["history"] = _history(rows)
    mv = image.metadata_version
    if mv is None:
        report["error"] = "the metadata log holds no metadata.version (no FeatureLevelRecord)"
        report["findings"] = [finding(FindingKind.METADATA_ERROR, f"node {report['sourceNode']}",
                                      report["error"])]
        return report
    brokers, controllers, found = _nodes(image, target)
    audit = audit_image(image, target.feature_level)
    found += [finding(FindingKind.CONFIG_VIOLATION, f.subject, f.violation.message() + (
        "" if f.violation.origin is None else f" [{f.violation.origin.name}]")) for f in audit]
    losses = list(write_image(image, ImageWriterOptions(target, LossPolicy.DROP)).losses)
    found += [finding(FindingKind.LOSSY_DOWNGRADE, loss, loss_message(target, [loss])) for loss in losses]
    features = {FEATURE_NAME: mv.feature_level, **dict(sorted(image.features.finalized.items()))}
    report.update(
        direction="upgrade" if target > mv else "downgrade" if target < mv else "none",
        metadataVersion=str(mv), featureLevel=mv.feature_level, features=features,
        featuresEpoch=image.features_epoch, lastOffset=image.provenance.last_offset,
        lastLogTimeMs=image.provenance.last_log_time_ms, image=image.summary(), brokers=brokers,
        controllers=controllers, configAudit=[f.to_json() for f in audit], downgradeLosses=losses,
        findings=found, notes=_notes(image, mv, target, losses))
    return report


# ---------------------------------------------------------------------- what the driver adds

def legacy_section(partitions: Sequence[PartitionSummary], log_dirs: Sequence[str]) -> dict[str, Any]:
    """The old-format data of a cluster's log dirs, from the fleet scan's partition summaries."""
    old = [p for p in partitions if p.legacy_batches]
    return {
        "logDirs": sorted(log_dirs),
        "partitions": len(partitions),
        "bytes": sum(p.bytes for p in partitions),
        "legacyPartitions": len(old),
        "legacyBytes": sum(p.legacy_bytes for p in old),
        "v0Bytes": sum(p.v0_bytes for p in old),
        "v1Bytes": sum(p.v1_bytes for p in old),
        "corruptBatches": sum(p.corrupt_batches for p in partitions),
        "legacyByPartition": [p.to_json() for p in sorted(old, key=lambda p: (p.topic, p.partition,
                                                                                  p.log_dir))],
    }


def finish_cluster(report: dict[str, Any], target: MetadataVersion, copies: Sequence[MetadataCopy],
                   legacy: dict[str, Any] | None) -> dict[str, Any]:
    """Add every copy's reach and the old-format data (None: no log dirs were scanned), then the
    findings in order, their counts and the status."""
    report["copies"] = [c.to_json() for c in sorted(copies, key=lambda c: (c.node_id is None, c.node_id))]
    torn = [c.node_id for c in copies if c.node_id == report["sourceNode"] and c.torn_tails]
    if torn:
        report["notes"].append(f"Node {torn[0]}'s log ends in a partial batch (an interrupted append), "
                               "which is ignored as Kafka's readers do")
    report["legacy"] = legacy
    findings = list(report["findings"])
    if legacy is not None:
        findings += [finding(FindingKind.LEGACY_DATA, f"{p['topic']}-{p['partition']} in {p['logDir']}",
                             f"{p['legacyBytes']} bytes of message format v0/v1 "
                             f"({p['legacyBatches']} batches, offsets "
                             f"{p['legacyFirstOffset']}..{p['legacyLastOffset']}): "
                             "kraftwerk pipeline upconvert rewrites them as v2")
                     for p in legacy["legacyByPartition"]]
    order = {k.value: i for i, k in enumerate(FindingKind)}
    findings.sort(key=lambda f: (order[f["kind"]], f["subject"]))
    report["findings"] = findings
    report["blockers"] = sum(1 for f in findings if f["severity"] == Severity.BLOCKER.value)
    report["warnings"] = len(findings) - report["blockers"]
    if report["metadataVersion"] is None:
        status = Status.UNREADABLE
    elif report["blockers"]:
        status = Status.BLOCKED
    elif report["featureLevel"] == target.feature_level:
        status = Status.AT_TARGET
    else:
        status = Status.READY
    report["status"] = status.value
    return report
