"""``kraftwerk migration check|export|dump``: KIP-866's ZooKeeper side, on a live ZooKeeper or a dump.

``check`` prints every migration precondition as a pass/fail line with its reason (exit 1 when the
cluster is not ready); ``export`` writes the migration's records as a KRaft snapshot that
``metadata show --snapshot`` reads; ``dump`` saves the tree (one JSON line per znode with its stat)
for offline checks and for ``pipeline zk-readiness`` over a fleet. Every option is checked before
ZooKeeper is contacted; an unreachable ZooKeeper is one line and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import (
    input_file,
    output_file,
    output_file_or_dir,
    positive_float,
    release_version,
    zookeeper_connect,
)
from kraftwerk.cli.output import add_output_flag, print_json, status
from kraftwerk.migration.reader import DEFAULT_TIMEOUT_S, connect, read_tree
from kraftwerk.migration.readiness import (
    BrokerConfigFacts,
    ReadinessReport,
    broker_facts_from_properties,
    check_readiness,
)
from kraftwerk.migration.state import parse_cluster
from kraftwerk.migration.translate import Translation, snapshot_file_bytes, translate
from kraftwerk.migration.tree import ZkTree, dump_lines, read_dump_file, tree_of
from kraftwerk.storage.fileio import atomic_write
from kraftwerk.versions import metadata_version as mvs


def register(groups: Any) -> None:
    parser = groups.add_parser("migration",
                               help="ZooKeeper to KRaft migration (KIP-866): readiness, export, dump")
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)

    check = commands.add_parser(
        "check", help="check every precondition of a ZooKeeper to KRaft migration",
        description="Read the ZooKeeper tree of a ZooKeeper-mode Kafka cluster (or a dump of it) and print "
                    "each migration precondition with PASS, FAIL, WARN or UNKNOWN and the reason, then the "
                    "cluster's sizes. Exit code 1 when a check fails or cannot be verified.")
    _source(check)
    check.add_argument("--broker-config", action="append", type=input_file, default=[], metavar="FILE",
                       help="a ZK broker's server.properties (repeatable): its "
                            "zookeeper.metadata.migration.enable and inter.broker.protocol.version are not "
                            "in ZooKeeper")
    _common(check)
    check.set_defaults(func=run_check)

    export = commands.add_parser(
        "export", help="translate the ZooKeeper tree into a KRaft metadata snapshot",
        description="Translate topics (ids kept), partitions, configs, client quotas, SCRAM credentials, the "
                    "producer id block, ACLs and delegation tokens into KRaft records in Kafka's migration "
                    "order at the record versions --metadata-version allows, and write them as a KRaft "
                    "snapshot. Data that version cannot hold is reported, and written only with --unsafe.")
    _source(export)
    export.add_argument("--metadata-version", required=True, type=release_version, metavar="VERSION",
                        help="the metadata.version of the KRaft cluster (3.4-IV0 or later)")
    export.add_argument("--out", required=True, type=output_file_or_dir, metavar="FILE",
                        help="snapshot file to write (a directory gets Kafka's <offset>-<epoch>.checkpoint)")
    export.add_argument("--unsafe", action="store_true",
                        help="write even when the metadata.version cannot hold some of the data (it is "
                             "dropped)")
    _common(export)
    export.set_defaults(func=run_export)

    dump = commands.add_parser(
        "dump", help="save a ZooKeeper tree as JSON lines (one znode with its stat per line)",
        description="Read the whole tree (consistently, without watches) and write one JSON line per znode: "
                    "path, data and stat. check, export and pipeline zk-readiness read such dumps.")
    dump.add_argument("--zookeeper", required=True, type=zookeeper_connect, metavar="HOST:PORT[/CHROOT]",
                      help="ZooKeeper connect string, as zookeeper.connect")
    dump.add_argument("--out", required=True, type=output_file, metavar="FILE.jsonl",
                      help="dump file to write")
    _timeout(dump)
    add_output_flag(dump)
    dump.set_defaults(func=run_dump)


def _source(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--zookeeper", type=zookeeper_connect, metavar="HOST:PORT[/CHROOT]",
                        help="ZooKeeper connect string, as zookeeper.connect")
    source.add_argument("--dump", type=input_file, metavar="FILE.jsonl", help="a file `migration dump` wrote")


def _timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"ZooKeeper connection and session timeout (default {DEFAULT_TIMEOUT_S:g})")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--skip-invalid", action="store_true",
                   help="skip znodes Kafka could not read (malformed JSON, unknown versions, missing "
                        "partition states) instead of failing; they are still listed")
    _timeout(p)
    add_output_flag(p)


def _read_zookeeper(connect_string: str, timeout: float) -> ZkTree:
    what = f"Reading ZooKeeper at {connect_string}"
    with status(what, sys.stderr.isatty()) as update, connect(connect_string, timeout) as client:
        return read_tree(client, progress=lambda n: update(f"{what}: {n} znodes"))


def _tree(args: argparse.Namespace) -> ZkTree:
    if args.dump is not None:
        return tree_of(read_dump_file(str(args.dump)), str(args.dump))
    return _read_zookeeper(args.zookeeper, args.timeout)


# ---------------------------------------------------------------------- check


def _broker_configs(paths: list[Path]) -> dict[int, BrokerConfigFacts]:
    facts: dict[int, BrokerConfigFacts] = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            text = path.read_text(encoding="latin-1")  # java.util.Properties' own encoding
        f = broker_facts_from_properties(text, str(path))
        facts[f.broker_id] = f
    return facts


def run_check(args: argparse.Namespace) -> int:
    configs = _broker_configs(args.broker_config)
    state = parse_cluster(_tree(args))
    report = check_readiness(state, configs, skip_invalid=args.skip_invalid)
    if args.output == "json":
        print_json(report.to_json())
    else:
        _print_report(report, args.zookeeper or str(args.dump))
    return 0 if report.ready else 1


def _print_report(report: ReadinessReport, source: str) -> None:
    print(f"Migration readiness of {source} (cluster id {report.cluster_id or 'unknown'}):")
    width = max(len(c.name) for c in report.checks)
    for c in report.checks:
        print(f"  {c.status.value:<7} {c.name:<{width}}  {c.reason}")
    s = report.sizes
    print(f"Sizes: {s.brokers} brokers, {s.topics} topics, {s.partitions} partitions, {s.configs} configs, "
          f"{s.acls} ACLs, {s.quotas} client quotas, {s.scram_credentials} SCRAM credentials, "
          f"{s.delegation_tokens} delegation tokens; {s.znodes} znodes ({s.data_bytes} bytes of data); "
          f"about {s.estimated_records} migration records")
    if report.ready:
        print("The cluster is ready for migration.")
    else:
        failed = sum(1 for c in report.blockers if c.status.value == "FAIL")
        unknown = len(report.blockers) - failed
        print(f"The cluster is NOT ready for migration: {failed} check(s) failed, {unknown} could not be "
              "verified.")


# ---------------------------------------------------------------------- export


def run_export(args: argparse.Namespace) -> int:
    target = mvs.parse_version_string(args.metadata_version, unstable=True, minimum=mvs.MINIMUM_KRAFT_VERSION)
    state = parse_cluster(_tree(args))
    result = translate(state, target, skip_invalid=args.skip_invalid)
    for skipped in result.skipped:
        print(f"Skipped invalid znode {skipped}", file=sys.stderr)
    report = _export_report(result, state.cluster_id)
    if result.losses and not args.unsafe:
        report["written"] = False
        if args.output == "json":
            print_json(report)
        else:
            print(f"metadata.version {target} cannot represent some of the cluster's metadata:",
                  file=sys.stderr)
            for loss in result.losses:
                print(f"  lost: {loss}", file=sys.stderr)
            print("Refusing to write a lossy snapshot; use --unsafe to drop this metadata.", file=sys.stderr)
        return 1
    data, sid = snapshot_file_bytes(result, int(time.time() * 1000))
    path: Path = args.out / sid.file_name if args.out.is_dir() else args.out
    atomic_write(path, data, tmp_suffix=".part")
    report.update({"written": True, "path": str(path), "bytes": len(data),
                   "snapshotId": {"endOffset": sid.end_offset, "epoch": sid.epoch}})
    if args.output == "json":
        print_json(report)
    else:
        _print_export(result, report, state.cluster_id)
    return 0


def _export_report(result: Translation, cluster_id: str | None) -> dict[str, Any]:
    return {"clusterId": cluster_id, "metadataVersion": str(result.metadata_version),
            "records": len(result.snapshot_records()), "migrationLogRecords": len(result.log_records()),
            "recordCounts": result.counts(), "losses": list(result.losses),
            "skipped": [{"path": e.path, "reason": e.reason} for e in result.skipped],
            "notes": list(result.notes)}


def _print_export(result: Translation, report: dict[str, Any], cluster_id: str | None) -> None:
    print(f"Wrote {report['path']}: {report['records']} records at metadata.version "
          f"{result.metadata_version} ({report['bytes']} bytes).")
    for name, count in sorted(result.counts().items()):
        print(f"  {name}: {count}")
    for loss in result.losses:
        print(f"Dropped: {loss}")
    for note in result.notes:
        print(f"Note: {note}")
    if cluster_id:
        print(f"Format the KRaft controllers with --cluster-id {cluster_id} (the ZooKeeper cluster's id).")


# ---------------------------------------------------------------------- dump


def run_dump(args: argparse.Namespace) -> int:
    tree = _read_zookeeper(args.zookeeper, args.timeout)
    written = atomic_write(args.out, (line.encode("utf-8") + b"\n" for line in dump_lines(tree)))
    if args.output == "json":
        print_json({"path": str(args.out), "znodes": len(tree), "bytes": written})
    else:
        print(f"Wrote {len(tree)} znodes ({written} bytes) from {args.zookeeper} to {args.out}")
    return 0
