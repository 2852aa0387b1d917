"""``kraftwerk cluster rehearse``: the whole metadata.version lifecycle on a local cluster, told as a
short story (what ``scripts/run.sh`` runs).

A cluster is formatted at an older release on that release's software, then: the pre-flight of an
upgrade to the newest release (which nodes' software blocks it, what UpdateFeatures says), a rolling
software upgrade (``cluster roll``), the pre-flight again (what will change, what the image writer
says about the metadata at the new level), the online upgrade, a check that every controller and
broker reports the new levels with one epoch, a refused unsafe metadata.version downgrade and a safe
feature downgrade, and finally a Spark job (``kafka-metadata`` source) over every node's metadata
log printing the feature-level history it found. Each step is a paragraph on stdout, with a rich
progress bar on stderr while it waits (on a terminal); ``--output json`` prints one document.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import output_dir, positive_float, positive_int, software_version, spark_master
from kraftwerk.cli.features_cmd import level_to_string, release_version_updates, result_lines
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.errors import KraftwerkError
from kraftwerk.runtime.admin_client import AdminClient, FeatureUpdate, UpgradeType
from kraftwerk.runtime.local_cluster import (
    STATE_FILE,
    LocalCluster,
    LocalNode,
    api_versions,
    format_cluster,
    plan_cluster,
    wait_finalized,
)
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.metadata_version import MetadataVersion, check_if_metadata_changed
from kraftwerk.versions.software import SoftwareVersion

MV = mvs.FEATURE_NAME


class RehearsalError(KraftwerkError):
    """A step of the rehearsal did not go as a healthy cluster goes (the message says which)."""


def register_command(commands: Any) -> None:
    """``cluster rehearse`` (called by ``kraftwerk.cli.cluster_cmd.register``)."""
    p = commands.add_parser(
        "rehearse", help="rehearse a metadata.version upgrade end to end on a new local cluster",
        description="Format a local cluster at an older release on that release's software, roll it to the "
                    "newest software, check and run the online metadata.version upgrade, check that every "
                    "node converged, try a downgrade, then read every node's metadata log with Spark and "
                    "print the feature-level history.")
    p.add_argument("--dir", required=True, type=output_dir,
                   help="a directory for the new cluster (must not hold one)")
    p.add_argument("--from-release", type=software_version, default="3.9",
                   help="the release to format at and start on (default 3.9)")
    p.add_argument("--to-release", type=software_version, default="latest",
                   help="the release to roll and upgrade to (default: this software, "
                        f"{SoftwareVersion.latest().release})")
    p.add_argument("--controllers", type=positive_int, default=3, help="number of controllers (default 3)")
    p.add_argument("--brokers", type=positive_int, default=3, help="number of brokers (default 3)")
    p.add_argument("--master", type=spark_master, default="local[*]",
                   help="Spark master for the history job (default local[*])")
    p.add_argument("--keep", action="store_true", help="leave the cluster running at the end")
    p.add_argument("--timeout", type=positive_float, default=60.0,
                   help="seconds to wait for each step (default 60)")
    p.add_argument("--verbose", action="store_true", help="let Spark print its own log on the terminal")
    add_output_flag(p)
    p.set_defaults(func=_rehearse)


# ---------------------------------------------------------------------- output

class Story:
    """Numbered paragraphs on stdout (text) and the same facts collected for ``--output json``."""

    def __init__(self, json_output: bool) -> None:
        self.json_output = json_output
        self.steps: list[dict[str, Any]] = []
        self._started = time.monotonic()

    def step(self, title: str, **facts: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"step": len(self.steps) + 1, "title": title, **facts}
        self.steps.append(entry)
        self.say(f"\n{entry['step']}. {title}")
        return entry

    def say(self, line: str) -> None:
        if not self.json_output:
            print(line, flush=True)

    def seconds(self) -> float:
        return round(time.monotonic() - self._started, 1)


@contextlib.contextmanager
def waiting(description: str, total: int | None = None) -> Iterator[Callable[[], None]]:
    """A rich progress bar on stderr while waiting (a spinner when ``total`` is None); nothing when
    stderr is not a terminal. Yields the function that advances it by one."""
    if not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    with Progress(*columns, TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=total)
        yield lambda: progress.advance(task)


# ---------------------------------------------------------------------- the steps

def _mv_text(level: int) -> str:
    return f"{level_to_string(MV, level)} ({level})"


def _levels_text(levels: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={_mv_text(v) if k == MV else v}" for k, v in sorted(levels.items()))


def _converged(story: Story, cluster: LocalCluster, expected: Mapping[str, int],
               timeout_s: float) -> dict[str, Any]:
    """Wait until every node reports ``expected`` with one epoch; a table of what each reports."""
    with waiting(f"Waiting for every node to report {_levels_text(expected)}"):
        reported = wait_finalized(cluster, expected, timeout_s=timeout_s)
    epoch = next(iter(reported.values())).epoch
    rows = []
    for node in cluster.nodes:
        info = cluster.ready_info(node) or {}
        features = reported[node.node_id]
        rows.append({"nodeId": node.node_id, "roles": node.roles,
                     "softwareVersion": info.get("softwareVersion", node.software_version),
                     "metadataVersion": level_to_string(MV, features.finalized.get(MV, 0)),
                     "epoch": features.epoch})
    story.say(f"   every node ({len(rows)}) reports {_levels_text(expected)} with FinalizedFeaturesEpoch "
              f"{epoch}:")
    for r in rows:
        story.say(f"     node {r['nodeId']:<3} {r['roles']:<11} software {r['softwareVersion']:<5} "
                  f"metadata.version {r['metadataVersion']:<9} epoch {r['epoch']}")
    return {"epoch": epoch, "nodes": rows}


def _update(admin: AdminClient, updates: dict[str, FeatureUpdate], op: str, dry_run: bool
            ) -> tuple[list[str], bool]:
    results = admin.update_features(updates, validate_only=dry_run)
    lines, failures = result_lines(op, updates, results, dry_run)
    return lines, failures == 0


def _say_results(story: Story, lines: list[str], indent: str = "   ") -> None:
    """UpdateFeatures result lines; a refusal Kafka repeats for every feature is said once."""
    failed = [line for line in lines if line.startswith(("Can not ", "Could not "))]
    reasons = {line.split(". ", 1)[1] for line in failed}
    if len(lines) > 1 and len(failed) == len(lines) and len(reasons) == 1:
        story.say(f"{indent}UpdateFeatures refuses all {len(lines)} features: {reasons.pop()}")
        return
    for line in lines:
        story.say(f"{indent}{line}")


def _blockers(cluster: LocalCluster, target: MetadataVersion) -> list[dict[str, Any]]:
    """Nodes whose software cannot run ``target`` (their ApiVersions' metadata.version range)."""
    out = []
    for node in cluster.nodes:
        body = api_versions(node.address) or {}
        ranges = {f["name"]: (f["minVersion"], f["maxVersion"]) for f in body.get("supportedFeatures", [])}
        low, high = ranges.get(MV, (0, 0))
        if not low <= target.feature_level <= high:
            out.append({"nodeId": node.node_id, "supports": [low, high]})
    return out


def _history(story: Story, cluster: LocalCluster, master: str, spark_log: Path | None) -> dict[str, Any]:
    """Read every node's metadata log with Spark; the history of feature levels it holds."""
    from kraftwerk.spark.metadata_source import feature_history, read_metadata
    from kraftwerk.spark.quiet import quiet_session

    dirs = [str(n.data_dir(cluster.root)) for n in cluster.nodes]
    with waiting(f"Spark ({master}): reading {len(dirs)} metadata logs"), \
            quiet_session(master, spark_log) as spark:
        records = read_metadata(spark, dirs).cache()
        from pyspark.sql import functions as F

        total, errors = records.agg(F.count("*"), F.count("error")).first() or (0, 0)
        rows = [r.asDict() for r in feature_history(records).collect()]
    by_node: dict[int, list[tuple[Any, ...]]] = {}
    for r in rows:
        event = (r["offset"], r["feature"], r["from_level"], r["to_level"])
        by_node.setdefault(r["node_id"], []).append(event)
    distinct = {tuple(h) for h in by_node.values()}
    if errors or len(by_node) != len(cluster.nodes) or len(distinct) != 1:
        raise RehearsalError(f"the metadata logs disagree: {errors} undecodable records, histories of "
                             f"{len(by_node)} of {len(cluster.nodes)} nodes, {len(distinct)} distinct")
    first = min(by_node)
    history = [{"offset": r["offset"],
                "time": r["append_time"].astimezone(UTC).isoformat(timespec="milliseconds"),
                "feature": r["feature"], "from": r["from_level"], "to": r["to_level"]}
               for r in rows if r["node_id"] == first]
    story.say(f"   {total} records in {len(dirs)} nodes' logs and snapshots; the history, identical on all "
              f"{len(by_node)} nodes:")
    story.say(f"     {'OFFSET':>6}  {'TIME (UTC)':<23}  {'FEATURE':<33} {'FROM':<14} TO")
    for h in history:
        def shown(level: int | None, feature: str = h["feature"]) -> str:
            return "-" if level is None else (_mv_text(level) if feature == MV else str(level))
        when = datetime.fromisoformat(h["time"]).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        story.say(f"     {h['offset']:>6}  {when:<23}  {h['feature']:<33} {shown(h['from']):<14} "
                  f"{shown(h['to'])}")
    return {"records": total, "nodes": len(by_node), "history": history}


def _rehearse(args: argparse.Namespace) -> int:
    root: Path = args.dir.resolve()
    if (root / STATE_FILE).exists():
        raise RehearsalError(f"{root} already holds a cluster; rehearse formats a new one (remove it, or "
                             "choose another --dir)")
    try:
        old, new = (SoftwareVersion.latest() if release == "latest" else SoftwareVersion.for_release(release)
                    for release in (args.from_release, args.to_release))
        old_mv = old.latest_production
        new_mv = new.latest_production
    except KraftwerkError as exc:
        raise RehearsalError(str(exc)) from None
    if new_mv <= old_mv:
        raise RehearsalError(f"--to-release {new.release} ({new_mv}) must be newer than --from-release "
                             f"{old.release} ({old_mv})")
    story = Story(args.output == "json")
    story.say(f"Rehearsing metadata.version {old_mv} -> {new_mv} on {args.controllers} controller(s) and "
              f"{args.brokers} broker(s) in {root}")
    from kraftwerk.storage.format import random_cluster_id

    root.mkdir(parents=True, exist_ok=True)
    # unlimited metadata log retention, as Kafka keeps its log for days: the whole history stays on disk
    retention = {"metadata.max.retention.ms": "-1", "metadata.max.retention.bytes": "-1"}
    cluster = plan_cluster(root, random_cluster_id(), args.controllers, args.brokers,
                           software_version=old.release, extra=retention)
    format_cluster(cluster, old_mv.version)
    cluster.save()
    try:
        _run(story, cluster, args, old, new, old_mv, new_mv)
    finally:
        if not args.keep:
            cluster = LocalCluster.load(root)
            cluster.stop(cluster.nodes, grace_s=10)
    _spark_step(story, LocalCluster.load(root), args)
    if args.output == "json":
        print_json({"clusterId": cluster.cluster_id, "dir": str(root), "from": old_mv.version,
                    "to": new_mv.version, "seconds": story.seconds(), "steps": story.steps})
    else:
        story.say(f"\nRehearsal done in {story.seconds():.0f}s. The cluster's data is in {root}"
                  + ("; it is still running." if args.keep else
                     f"; `kraftwerk cluster up --dir {root}` brings it back."))
    return 0


def _run(story: Story, cluster: LocalCluster, args: argparse.Namespace, old: SoftwareVersion,
         new: SoftwareVersion, old_mv: MetadataVersion, new_mv: MetadataVersion) -> None:
    timeout = args.timeout
    quorum = "static" if cluster.static_quorum else "dynamic"
    step = story.step(f"A cluster formatted at {old_mv} on Kafka {old.release} software ({quorum} quorum)")
    with waiting(f"Starting {len(cluster.nodes)} nodes"):
        fenced = cluster.start_all(timeout)
    if fenced:
        raise RehearsalError(f"nodes {sorted(fenced)} stayed fenced: {fenced}")
    story.say(f"   cluster {cluster.cluster_id}: controllers {cluster.bootstrap_controllers}, "
              f"brokers {cluster.bootstrap_servers}")
    step["convergence"] = _converged(story, cluster, {MV: old_mv.feature_level}, timeout)
    upgrade = release_version_updates(new_mv, UpgradeType.UPGRADE)
    with AdminClient(cluster.bootstrap_servers, api_timeout_s=timeout) as admin:
        step = story.step(f"Pre-flight of the upgrade to {new.release} ({new_mv}) before the roll")
        blockers = _blockers(cluster, new_mv)
        lines, ok = _update(admin, upgrade, "upgrade", dry_run=True)
        step.update(blockers=blockers, dryRun=lines, wouldSucceed=ok)
        story.say(f"   blocked: {len(blockers)} node(s) run software that stops at an older "
                  f"metadata.version: " + ", ".join(f"node {b['nodeId']} (up to {_mv_text(b['supports'][1])})"
                                                    for b in blockers))
        _say_results(story, lines)
        if ok or not blockers:
            raise RehearsalError("the upgrade was not refused before the roll")

        step = story.step(f"Rolling software upgrade to Kafka {new.release}: one node at a time")
        restarted: list[dict[str, Any]] = []
        with waiting("Rolling", len(cluster.nodes)) as advance:
            def report(node: LocalNode, seconds: float) -> None:
                restarted.append({"nodeId": node.node_id, "roles": node.roles, "seconds": round(seconds, 1)})
                story.say(f"   node {node.node_id} ({node.roles}) restarted on {new.release} software in "
                          f"{seconds:.1f}s")
                advance()

            cluster.roll(new.release, timeout_s=timeout, on_restart=report)
        step["restarted"] = restarted

        step = story.step(f"Pre-flight of the upgrade to {new_mv} after the roll")
        from kraftwerk.image.source import load_log_dir
        from kraftwerk.image.writer import image_losses

        blockers = _blockers(cluster, new_mv)
        lines, ok = _update(admin, upgrade, "upgrade", dry_run=True)
        image = load_log_dir(cluster.brokers[0].data_dir(cluster.root) / "__cluster_metadata-0")
        losses = image_losses(image, new_mv)
        changed = check_if_metadata_changed(old_mv, new_mv)
        step.update(blockers=blockers, dryRun=lines, wouldSucceed=ok, metadataChanged=changed,
                    imageOffset=image.provenance.last_offset, lossesAtTarget=list(losses))
        story.say(f"   blocked: {len(blockers)} node(s); UpdateFeatures (validate only) says:")
        _say_results(story, lines, "     ")
        story.say(f"   the image (offset {image.provenance.last_offset}) written at {new_mv}: "
                  + ("lossless" if not losses else "loses " + "; ".join(losses)))
        story.say(f"   {old_mv} -> {new_mv} changes the metadata format: " + (
            f"after the upgrade, going back below {new_mv} needs an unsafe (lossy) downgrade" if changed
            else "a later downgrade stays safe"))
        if not ok or blockers:
            raise RehearsalError("the upgrade would still be refused after the roll")

        step = story.step(f"Online upgrade: kafka-features upgrade --release-version {new.release}")
        lines, ok = _update(admin, upgrade, "upgrade", dry_run=False)
        step["result"] = lines
        _say_results(story, lines)
        if not ok:
            raise RehearsalError("the upgrade failed")

        step = story.step("Convergence: every controller and broker on the new levels")
        expected = {name: u.max_version_level for name, u in upgrade.items()}
        step.update(_converged(story, cluster, expected, timeout))

        previous = max((mv for mv in MetadataVersion if mv < new_mv and mv.is_production), default=old_mv)
        step = story.step(f"Downgrades: metadata.version to {previous}, then transaction.version to 1")
        refused, ok = _update(admin, {MV: FeatureUpdate(previous.feature_level, UpgradeType.SAFE_DOWNGRADE)},
                              "downgrade", dry_run=False)
        if ok:
            raise RehearsalError(f"the safe downgrade to {previous} was not refused")
        safe, ok = _update(admin, {"transaction.version": FeatureUpdate(1, UpgradeType.SAFE_DOWNGRADE)},
                           "downgrade", dry_run=False)
        step.update(refused=refused, safe=safe)
        story.say(f"   refused, as the metadata changed between {previous} and {new_mv}:")
        for line in refused:
            story.say(f"     {line}")
        story.say("   safe:")
        for line in safe:
            story.say(f"     {line}")
        if not ok:
            raise RehearsalError("the safe downgrade of transaction.version failed")
        step["convergence"] = _converged(story, cluster, {**expected, "transaction.version": 1}, timeout)


def _spark_step(story: Story, cluster: LocalCluster, args: argparse.Namespace) -> None:
    state = "still running" if args.keep else "stopped, data kept"
    step = story.step(f"Spark ({args.master}) over every node's metadata log ({state}): the feature-level "
                      "history")
    spark_log = None if args.verbose else cluster.root / "spark.log"
    step.update(_history(story, cluster, args.master, spark_log))
