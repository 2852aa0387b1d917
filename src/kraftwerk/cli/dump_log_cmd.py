"""``kraftwerk dump-log``: kafka-dump-log.sh for data segments, metadata logs, snapshots, indexes.

Text output follows Kafka's DumpLogSegments line for line; ``--output json`` prints one JSON
object per batch with its records nested. Files go through the storage layer: logs are
memory-mapped ``SegmentReader``s walked batch by batch (pages behind the scan are released), index
entries are read in place by ``storage.index``, so memory does not grow with the file size. A large
file shows a progress bar on stderr when stderr is a terminal and stdout is not (the text output
itself never changes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kraftwerk.cli.args import input_files, positive_int
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol import codec, control_records, frame, json_form
from kraftwerk.protocol.control_records import ControlRecordType
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.records.batch import RecordBatch
from kraftwerk.records.errors import RecordsError
from kraftwerk.records.recovery import TailReason
from kraftwerk.records.types import TimestampType
from kraftwerk.storage.index import (
    OFFSET_ENTRY,
    TIME_ENTRY,
    check_offset_index_sanity,
    check_time_index_sanity,
    iter_offset_index,
    iter_time_index,
    lookup_offset,
)
from kraftwerk.storage.segment import SegmentReader, map_file

INT32_MAX = 2**31 - 1
BOOTSTRAP_FILENAME = "bootstrap.checkpoint"
#: files at least this large get a progress bar (when stderr is a terminal and stdout is not)
PROGRESS_MIN_BYTES = 64 * 1024 * 1024
#: the bar is redrawn at most this many times per file (rich is not free per batch)
_PROGRESS_STEPS = 500


class DumpError(KraftwerkError):
    """A file that cannot be dumped (unreadable, corrupt framing)."""


def register(groups: Any) -> None:
    parser = groups.add_parser(
        "dump-log", help="dump log segments, snapshots and indexes (kafka-dump-log.sh)",
        description="Parse log files and dump their contents, like kafka-dump-log.sh.")
    parser.add_argument("--files", required=True, type=input_files,
                        help="REQUIRED: the comma separated list of data and index log files to be dumped")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="iterate records, not only batches (implied by --print-data-log)")
    parser.add_argument("--print-data-log", action="store_true", help="print the records' content")
    parser.add_argument("--cluster-metadata-decoder", action="store_true",
                        help="decode record values as KRaft cluster metadata records")
    parser.add_argument("--skip-record-metadata", action="store_true",
                        help="skip metadata when printing records (also skips control records)")
    parser.add_argument("--max-bytes", type=positive_int, default=INT32_MAX,
                        help="limit the bytes of batches read from each .log file")
    parser.add_argument("--verify-index-only", action="store_true",
                        help="verify index files without printing their entries")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="only check that index files are sane")
    parser.add_argument("--output", choices=("text", "json"), default="text",
                        help="output format (default text; json prints one object per batch)")
    parser.set_defaults(func=run)


@dataclass
class Options:
    print_contents: bool
    deep: bool
    metadata: bool
    skip_record_metadata: bool
    max_bytes: int
    verify_only: bool
    sanity_only: bool
    json: bool
    out: Callable[[str], object] = field(default=lambda s: sys.stdout.write(s))


def run(args: argparse.Namespace) -> int:
    print_contents = args.print_data_log or args.cluster_metadata_decoder
    opts = Options(
        print_contents=print_contents,
        deep=args.deep_iteration or print_contents,
        metadata=args.cluster_metadata_decoder,
        skip_record_metadata=args.skip_record_metadata,
        max_bytes=args.max_bytes,
        verify_only=args.verify_index_only,
        sanity_only=args.index_sanity_check,
        json=args.output == "json",
    )
    problems: list[str] = []
    for path in args.files:
        name = str(path)
        if not opts.json:
            opts.out(f"Dumping {name}\n")
        suffix = path.suffix
        if suffix in (".log", ".checkpoint"):
            dump_log(path, opts, problems)
        elif suffix == ".index":
            dump_index(path, opts, problems)
        elif suffix == ".timeindex":
            dump_time_index(path, opts, problems)
        else:
            print(f"Ignoring unknown file {name}", file=sys.stderr)
    for line in problems:
        print(line, file=sys.stderr)
    return 0


def _is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is an interactive terminal (tests patch this to force either answer)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _progress_wanted(size: int) -> bool:
    # stdout on the same terminal would interleave with the bar's redraws, so only show it when the
    # text goes somewhere else (a file, a pipe)
    return size >= PROGRESS_MIN_BYTES and _is_terminal(sys.stderr) and not _is_terminal(sys.stdout)


@contextmanager
def _progress(name: str, size: int) -> Iterator[Callable[[int], None]]:
    """A callback taking the current byte position; draws a rich bar on stderr when wanted."""
    if not _progress_wanted(size):
        yield lambda position: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    step = max(1, size // _PROGRESS_STEPS)
    console = Console(file=sys.stderr, force_terminal=True)  # _is_terminal already said so
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                  console=console, transient=True, redirect_stdout=False, redirect_stderr=False) as bar:
        task = bar.add_task(name, total=size)
        shown = 0

        def advance(position: int) -> None:
            nonlocal shown
            if position - shown >= step or position >= size:
                shown = position
                bar.update(task, completed=position)

        yield advance


def _start_offset(path: Path) -> int:
    try:
        return int(path.name.split(".")[0])
    except ValueError:
        raise DumpError(f"{path.name} is not named after its base offset") from None


# ---------------------------------------------------------------- logs and snapshots

def dump_log(path: Path, opts: Options, problems: list[str]) -> None:
    if not opts.json:
        if path.suffix == ".log":
            opts.out(f"Log starting offset: {_start_offset(path)}\n")
        elif path.name == BOOTSTRAP_FILENAME:
            opts.out("KRaft bootstrap snapshot\n")
        else:
            end_offset, epoch = _snapshot_id(path)
            opts.out(f"Snapshot end offset: {end_offset}, epoch: {epoch}\n")
    with SegmentReader(path) as reader, _progress(path.name, min(reader.size, opts.max_bytes)) as progress:
        limit = min(reader.size, opts.max_bytes)
        scanner = reader.scanner(0, validate=False, end=limit)
        last_offset = -1
        gaps: list[tuple[int, int]] = []
        try:
            for batch in reader.stream(scanner):
                if opts.json:
                    opts.out(json.dumps(_batch_json(batch, opts), separators=(",", ":")) + "\n")
                else:
                    opts.out(_batch_line(batch))
                    if opts.deep:
                        last_offset = _print_records(batch, opts, last_offset, gaps)
                progress(batch.position + batch.size)
        except RecordsError as exc:
            raise DumpError(f"{path}: {exc}") from None
        tail = scanner.tail
        if tail is not None and tail.reason is TailReason.CORRUPT:
            raise DumpError(f"{path}: {tail.message} (at position {tail.position})")
        trailing = reader.size - scanner.valid_end
        if trailing > 0 and opts.max_bytes == INT32_MAX and not opts.json:
            opts.out(f"Found {trailing} invalid bytes at the end of {path.name}\n")
    if gaps:
        problems.append(f"Non-consecutive offsets in {path.resolve()}")
        # Kafka prepends each pair to a Scala list, so the latest gap prints first.
        problems.extend(f"  {a} is followed by {b}" for a, b in reversed(gaps))


def _snapshot_id(path: Path) -> tuple[int, int]:
    stem = path.name[: -len(".checkpoint")]
    parts = stem.split("-")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise DumpError(f"{path.name} is not a snapshot file name (<end offset>-<epoch>.checkpoint)")
    return int(parts[0]), int(parts[1])


def _timestamp_name(batch: RecordBatch) -> str:
    return TimestampType(batch.timestamp_type).kafka_name


def _batch_line(batch: RecordBatch) -> str:
    if batch.magic >= 2:
        horizon = ("OptionalLong.empty" if batch.delete_horizon_ms is None
                   else f"OptionalLong[{batch.delete_horizon_ms}]")
        head = (f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
                f"count: {batch.count_or_none} baseSequence: {batch.base_sequence} "
                f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
                f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
                f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
                f"deleteHorizonMs: {horizon}")
    else:
        head = f"offset: {batch.last_offset}"
    return (f"{head} position: {batch.position} {_timestamp_name(batch)}: {batch.max_timestamp} "
            f"size: {batch.size} magic: {batch.magic} compresscodec: {batch.compression.kafka_name} "
            f"crc: {batch.crc} isvalid: {_bool(batch.is_valid)}\n")


def _bool(value: bool) -> str:
    return "true" if value else "false"


@dataclass(frozen=True, slots=True)
class _Entry:
    """One record as the dump prints it, whatever its magic."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    sequence: int | None = None
    header_keys: tuple[str, ...] = ()
    legacy_valid: bool | None = None
    legacy_crc: int | None = None


def _entries(batch: RecordBatch) -> Iterator[_Entry]:
    if batch.magic >= 2:
        for r in batch.records():
            yield _Entry(r.offset, r.timestamp, r.key, r.value, batch.sequence_of(r.offset),
                         tuple(k for k, _ in r.headers))
    else:
        for m in batch.messages():
            yield _Entry(m.offset, m.timestamp, m.key, m.value, legacy_valid=m.crc_valid, legacy_crc=m.crc)


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _print_records(batch: RecordBatch, opts: Options, last_offset: int, gaps: list[tuple[int, int]]) -> int:
    ts_name = _timestamp_name(batch)
    for e in _entries(batch):
        # Kafka starts checking at the file's first record, whatever its offset.
        if last_offset != -1 and e.offset != last_offset + 1:
            gaps.append((last_offset, e.offset))
        last_offset = e.offset
        line = ""
        if not opts.skip_record_metadata:
            line = (f"| offset: {e.offset} {ts_name}: {e.timestamp} keySize: {_size(e.key)} "
                    f"valueSize: {_size(e.value)}")
            if batch.magic >= 2:
                line += f" sequence: {e.sequence} headerKeys: [{','.join(e.header_keys)}]"
            if e.legacy_crc is not None:
                line += f" isValid: {_bool(bool(e.legacy_valid))} crc: {e.legacy_crc}"
            if batch.is_control:
                line += _control_text(e)
        if opts.print_contents and not batch.is_control:
            prefix = "| " if opts.skip_record_metadata else " "
            key, payload = _parse(e, opts)
            if key is not None:
                line += f"{prefix}key: {key}"
                prefix = " "
            if payload is not None:
                line += f"{prefix}payload: {payload}"
        opts.out(line + "\n")
    return last_offset


def _parse(e: _Entry, opts: Options) -> tuple[str | None, str | None]:
    """Kafka's message parsers: the metadata decoder, or the default UTF-8 string decoder."""
    if opts.metadata:
        if e.value is None:
            return None, "<EMPTY>"
        try:
            return None, json.dumps(_metadata_json(e.value), separators=(",", ":"))
        except ProtocolError as exc:
            return None, f"Error at {e.offset}, skipping. {exc}"
    key = None if e.key is None else e.key.decode("utf-8", errors="replace")
    value = None if e.value is None else e.value.decode("utf-8", errors="replace")
    return key, value


def _metadata_json(value: bytes) -> dict[str, Any]:
    rec = frame.decode_metadata_record(value)
    return {"type": rec.spec.record_type_name, "version": rec.version,
            "data": json_form.to_json(rec.spec, rec.version, rec.value)}


_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: "LeaderChange:",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


def _control(e: _Entry) -> tuple[ControlRecordType, int, dict[str, Any] | None]:
    """(type, type id, decoded value in Kafka's JSON form or None for markers/unknown types)."""
    record_type, type_id = control_records.parse_control_key(e.key)
    if record_type is ControlRecordType.UNKNOWN or e.value is None:
        return record_type, type_id, None
    spec = control_records.spec_for(record_type)
    value = codec.decode(spec, 0, e.value)
    version = value.get("version", 0)
    if version not in spec.valid_versions:
        version = 0
    return record_type, type_id, json_form.to_json(spec, version, value)


def _control_text(e: _Entry) -> str:
    try:
        record_type, type_id, value = _control(e)
    except ProtocolError as exc:
        return f" invalid control record: {exc}"
    if record_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        epoch = value["coordinatorEpoch"] if value else -1
        return f" endTxnMarker: {record_type.name} coordinatorEpoch: {epoch}"
    label = _CONTROL_LABELS.get(record_type)
    if label is None or value is None:
        return f" controlType: {record_type.name}({type_id})"
    return f" {label} {json.dumps(value, separators=(',', ':'))}"


def _batch_json(batch: RecordBatch, opts: Options) -> dict[str, Any]:
    out: dict[str, Any] = {
        "position": batch.position, "baseOffset": batch.base_offset, "lastOffset": batch.last_offset,
        "count": batch.record_count, "magic": batch.magic, "size": batch.size,
        "compressionType": batch.compression.kafka_name, "timestampType": _timestamp_name(batch),
        "maxTimestamp": batch.max_timestamp, "crc": batch.crc, "isValid": batch.is_valid,
    }
    if batch.magic >= 2:
        out.update({
            "baseSequence": batch.base_sequence, "lastSequence": batch.last_sequence,
            "producerId": batch.producer_id, "producerEpoch": batch.producer_epoch,
            "partitionLeaderEpoch": batch.partition_leader_epoch,
            "isTransactional": batch.is_transactional, "isControl": batch.is_control,
            "deleteHorizonMs": batch.delete_horizon_ms,
        })
    if opts.deep:
        out["records"] = [_record_json(batch, e, opts) for e in _entries(batch)]
    return out


def _record_json(batch: RecordBatch, e: _Entry, opts: Options) -> dict[str, Any]:
    rec: dict[str, Any] = {"offset": e.offset, "timestamp": e.timestamp,
                           "keySize": _size(e.key), "valueSize": _size(e.value)}
    if batch.magic >= 2:
        rec["sequence"] = e.sequence
        rec["headerKeys"] = list(e.header_keys)
    else:
        rec["isValid"] = e.legacy_valid
        rec["crc"] = e.legacy_crc
    if batch.is_control:
        try:
            record_type, _, value = _control(e)
            rec["controlType"] = record_type.name
            if value is not None:
                rec["control"] = value
        except ProtocolError as exc:
            rec["error"] = str(exc)
    elif opts.print_contents:
        if opts.metadata and e.value is not None:
            try:
                rec["payload"] = _metadata_json(e.value)
            except ProtocolError as exc:
                rec["error"] = str(exc)
        else:
            key, payload = _parse(e, opts)
            rec["key"] = key
            rec["payload"] = payload
    return rec


# ---------------------------------------------------------------- indexes

def _whole_entries(data: memoryview, entry_size: int) -> memoryview:
    """Like Kafka's index readers, ignore a partial last entry (only the sanity check rejects it)."""
    return data[:len(data) - len(data) % entry_size]


def _first_batch_at(log: SegmentReader, position: int) -> RecordBatch | None:
    if position < 0 or position >= log.size:
        return None
    return next(iter(log.scanner(position, validate=False)), None)


def dump_index(path: Path, opts: Options, problems: list[str]) -> None:
    base = _start_offset(path)
    mismatches: list[tuple[int, int]] = []
    with map_file(path) as index, SegmentReader(path.with_suffix(".log")) as log:
        if len(index) < OFFSET_ENTRY.size:
            opts.out(f"{path} is empty.\n")
            return
        if opts.sanity_only:
            check_offset_index_sanity(index, base, path)
            opts.out(f"{path} passed sanity check.\n")
            return
        entries = iter_offset_index(_whole_entries(index, OFFSET_ENTRY.size), base, path, stop_at_zero=False)
        for i, entry in enumerate(entries):
            if entry.offset == base and i > 0:
                break  # a sparse, preallocated index: the rest is zeros
            batch = _first_batch_at(log, entry.position)
            found = batch.last_offset if batch is not None else -1
            if found != entry.offset:
                mismatches.append((entry.offset, found))
            if not opts.verify_only:
                opts.out(f"offset: {entry.offset} position: {entry.position}\n")
    if mismatches:
        problems.append(f"Mismatches in :{path.resolve()}")
        problems.extend(f"  Index offset: {a}, log offset: {b}" for a, b in sorted(mismatches, reverse=True))


def dump_time_index(path: Path, opts: Options, problems: list[str]) -> None:
    base = _start_offset(path)
    with map_file(path) as tindex, map_file(path.with_suffix(".index")) as index, \
            SegmentReader(path.with_suffix(".log")) as log:
        if opts.sanity_only:
            check_time_index_sanity(tindex, path)
            opts.out(f"{path} passed sanity check.\n")
            return
        offsets = _whole_entries(index, OFFSET_ENTRY.size)
        previous = -1
        entries = iter_time_index(_whole_entries(tindex, TIME_ENTRY.size), base, path, stop_at_zero=False)
        for i, entry in enumerate(entries):
            timestamp, offset = entry.timestamp, entry.offset
            if offset == base and i > 0:
                break
            hit = lookup_offset(offsets, base, offset)
            batch = _matching_batch(log, 0 if hit is None else hit.position, offset)
            if batch is None:
                problems.append(f"Indexed offset: {offset}, found log offset: -1")
            elif batch.last_offset != offset:
                problems.append(f"Indexed offset: {offset}, found log offset: {batch.last_offset}")
            else:
                max_ts = max((e.timestamp for e in _entries(batch)), default=-1)
                if max_ts != timestamp:
                    problems.append(f"Found timestamp mismatch in :{path.resolve()}")
                    problems.append(f"  Index timestamp: {timestamp}, log timestamp: {max_ts}")
                if previous >= timestamp:
                    problems.append(f"Found out of order timestamp in :{path.resolve()}")
                    problems.append(
                        f"  Index timestamp: {timestamp}, Previously indexed timestamp: {previous}")
            if not opts.verify_only:
                opts.out(f"timestamp: {timestamp} offset: {offset}\n")
            previous = timestamp


def _matching_batch(log: SegmentReader, position: int, offset: int) -> RecordBatch | None:
    """The first batch from ``position`` whose last offset reaches ``offset`` (Kafka's find)."""
    for batch in log.scanner(position, validate=False):
        if batch.last_offset >= offset:
            return batch
    return None
