"""A running BLAKE2b of record content as a consumer reads it: (offset, timestamp, key, value, headers).

Verifying a format conversion compares the content of the old batches with that of the new ones.
Hashing a canonical form of each record, instead of keeping the records, lets the old side be
digested while it is converted and the new side while it is read back, with memory bounded by a
batch. The canonical form of one record is ``>qqiii`` (offset, timestamp, key length or -1, value
length or -1, header count), the key, the value, then per header ``>ii`` (key length, value length or
-1), the UTF-8 key and the value. A batch copied unchanged is digested as its raw bytes (tagged, so it
can never collide with a record).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable

from crc32c import crc32c

from kraftwerk.records.batch import (
    _CODECS,
    _MIN_V2_RECORD,
    V2_CRC_START,
    V2_HEADER,
    Buffer,
    Header,
    _as_view,
    _decode_v2,
    iter_spans,
)
from kraftwerk.records.compression import decompress
from kraftwerk.records.errors import CorruptRecordError
from kraftwerk.records.types import DEFAULT_MAX_DECOMPRESSED_SIZE, MAGIC_V2, RECORD_BATCH_OVERHEAD

RECORD_HEAD = struct.Struct(">qqiii")
_HEADER_HEAD = struct.Struct(">ii")
_RAW_HEAD = struct.Struct(">bi")


#: pending pieces are hashed in one update once there are this many (a hash update per small record
#: would cost as much as its decoding)
_PENDING_PIECES = 4096


class ContentDigest:
    """The running digest; ``record_count`` counts every record added (raw batches by their count).

    Pieces are collected as ``bytes`` (never views into a caller's buffer, which may be a memory map
    that must close) and hashed in one update per few thousand; the digest of a concatenation does
    not depend on how it was split.
    """

    __slots__ = ("_h", "_pending", "record_count")

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=32)
        self._pending: list[bytes] = []
        self.record_count = 0

    def _flush(self) -> None:
        if self._pending:
            self._h.update(b"".join(self._pending))
            self._pending.clear()

    def raw(self, data: Buffer, records: int) -> None:
        """A batch that is compared byte for byte (copied unchanged)."""
        self._flush()
        self._h.update(_RAW_HEAD.pack(2, len(data)))
        self._h.update(data)
        self.record_count += records

    def record(self, offset: int, timestamp: int, key: Buffer | None, value: Buffer | None) -> None:
        """One record without headers (every v0/v1 record)."""
        pending = self._pending
        pending.append(b"".join((
            RECORD_HEAD.pack(offset, timestamp, -1 if key is None else len(key),
                             -1 if value is None else len(value), 0),
            key or b"", value or b"")))
        self.record_count += 1
        if len(pending) >= _PENDING_PIECES:
            self._flush()

    def parts(self, parts: list[Buffer], records: int) -> None:
        """Canonical pieces built by a caller's hot loop (see :func:`record_parts`)."""
        self._pending.append(b"".join(parts))
        self.record_count += records
        if len(self._pending) >= _PENDING_PIECES:
            self._flush()

    def records(self, records: Iterable[tuple[int, int, Buffer | None, Buffer | None,
                                              tuple[Header, ...]]]) -> None:
        """Records (``Record`` tuples fit)."""
        pending = self._pending
        add = pending.append
        pack = RECORD_HEAD.pack
        n = 0
        for offset, timestamp, key, value, headers in records:
            if headers:
                parts: list[Buffer] = []
                record_parts(parts, offset, timestamp, key, value, headers)
                add(b"".join(parts))
            else:
                add(pack(offset, timestamp, -1 if key is None else len(key),
                         -1 if value is None else len(value), 0))
                if key:
                    add(key if type(key) is bytes else bytes(key))
                if value:
                    add(value if type(value) is bytes else bytes(value))
            n += 1
        self.record_count += n
        if len(pending) >= _PENDING_PIECES:
            self._flush()

    def digest(self) -> bytes:
        self._flush()
        return self._h.digest()


def record_parts(parts: list[Buffer], offset: int, timestamp: int, key: Buffer | None, value: Buffer | None,
                 headers: tuple[Header, ...] = ()) -> None:
    """Append the canonical pieces of one record to ``parts``."""
    parts.append(RECORD_HEAD.pack(offset, timestamp, -1 if key is None else len(key),
                                  -1 if value is None else len(value), len(headers)))
    if key:
        parts.append(key)
    if value:
        parts.append(value)
    for hkey, hvalue in headers:
        kb = hkey.encode("utf-8")
        parts.append(_HEADER_HEAD.pack(len(kb), -1 if hvalue is None else len(hvalue)))
        parts.append(kb)
        if hvalue:
            parts.append(hvalue)


def digest_v2_batches(data: Buffer, digest: ContentDigest, copied: bytes | bytearray = b"", *,
                      max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                      summaries: list[tuple[int, int, int, int]] | None = None) -> tuple[int, int]:
    """Digest every batch of ``data``, which must all be v2 with a valid CRC-32C.

    Batch ``i`` whose bit is set in the bitset ``copied`` (bit ``i % 8`` of byte ``i // 8``) is
    digested as its raw bytes, the others record by record (decoded with every bound checked,
    decompression capped at ``max_decompressed_size``). Returns (batches, end of the last whole batch);
    a caller compares the end with the buffer size to detect a torn tail. Raises ``RecordsError``
    (``CorruptRecordError`` naming the position for a bad CRC or another magic). With ``summaries``,
    (position, size, last offset, max timestamp) of each batch is appended: what index building needs,
    so a verified file's indexes cost no second read.
    """
    mv = _as_view(data)
    unpack = V2_HEADER.unpack_from
    n_copied = len(copied) * 8
    count = 0
    end = 0
    for pos, size, magic in iter_spans(mv):
        if magic != MAGIC_V2:
            raise CorruptRecordError(f"batch at byte {pos} has magic {magic}", pos)
        if size < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(f"Record batch is corrupt (the size {size} is smaller than the minimum "
                                     f"allowed overhead {RECORD_BATCH_OVERHEAD})", pos)
        (base_offset, _, _, _, crc, attrs, last_delta, base_ts, max_ts, _, _, _, records) = unpack(mv, pos)
        computed = crc32c(mv[pos + V2_CRC_START:pos + size])
        if computed != crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {crc}, computed crc = {computed})", pos)
        if records < 0:
            raise CorruptRecordError(f"Found invalid record count {records}", pos)
        if count < n_copied and copied[count >> 3] & (1 << (count & 7)):
            digest.raw(mv[pos:pos + size], records)
        else:
            codec = attrs & 0x07
            if codec == 0:
                buf: Buffer = mv[pos + RECORD_BATCH_OVERHEAD:pos + size]
            elif codec > 4:
                raise CorruptRecordError(f"Unknown compression type id: {codec}", pos)
            else:
                buf = decompress(_CODECS[codec], mv[pos + RECORD_BATCH_OVERHEAD:pos + size], magic=MAGIC_V2,
                                 max_size=max_decompressed_size)
            if records > len(buf) // _MIN_V2_RECORD:
                raise CorruptRecordError(
                    f"Record count {records} cannot fit in {len(buf)} bytes of records", pos)
            lat = max_ts if attrs & 0x08 else None
            digest.records(_decode_v2(buf, records, base_offset, base_ts, lat, pos))
        if summaries is not None:
            summaries.append((pos, size, base_offset + last_delta, max_ts))
        count += 1
        end = pos + size
    return count, end
