"""Closed sets and constants of Kafka's record formats (magic 0, 1 and 2)."""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

from kraftwerk.protocol.control_records import ControlRecordType as ControlRecordType
from kraftwerk.records.errors import UnsupportedCompressionError

MAGIC_V0 = 0
MAGIC_V1 = 1
MAGIC_V2 = 2
CURRENT_MAGIC = MAGIC_V2

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

#: offset (int64) + size (int32) in front of every batch / legacy message
LOG_OVERHEAD = 12
#: the fixed v2 batch header size
RECORD_BATCH_OVERHEAD = 61
#: crc + magic + attributes + key length + value length
RECORD_OVERHEAD_V0 = 14
#: v0 overhead + timestamp
RECORD_OVERHEAD_V1 = 22
#: default cap on the decompressed size of one batch payload
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024

_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")


class CompressionType(IntEnum):
    """Codec ids stored in the low three attribute bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka's tools print (``compresscodec: lz4``)."""
        return _CODEC_NAMES[self.value]

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        """Map an attribute codec id, rejecting the unused ids 5-7 with a typed error."""
        if 0 <= codec_id <= 4:
            return _CODECS[codec_id]
        raise UnsupportedCompressionError(f"Unknown compression type id: {codec_id}")

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """Parse a Kafka codec name (``compression.type``)."""
        try:
            return _CODECS[_CODEC_NAMES.index(name.lower())]
        except ValueError:
            raise UnsupportedCompressionError(f"Unknown compression name: {name}") from None


_CODECS = tuple(CompressionType)


class TimestampType(IntEnum):
    """Kafka's TimestampType; v0 has none, v1/v2 carry it in attribute bit 3."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        """The name Kafka's tools print (``CreateTime: 1700000000000``)."""
        return ("NoTimestampType", "CreateTime", "LogAppendTime")[self.value + 1]


# The control record types are declared once, with the control records, in the protocol layer.


#: one record header: a UTF-8 key and a value (null allowed)
Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record as a consumer sees it: absolute offset, timestamp, key, value, headers.

    A NamedTuple rather than a dataclass because millions are built per scan and tuple
    construction is several times cheaper; it is immutable all the same.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
