"""Topic configs (Kafka 4.3's ``LogConfig``), each with the broker configs that supply its default.

Types, defaults and base validators are Kafka's, except where a 4.x release raised a minimum: the
base validator then keeps the 3.x rule and the 4.x one is an MV rule (:mod:`..mv_rules`), so
an old value is refused only once the cluster's metadata.version says so. The synonyms are
``ServerTopicConfigSynonyms``: the first broker name that is set wins; ``minutes``/``hours``
names are converted to milliseconds.
"""

from __future__ import annotations

from kraftwerk.config.definition import MS_PER_HOUR, MS_PER_MINUTE, ConfigKey, Synonym, define
from kraftwerk.config.definition import Importance as I
from kraftwerk.config.definition import Scope as S
from kraftwerk.config.types import ConfigType as T
from kraftwerk.config.validators import (
    Predicate,
    Range,
    ThrottledReplicaList,
    Validator,
    ValidList,
    ValidString,
)

LONG_MAX = (1 << 63) - 1
SEGMENT_BYTES_3X_MINIMUM = 14
"""``LegacyRecord.RECORD_OVERHEAD_V0``: the segment.bytes minimum up to Kafka 3.9."""
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
GZIP_LEVEL = Predicate(lambda v: isinstance(v, int) and (1 <= v <= 9 or v == -1),
                       "Value must be between 1 and 9 or equal to -1", "[1,...,9] or -1")


def _hours(name: str) -> Synonym:
    return Synonym(name, MS_PER_HOUR)


def _topic(name: str, config_type: T, default: object, validator: Validator | None, doc: str,
           *synonyms: Synonym | str) -> ConfigKey:
    return define(name, config_type, default, validator, I.MEDIUM, doc, S.TOPIC, synonyms=synonyms)


TOPIC_KEYS: tuple[ConfigKey, ...] = (
    _topic("segment.bytes", T.INT, 1 << 30, Range.at_least(SEGMENT_BYTES_3X_MINIMUM),
           "Size at which the log rolls a new segment file.", "log.segment.bytes"),
    _topic("segment.ms", T.LONG, 7 * 24 * MS_PER_HOUR, Range.at_least(1),
           "Time after which the log rolls a new segment even if it is not full.",
           "log.roll.ms", _hours("log.roll.hours")),
    _topic("segment.jitter.ms", T.LONG, 0, Range.at_least(0),
           "Random jitter subtracted from segment.ms so that segments do not all roll at once.",
           "log.roll.jitter.ms", _hours("log.roll.jitter.hours")),
    _topic("segment.index.bytes", T.INT, 10 << 20, Range.at_least(4),
           "Size of the offset index preallocated for each segment.", "log.index.size.max.bytes"),
    _topic("flush.messages", T.LONG, LONG_MAX, Range.at_least(1),
           "Number of messages appended before the log is forced to disk.", "log.flush.interval.messages"),
    _topic("flush.ms", T.LONG, LONG_MAX, Range.at_least(0),
           "Time after which the log is forced to disk.",
           "log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    _topic("retention.bytes", T.LONG, -1, None,
           "Size a partition may grow to before old segments are deleted (-1: no limit).",
           "log.retention.bytes"),
    _topic("retention.ms", T.LONG, 7 * 24 * MS_PER_HOUR, Range.at_least(-1),
           "Age after which old segments are deleted (-1: no limit).",
           "log.retention.ms", Synonym("log.retention.minutes", MS_PER_MINUTE),
           _hours("log.retention.hours")),
    _topic("max.message.bytes", T.INT, (1 << 20) + 12, Range.at_least(0),
           "Largest record batch the topic accepts.", "message.max.bytes"),
    _topic("index.interval.bytes", T.INT, 4096, Range.at_least(0),
           "Bytes of log between two entries of the offset index.", "log.index.interval.bytes"),
    _topic("delete.retention.ms", T.LONG, 24 * MS_PER_HOUR, Range.at_least(0),
           "How long tombstones are kept on a compacted topic.", "log.cleaner.delete.retention.ms"),
    _topic("min.compaction.lag.ms", T.LONG, 0, Range.at_least(0),
           "Minimum age of a record before it may be compacted.", "log.cleaner.min.compaction.lag.ms"),
    _topic("max.compaction.lag.ms", T.LONG, LONG_MAX, Range.at_least(1),
           "Maximum time a record may stay ineligible for compaction.", "log.cleaner.max.compaction.lag.ms"),
    _topic("file.delete.delay.ms", T.LONG, 60_000, Range.at_least(0),
           "Delay before a deleted segment's files are removed from disk.", "log.segment.delete.delay.ms"),
    _topic("min.cleanable.dirty.ratio", T.DOUBLE, 0.5, Range.between(0, 1),
           "Share of the log that must be uncompacted before the cleaner runs.",
           "log.cleaner.min.cleanable.ratio"),
    _topic("cleanup.policy", T.LIST, "delete", ValidList.of("compact", "delete"),
           "What happens to old segments: delete them, compact them, or both.", "log.cleanup.policy"),
    _topic("unclean.leader.election.enable", T.BOOLEAN, False, None,
           "Whether an out-of-sync replica may become leader (losing data) when no in-sync one is left.",
           "unclean.leader.election.enable"),
    _topic("min.insync.replicas", T.INT, 1, Range.at_least(1),
           "Replicas that must acknowledge a write made with acks=all.", "min.insync.replicas"),
    _topic("compression.type", T.STRING, "producer", ValidString(COMPRESSION_TYPES),
           "Codec the log stores batches in; 'producer' keeps the producer's codec.", "compression.type"),
    _topic("compression.gzip.level", T.INT, -1, GZIP_LEVEL,
           "Level of gzip when compression.type is gzip.", "compression.gzip.level"),
    _topic("compression.lz4.level", T.INT, 9, Range.between(1, 17),
           "Level of lz4 when compression.type is lz4.", "compression.lz4.level"),
    _topic("compression.zstd.level", T.INT, 3, Range.between(-131072, 22),
           "Level of zstd when compression.type is zstd.", "compression.zstd.level"),
    _topic("preallocate", T.BOOLEAN, False, None,
           "Whether a new segment file is preallocated on disk.", "log.preallocate"),
    _topic("message.timestamp.type", T.STRING, "CreateTime", ValidString(TIMESTAMP_TYPES),
           "Whether a record keeps the producer's timestamp or gets the append time.",
           "log.message.timestamp.type"),
    _topic("message.timestamp.before.max.ms", T.LONG, LONG_MAX, Range.at_least(0),
           "How far in the past a CreateTime timestamp may be.", "log.message.timestamp.before.max.ms"),
    _topic("message.timestamp.after.max.ms", T.LONG, MS_PER_HOUR, Range.at_least(0),
           "How far in the future a CreateTime timestamp may be.", "log.message.timestamp.after.max.ms"),
    _topic("leader.replication.throttled.replicas", T.LIST, "", ThrottledReplicaList(),
           "Replicas whose leader-side replication is throttled ('*' for all)."),
    _topic("follower.replication.throttled.replicas", T.LIST, "", ThrottledReplicaList(),
           "Replicas whose follower-side replication is throttled ('*' for all)."),
    _topic("remote.storage.enable", T.BOOLEAN, False, None,
           "Whether the topic uses tiered storage."),
    _topic("local.retention.ms", T.LONG, -2, Range.at_least(-2),
           "Age after which tiered segments leave local disk (-2: use retention.ms).",
           "log.local.retention.ms"),
    _topic("local.retention.bytes", T.LONG, -2, Range.at_least(-2),
           "Local size above which tiered segments leave local disk (-2: use retention.bytes).",
           "log.local.retention.bytes"),
    _topic("remote.log.copy.disable", T.BOOLEAN, False, None,
           "Stop copying segments to remote storage while keeping what is there readable."),
    _topic("remote.log.delete.on.disable", T.BOOLEAN, False, None,
           "Delete the remote data when tiered storage is turned off for the topic."),
)
