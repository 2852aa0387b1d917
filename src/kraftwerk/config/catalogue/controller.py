"""KRaft configs: roles, quorum, metadata log, broker lifecycle, the static metadata.version of
KIP-920 and kraftwerk's own ``kraftwerk.*`` keys.

Kafka declares the quorum timeouts without a validator; kraftwerk requires them to be positive
(a zero timeout would spin the raft loop), as ``docs/compatibility.md`` records.
"""

from __future__ import annotations

from kraftwerk.config.definition import MS_PER_HOUR, ConfigKey, define
from kraftwerk.config.definition import Importance as I
from kraftwerk.config.definition import Scope as S
from kraftwerk.config.types import ConfigType as T
from kraftwerk.config.validators import MetadataVersionString, Range, ValidList

METADATA_LOG_SEGMENT_BYTES_3X_MINIMUM = 12
"""``Records.LOG_OVERHEAD``: the metadata.log.segment.bytes minimum up to Kafka 4.0."""
SOFTWARE_VERSION_CONFIG = "kraftwerk.software.version"
LOG_FILE_CONFIG = "kraftwerk.log.file"
METRICS_PORT_CONFIG = "kraftwerk.metrics.port"
METRICS_HOST_CONFIG = "kraftwerk.metrics.host"

CONTROLLER_KEYS: tuple[ConfigKey, ...] = (
    define("process.roles", T.LIST, "", ValidList.of("broker", "controller"), I.HIGH,
           "The roles of this node: broker, controller or both."),
    define("node.id", T.INT, -1, None, I.HIGH, "The id of this node in the cluster."),
    define("controller.listener.names", T.STRING, None, None, I.HIGH,
           "Listener names the controllers use; the first one is the one brokers connect to."),
    define("controller.quorum.voters", T.LIST, "", None, I.HIGH,
           "Static quorum: the id@host:port of every controller."),
    define("controller.quorum.bootstrap.servers", T.LIST, "", None, I.HIGH,
           "Dynamic quorum: host:port of controllers to discover the quorum from."),
    define("controller.quorum.election.timeout.ms", T.INT, 1000, Range.at_least(1), I.HIGH,
           "Time without a leader before a voter starts an election."),
    define("controller.quorum.fetch.timeout.ms", T.INT, 2000, Range.at_least(1), I.HIGH,
           "Time without a fetch from the leader before a voter suspects it is gone."),
    define("controller.quorum.election.backoff.max.ms", T.INT, 1000, Range.at_least(1), I.HIGH,
           "Longest random back-off before a new election."),
    define("controller.quorum.append.linger.ms", T.INT, 25, Range.at_least(0), I.MEDIUM,
           "Time the leader gathers writes before it flushes them."),
    define("controller.quorum.request.timeout.ms", T.INT, 2000, Range.at_least(1), I.MEDIUM,
           "Time to wait for a quorum response."),
    define("controller.quorum.retry.backoff.ms", T.INT, 20, Range.at_least(0), I.LOW,
           "Wait before retrying a failed quorum request."),
    define("broker.session.timeout.ms", T.INT, 9000, Range.at_least(1), I.MEDIUM,
           "Time without a heartbeat after which the controller fences a broker."),
    define("broker.heartbeat.interval.ms", T.INT, 2000, Range.at_least(1), I.MEDIUM,
           "Time between a broker's heartbeats."),
    define("initial.broker.registration.timeout.ms", T.INT, 60_000, None, I.MEDIUM,
           "Time a new broker waits for its registration to be accepted."),
    define("sasl.mechanism.controller.protocol", T.STRING, "GSSAPI", None, I.HIGH,
           "SASL mechanism used to talk to the controllers."),
    define("metadata.log.dir", T.STRING, None, None, I.HIGH,
           "Directory of the metadata log; the first log directory when unset."),
    define("metadata.log.segment.bytes", T.INT, 1 << 30,
           Range.at_least(METADATA_LOG_SEGMENT_BYTES_3X_MINIMUM), I.HIGH,
           "Size at which the metadata log rolls a new segment."),
    define("metadata.log.segment.ms", T.LONG, 7 * 24 * MS_PER_HOUR, None, I.HIGH,
           "Time after which the metadata log rolls a new segment."),
    define("metadata.max.retention.bytes", T.LONG, 100 << 20, None, I.HIGH,
           "Metadata log size kept behind the latest snapshot."),
    define("metadata.max.retention.ms", T.LONG, 7 * 24 * MS_PER_HOUR, None, I.HIGH,
           "Age of metadata log segments kept behind the latest snapshot."),
    define("metadata.max.idle.interval.ms", T.INT, 500, Range.at_least(0), I.LOW,
           "Interval at which an idle active controller appends a NoOpRecord (0: never)."),
    define("metadata.log.max.record.bytes.between.snapshots", T.LONG, 20 << 20, Range.at_least(1), I.HIGH,
           "Bytes of new metadata records after which a snapshot is written."),
    define("metadata.log.max.snapshot.interval.ms", T.LONG, MS_PER_HOUR, Range.at_least(0), I.HIGH,
           "Time after which a snapshot is written if there are new records (0: never)."),
    define("unstable.feature.versions.enable", T.BOOLEAN, False, None, I.HIGH,
           "Allow feature levels that are not production-ready yet.", internal=True),
    define("metadata.version", T.STRING, None, MetadataVersionString(), I.MEDIUM,
           "KIP-920: the metadata.version this node upgrades the cluster to while "
           "auto.upgrade.metadata.version is true.", synonyms=("inter.broker.protocol.version",)),
    define("inter.broker.protocol.version", T.STRING, None, MetadataVersionString(), I.MEDIUM,
           "Deprecated name of metadata.version (KIP-920)."),
    define("auto.upgrade.metadata.version", T.BOOLEAN, False, None, I.MEDIUM,
           "KIP-920: the active controller raises the finalized metadata.version to its static "
           "metadata.version, and manual metadata.version changes are refused.", S.CLUSTER_WIDE),
    define("auto.upgrade.metadata.version.interval.ms", T.LONG, 300_000, Range.at_least(1), I.LOW,
           "How often the KIP-920 auto-upgrade check runs (a kraftwerk extension).", S.CLUSTER_WIDE),
    define(SOFTWARE_VERSION_CONFIG, T.STRING, None, None, I.LOW,
           "The Kafka release whose feature ranges this node advertises (kraftwerk; default: this "
           "software)."),
    define(LOG_FILE_CONFIG, T.STRING, None, None, I.LOW, "A file the node also logs to (kraftwerk)."),
    define(METRICS_PORT_CONFIG, T.INT, 0, Range.at_least(-1), I.LOW,
           "The port of the node's Prometheus metrics endpoint (kraftwerk; 0: one the OS picks, written "
           "to the ready file; -1: none)."),
    define(METRICS_HOST_CONFIG, T.STRING, "127.0.0.1", None, I.LOW,
           "The address the metrics endpoint listens on (kraftwerk)."),
)
