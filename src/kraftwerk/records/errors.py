"""Errors raised by the records layer.

Every failure while reading or writing record batches is one of these types, so callers (storage
recovery, dump-log, Spark scans) can catch ``RecordsError`` and never see ``IndexError`` or
``struct.error`` leaking out of a parser fed with random bytes.
"""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError


class RecordsError(KraftwerkError):
    """Base class of every records-layer failure."""


class CorruptRecordError(RecordsError):
    """Bytes that are not a valid batch: bad size, bad magic, CRC mismatch, malformed records.

    ``position`` is the byte position of the offending batch in the scanned buffer (when known), so a
    log recovery can truncate there and a dump tool can say which batch is bad.
    """

    def __init__(self, message: str, position: int | None = None) -> None:
        super().__init__(message if position is None else f"{message} (batch at position {position})")
        self.position = position


class UnsupportedMagicError(CorruptRecordError):
    """A batch whose magic byte is not 0, 1 or 2."""


class InvalidRecordError(CorruptRecordError):
    """A well-framed batch that breaks one of Kafka's format rules (Kafka's InvalidRecordException)."""


class CompressionError(CorruptRecordError):
    """A compressed payload that cannot be decompressed (truncated or garbage stream)."""


class UnsupportedCompressionError(RecordsError):
    """A codec id that does not exist, or a codec the message format cannot carry (zstd before v2)."""


class DecompressionLimitError(RecordsError):
    """Decompressing a payload would exceed the configured cap (decompression-bomb guard)."""

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class RecordsBuildError(RecordsError):
    """A builder was asked to write something Kafka's MemoryRecordsBuilder would refuse."""


class ConversionError(RecordsError):
    """A batch that cannot be converted to the requested magic (e.g. zstd to v0/v1)."""
