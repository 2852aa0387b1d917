"""The readiness report's Parquet tables, one row per cluster, finding, history entry, node, config
value, loss, metadata copy and old-format partition, taken from the summary document.

They are written from the document on the driver with pyarrow, whichever engine assessed the
clusters: a run on Spark and one with ``--no-spark`` write the same tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from kraftwerk.storage.fileio import atomic_write

Row = dict[str, Any]
Document = Mapping[str, Any]

CLUSTERS = (("cluster_id", "string"), ("source", "string"), ("status", "string"), ("direction", "string"),
            ("metadata_version", "string"), ("feature_level", "int16"), ("source_node", "int32"),
            ("last_offset", "int64"), ("brokers", "int32"), ("controllers", "int32"), ("topics", "int32"),
            ("partitions", "int64"), ("blockers", "int32"), ("warnings", "int32"), ("legacy_bytes", "int64"),
            ("legacy_partitions", "int32"), ("error", "string"))
FINDINGS = (("cluster_id", "string"), ("kind", "string"), ("severity", "string"), ("subject", "string"),
            ("message", "string"))
HISTORY = (("cluster_id", "string"), ("offset", "int64"), ("append_time", "timestamp"), ("feature", "string"),
           ("from_level", "int16"), ("to_level", "int16"))
NODES = (("cluster_id", "string"), ("node_id", "int32"), ("role", "string"), ("min_level", "int16"),
         ("max_level", "int16"), ("min_version", "string"), ("max_version", "string"),
         ("supports_target", "bool"), ("fenced", "bool"), ("in_controlled_shutdown", "bool"),
         ("static_configs", "int32"))
CONFIG_AUDIT = (("cluster_id", "string"), ("resource_type", "string"), ("resource_name", "string"),
                ("config", "string"), ("value", "string"), ("source", "string"), ("rule", "string"),
                ("since_metadata_version", "string"), ("reason", "string"))
LOSSES = (("cluster_id", "string"), ("loss", "string"))
COPIES = (("cluster_id", "string"), ("node_id", "int32"), ("source", "bool"), ("files", "int32"),
          ("records", "int64"), ("errors", "int64"), ("torn_tails", "int32"), ("log_start_offset", "int64"),
          ("last_offset", "int64"), ("snapshot_end_offset", "int64"))
LEGACY = (("cluster_id", "string"), ("log_dir", "string"), ("topic", "string"), ("partition", "int32"),
          ("legacy_bytes", "int64"), ("v0_bytes", "int64"), ("v1_bytes", "int64"),
          ("legacy_batches", "int64"), ("legacy_records", "int64"), ("legacy_first_offset", "int64"),
          ("legacy_last_offset", "int64"))


def _clusters(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        image = c["image"] or {}
        legacy = c["legacy"] or {}
        yield {"cluster_id": c["clusterId"], "source": c["source"], "status": c["status"],
               "direction": c["direction"], "metadata_version": c["metadataVersion"],
               "feature_level": c["featureLevel"], "source_node": c["sourceNode"],
               "last_offset": c["lastOffset"], "brokers": image.get("brokers"),
               "controllers": image.get("controllers"), "topics": image.get("topics"),
               "partitions": image.get("partitions"), "blockers": c["blockers"], "warnings": c["warnings"],
               "legacy_bytes": legacy.get("legacyBytes"),
               "legacy_partitions": legacy.get("legacyPartitions"), "error": c["error"]}


def _findings(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for f in c["findings"]:
            yield {"cluster_id": c["clusterId"], **f}


def _history(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for h in c["history"]:
            yield {"cluster_id": c["clusterId"], "offset": h["offset"], "append_time": h["appendTimeMs"],
                   "feature": h["feature"], "from_level": h["fromLevel"], "to_level": h["toLevel"]}


def _nodes(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for role in ("brokers", "controllers"):
            for n in c[role]:
                rng = n["metadataVersionRange"]
                yield {"cluster_id": c["clusterId"], "node_id": n["id"], "role": role[:-1],
                       "min_level": rng["min"], "max_level": rng["max"], "min_version": rng["minVersion"],
                       "max_version": rng["maxVersion"],
                       "supports_target": n["supportsTarget"], "fenced": n.get("fenced"),
                       "in_controlled_shutdown": n.get("inControlledShutdown"),
                       "static_configs": n.get("staticConfigs")}


def _config_audit(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for a in c["configAudit"]:
            yield {"cluster_id": c["clusterId"], "resource_type": a["resourceType"],
                   "resource_name": a["resourceName"], "config": a["config"], "value": a["value"],
                   "source": a["source"], "rule": a["rule"],
                   "since_metadata_version": a["sinceMetadataVersion"], "reason": a["reason"]}


def _losses(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for loss in c["downgradeLosses"]:
            yield {"cluster_id": c["clusterId"], "loss": loss}


def _copies(doc: Document) -> Iterator[Row]:
    for c in doc["clusters"]:
        for copy in c["copies"]:
            yield {"cluster_id": c["clusterId"], "source": copy["nodeId"] == c["sourceNode"],
                   **{_snake(k): v for k, v in copy.items()}}
    for copy in doc["fleet"]["unattributedMetadataCopies"]:
        yield {"cluster_id": None, "source": False, **{_snake(k): v for k, v in copy.items()}}


def _legacy(doc: Document) -> Iterator[Row]:
    sections = [(c["clusterId"], c["legacy"]) for c in doc["clusters"]]
    sections.append((None, doc["fleet"]["logDirsOfNoCluster"]))
    for cid, section in sections:
        for p in (section or {}).get("legacyByPartition", []):
            yield {"cluster_id": cid, "log_dir": p["logDir"], "topic": p["topic"],
                   "partition": p["partition"], "legacy_bytes": p["legacyBytes"], "v0_bytes": p["v0Bytes"],
                   "v1_bytes": p["v1Bytes"],
                   "legacy_batches": p["legacyBatches"], "legacy_records": p["legacyRecords"],
                   "legacy_first_offset": p["legacyFirstOffset"], "legacy_last_offset": p["legacyLastOffset"]}


def _snake(name: str) -> str:
    return "".join(f"_{ch.lower()}" if ch.isupper() else ch for ch in name)


TABLES: Mapping[str, tuple[tuple[tuple[str, str], ...], Callable[[Document], Iterator[Row]]]] = {
    "clusters": (CLUSTERS, _clusters),
    "findings": (FINDINGS, _findings),
    "history": (HISTORY, _history),
    "nodes": (NODES, _nodes),
    "config_audit": (CONFIG_AUDIT, _config_audit),
    "losses": (LOSSES, _losses),
    "copies": (COPIES, _copies),
    "legacy_partitions": (LEGACY, _legacy),
}


def _arrow_type(name: str) -> Any:
    import pyarrow as pa  # type: ignore[import-untyped]

    if name == "timestamp":
        return pa.timestamp("ms", tz="UTC")
    return {"string": pa.string(), "bool": pa.bool_(), "int16": pa.int16(), "int32": pa.int32(),
            "int64": pa.int64()}[name]


def write_tables(doc: Document, out_dir: Path) -> dict[str, Path]:
    """Every table of ``doc`` as ``out_dir/<name>.parquet`` (each written crash-safely)."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, (columns, rows) in TABLES.items():
        schema = pa.schema([(c, _arrow_type(t)) for c, t in columns])
        table = pa.Table.from_pylist(list(rows(doc)), schema=schema)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        path = out_dir / f"{name}.parquet"
        atomic_write(path, sink.getvalue().to_pybytes())
        written[name] = path
    return written
