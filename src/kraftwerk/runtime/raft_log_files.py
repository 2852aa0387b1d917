"""The file-backed KRaft log: ``<metadata.log.dir>/__cluster_metadata-0`` laid out like Kafka.

Files: segments ``%020d.log`` with ``.index`` / ``.timeindex`` (rebuilt when a segment is rolled,
truncated or closed, and on open), ``leader-epoch-checkpoint`` (rewritten atomically whenever the
epoch cache changes), ``partition.metadata`` (the metadata topic id), ``quorum-state`` (Kafka's
JSON, atomic replace: data_version 0 with the static voters, 1 for a dynamic quorum) and snapshots
``%020d-%010d.checkpoint`` (written as ``.checkpoint.part``, fsynced, renamed; deleted through
``.checkpoint.deleted``). On open, leftover partial/deleted snapshots are removed and the log is
recovered the way Kafka does it: scan, cut at the first invalid batch (a torn write).

The log start offset is not a separate file: it is 0 while the first segment still starts at 0,
otherwise the end offset of the earliest snapshot (the one the log was cleaned behind).
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from kraftwerk.raft.log import (
    ElectionState,
    EpochCache,
    LogBatchInfo,
    QuorumStateStore,
    RaftLog,
    SnapshotId,
    scan_batch_infos,
)
from kraftwerk.raft.types import METADATA_TOPIC_ID, RaftStateError
from kraftwerk.storage.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    EpochEntry,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
    write_partition_metadata,
)
from kraftwerk.storage.fileio import fsync_dir, translate_os_errors
from kraftwerk.storage.index import DEFAULT_INDEX_INTERVAL_BYTES
from kraftwerk.storage.metadata_log import (
    METADATA_PARTITION_DIR,
    clean_snapshot_leftovers,
    delete_snapshot,
    list_snapshots,
    write_snapshot_file,
)
from kraftwerk.storage.partition import recover_log
from kraftwerk.storage.quorum_state import (
    QUORUM_STATE_FILE,
    QuorumState,
    read_quorum_state,
    write_quorum_state,
)
from kraftwerk.storage.segment import Segment, delete_segment_files, list_segments, write_indexes

log = logging.getLogger(__name__)

#: Kafka's ``metadata.log.segment.bytes`` is 1 GiB; a smaller default keeps cleaning effective.
DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024

__all__ = ["DEFAULT_SEGMENT_BYTES", "FileQuorumStateStore", "FileRaftLog", "open_metadata_log"]


class FileQuorumStateStore(QuorumStateStore):
    """``quorum-state`` as Kafka writes it: for a static quorum data_version 0 with
    ``currentVoters`` listed, for a dynamic one (no static ``voters``) data_version 1; both are read."""

    def __init__(self, directory: Path, voters: tuple[int, ...]) -> None:
        self.path = Path(directory) / QUORUM_STATE_FILE
        self.voters = tuple(sorted(voters))

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        state = read_quorum_state(self.path)
        return ElectionState(
            max(state.leader_epoch, 0),
            None if state.leader_id < 0 else state.leader_id,
            None if state.voted_id < 0 else state.voted_id,
        )

    def write(self, state: ElectionState) -> None:
        if not self.voters:
            write_quorum_state(self.path, QuorumState(
                data_version=1,
                leader_id=-1 if state.leader_id is None else state.leader_id,
                leader_epoch=state.epoch,
                voted_id=-1 if state.voted_id is None else state.voted_id,
            ))
            return
        write_quorum_state(
            self.path,
            QuorumState(
                data_version=0,
                leader_id=-1 if state.leader_id is None else state.leader_id,
                leader_epoch=state.epoch,
                voted_id=-1 if state.voted_id is None else state.voted_id,
                cluster_id="",
                applied_offset=0,
                current_voters=self.voters,
            ),
        )


class _Batch:
    __slots__ = ("base", "epoch", "last", "position", "segment", "size")

    def __init__(self, segment: int, info: LogBatchInfo) -> None:
        self.segment = segment
        self.base = info.base_offset
        self.last = info.last_offset
        self.epoch = info.epoch
        self.position = info.position
        self.size = info.size


class FileRaftLog(RaftLog):
    """:class:`~kraftwerk.raft.RaftLog` over Kafka's files (one process owns the directory)."""

    def __init__(
        self,
        directory: Path,
        *,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    ) -> None:
        self.directory = Path(directory)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        with translate_os_errors(self.directory, "create"):
            self.directory.mkdir(parents=True, exist_ok=True)
        if not (self.directory / PARTITION_METADATA_FILE).exists():
            write_partition_metadata(self.directory / PARTITION_METADATA_FILE, METADATA_TOPIC_ID)
        clean_snapshot_leftovers(self.directory)
        recover_log(self.directory, index_interval_bytes=index_interval_bytes)
        self._segments: list[int] = []
        self._sizes: dict[int, int] = {}
        self._batches: list[_Batch] = []
        self._bases: list[int] = []
        self._cache = EpochCache()
        self._fd: int | None = None
        self._dirty = False
        self._flushed = 0
        for seg in list_segments(self.directory):
            with translate_os_errors(seg.log_path, "read"):
                data = seg.log_path.read_bytes()
            infos, valid = scan_batch_infos(data)
            if valid != len(data):
                raise RaftStateError(f"{seg.log_path}: invalid bytes after recovery at position {valid}")
            self._segments.append(seg.base_offset)
            self._sizes[seg.base_offset] = valid
            for info in infos:
                self._batches.append(_Batch(seg.base_offset, info))
                self._bases.append(info.base_offset)
        snaps = list_snapshots(self.directory)
        first = self._batches[0].base if self._batches else None
        if first == 0 or (first is None and not snaps):
            self._start = 0
        elif snaps:
            self._start = snaps[0].snapshot_id.end_offset
            if first is not None and first > self._start:
                raise RaftStateError(
                    f"{self.directory}: the log starts at {first}, after the earliest "
                    f"snapshot's end offset {self._start}"
                )
        else:
            raise RaftStateError(f"{self.directory}: the log starts at {first} but there is no snapshot")
        for b in self._batches:
            if b.last >= self._start:
                self._cache.assign(b.epoch, max(b.base, self._start))
        self._write_epoch_checkpoint_if_changed()
        if not self._segments:
            self._roll(self._start)
        else:
            write_indexes(Segment(self.directory, self._segments[-1]), self.index_interval_bytes)
        self._flushed = self.end_offset

    # ------------------------------------------------------------------ files
    def _segment(self, base: int) -> Segment:
        return Segment(self.directory, base)

    def _open_active(self) -> int:
        if self._fd is None:
            path = self._segment(self._segments[-1]).log_path
            with translate_os_errors(path, "open"):
                self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd

    def _close_active(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _roll(self, base: int) -> None:
        """Start a new segment at ``base`` (the previous one gets its final indexes)."""
        if self._segments:
            self.flush()
            self._close_active()
            write_indexes(self._segment(self._segments[-1]), self.index_interval_bytes)
        seg = self._segment(base)
        with translate_os_errors(seg.log_path, "create"):
            seg.log_path.touch()
        self._segments.append(base)
        self._sizes[base] = 0
        write_indexes(seg, self.index_interval_bytes)
        fsync_dir(self.directory)

    def _write_epoch_checkpoint_if_changed(self) -> None:
        path = self.directory / LEADER_EPOCH_CHECKPOINT_FILE
        entries = [EpochEntry(e, s) for e, s in self._cache.entries]
        if path.exists() and read_leader_epoch_checkpoint(path) == entries:
            return
        write_leader_epoch_checkpoint(path, entries)

    def close(self) -> None:
        """Flush, close the active segment and write its indexes (a clean shutdown)."""
        self.flush()
        self._close_active()
        if self._segments:
            write_indexes(self._segment(self._segments[-1]), self.index_interval_bytes)

    # ------------------------------------------------------------------ RaftLog
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._batches[-1].last + 1 if self._batches else self._start

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    def append(self, batch: bytes) -> None:
        infos, valid = scan_batch_infos(batch)
        if len(infos) != 1 or valid != len(batch):
            raise ValueError("append takes exactly one valid record batch")
        info = infos[0]
        if info.base_offset != self.end_offset:
            raise ValueError(
                f"batch base offset {info.base_offset} is not the log end offset {self.end_offset}"
            )
        active = self._segments[-1]
        if self._sizes[active] > 0 and self._sizes[active] + len(batch) > self.segment_bytes:
            self._roll(info.base_offset)
            active = info.base_offset
        fd = self._open_active()
        path = self._segment(active).log_path
        with translate_os_errors(path, "append to"):
            os.write(fd, batch)
        position = self._sizes[active]
        self._sizes[active] += len(batch)
        self._batches.append(
            _Batch(active, LogBatchInfo(info.base_offset, info.last_offset, info.epoch, position, info.size))
        )
        self._bases.append(info.base_offset)
        if self._cache.latest_epoch() != info.epoch:
            self._cache.assign(info.epoch, info.base_offset)
            self._write_epoch_checkpoint_if_changed()
        self._dirty = True

    def flush(self) -> None:
        if self._dirty and self._fd is not None:
            with translate_os_errors(self._segment(self._segments[-1]).log_path, "fsync"):
                os.fsync(self._fd)
        self._dirty = False
        self._flushed = self.end_offset

    def _index_of(self, offset: int) -> int:
        return bisect.bisect_right(self._bases, offset) - 1

    def _read_range(self, first: _Batch, last: _Batch) -> bytes:
        path = self._segment(first.segment).log_path
        with translate_os_errors(path, "read"), open(path, "rb") as f:
            f.seek(first.position)
            return f.read(last.position + last.size - first.position)

    def _read_from(self, offset: int, max_bytes: int) -> bytes:
        idx = max(self._index_of(offset), 0)
        if idx >= len(self._batches):
            return b""
        first = self._batches[idx]
        last = first
        for b in self._batches[idx + 1 :]:
            if b.segment != first.segment or b.position + b.size - first.position > max_bytes:
                break
            last = b
        return self._read_range(first, last)

    def batches(self, start: int, end: int) -> list[tuple[LogBatchInfo, bytes]]:
        idx = max(self._index_of(start), 0)
        out = []
        for b in self._batches[idx:]:
            if b.base >= end:
                break
            if b.last >= start:
                out.append(
                    (LogBatchInfo(b.base, b.last, b.epoch, b.position, b.size), self._read_range(b, b))
                )
        return out

    def truncate_to(self, offset: int) -> None:
        if offset >= self.end_offset:
            return
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset}, below the log start {self._start}")
        idx = bisect.bisect_left(self._bases, offset)
        if 0 < idx < len(self._batches) and self._batches[idx - 1].last >= offset:
            raise ValueError(f"truncation offset {offset} is inside a batch")
        cut = self._batches[idx]
        self._close_active()
        for base in [s for s in self._segments if s > cut.segment]:
            delete_segment_files(self._segment(base))
            self._segments.remove(base)
            del self._sizes[base]
        seg = self._segment(cut.segment)
        with translate_os_errors(seg.log_path, "truncate"):
            os.truncate(seg.log_path, cut.position)
            fd = os.open(seg.log_path, os.O_WRONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._sizes[cut.segment] = cut.position
        write_indexes(seg, self.index_interval_bytes)
        fsync_dir(self.directory)
        del self._batches[idx:]
        del self._bases[idx:]
        self._cache.truncate_from_end(offset)
        self._write_epoch_checkpoint_if_changed()
        self._flushed = min(self._flushed, self.end_offset)

    @property
    def epoch_cache(self) -> EpochCache:
        return self._cache

    def last_batch_epoch(self) -> int | None:
        if self._batches and self._batches[-1].last >= self._start:
            return self._batches[-1].epoch
        return None

    def snapshots(self) -> list[SnapshotId]:
        return [f.snapshot_id for f in list_snapshots(self.directory)]

    def _snapshot_path(self, snapshot_id: SnapshotId) -> Path:
        return self.directory / snapshot_id.file_name

    def snapshot_size(self, snapshot_id: SnapshotId) -> int | None:
        path = self._snapshot_path(snapshot_id)
        try:
            return path.stat().st_size
        except FileNotFoundError:
            return None

    def read_snapshot(self, snapshot_id: SnapshotId, position: int, max_bytes: int) -> bytes:
        path = self._snapshot_path(snapshot_id)
        with translate_os_errors(path, "read"), open(path, "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    def write_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        if self._snapshot_path(snapshot_id).exists():
            return
        write_snapshot_file(self.directory, snapshot_id, [data])

    def _delete_older_snapshots(self, snapshot_id: SnapshotId) -> None:
        for sid in self.snapshots():
            if sid < snapshot_id:
                delete_snapshot(self._snapshot_path(sid))

    def reset_to_snapshot(self, snapshot_id: SnapshotId) -> None:
        if self.snapshot_size(snapshot_id) is None:
            raise ValueError(f"no snapshot {snapshot_id.file_name}")
        self._close_active()
        for base in list(self._segments):
            delete_segment_files(self._segment(base))
        self._segments = []
        self._sizes = {}
        self._batches = []
        self._bases = []
        self._cache.clear()
        self._start = snapshot_id.end_offset
        self._roll(self._start)
        self._write_epoch_checkpoint_if_changed()
        self._delete_older_snapshots(snapshot_id)
        self._flushed = self._start
        self._dirty = False

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        end = snapshot_id.end_offset
        if self.snapshot_size(snapshot_id) is None or end <= self._start or end > self.end_offset:
            return False
        idx = bisect.bisect_left(self._bases, end)
        if 0 < idx < len(self._batches) and self._batches[idx - 1].last >= end:
            return False
        if idx == len(self._batches) and self._batches:
            self._roll(end)  # everything is behind the snapshot: continue in a fresh segment
        removed = False
        while len(self._segments) > 1 and self._segments[1] <= end:
            base = self._segments.pop(0)
            delete_segment_files(self._segment(base))
            del self._sizes[base]
            removed = True
        if removed:
            fsync_dir(self.directory)
        keep = bisect.bisect_left(self._bases, self._segments[0])
        del self._batches[:keep]
        del self._bases[:keep]
        self._start = end
        self._cache.truncate_from_start(end)
        self._write_epoch_checkpoint_if_changed()
        self._delete_older_snapshots(snapshot_id)
        return True


def open_metadata_log(
    metadata_log_dir: Path, voters: tuple[int, ...], *, segment_bytes: int = DEFAULT_SEGMENT_BYTES
) -> tuple[FileRaftLog, FileQuorumStateStore]:
    """The raft log and quorum-state store of ``<metadata_log_dir>/__cluster_metadata-0``."""
    directory = Path(metadata_log_dir) / METADATA_PARTITION_DIR
    raft_log = FileRaftLog(directory, segment_bytes=segment_bytes)
    return raft_log, FileQuorumStateStore(directory, voters)
