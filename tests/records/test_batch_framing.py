"""``records/batch.py``'s framing and views at their boundaries: the zig-zag table, empty batches,
unknown codecs and magics, error positions, the scanner's tail and parameters, buffer views of
other shapes, control record keys, and the v0/v1 fields of a batch view."""

from __future__ import annotations

import logging
import struct
import zlib

import pytest
from crc32c import crc32c

from kraftwerk.protocol.codec import read_varint, varint
from kraftwerk.records import (
    CompressionType,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    RecordsError,
    TailReason,
    UnsupportedMagicError,
    iter_batches,
    parse_control_key,
    scan_batches,
)
from kraftwerk.records.batch import _ZZ, iter_records, iter_spans
from kraftwerk.records.legacy import wrapper_offsets_and_count
from kraftwerk.records.recovery import BatchScanner
from tests.conftest import golden_path
from tests.records.helpers import parse_dump
from tests.records.test_batch_bytes import RECORDS_AT, _legacy_message, fix_crc, kp_batch, kp_legacy

FIRST_BATCH = kp_batch([(0, 1, b"k", b"v", ())])
SECOND_BATCH = kp_batch([(1, 2, None, b"w", (("h", None),))])
TWO = FIRST_BATCH + SECOND_BATCH
FIRST, SECOND = len(FIRST_BATCH), len(SECOND_BATCH)


def test_the_zig_zag_table_agrees_with_the_varint_reader_on_every_entry() -> None:
    for b0 in range(0x80):
        assert _ZZ[b0] == read_varint(bytes([b0]), 0)[0]
    for b1 in range(0x80):
        for b0 in range(0x80, 0x100):
            assert _ZZ[b0 + (b1 << 7)] == read_varint(bytes([b0, b1]), 0)[0]
    assert len(_ZZ) == 0x80 + (0x80 << 7)


def test_a_record_length_whose_second_varint_byte_is_0x80_takes_the_long_path() -> None:
    """A value of 8193 bytes makes a record of 8201 bytes: varint 0x92 0x80 0x01, whose second byte
    has its continuation bit set with no other bit."""
    data = kp_batch([(0, 1, None, b"x" * 8193, ())])
    assert data[RECORDS_AT:RECORDS_AT + 3] == bytes([0x92, 0x80, 0x01])
    assert [r.value for b in iter_batches(data) for r in b.records()] == [b"x" * 8193]


def test_an_empty_v2_batch_is_61_bytes_and_holds_no_record() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))[:RECORDS_AT]
    struct.pack_into(">i", data, 8, RECORDS_AT - 12)
    struct.pack_into(">i", data, 57, 0)
    (batch,) = list(iter_batches(fix_crc(data), validate=True))
    assert (batch.size, batch.record_count, list(batch.records())) == (61, 0, [])


def _framing_error(data: bytes, kind: type[Exception] = CorruptRecordError) -> Exception:
    with pytest.raises(kind) as err:
        list(iter_batches(data))
    return err.value


def test_v2_header_errors_name_the_batch_position() -> None:
    first = kp_batch([(0, 1, b"k", b"v", ())])
    small = bytearray(first)
    struct.pack_into(">i", small, 8, 48)  # a v2 batch of 60 bytes: below the 61-byte header
    err = _framing_error(first + bytes(small[:60]))
    assert str(err) == ("Record batch is corrupt (the size 60 is smaller than the minimum allowed overhead "
                        f"61) (batch at position {len(first)})")
    assert getattr(err, "position", None) == len(first)
    codec = bytearray(first)
    codec[22] = (codec[22] & 0xF8) | 5
    err = _framing_error(first + bytes(codec))
    assert str(err) == f"Unknown compression type id: 5 (batch at position {len(first)})"
    count = bytearray(first)
    struct.pack_into(">i", count, 57, -1)
    err = _framing_error(first + bytes(count))
    assert str(err) == f"Found invalid record count -1 (batch at position {len(first)})"


@pytest.mark.parametrize(("magic", "shown"), [(3, 3), (127, 127), (128, -128), (0xFE, -2)])
def test_an_unknown_magic_is_named_signed_like_javas_byte(magic: int, shown: int) -> None:
    first = kp_batch([(0, 1, b"k", b"v", ())])
    bad = bytearray(first)
    bad[16] = magic
    err = _framing_error(first + bytes(bad), UnsupportedMagicError)
    assert str(err) == f"Invalid magic found in record: {shown} (batch at position {len(first)})"
    with pytest.raises(UnsupportedMagicError, match=f"Invalid magic found in record: {shown}"):
        wrapper_offsets_and_count(bytes(bad), 1, 10)


def test_the_scanners_tail_says_where_what_and_why() -> None:
    truncated = scan_batches(TWO[:-5])
    assert truncated.tail is not None
    assert (truncated.tail.position, truncated.tail.length) == (FIRST, SECOND - 5)
    assert truncated.tail.reason is TailReason.TRUNCATED
    assert truncated.tail.message == f"batch of {SECOND} bytes but only {SECOND - 5} bytes left"
    for short in (16, 11):
        tail = scan_batches(TWO[:FIRST + short]).tail
        assert tail is not None and tail.message == f"{short} trailing bytes are shorter than a batch header"
    tail = scan_batches(TWO[:FIRST + 17]).tail  # the magic byte is there: now the size says it is short
    assert tail is not None and tail.message == f"batch of {SECOND} bytes but only 17 bytes left"
    bad_crc = bytearray(TWO)
    bad_crc[-1] ^= 1
    corrupt = scan_batches(bytes(bad_crc))
    assert corrupt.tail is not None and (corrupt.tail.position, corrupt.tail.length) == (FIRST, SECOND)
    assert corrupt.tail.reason is TailReason.CORRUPT and corrupt.tail.message.startswith("Record is corrupt")
    bad_magic = bytearray(TWO)
    bad_magic[FIRST + 16] = 9
    framing = scan_batches(bytes(bad_magic))
    assert framing.tail is not None and (framing.tail.position, framing.tail.length) == (FIRST, SECOND)
    assert framing.tail.message == f"Invalid magic found in record: 9 (batch at position {FIRST})"


def test_the_scanner_validates_by_default_decodes_only_when_deep() -> None:
    bad_crc = bytearray(TWO)
    bad_crc[-1] ^= 1
    scanner = BatchScanner(bytes(bad_crc))
    assert len(list(scanner)) == 1 and scanner.tail is not None
    assert len(scan_batches(bytes(bad_crc), validate=False).batches) == 2
    bad_record = bytearray(FIRST_BATCH)
    bad_record[RECORDS_AT + 4] = 2 * 40  # key size past the record; CRC fixed
    bad_record_data = fix_crc(bad_record)
    shallow = BatchScanner(bad_record_data)
    assert len(list(shallow)) == 1 and shallow.tail is None and shallow.valid_end == len(bad_record_data)
    deep = scan_batches(bad_record_data, deep=True)
    assert deep.batches == () and deep.tail is not None
    assert deep.tail.message.startswith("Invalid key size 40")
    clean = BatchScanner(TWO)
    assert len(list(clean)) == 2 and clean.tail is None and clean.valid_end == len(TWO)


def test_a_scan_covers_only_its_range_and_its_decompression_cap() -> None:
    assert BatchScanner(TWO, FIRST).valid_end == FIRST  # before iterating: nothing read yet
    only_first = scan_batches(TWO, 0, FIRST)
    assert len(only_first.batches) == 1 and only_first.valid_end == FIRST and only_first.tail is None
    assert scan_batches(TWO, FIRST).valid_end == len(TWO)
    assert scan_batches(TWO, 0, 10 * len(TWO)).valid_end == len(TWO)  # an end past the buffer is the buffer's
    big = kp_batch([(0, 1, None, b"z" * 10_000, ())], codec=1)
    capped = scan_batches(big, deep=True, max_decompressed_size=1_000)
    assert capped.tail is not None and capped.tail.reason is TailReason.CORRUPT


def test_iterators_take_a_range(caplog: pytest.LogCaptureFixture) -> None:
    assert [p for p, _, _ in iter_spans(TWO)] == [0, FIRST]
    assert [p for p, _, _ in iter_spans(TWO, FIRST)] == [FIRST]
    assert [p for p, _, _ in iter_spans(TWO, 0, FIRST)] == [0]
    assert [b.position for b in iter_batches(TWO, FIRST)] == [FIRST]
    assert [b.position for b in iter_batches(TWO, 0, FIRST + 20)] == [0]  # the partial second is skipped
    assert [r.offset for r in iter_records(TWO)] == [0, 1]
    assert [r.offset for r in iter_records(TWO, FIRST)] == [1]
    assert [r.offset for r in iter_records(TWO, 0, FIRST)] == [0]
    big = kp_batch([(0, 1, None, b"z" * 10_000, ())], codec=1)
    with pytest.raises(RecordsError):
        list(iter_records(big, max_decompressed_size=1_000))
    with caplog.at_level(logging.DEBUG, "kraftwerk.records.batch"):
        list(iter_spans(TWO[:-1]))
        list(iter_batches(TWO[:-1]))
    assert caplog.messages == ["ignoring a partial batch at the end of the buffer"] * 2


def test_buffers_of_other_shapes_are_read_as_bytes() -> None:
    expected = [tuple(r) for b in iter_batches(TWO) for r in b.records()]
    signed = memoryview(bytearray(TWO)).cast("b")
    assert [tuple(r) for b in iter_batches(signed) for r in b.records()] == expected
    square = memoryview(bytearray(TWO)).cast("B", shape=[len(TWO) // 2, 2])
    assert [tuple(r) for b in iter_batches(square) for r in b.records()] == expected


def test_control_record_keys() -> None:
    assert parse_control_key(b"\x00\x00\x00\x01") == (0, ControlRecordType.COMMIT)
    assert parse_control_key(b"\x00\x01\x00\x00\xff") == (1, ControlRecordType.ABORT)
    assert parse_control_key(b"\x00\x00\x00\x63") == (0, ControlRecordType.UNKNOWN)
    short = r"^Invalid value size found for end control record key$"
    for key in (None, b"\x00\x00\x00"):
        with pytest.raises(InvalidRecordError, match=short):
            parse_control_key(key)
    with pytest.raises(InvalidRecordError, match=r"^Invalid version found for control record: -1$"):
        parse_control_key(b"\xff\xff\x00\x00")


def test_record_views_of_a_v2_batch_refuse_legacy_calls() -> None:
    (batch,) = list(iter_batches(kp_batch([(0, 1, b"k", b"v", ())])))
    assert batch.decompressed_payload() == bytes(batch.payload)
    for call, name in ((batch.messages, "messages"), (batch.wrapper, "wrapper"),
                       (batch.legacy_key_value, "legacy_key_value")):
        with pytest.raises(RecordsError, match=f"^{name}\\(\\) is only defined for magic v0/v1 batches$"):
            call()


def test_legacy_batch_views_take_kafkas_defaults() -> None:
    data = kp_legacy(1, [(7, 1_000, b"k", b"v")])
    (batch,) = list(iter_batches(data))
    assert (batch.attributes, batch.is_transactional, batch.is_control) == (0, False, False)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert (batch.partition_leader_epoch, batch.delete_horizon_ms) == (-1, None)
    assert (batch.base_offset, batch.count_or_none, batch.offsets_and_count()) == (7, 1, (7, 1))
    wrapper = bytes(_legacy_message(1, None, zlib.compress(bytes(_legacy_message(1, None, b"v")), wbits=31),
                                    attrs=1))
    (compressed,) = list(iter_batches(wrapper))
    assert compressed.wrapper().timestamp_type.name == "CREATE_TIME"
    assert compressed.count_or_none is None
    compressed.messages()
    assert compressed.count_or_none == 1


def test_legacy_layout_boundaries() -> None:
    for magic in (0, 1):
        zstd = _legacy_message(magic, b"k", b"v", attrs=4)  # zstd never existed for v0/v1
        with pytest.raises(CorruptRecordError, match=f"Invalid compression type id 4 for magic {magic}"):
            next(iter_batches(bytes(zstd))).messages()
        data = _legacy_message(magic, b"key", b"value")
        key_len_at = 12 + (14 if magic == 0 else 22) - 8
        one_over = len(data) - key_len_at - 8 + 1  # the key would overrun the value length by one byte
        struct.pack_into(">i", data, key_len_at, one_over)
        with pytest.raises(CorruptRecordError, match=f"Invalid key size {one_over} in legacy record") as err:
            next(iter_batches(bytes(data))).messages()
        assert err.value.position == 0


def _wrapped(inner: bytes, *, offset: int = 10, at: int = 0) -> bytes:
    """A gzip v1 wrapper holding ``inner``, after ``at`` bytes of other valid messages."""
    prefix = b"".join(bytes(_legacy_message(1, None, b"p", offset=i)) for i in range(at))
    return prefix + bytes(_legacy_message(1, None, zlib.compress(inner, wbits=31), attrs=1, offset=offset))


def _inner_error(data: bytes) -> Exception:
    batch = list(iter_batches(data))[-1]
    with pytest.raises((InvalidRecordError, CorruptRecordError)) as err:
        batch.messages()
    return err.value


def test_inner_message_errors_name_the_wrapper() -> None:
    good = bytes(_legacy_message(1, None, b"v", offset=0))
    at = len(_wrapped(b"", at=2)) - len(_wrapped(b""))  # where the wrapper starts
    bad_magic = bytearray(good)
    bad_magic[16] = 0x80
    err = _inner_error(_wrapped(good + bytes(bad_magic), at=2))
    assert str(err).startswith("Invalid magic found in legacy record: -128") and err.position == at  # type: ignore[attr-defined]
    err = _inner_error(_wrapped(bytes(_legacy_message(1, None, b"v", attrs=1)), at=2))
    assert str(err).startswith("Inner messages must not be compressed") and err.position == at  # type: ignore[attr-defined]
    err = _inner_error(_wrapped(good + struct.pack(">qi", 1, 0), at=2))  # exactly a log header: size 0
    assert str(err).startswith("Record size is less than the minimum record overhead (14)")
    assert err.position == at  # type: ignore[attr-defined]
    second = bytearray(_legacy_message(1, b"key", b"value", offset=1))
    struct.pack_into(">i", second, 12 + 22 - 8, 3 + 1 + 4 + 5)  # its key runs past its own end
    err = _inner_error(_wrapped(good + bytes(second) + good, at=2))
    assert str(err).startswith("Invalid key size 13 in legacy record") and err.position == at  # type: ignore[attr-defined]
    null = bytes(_legacy_message(1, None, None, attrs=1, offset=3))
    err = _inner_error(bytes(_legacy_message(1, None, b"p")) + null)
    assert str(err).startswith("Found invalid compressed record set with null value (magic = 1)")
    assert err.position == len(_legacy_message(1, None, b"p"))  # type: ignore[attr-defined]
    err = _inner_error(_wrapped(b"", at=2))
    assert str(err).startswith("Found invalid compressed record set with no inner records")
    assert err.position == at  # type: ignore[attr-defined]
    three = b"".join(bytes(_legacy_message(1, None, b"v", offset=i)) for i in range(3))
    err = _inner_error(_wrapped(three, offset=1, at=2))
    assert err.position == at  # type: ignore[attr-defined]


def test_inner_messages_keep_their_own_layout() -> None:
    msgs = [bytes(_legacy_message(1, b"k" * i, b"v", offset=i)) for i in range(3)]
    (batch,) = list(iter_batches(_wrapped(b"".join(msgs), offset=12)))
    positions = [sum(len(m) for m in msgs[:i]) for i in range(3)]
    assert [(m.offset, m.stored_offset, m.position, m.size, m.magic) for m in batch.messages()] == [
        (10 + i, i, positions[i], len(msgs[i]), 1) for i in range(3)]


def test_wrapper_offsets_from_the_inner_set_alone() -> None:
    inner = b"".join(bytes(_legacy_message(1, None, b"v", offset=i)) for i in (1, 2, 3))
    assert wrapper_offsets_and_count(inner, 1, 10) == (8, 3)  # relative to the wrapper's, the last one
    assert wrapper_offsets_and_count(inner, 1, 3) == (1, 3)  # the wrapper may equal the last inner one
    two = b"".join(bytes(_legacy_message(1, None, b"v", offset=i)) for i in (0, 1))
    assert wrapper_offsets_and_count(two, 1, 1) == (0, 2)
    minimal = bytes(_legacy_message(0, None, None))  # 14 bytes: the smallest v0 message
    assert len(minimal) == 12 + 14 and wrapper_offsets_and_count(minimal + minimal[:17], 0, 5) == (0, 1)
    with pytest.raises(UnsupportedMagicError, match="Invalid magic found in record: 9"):
        wrapper_offsets_and_count(minimal + minimal[:16] + b"\x09", 0, 5)  # 17 bytes left: the magic is read
    too_small = "Record size 13 is less than the minimum record overhead"
    with pytest.raises(CorruptRecordError, match=too_small) as err:
        wrapper_offsets_and_count(minimal + struct.pack(">qi", 0, 13), 0, 5)
    assert err.value.position == len(minimal)


def test_golden_v0_and_v1_wrappers_count_as_kafka_dump_log_lists_them() -> None:
    """Kafka's own dump of the mixed-format segment: a wrapper's inner offsets and how many."""
    path = golden_path("mixed-formats", "00000000000000000000.log")
    dump = parse_dump(golden_path("mixed-formats", "kafka-dump-log.txt"))
    batches = list(iter_batches(path.read_bytes()))
    assert len(batches) == len(dump)
    checked = 0
    for batch, entry in zip(batches, dump, strict=True):
        if batch.magic == 2 or batch.compression is CompressionType.NONE:
            continue
        offsets = [int(r["offset"]) for r in entry.records]
        assert batch.offsets_and_count() == (offsets[0], len(offsets))
        checked += 1
    assert checked > 10


def test_header_count_edges() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", (("hk", b"hv"),))]))
    count_at = RECORDS_AT + 4 + 1 + 1 + 1 + 1
    data[count_at] = 2 * 5  # five headers claimed, bytes for three at most
    assert _v2_error(fix_crc(data)) == "Found invalid number of record headers 5 (batch at position 0)"
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    data[-1] = 0x01  # header count -1
    assert _v2_error(fix_crc(data)) == "Found invalid number of record headers -1 (batch at position 0)"


def test_keys_values_and_header_keys_that_end_exactly_at_the_record_end() -> None:
    """Reaching the record's end exactly is allowed; what follows is then missing."""
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    value_len_at = RECORDS_AT + 4 + 1 + 1
    data[value_len_at] = 2 * 2  # the value now takes the header count's byte too
    assert _v2_error(fix_crc(data)).startswith("Malformed record")
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    key_len_at = RECORDS_AT + 4
    data[key_len_at] = 2 * 4  # the key runs to the record's end
    assert _v2_error(fix_crc(data)).startswith("Malformed record")
    data = bytearray(kp_batch([(0, 1, b"k", b"v", (("hk", b""),))]))
    hkey_len_at = RECORDS_AT + 4 + 1 + 1 + 1 + 1 + 1
    data[hkey_len_at] = 2 * 3  # the header key runs to the record's end
    assert _v2_error(fix_crc(data)).startswith("Malformed record")


def test_malformed_record_texts_are_exact() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ()), (1, 1, b"k", b"v", ())]))
    struct.pack_into(">i", data, 57, 1)
    assert _v2_error(fix_crc(data)) == ("Incorrect declared batch size, records still remaining in file "
                                        "(batch at position 0)")
    data = bytearray(kp_batch([(0, 1, None, None, ())]))
    data[-1] = 0x80
    assert _v2_error(fix_crc(data)) == "Malformed record: index out of range (batch at position 0)"
    data = bytearray(kp_batch([(0, 1, b"k", b"v", (("h", b"v"),))]))
    data[RECORDS_AT + 4 + 1 + 1 + 1 + 1 + 1 + 1] = 0xFF  # the header key byte: not UTF-8
    assert _v2_error(fix_crc(data)) == "Header key is not valid UTF-8 (batch at position 0)"
    assert varint(-1) == b"\x01"


def _v2_error(data: bytes) -> str:
    with pytest.raises(CorruptRecordError) as err:
        [tuple(r) for b in iter_batches(data, validate=True) for r in b.records()]
    return str(err.value)


def test_crc_is_checked_over_attributes_to_the_end() -> None:
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    (batch,) = list(iter_batches(bytes(data)))
    assert batch.computed_crc() == crc32c(bytes(data[21:])) == batch.crc


def test_edges_of_the_legacy_and_v2_readers() -> None:
    # an empty compressed value is not a null one: it fails to decompress instead
    empty = bytes(_legacy_message(1, None, b"", attrs=1))
    err = _inner_error(empty)
    assert "null value" not in str(err)
    # the value of an uncompressed message is never read as a message set, even when it looks like one
    looks_like_a_set = bytes(_legacy_message(1, None, bytes(_legacy_message(1, None, b"inner")), offset=42))
    (batch,) = list(iter_batches(looks_like_a_set))
    assert batch.offsets_and_count() == (42, 1)
    # v0 inner offsets are absolute, whatever the wrapper's own offset says
    v0_inner = b"".join(bytes(_legacy_message(0, None, b"v", offset=i)) for i in range(3))
    v0_wrapper = bytes(_legacy_message(0, None, zlib.compress(v0_inner, wbits=31), attrs=1, offset=100))
    (batch,) = list(iter_batches(v0_wrapper))
    assert batch.offsets_and_count() == (0, 3)
    # an inner magic above 2 but below 128 is shown as it is
    bad = bytearray(_legacy_message(1, None, b"v"))
    bad[16] = 5
    assert str(_inner_error(_wrapped(bytes(bad)))).startswith("Invalid magic found in legacy record: 5")


def test_a_header_count_written_in_two_bytes_is_still_zero() -> None:
    """A varint may carry leading zero groups (0x80 0x00 is 0); Kafka's reader accepts it."""
    data = bytearray(kp_batch([(0, 1, b"k", b"v", ())]))
    data[RECORDS_AT] += 2  # the record grows by one byte
    data += b"\x00"
    data[-2] = 0x80  # header count: 0x80 0x00
    struct.pack_into(">i", data, 8, len(data) - 12)
    assert [r.headers for b in iter_batches(fix_crc(data), validate=True) for r in b.records()] == [()]


def test_a_signed_byte_view_still_sees_an_unknown_magic() -> None:
    bad = bytearray(TWO)
    bad[FIRST + 16] = 0xFE
    with pytest.raises(UnsupportedMagicError, match="Invalid magic found in record: -2"):
        list(iter_batches(memoryview(bad).cast("b")))


def test_a_scanner_has_no_tail_before_it_runs() -> None:
    assert BatchScanner(TWO).tail is None
