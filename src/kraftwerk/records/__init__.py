"""Record batches v0/v1/v2: reading, building, compression and format conversion (pure, no I/O).

Reading: ``iter_batches`` / ``BatchScanner`` / ``scan_batches`` frame a buffer into ``RecordBatch``
views (header fields only); ``RecordBatch.records()`` decodes lazily. Writing: ``RecordsBuilder``
(Kafka's MemoryRecordsBuilder). Conversion: ``upconvert`` / ``downconvert``.
"""

from kraftwerk.records.batch import (
    Record,
    RecordBatch,
    increment_sequence,
    iter_batches,
    iter_records,
    iter_spans,
    parse_control_key,
)
from kraftwerk.records.builder import RecordsBuilder, build_records, encode_legacy_message, encode_v2_record
from kraftwerk.records.compression import compress, decompress
from kraftwerk.records.convert import (
    downconvert,
    downconvert_batch,
    iter_upconverted,
    upconvert,
    upconvert_batch,
    upconvert_into,
)
from kraftwerk.records.errors import (
    CompressionError,
    ConversionError,
    CorruptRecordError,
    DecompressionLimitError,
    InvalidRecordError,
    RecordsBuildError,
    RecordsError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)
from kraftwerk.records.legacy import LegacyMessage
from kraftwerk.records.recovery import BatchScanner, ScanResult, Tail, TailReason, scan_batches
from kraftwerk.records.types import (
    CURRENT_MAGIC,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    LOG_OVERHEAD,
    MAGIC_V0,
    MAGIC_V1,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    ControlRecordType,
    TimestampType,
)

__all__ = [
    "CURRENT_MAGIC",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V0",
    "MAGIC_V1",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "BatchScanner",
    "CompressionError",
    "CompressionType",
    "ControlRecordType",
    "ConversionError",
    "CorruptRecordError",
    "DecompressionLimitError",
    "InvalidRecordError",
    "LegacyMessage",
    "Record",
    "RecordBatch",
    "RecordsBuildError",
    "RecordsBuilder",
    "RecordsError",
    "ScanResult",
    "Tail",
    "TailReason",
    "TimestampType",
    "UnsupportedCompressionError",
    "UnsupportedMagicError",
    "build_records",
    "compress",
    "decompress",
    "downconvert",
    "downconvert_batch",
    "encode_legacy_message",
    "encode_v2_record",
    "increment_sequence",
    "iter_batches",
    "iter_records",
    "iter_spans",
    "iter_upconverted",
    "parse_control_key",
    "scan_batches",
    "upconvert",
    "upconvert_batch",
    "upconvert_into",
]
