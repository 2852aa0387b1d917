"""``kraftwerk features <command>``: ``kafka-features.sh`` with the same flags, output and exit codes.

``describe``, ``upgrade``, ``downgrade`` and ``disable`` talk to a cluster through
:mod:`kraftwerk.runtime.admin_client` (``--bootstrap-server`` brokers, which forward updates to the
active controller, or ``--bootstrap-controller`` controllers); ``version-mapping`` and
``feature-dependencies`` are offline look-ups shared with ``kraftwerk storage``. Result lines go to
stdout sorted by feature name; "N out of M operation(s) failed." goes to stderr with exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kraftwerk.cli.args import (
    bootstrap_servers,
    feature_level,
    feature_name,
    input_file,
    non_negative_int,
    positive_float,
    release_version,
)
from kraftwerk.cli.output import add_output_flag, print_json, status
from kraftwerk.cli.storage_cmd import print_feature_dependencies, print_version_mapping
from kraftwerk.config.errors import ConfigError
from kraftwerk.config.properties import properties_values
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import (
    AdminClient,
    AdminClientError,
    FeatureMetadata,
    FeatureUpdate,
    MismatchedEndpointTypeError,
    UpdateResult,
    UpgradeType,
)
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity, client_security
from kraftwerk.runtime.feature_convergence import Convergence, wait_converged
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.features import PRODUCTION_FEATURES
from kraftwerk.versions.mapping import parse_feature_spec
from kraftwerk.versions.metadata_version import MetadataVersion

log = logging.getLogger(__name__)


class FeatureCommandError(KraftwerkError):
    """A ``kafka-features`` failure printed as one stderr line (exit 1), as Kafka's TerseException."""


class _UpdateFailed(KraftwerkError):
    """Some updates failed: the per-feature lines are printed, this is the stderr summary."""


#: Admin client configs we act on; anything else in --command-config is reported and ignored.
_SUPPORTED_CONFIGS = frozenset({"bootstrap.servers", "bootstrap.controllers", "client.id",
                                "request.timeout.ms", "default.api.timeout.ms", "retry.backoff.ms",
                                "security.protocol", "sasl.mechanism", "sasl.jaas.config",
                                "ssl.truststore.location", "ssl.truststore.type",
                                "ssl.truststore.certificates", "ssl.keystore.location", "ssl.keystore.type",
                                "ssl.key.password", "ssl.keystore.password",
                                "ssl.endpoint.identification.algorithm"})


def register(groups: Any) -> None:
    parser = groups.add_parser(
        "features", help="manage feature flags (kafka-features)",
        description="This tool manages feature flags in Kafka.")
    add_connection_flags(parser, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)

    describe = commands.add_parser("describe", help="Describes the current active feature flags.")
    describe.add_argument("--node-id", type=non_negative_int, help="Send request to specific node.")
    add_connection_flags(describe, argparse.SUPPRESS)
    add_output_flag(describe)
    describe.set_defaults(func=_describe)

    for op in ("upgrade", "downgrade"):
        sub = commands.add_parser(op, help=f"{op.capitalize()} one or more feature flags.")
        sub.add_argument("--metadata", type=release_version,
                         help=f"DEPRECATED -- The level to which we should {op} the metadata. For example, "
                              "3.3-IV3.")
        sub.add_argument("--release-version", type=release_version,
                         help=f"The release version to {op} all features to. For example, 3.9-IV0 will set "
                              "metadata.version=21 and kraft.version=1.")
        sub.add_argument("--feature", action="append", type=feature_level,
                         help=f"A feature {op} we should perform, in feature=level format. For example: "
                              "`metadata.version=5`.")
        if op == "downgrade":
            sub.add_argument("--unsafe", action="store_true",
                             help="Perform this downgrade even if it may irreversibly destroy metadata.")
        sub.add_argument("--dry-run", action="store_true", help=f"Validate this {op}, but do not perform it.")
        sub.add_argument("--skip-config-audit", action="store_true",
                         help="kraftwerk (KIP-1294): change metadata.version even if the controller's "
                              "config audit finds violations or brokers with unknown static configs.")
        sub.add_argument("--wait-converged", nargs="?", const=DEFAULT_CONVERGE_S, type=positive_float,
                         metavar="SECONDS",
                         help="kraftwerk: after the commit, wait until every unfenced node (brokers, or "
                              "controllers with --bootstrap-controller) reports the new levels; fail "
                              f"naming the laggards after SECONDS (default {DEFAULT_CONVERGE_S:g}).")
        add_connection_flags(sub, argparse.SUPPRESS)
        add_output_flag(sub)
        sub.set_defaults(func=_update, op=op)

    disable = commands.add_parser(
        "disable",
        help="Disable one or more feature flags. This is the same as downgrading the version to zero.")
    disable.add_argument("--feature", action="append", type=feature_name, help="A feature flag to disable.")
    disable.add_argument("--unsafe", action="store_true",
                         help="Disable this feature flag even if it may irreversibly destroy metadata.")
    disable.add_argument("--dry-run", action="store_true",
                         help="Perform a dry-run of this disable operation.")
    add_connection_flags(disable, argparse.SUPPRESS)
    add_output_flag(disable)
    disable.set_defaults(func=_update, op="disable")

    mapping = commands.add_parser(
        "version-mapping", help="Look up the corresponding features for a given metadata version.")
    mapping.add_argument("--release-version", type=release_version,
                         help=f"The release version to use for the corresponding feature mapping. The "
                              f"minimum is {mvs.MINIMUM_VERSION}; the default is {mvs.LATEST_PRODUCTION}")
    add_connection_flags(mapping, argparse.SUPPRESS)
    add_output_flag(mapping)
    mapping.set_defaults(func=_version_mapping)

    deps = commands.add_parser("feature-dependencies",
                               help="Look up dependencies for a given feature version.")
    deps.add_argument("--feature", action="append", required=True, type=feature_level,
                      help="The feature and version to look up dependencies for, in feature=version format.")
    add_connection_flags(deps, argparse.SUPPRESS)
    add_output_flag(deps)
    deps.set_defaults(func=_feature_dependencies)


def add_connection_flags(parser: argparse.ArgumentParser, default: Any) -> None:
    """The global flags; accepted before the command (Kafka's place) and after it."""
    parser.add_argument("--bootstrap-server", type=bootstrap_servers, default=default,
                        help="A comma-separated list of host:port pairs to use for establishing the "
                             "connection to the Kafka cluster.")
    parser.add_argument("--bootstrap-controller", type=bootstrap_servers, default=default,
                        help="A comma-separated list of host:port pairs to use for establishing the "
                             "connection to the KRaft quorum.")
    parser.add_argument("--command-config", type=input_file, default=default,
                        help="Property file containing configs to be passed to Admin Client.")


# ---------------------------------------------------------------------- the admin client

@dataclass(frozen=True, slots=True)
class ClientSettings:
    """Where and how to connect, from the flags and ``--command-config``."""

    bootstrap: str
    controllers: bool
    client_id: str | None = "kraftwerk-features"
    request_timeout_s: float = 30.0
    api_timeout_s: float = 60.0
    retry_backoff_s: float = 0.1
    security: ClientSecurity = PLAINTEXT


def client_settings(args: argparse.Namespace) -> ClientSettings:
    """Resolve ``--bootstrap-server`` / ``--bootstrap-controller`` / ``--command-config``."""
    server = getattr(args, "bootstrap_server", None)
    controller = getattr(args, "bootstrap_controller", None)
    props = _load_command_config(getattr(args, "command_config", None))
    if server is not None and controller is not None:
        raise FeatureCommandError("Command line error: argument --bootstrap-controller: not allowed with "
                                  "argument --bootstrap-server. Type --help for help.")
    if server is None and controller is None:
        if "bootstrap.controllers" in props:
            controller = props["bootstrap.controllers"]
        elif "bootstrap.servers" in props:
            server = props["bootstrap.servers"]
        else:
            raise FeatureCommandError("Command line error: one of the arguments --bootstrap-server "
                                      "--bootstrap-controller is required. Type --help for help.")
    try:
        security = client_security(props)
    except ConfigError as exc:
        raise FeatureCommandError(str(exc)) from None

    def seconds(key: str, default: float) -> float:
        if key not in props:
            return default
        try:
            return int(props[key]) / 1000.0
        except ValueError:
            raise FeatureCommandError(f"Invalid value {props[key]} for configuration {key}: Not a number of "
                                      "type INT") from None

    return ClientSettings(
        bootstrap=controller if controller is not None else server or "",
        controllers=controller is not None,
        client_id=props.get("client.id", "kraftwerk-features"),
        request_timeout_s=seconds("request.timeout.ms", 30.0),
        api_timeout_s=seconds("default.api.timeout.ms", 60.0),
        retry_backoff_s=seconds("retry.backoff.ms", 0.1),
        security=security,
    )


def command_config_security(path: str | None) -> ClientSecurity | None:
    """The client security a ``--command-config`` file sets (None without the flag)."""
    if path is None:
        return None
    try:
        return client_security(_load_command_config(path))
    except ConfigError as exc:
        raise FeatureCommandError(str(exc)) from None


def _load_command_config(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        text = Path(path).read_text(encoding="latin-1")
    except OSError as exc:
        raise FeatureCommandError(f"{path} ({exc.strerror or exc})") from None
    props = properties_values(text, path)
    ignored = sorted(k for k in props if k not in _SUPPORTED_CONFIGS)
    if ignored:
        # a warning in the log, as Kafka's AdminClientConfig logs "...supplied but are not used"
        log.warning("Ignoring admin client config(s) that kraftwerk does not support: %s",
                    ", ".join(k if k.isprintable() else ascii(k) for k in ignored))
    return props


def open_client(settings: ClientSettings) -> AdminClient:
    return AdminClient(settings.bootstrap, controllers=settings.controllers, client_id=settings.client_id,
                       request_timeout_s=settings.request_timeout_s, api_timeout_s=settings.api_timeout_s,
                       retry_backoff_s=settings.retry_backoff_s, security=settings.security)


# ---------------------------------------------------------------------- describe

def level_to_string(feature: str, level: int) -> str:
    """Kafka's ``levelToString``: metadata.version levels as ``3.3-IV3`` (``UNKNOWN n`` if unknown)."""
    if feature == mvs.FEATURE_NAME:
        try:
            return MetadataVersion.from_feature_level(level).version
        except VersionError:
            return f"UNKNOWN {level}"
    return str(level)


def describe_line(feature: str, supported_min: str, supported_max: str, finalized: str, epoch: str) -> str:
    """One ``describe`` line with Kafka 4.3's fixed-width columns (KAFKA-19941 replaced the tabs).

    Each label-value pair is left-justified in a fixed column: "Feature: <name>" in 51 characters,
    "SupportedMinVersion: <v>" and "SupportedMaxVersion: <v>" in 38, "FinalizedVersionLevel: <v>"
    in 40, i.e. the values are padded to 42, 17, 17 and 17 characters.
    """
    return (f"Feature: {feature:<42}SupportedMinVersion: {supported_min:<17}"
            f"SupportedMaxVersion: {supported_max:<17}FinalizedVersionLevel: {finalized:<17}Epoch: {epoch}")


def describe_lines(metadata: FeatureMetadata) -> list[str]:
    """Every supported feature, sorted by name, as Kafka's ``handleDescribe`` prints it."""
    epoch = "-" if metadata.epoch is None else str(metadata.epoch)
    lines = []
    for name in sorted(metadata.supported):
        low, high = metadata.supported[name]
        finalized = metadata.finalized.get(name, (0, 0))[1]
        lines.append(describe_line(name, level_to_string(name, low), level_to_string(name, high),
                                   level_to_string(name, finalized), epoch))
    return lines


def describe_json(metadata: FeatureMetadata) -> list[dict[str, Any]]:
    out = []
    for name in sorted(metadata.supported):
        low, high = metadata.supported[name]
        finalized = metadata.finalized.get(name, (0, 0))[1]
        item: dict[str, Any] = {"feature": name, "supported_min": low, "supported_max": high,
                                "finalized_level": finalized, "epoch": metadata.epoch}
        if name == mvs.FEATURE_NAME:
            item["versions"] = {"supported_min": level_to_string(name, low),
                                "supported_max": level_to_string(name, high),
                                "finalized": level_to_string(name, finalized)}
        out.append(item)
    return out


@dataclass(frozen=True, slots=True)
class AutoManagement:
    """KIP-920 as a node reports it: whether metadata.version is managed automatically, toward
    which target, and which node's configuration says so."""

    enabled: bool
    target: str | None
    interval_ms: int | None
    node: str

    def line(self) -> str:
        target = self.target or "(no static metadata.version set)"
        return (f"metadata.version is managed automatically: upgraded toward {target} every "
                f"{self.interval_ms} ms (auto.upgrade.metadata.version=true on {self.node}); manual "
                "metadata.version changes are refused.")

    def as_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "target": self.target, "intervalMs": self.interval_ms,
                "node": self.node}


AUTO_UPGRADE_KEYS = ("auto.upgrade.metadata.version", "auto.upgrade.metadata.version.interval.ms",
                     "metadata.version")


def auto_management(client: AdminClient, settings: ClientSettings) -> AutoManagement | None:
    """The KIP-920 settings of the active controller (``--bootstrap-controller``) or, through
    brokers, of the broker asked (its dynamic and static configs); None if it cannot tell."""
    try:
        cluster = client.describe_cluster()
        if settings.controllers:
            node_id, node = cluster.controller_id, f"the active controller {cluster.controller_id}"
        else:
            conn = client.any_node()
            asked = [n.node_id for n in cluster.nodes if (n.host, n.port) == (conn.host, conn.port)]
            if not asked:
                return None
            node_id, node = asked[0], f"broker {asked[0]}"
        body = {"resources": [{"resourceType": 4, "resourceName": str(node_id),
                               "configurationKeys": list(AUTO_UPGRADE_KEYS)}],
                "includeSynonyms": False, "includeDocumentation": False}
        [result] = client.call(32, body, node_id=node_id)["results"]
    except AdminClientError:
        return None
    if result["errorCode"] != 0:
        return None
    values = {c["name"]: c["value"] for c in result["configs"]}
    interval = values.get("auto.upgrade.metadata.version.interval.ms")
    enabled = values.get("auto.upgrade.metadata.version") == "true"
    return AutoManagement(enabled, values.get("metadata.version"),
                          int(interval) if interval and interval.isdigit() else None, node)


def _describe(args: argparse.Namespace) -> int:
    settings = client_settings(args)
    with open_client(settings) as client:
        try:
            metadata = client.describe_features(args.node_id)
        except AdminClientError as exc:
            raise FeatureCommandError(str(exc)) from None
        auto = auto_management(client, settings)
    if args.output == "json":
        described = describe_json(metadata)
        for item in described:
            if item["feature"] == mvs.FEATURE_NAME and auto is not None:
                item["autoUpgrade"] = auto.as_json()
        print_json(described)
    else:
        for line in describe_lines(metadata):
            print(line)
        if auto is not None and auto.enabled:
            print(auto.line())
    return 0


# ---------------------------------------------------------------------- upgrade / downgrade / disable

def _upgrade_type(op: str, unsafe: bool) -> UpgradeType:
    if op == "upgrade":
        return UpgradeType.UPGRADE
    return UpgradeType.UNSAFE_DOWNGRADE if unsafe else UpgradeType.SAFE_DOWNGRADE


def release_version_updates(mv: MetadataVersion, upgrade_type: UpgradeType) -> dict[str, FeatureUpdate]:
    """``--release-version``: metadata.version and every feature at its default level for ``mv``."""
    updates = {mvs.FEATURE_NAME: FeatureUpdate(mv.feature_level, upgrade_type)}
    for feature in PRODUCTION_FEATURES:
        level = feature.default_level(mv)
        if upgrade_type is not UpgradeType.UPGRADE or level > 0:  # never "upgrade" to 0
            updates[feature.feature_name] = FeatureUpdate(level, upgrade_type)
    return updates


def plan_updates(args: argparse.Namespace) -> dict[str, FeatureUpdate]:
    """The updates Kafka's FeatureCommand builds from the flags, with its parse errors."""
    op: str = args.op
    upgrade_type = _upgrade_type(op, getattr(args, "unsafe", False))
    updates: dict[str, FeatureUpdate] = {}
    features: list[str] | None = args.feature
    if op == "disable":
        for name in features or ():
            if name in updates:
                raise FeatureCommandError(f"Feature {name} was specified more than once.")
            updates[name] = FeatureUpdate(0, upgrade_type)
    else:
        metadata: str | None = args.metadata
        release: str | None = args.release_version
        if release is not None and (metadata is not None or features is not None):
            raise FeatureCommandError("Can not specify `release-version` with other feature flags.")
        if release is not None:
            try:
                mv = MetadataVersion.from_version_string(release, unstable=True)
            except VersionError as exc:
                raise FeatureCommandError(str(exc)) from None
            updates.update(release_version_updates(mv, upgrade_type))
        else:
            if metadata is not None:
                # Kafka 4.2 printed " `metadata` flag is deprecated ..." here; the 4.3 tool's output
                # (golden transcript) has no such line, and we follow 4.3 (docs/compatibility.md).
                try:
                    mv = MetadataVersion.from_version_string(metadata, unstable=True)
                except VersionError as exc:
                    raise FeatureCommandError(str(exc)) from None
                updates[mvs.FEATURE_NAME] = FeatureUpdate(mv.feature_level, upgrade_type)
            for spec in features or ():
                try:
                    name, level = parse_feature_spec(spec)
                except VersionError as exc:
                    raise FeatureCommandError(str(exc)) from None
                if name in updates:
                    raise FeatureCommandError(f"Feature {name} was specified more than once.")
                updates[name] = FeatureUpdate(level, upgrade_type)
    if not updates:
        raise FeatureCommandError(f"You must specify at least one feature to {op}")
    for update in updates.values():  # Kafka's FeatureUpdate constructor checks
        if update.max_version_level < 0:
            raise FeatureCommandError("Cannot specify a negative version level.")
        if update.max_version_level < 1 and update.upgrade_type is UpgradeType.UPGRADE:
            raise FeatureCommandError(
                "The upgradeType flag should be set to SAFE_DOWNGRADE or UNSAFE_DOWNGRADE when the provided "
                f"maxVersionLevel:{update.max_version_level} is < 1.")
    return updates


def result_lines(op: str, updates: Mapping[str, FeatureUpdate], results: Mapping[str, UpdateResult],
                 dry_run: bool) -> tuple[list[str], int]:
    """Kafka's per-feature lines (sorted by name) and the number of failures."""
    lines: list[str] = []
    failures = 0
    # A success message (kraftwerk's loss report of an unsafe downgrade) concerns metadata.version:
    # print it once, on that line, rather than on every feature of a --release-version downgrade.
    report_on = "metadata.version" if "metadata.version" in results else None
    for name in sorted(results):
        level = updates[name].max_version_level
        result = results[name]
        if not result.ok:
            helper = "Can not " if dry_run else "Could not "
            suffix = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
            lines.append(f"{helper}{suffix}. {result.describe()}")
            failures += 1
        else:
            verb = " can be " if dry_run else " was "
            obj = "disabled." if op == "disable" else f"{op}d to {level}."
            # kraftwerk's unsafe downgrade: the loss report follows the result (never sent by Kafka).
            report = result.message if result.message and report_on in (None, name) else None
            lines.append(f"{name}{verb}{obj}" + (f" {report}" if report else ""))
    return lines, failures


def _update(args: argparse.Namespace) -> int:
    updates = plan_updates(args)
    settings = client_settings(args)
    dry_run: bool = args.dry_run
    wait_s: float | None = getattr(args, "wait_converged", None)
    if wait_s is not None and dry_run:
        raise FeatureCommandError("--wait-converged cannot be used with --dry-run: nothing is committed.")
    convergence: Convergence | None = None
    with open_client(settings) as client:
        try:
            results = client.update_features(updates, validate_only=dry_run,
                                             skip_config_audit=getattr(args, "skip_config_audit", False))
        except AdminClientError as exc:  # every feature fails with the same error, as Kafka's futures
            mismatch = isinstance(exc, MismatchedEndpointTypeError)
            error = Errors.MISMATCHED_ENDPOINT_TYPE if mismatch else _TIMEOUT
            results = {name: UpdateResult(error, str(exc)) for name in updates}
        lines, failures = result_lines(args.op, updates, results, dry_run)
        if wait_s is not None and not failures:
            convergence = _converge(client, {n: u.max_version_level for n, u in updates.items()}, wait_s)
    if args.output == "json":
        print_json([{"feature": name, "level": updates[name].max_version_level,
                     "upgrade_type": updates[name].upgrade_type.name, "dry_run": dry_run,
                     "error": None if results[name].ok else results[name].error.name,
                     "message": results[name].message if results[name].ok else results[name].describe(),
                     "config_audit": results[name].config_audit}
                    | ({} if convergence is None else {"convergence": convergence.as_json()})
                    for name in sorted(results)])
    else:
        for line in lines:
            print(line)
        if convergence is not None and convergence.ok:
            print(f"All {len(convergence.converged)} node(s) report the new level(s) "
                  f"after {convergence.seconds:.2f} s.")
        # the audit's lines only when it found something: a clean dry run keeps Kafka's transcript
        audit = next((r.config_audit for r in results.values() if r.config_audit), None)
        if dry_run and audit is not None and (audit["violations"] or audit["unknownBrokers"]):
            for line in audit_lines(audit):
                print(line)
    if failures:
        raise _UpdateFailed(f"{failures} out of {len(updates)} operation(s) failed.")
    if convergence is not None and not convergence.ok:
        raise FeatureCommandError(convergence.error_line())
    return 0


_TIMEOUT = Errors.REQUEST_TIMED_OUT
DEFAULT_CONVERGE_S = 60.0


def _converge(client: AdminClient, levels: dict[str, int], timeout_s: float) -> Convergence:
    wanted = ", ".join(f"{k}={v}" for k, v in sorted(levels.items()))
    with status(f"Waiting for every node to report {wanted}", sys.stderr.isatty()) as show:
        def progress(done: int, total: int, waited: float) -> None:
            show(f"Waiting for every node to report {wanted}: {done}/{total} converged ({waited:.1f} s)")

        try:
            return wait_converged(client, levels, timeout_s, progress=progress)
        except AdminClientError as exc:
            raise FeatureCommandError(f"Could not list the nodes to wait for: {exc}") from None


def audit_lines(audit: Mapping[str, Any]) -> list[str]:
    """KIP-1294's pre-flight config audit as the controller reported it, one line per finding."""
    target = audit["metadataVersion"]
    lines = [f"Config audit for metadata.version {target}: "
             + ("skipped (--skip-config-audit). " if audit["skipped"] else "")
             + f"{len(audit['violations'])} violation(s), "
             + f"{len(audit['unknownBrokers'])} broker(s) with unknown static configs."]
    for v in audit["violations"]:
        where = ("cluster default" if v["resourceType"] == "BROKER" and v["resourceName"] == ""
                 else f"{v['resourceType'].lower()} {v['resourceName']}")
        since = f" since {v['sinceMetadataVersion']}" if v["sinceMetadataVersion"] else ""
        lines.append(f"  {where} {v['config']}={v['value']} ({v['source'] or 'unknown source'}): "
                     f"{v['reason']} [rule {v['rule']}{since}]")
    if audit["unknownBrokers"]:
        lines.append("  unknown static configs: broker(s) "
                     + ", ".join(str(b) for b in audit["unknownBrokers"]))
    return lines


# ---------------------------------------------------------------------- offline look-ups

def _check_offline_flags(args: argparse.Namespace) -> None:
    if getattr(args, "bootstrap_server", None) is not None and \
            getattr(args, "bootstrap_controller", None) is not None:
        raise FeatureCommandError("Command line error: argument --bootstrap-controller: not allowed with "
                                  "argument --bootstrap-server. Type --help for help.")


def _version_mapping(args: argparse.Namespace) -> int:
    _check_offline_flags(args)
    return print_version_mapping(args)


def _feature_dependencies(args: argparse.Namespace) -> int:
    _check_offline_flags(args)
    return print_feature_dependencies(args)
