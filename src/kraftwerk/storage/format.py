"""Formatting a node's log directories, as Kafka's ``Formatter`` (``kafka-storage format``) does.

This is the logic only: :func:`format_node` resolves the effective metadata.version and feature
levels with Kafka's rules and error texts, builds the bootstrap records, and writes
``bootstrap.checkpoint`` and ``meta.properties`` (version 1 with cluster.id, node.id and a fresh
directory.id) into every unformatted directory; with a dynamic quorum the metadata directory also
gets the ``__cluster_metadata-0`` zero snapshot holding the KRaftVersion and Voters records. The
output lines Kafka prints go to the ``out`` callback, so the CLI prints them and ``cluster up``
can keep them quiet.

Crash safety: in each directory the bootstrap file (and snapshot) is written first, through a temp
name, fsync and rename, and ``meta.properties`` last, the same way. A directory counts as formatted
only once ``meta.properties`` exists, so a crash part-way leaves directories that a second run
formats again.

:class:`StorageConfig` reads ``server.properties`` through the config catalogue (every known
config checked as Kafka's start-up would), and :func:`check_quorum_flags` applies
``kafka-storage``'s rules for ``--standalone``, ``--initial-controllers`` and
``--no-initial-controllers``. KIP-1294: before anything is written, the file's values are checked
against the rules in force at the chosen metadata.version (:func:`kraftwerk.config.violations_at`),
and the release is resolved with the bounds of the node's software (``kraftwerk.software.version``).
"""

from __future__ import annotations

import enum
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kraftwerk.config import (
    ConfigError,
    ConfigMap,
    log_dirs,
    parse_broker_config,
    properties_values,
    violations_at,
)
from kraftwerk.config.catalogue.controller import SOFTWARE_VERSION_CONFIG
from kraftwerk.protocol.errors import EncodeError
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.json_form import uuid_from_str, uuid_to_str
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.storage.errors import CorruptFileError, StorageError, StorageIOError
from kraftwerk.storage.metadata_log import (
    METADATA_PARTITION_DIR,
    SnapshotId,
    wall_clock_ms,
    write_bootstrap,
    write_snapshot,
)
from kraftwerk.storage.properties import (
    META_PROPERTIES_FILE,
    MetaProperties,
    read_meta_properties,
    write_meta_properties,
)
from kraftwerk.versions import metadata_version as mvs
from kraftwerk.versions.errors import VersionError
from kraftwerk.versions.features import KRAFT_VERSION, PRODUCTION_FEATURES, Feature, validate_version
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)

BOOTSTRAP_SOURCE = "format command"

#: Kafka's reserved Uuids: ZERO_UUID and METADATA_TOPIC_ID (never handed out by randomUuid).
_RESERVED_UUIDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})
#: DirectoryId.UNASSIGNED / LOST / MIGRATING, plus everything below 100 that Kafka reserves.
_RESERVED_DIRECTORY_IDS = frozenset(uuid.UUID(int=i) for i in range(100))


class FormatError(StorageError):
    """A format request Kafka's tool refuses (its message is Kafka's, printed on stderr, exit 1)."""


# ---------------------------------------------------------------------- ids

def random_uuid(randbytes: Callable[[int], bytes] = os.urandom) -> uuid.UUID:
    """Kafka's ``Uuid.randomUuid()``: a v4 UUID that is not reserved and whose string form does not
    start with ``-`` (so it can never be mistaken for a command-line flag)."""
    while True:
        raw = bytearray(randbytes(16))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        value = uuid.UUID(bytes=bytes(raw))
        if value not in _RESERVED_UUIDS and not uuid_to_str(value).startswith("-"):
            return value


def check_cluster_id(cluster_id: str) -> None:
    """Refuse a cluster id that is not what ``random-uuid`` prints, with Kafka 3.x's text (4.x's
    formatter accepts any string; a node formatted so can never be told apart from a typo)."""
    try:
        uuid_from_str(cluster_id)
    except EncodeError as exc:
        raise FormatError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: "
                          f"{exc}") from None


def random_cluster_id(randbytes: Callable[[int], bytes] = os.urandom) -> str:
    """What ``kafka-storage random-uuid`` prints: 22 characters of URL-safe base64."""
    return uuid_to_str(random_uuid(randbytes))


def _new_directory_id(taken: set[uuid.UUID], randbytes: Callable[[int], bytes]) -> uuid.UUID:
    while True:
        value = random_uuid(randbytes)
        if value not in _RESERVED_DIRECTORY_IDS and value not in taken:
            taken.add(value)
            return value


# ---------------------------------------------------------------------- dynamic quorum

@dataclass(frozen=True, slots=True)
class InitialController:
    """One entry of ``--initial-controllers``: ``id@host:port:directoryId`` (KIP-853)."""

    node_id: int
    host: str
    port: int
    directory_id: uuid.UUID

    @classmethod
    def parse_list(cls, text: str) -> tuple[InitialController, ...]:
        """Parse the comma-separated list with the checks of Kafka's ``DynamicVoters.parse``."""
        text = text.strip()
        if not text:
            raise FormatError("No initial controllers were specified.")
        voters: dict[int, InitialController] = {}
        for item in text.split(","):
            voter = cls.parse(item.strip())
            if voter.node_id in voters:
                raise FormatError(f"Node id {voter.node_id} was specified more than once.")
            voters[voter.node_id] = voter
        return tuple(voters.values())

    @classmethod
    def parse(cls, text: str) -> InitialController:
        node_text, at, rest = text.partition("@")
        if not at:
            raise FormatError(f"No @ found in dynamic voter string {text}")
        try:
            node_id = int(node_text)
        except ValueError:
            raise FormatError(f"Failed to parse node id in dynamic voter string {text}") from None
        if node_id < 0:
            raise FormatError(f"Invalid negative node id {node_id} in dynamic voter string {text}")
        if rest.startswith("["):  # an IPv6 host in brackets
            close = rest.find("]")
            if close < 0:
                raise FormatError(f"Unterminated IPv6 address in dynamic voter string {text}")
            host, rest = rest[1:close], rest[close + 1:]
            if not rest.startswith(":"):
                raise FormatError(f"No colon following IPv6 address in dynamic voter string {text}")
            rest = rest[1:]
        else:
            host, colon, rest = rest.partition(":")
            if not colon:
                raise FormatError(f"No colon following hostname in dynamic voter string {text}")
        port_text, colon, dir_text = rest.partition(":")
        if not colon:
            raise FormatError(f"No colon following port in dynamic voter string {text}")
        try:
            port = int(port_text)
        except ValueError:
            raise FormatError(f"Failed to parse port in dynamic voter string {text}") from None
        if not 0 <= port <= 65535:
            raise FormatError(f"Invalid port {port} in dynamic voter string {text}")
        try:
            directory_id = uuid_from_str(dir_text)
        except Exception:  # the codec's error type is an implementation detail
            raise FormatError(f"Failed to parse directory ID in dynamic voter string {text}") from None
        return cls(node_id, host, port, directory_id)

    def voter_value(self, listener_name: str, kraft_range: tuple[int, int]) -> dict[str, object]:
        return {
            "voterId": self.node_id,
            "voterDirectoryId": self.directory_id,
            "endpoints": [{"name": listener_name, "host": self.host, "port": self.port}],
            "kRaftVersionFeature": {"minSupportedVersion": kraft_range[0],
                                    "maxSupportedVersion": kraft_range[1]},
        }


class DirectoryType(enum.Enum):
    """How Kafka describes a directory in its "Formatting ..." line."""

    LOG_DIRECTORY = "data directory"
    STATIC_METADATA_DIRECTORY = "metadata directory"
    DYNAMIC_METADATA_NON_VOTER_DIRECTORY = "dynamic metadata directory"
    DYNAMIC_METADATA_VOTER_DIRECTORY = "dynamic metadata voter directory"

    @property
    def description(self) -> str:
        text: str = self.value
        return text

    @property
    def is_dynamic_metadata_directory(self) -> bool:
        return self in (DirectoryType.DYNAMIC_METADATA_NON_VOTER_DIRECTORY,
                        DirectoryType.DYNAMIC_METADATA_VOTER_DIRECTORY)


# ---------------------------------------------------------------------- effective levels

def _feature_level_record(name: str, level: int) -> MetadataRecord:
    return MetadataRecord(lookup_record("FeatureLevelRecord"), 0, {"name": name, "featureLevel": level})


def bootstrap_records(metadata_version: MetadataVersion,
                      levels: Mapping[str, int]) -> tuple[MetadataRecord, ...]:
    """Kafka's ``BootstrapMetadata.fromVersions``: the metadata.version record first, then every
    other feature with a level above 0 sorted by name; kraft.version is never written here (it
    lives in KRaft control records)."""
    records = [_feature_level_record(mvs.FEATURE_NAME, metadata_version.feature_level)]
    for name in sorted(levels):
        if name in (mvs.FEATURE_NAME, KRAFT_VERSION) or levels[name] <= 0:
            continue
        records.append(_feature_level_record(name, levels[name]))
    return tuple(records)


def describe_bootstrap(records: Sequence[MetadataRecord], metadata_version: MetadataVersion,
                       source: str = BOOTSTRAP_SOURCE) -> str:
    """``BootstrapMetadata.toString()`` as Kafka prints it after "Bootstrap metadata: "."""
    items = ", ".join(f"ApiMessageAndVersion({r.spec.name}({_record_fields(r)}) at version {r.version})"
                      for r in records)
    return (f"BootstrapMetadata(records=[{items}], metadataVersionLevel={metadata_version.feature_level}, "
            f"source={source})")


def _record_fields(record: MetadataRecord) -> str:
    """A bootstrap record's fields as Kafka's toString prints them; a SCRAM credential's salt and
    keys are ``[redacted]`` (Kafka prints their bytes: a stored key allows an offline attack)."""
    value = record.value
    if record.spec.name == "FeatureLevelRecord":
        return f"name='{value['name']}', featureLevel={value['featureLevel']}"
    return (f"name='{value['name']}', mechanism={value['mechanism']}, salt=[redacted], storedKey=[redacted], "
            f"serverKey=[redacted], iterations={value['iterations']}")


def check_static_configs(release_version: MetadataVersion | str | None, static_configs: Mapping[str, str],
                         software: SoftwareVersion | None = None) -> None:
    """KIP-1294's format-time check alone: :class:`FormatError` naming every config of
    ``static_configs`` that breaks a rule of the release (``cluster up`` checks each node's
    ``server.properties`` with it before it writes anything)."""
    software = software or SoftwareVersion.latest()
    try:
        release = (software.parse_metadata_version(release_version) if isinstance(release_version, str)
                   else release_version)
    except VersionError as exc:
        raise FormatError(str(exc)) from None
    chosen = effective_release_version(release, {}, False, software)
    violations = violations_at(chosen.feature_level, static_configs)
    if violations:
        raise FormatError("\n".join(v.message() for v in violations))


def effective_release_version(release: MetadataVersion | None, features: Mapping[str, int],
                              unstable_enabled: bool,
                              software: SoftwareVersion | None = None) -> MetadataVersion:
    """Kafka's ``calculateEffectiveReleaseVersion`` with its error texts, within the bounds of the
    node's ``software`` (this software by default)."""
    software = software or SoftwareVersion.latest()
    if mvs.FEATURE_NAME in features:
        if release is not None:
            raise FormatError(f"Use --release-version instead of --feature {mvs.FEATURE_NAME}=X to avoid "
                              "ambiguity.")
        try:
            chosen = software.metadata_version_for_level(features[mvs.FEATURE_NAME])
        except VersionError as exc:
            raise FormatError(str(exc)) from None
    elif release is not None:
        chosen = release
    else:
        return software.latest_testing if unstable_enabled else software.latest_production
    if not unstable_enabled and chosen > software.latest_production:
        raise FormatError(f"{mvs.FEATURE_NAME} {chosen} is not yet stable.")
    return chosen


def _effective_kraft_level(configured: int | None, dynamic_quorum: bool) -> int:
    if configured is None:
        return 1 if dynamic_quorum else 0
    if configured == 0 and dynamic_quorum:
        raise FormatError(
            "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags "
            "--standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic "
            "controllers support, try removing the --feature flag for kraft.version.")
    if configured != 0 and not dynamic_quorum:
        raise FormatError(
            f"Cannot set kraft.version to {configured} unless controller.quorum.voters is empty and one of "
            "the flags --standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic "
            "controllers support, try using one of --standalone, --initial-controllers, or "
            "--no-initial-controllers and removing controller.quorum.voters.")
    return configured


def effective_feature_levels(release: MetadataVersion, features: Mapping[str, int], *,
                             unstable_enabled: bool, dynamic_quorum: bool) -> dict[str, int]:
    """Kafka's ``calculateEffectiveFeatureLevels``: check names, fill defaults, validate levels.

    Returns every feature (metadata.version included) mapped to its level, sorted by name.
    """
    known = {f.feature_name: f for f in PRODUCTION_FEATURES}
    levels: dict[str, int] = {}
    for name in sorted(features):
        if name != mvs.FEATURE_NAME and name not in known:
            raise FormatError(f"Unsupported feature: {name}. Supported features are: "
                              f"{', '.join(sorted(known))}")
        levels[name] = features[name]
    levels[mvs.FEATURE_NAME] = release.feature_level
    for feature in PRODUCTION_FEATURES:
        if feature is Feature.KRAFT_VERSION:
            levels[KRAFT_VERSION] = _effective_kraft_level(levels.get(KRAFT_VERSION), dynamic_quorum)
        elif feature.feature_name not in levels:
            levels[feature.feature_name] = feature.default_level(release)
    for name in sorted(levels):
        if name == mvs.FEATURE_NAME:
            continue
        try:
            definition = known[name].from_feature_level(levels[name], allow_unstable=unstable_enabled)
            validate_version(definition, levels)
        except VersionError as exc:
            raise FormatError(str(exc)) from None
    return dict(sorted(levels.items()))


# ---------------------------------------------------------------------- the result

@dataclass(frozen=True, slots=True)
class FormattedDirectory:
    path: Path
    directory_type: DirectoryType
    directory_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class FormatResult:
    """What :func:`format_node` decided and wrote."""

    metadata_version: MetadataVersion
    feature_levels: Mapping[str, int]
    """Every feature (metadata.version and kraft.version included) → its level."""
    bootstrap_records: tuple[MetadataRecord, ...]
    formatted: tuple[FormattedDirectory, ...]
    skipped: tuple[Path, ...]
    """Directories left alone because they were already formatted (``ignore_formatted``)."""
    lines: tuple[str, ...] = field(default=())
    """The lines Kafka's tool prints, in order."""


# ---------------------------------------------------------------------- formatting

def _is_formatted(directory: Path) -> bool:
    return (directory / META_PROPERTIES_FILE).is_file()


def _verify_existing(directory: Path, cluster_id: str, node_id: int) -> uuid.UUID | None:
    """MetaPropertiesEnsemble.verify for one formatted directory: same cluster and node."""
    meta = read_meta_properties(directory / META_PROPERTIES_FILE)
    if meta.cluster_id is not None and meta.cluster_id != cluster_id:
        raise FormatError(f"Invalid cluster.id in: {directory / META_PROPERTIES_FILE}. Expected "
                          f"{cluster_id}, but read {meta.cluster_id}")
    if meta.node_id is not None and meta.node_id != node_id:
        raise FormatError(f"Stored node id {meta.node_id} doesn't match previous node id {node_id} in "
                          f"{directory / META_PROPERTIES_FILE}. If you moved your data, make sure your "
                          "configured node id matches. If you intend to create a new node, you should "
                          "remove all data in your data directories.")
    return meta.directory_id


def format_node(
    *,
    cluster_id: str,
    node_id: int,
    log_dirs: Sequence[Path | str],
    metadata_log_dir: Path | str | None = None,
    release_version: MetadataVersion | str | None = None,
    features: Mapping[str, int] | None = None,
    unstable_enabled: bool = False,
    ignore_formatted: bool = False,
    initial_controllers: Sequence[InitialController] | None = None,
    no_initial_controllers: bool = False,
    controller_listener_name: str = "CONTROLLER",
    software: SoftwareVersion | None = None,
    static_configs: Mapping[str, str] | None = None,
    scram: Sequence[MetadataRecord] = (),
    out: Callable[[str], None] | None = None,
    clock: Callable[[], int] = wall_clock_ms,
    randbytes: Callable[[int], bytes] = os.urandom,
) -> FormatResult:
    """Format one node's directories the way ``kafka-storage format`` does (Kafka's Formatter).

    ``log_dirs`` are the data directories (``log.dirs``); ``metadata_log_dir`` is
    ``metadata.log.dir`` and defaults to the first log dir, as in Kafka. ``release_version`` is a
    :class:`MetadataVersion` or a string like ``"3.9"`` / ``"3.9-IV0"`` (default: latest production,
    or latest testing with ``unstable_enabled``); ``features`` are ``--feature`` levels and may set
    ``metadata.version`` instead. ``initial_controllers`` (``--standalone`` /
    ``--initial-controllers``) or ``no_initial_controllers`` make the quorum dynamic (kraft.version
    1); without them the quorum is static (``controller.quorum.voters``, kraft.version 0).
    ``software`` bounds the release (default: this software); ``static_configs`` (the node's
    ``server.properties``) must obey the config rules in force at the chosen metadata.version
    (KIP-1294), checked before anything is written. ``scram`` are ``--add-scram``'s
    UserScramCredentialRecords (:func:`kraftwerk.storage.scram.scram_records`), appended to the
    bootstrap records.

    Raises :class:`FormatError` with Kafka's text for anything Kafka refuses; every output line
    Kafka prints is passed to ``out`` and kept in :attr:`FormatResult.lines`.
    """
    if node_id < 0:
        raise FormatError("You must specify a valid non-negative node ID.")
    if not cluster_id:
        raise FormatError("You must specify the cluster id.")
    check_cluster_id(cluster_id)
    directories = sorted({str(Path(d)) for d in log_dirs} | (
        set() if metadata_log_dir is None else {str(Path(metadata_log_dir))}))
    if not directories:
        raise FormatError("You must specify at least one directory to format")
    meta_dir = str(Path(metadata_log_dir)) if metadata_log_dir is not None else str(Path(log_dirs[0]))
    requested = dict(features or {})
    release: MetadataVersion | None
    software = software or SoftwareVersion.latest()
    if isinstance(release_version, str):
        try:
            release = software.parse_metadata_version(release_version, unstable=unstable_enabled)
        except VersionError as exc:
            raise FormatError(str(exc)) from None
    else:
        release = release_version
    dynamic = bool(initial_controllers) or no_initial_controllers
    voters = {c.node_id: c for c in initial_controllers or ()}

    chosen = effective_release_version(release, requested, unstable_enabled, software)
    levels = effective_feature_levels(chosen, requested, unstable_enabled=unstable_enabled,
                                      dynamic_quorum=dynamic)
    violations = violations_at(chosen.feature_level, static_configs or {})
    if violations:
        raise FormatError("\n".join(v.message() for v in violations))
    records = bootstrap_records(chosen, levels)
    if scram:
        scram_minimum = MetadataVersion.IBP_3_5_IV2
        if chosen < scram_minimum:
            raise FormatError(f"SCRAM is only supported in {mvs.FEATURE_NAME} {scram_minimum} or later.")
        records += tuple(scram)

    lines: list[str] = []

    def emit(line: str) -> None:
        lines.append(line)
        if out is not None:
            out(line)

    taken: set[uuid.UUID] = set()
    empty: list[Path] = []
    skipped: list[Path] = []
    for name in directories:
        path = Path(name)
        if path.exists() and not path.is_dir():
            emit(f"I/O error trying to read log directory {name}. Ignoring...")
            continue
        if _is_formatted(path):
            try:
                existing = _verify_existing(path, cluster_id, node_id)
            except CorruptFileError:
                emit(f"I/O error trying to read log directory {name}. Ignoring...")
                continue
            if existing is not None:
                taken.add(existing)
            skipped.append(path)
        else:
            empty.append(path)
    if skipped and not ignore_formatted:
        raise FormatError(f"Log directory {skipped[0]} is already formatted. Use --ignore-formatted to "
                          "ignore this directory and format the others.")
    if not empty and not skipped:
        raise FormatError("No available log directories to format.")
    formatted: list[FormattedDirectory] = []
    if not empty:
        emit("All of the log directories are already formatted.")
    else:
        emit(f"Bootstrap metadata: {describe_bootstrap(records, chosen)}")
        for path in empty:
            dtype = _directory_type(str(path), meta_dir, node_id, voters if initial_controllers else None)
            if dtype is DirectoryType.DYNAMIC_METADATA_VOTER_DIRECTORY:
                directory_id = voters[node_id].directory_id
                taken.add(directory_id)
            else:
                directory_id = _new_directory_id(taken, randbytes)
            emit(f"Formatting {dtype.description} {path} with {mvs.FEATURE_NAME} {chosen}.")
            _write_directory(path, records, MetaProperties(1, cluster_id, node_id, directory_id),
                             dtype, voters, levels[KRAFT_VERSION], controller_listener_name, clock)
            formatted.append(FormattedDirectory(path, dtype, directory_id))
    return FormatResult(chosen, levels, records, tuple(formatted), tuple(skipped), tuple(lines))


def _directory_type(path: str, meta_dir: str, node_id: int,
                    voters: Mapping[int, InitialController] | None) -> DirectoryType:
    if path != meta_dir:
        return DirectoryType.LOG_DIRECTORY
    if voters is None:
        return DirectoryType.STATIC_METADATA_DIRECTORY
    if node_id in voters:
        return DirectoryType.DYNAMIC_METADATA_VOTER_DIRECTORY
    return DirectoryType.DYNAMIC_METADATA_NON_VOTER_DIRECTORY


def _write_directory(path: Path, records: Sequence[MetadataRecord], meta: MetaProperties,
                     dtype: DirectoryType, voters: Mapping[int, InitialController], kraft_level: int,
                     listener_name: str, clock: Callable[[], int]) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageIOError(f"Unable to create storage directory {path}: {exc.strerror or exc}",
                             path) from exc
    write_bootstrap(path, records, clock=clock)
    if dtype.is_dynamic_metadata_directory:
        partition = path / METADATA_PARTITION_DIR
        try:
            partition.mkdir(exist_ok=True)
        except OSError as exc:
            raise StorageIOError(f"cannot create {partition}: {exc.strerror or exc}", partition) from exc
        kraft_range = Feature.KRAFT_VERSION.supported_version_range(unstable=False)
        voter_set = {"version": 0, "voters": [
            v.voter_value(listener_name, (kraft_range.min, kraft_range.max)) for v in voters.values()]}
        write_snapshot(partition, SnapshotId(0, 0), [], last_contained_log_timestamp=clock(),
                       kraft_version=kraft_level, voters=voter_set, clock=clock)
    try:
        write_meta_properties(path / META_PROPERTIES_FILE, meta)
    except StorageError as exc:
        raise FormatError(f"Error while writing meta.properties file {path}: {exc}") from exc
    log.info("formatted %s (%s)", path, dtype.description)


# ---------------------------------------------------------------------- server.properties

@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str | None
    port: int


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """The ``server.properties`` settings the storage tool reads (Kafka's names and defaults)."""

    process_roles: tuple[str, ...]
    node_id: int
    log_dirs: tuple[str, ...]
    metadata_log_dir: str | None
    quorum_voters: str
    controller_listener_names: tuple[str, ...]
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    unstable_feature_versions_enable: bool = False
    software: SoftwareVersion = field(default_factory=SoftwareVersion.latest)
    static_configs: Mapping[str, str] = field(default_factory=lambda: ConfigMap({}))
    """The whole file (its ``repr`` hides secrets), for the KIP-1294 check at format time."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> StorageConfig:
        try:
            parsed = parse_broker_config(props)
        except ConfigError as exc:
            raise FormatError(str(exc)) from None

        release = parsed.text(SOFTWARE_VERSION_CONFIG)
        try:
            software = SoftwareVersion.for_release(release) if release else SoftwareVersion.latest()
        except VersionError as exc:
            raise FormatError(f"Invalid value {release} for configuration {SOFTWARE_VERSION_CONFIG}: "
                              f"{exc}") from None
        unstable = parsed.flag("unstable.feature.versions.enable")
        names = parsed.text("controller.listener.names").split(",")
        return cls(
            process_roles=tuple(r for r in parsed.elements("process.roles") if r),
            node_id=parsed.integer("node.id"),
            log_dirs=log_dirs(parsed),
            metadata_log_dir=parsed.text("metadata.log.dir").strip() or None,
            quorum_voters=",".join(parsed.elements("controller.quorum.voters")),
            controller_listener_names=tuple(n.strip() for n in names if n.strip()),
            listeners=parse_listeners(parsed.text("listeners") if parsed.is_set("listeners") else ""),
            advertised_listeners=parse_listeners(parsed.text("advertised.listeners")),
            unstable_feature_versions_enable=unstable,
            software=software.with_unstable(unstable),
            static_configs=ConfigMap(props),
        )

    @classmethod
    def load(cls, path: Path | str) -> StorageConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="latin-1")
        except OSError as exc:
            raise StorageIOError(f"cannot read {path}: {exc.strerror or exc}", path) from exc
        try:
            props = properties_values(text, str(path))
        except ConfigError as exc:
            raise FormatError(str(exc)) from None
        return cls.from_properties(props)

    @property
    def effective_metadata_log_dir(self) -> str:
        """``metadata.log.dir``, or the first of ``log.dirs`` (Kafka's ``metadataLogDir``)."""
        return self.metadata_log_dir if self.metadata_log_dir is not None else self.log_dirs[0]

    @property
    def directories(self) -> tuple[str, ...]:
        """``configToLogDirectories``: the log dirs plus the metadata dir, sorted, no duplicates."""
        return tuple(sorted(set(self.log_dirs) | {self.effective_metadata_log_dir}))

    @property
    def is_controller(self) -> bool:
        return "controller" in self.process_roles

    def controller_listener(self) -> Listener | None:
        """The first advertised controller listener (``effectiveAdvertisedControllerListeners``)."""
        for source in (self.advertised_listeners, self.listeners):
            for name in self.controller_listener_names:
                for listener in source:
                    if listener.name == name:
                        return listener
        return None


def parse_listeners(text: str) -> tuple[Listener, ...]:
    """``NAME://host:port,...`` (an empty host means all interfaces, kept as ``None``)."""
    out: list[Listener] = []
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        if not sep:
            raise FormatError(f"Unable to parse {item} to a broker endpoint")
        host, colon, port_text = rest.rpartition(":")
        if not colon:
            raise FormatError(f"Unable to parse {item} to a broker endpoint")
        try:
            port = int(port_text)
        except ValueError:
            raise FormatError(f"Unable to parse {item} to a broker endpoint") from None
        host = host.strip("[]")
        out.append(Listener(name.strip().upper(), host or None, port))
    return tuple(out)


def check_quorum_flags(
    config: StorageConfig, *, standalone: bool, initial_controllers: str | None,
    no_initial_controllers: bool, randbytes: Callable[[int], bytes] = os.urandom,
) -> tuple[InitialController, ...] | None:
    """``kafka-storage format``'s rules for the KIP-853 flags; returns the initial voters, if any."""
    given = [flag for flag, on in (("--standalone", standalone),
                                   ("--initial-controllers", initial_controllers is not None),
                                   ("--no-initial-controllers", no_initial_controllers)) if on]
    if len(given) > 1:
        raise FormatError(f"argument {given[1]}: not allowed with argument {given[0]}")
    static_voters = bool(config.quorum_voters)
    if static_voters and (initial_controllers is not None or standalone):
        raise FormatError(
            "You cannot specify controller.quorum.voters and format the node with --initial-controllers or "
            "--standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and "
            "specify controller.quorum.bootstrap.servers instead.")
    voters: tuple[InitialController, ...] | None = None
    if initial_controllers is not None:
        voters = InitialController.parse_list(initial_controllers)
    if standalone:
        if not config.is_controller:
            raise FormatError("You can only use --standalone on a controller.")
        listener = config.controller_listener()
        if listener is None:
            raise FormatError("No controller listeners found.")
        voters = (InitialController(config.node_id, listener.host or "localhost", listener.port,
                                    random_uuid(randbytes)),)
    if not no_initial_controllers and config.is_controller and not static_voters and voters is None:
        raise FormatError("Because controller.quorum.voters is not set on this controller, you must specify "
                          "one of the following: --standalone, --initial-controllers, or "
                          "--no-initial-controllers.")
    return voters


def formatted_directories(dirs: Iterable[Path | str]) -> list[Path]:
    """The directories among ``dirs`` that already hold ``meta.properties``."""
    return [Path(d) for d in dirs if _is_formatted(Path(d))]
