"""A simple file-backed raft log, used only until RAFT's ``runtime.raft_log_files`` is available.

It keeps the in-memory :class:`~kraftwerk.raft.MemoryRaftLog` as the working copy and writes
through to Kafka's files in ``__cluster_metadata-0``: one segment ``<start offset>.log``
(appended, fsynced on ``flush``, cut on truncation), ``quorum-state`` (Kafka's JSON, data version
1, atomic replace) and snapshots as ``%020d-%010d.checkpoint``. On open the segment is scanned and
a torn tail is cut, as Kafka's recovery does. It never cleans the log behind a snapshot and does
not roll segments: that (and the indexes, ``leader-epoch-checkpoint`` and
``partition.metadata``) is the full implementation's job. The offset/time indexes are rebuilt on
a clean close so ``dump-log`` can check them.
"""

from __future__ import annotations

import os
from pathlib import Path

from kraftwerk.raft import ElectionState, MemoryRaftLog, QuorumStateStore, SnapshotId
from kraftwerk.storage.metadata_log import list_snapshots
from kraftwerk.storage.quorum_state import QuorumState, read_quorum_state, write_quorum_state
from kraftwerk.storage.segment import file_name, list_segments, write_indexes

QUORUM_STATE = "quorum-state"


class FileQuorumStateStore(QuorumStateStore):
    def __init__(self, directory: Path) -> None:
        self.path = directory / QUORUM_STATE

    def read(self) -> ElectionState | None:
        if not self.path.exists():
            return None
        state = read_quorum_state(self.path)
        return ElectionState(state.leader_epoch if state.leader_epoch >= 0 else 0,
                             None if state.leader_id < 0 else state.leader_id,
                             None if state.voted_id < 0 else state.voted_id)

    def write(self, state: ElectionState) -> None:
        write_quorum_state(self.path, QuorumState(
            data_version=1, leader_id=-1 if state.leader_id is None else state.leader_id,
            leader_epoch=state.epoch, voted_id=-1 if state.voted_id is None else state.voted_id))


class WriteThroughRaftLog(MemoryRaftLog):
    """MemoryRaftLog mirrored to one segment file and snapshot files."""

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        for snap in list_snapshots(directory):
            self._snapshots[snap.snapshot_id] = snap.path.read_bytes()
        segments = list_segments(directory)
        start = segments[0].base_offset if segments else 0
        data = b"".join(s.log_path.read_bytes() for s in segments)
        recovered = MemoryRaftLog.recover((start, data, dict(self._snapshots)))
        self.__dict__.update({k: getattr(recovered, k) for k in _STATE})
        self._segment = directory / file_name(start)
        # Rewrite as one segment holding exactly the valid prefix (cuts a torn tail).
        if segments and (len(segments) != 1 or len(data) != len(self._data)):
            for seg in segments:
                seg.log_path.unlink()
            self._segment.write_bytes(bytes(self._data))
        self._file = open(self._segment, "ab")  # noqa: SIM115 - held open for the node's lifetime
        os.fsync(self._file.fileno())

    def append(self, batch: bytes) -> None:
        super().append(batch)
        self._file.write(batch)

    def flush(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())
        super().flush()

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self._file.flush()
        self._file.truncate(len(self._data))
        os.fsync(self._file.fileno())

    def write_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        from kraftwerk.storage.fileio import atomic_write

        atomic_write(self.directory / snapshot_id.file_name, data)
        super().write_snapshot(snapshot_id, data)

    def reset_to_snapshot(self, snapshot_id: SnapshotId) -> None:
        super().reset_to_snapshot(snapshot_id)
        self._file.close()
        self._segment.unlink(missing_ok=True)
        self._segment = self.directory / file_name(self.start_offset)
        self._file = open(self._segment, "wb")  # noqa: SIM115
        os.fsync(self._file.fileno())

    def delete_before_snapshot(self, snapshot_id: SnapshotId) -> bool:
        return False  # no log cleaning in the interim log

    def close(self) -> None:
        self.flush()
        self._file.close()
        for segment in list_segments(self.directory):
            write_indexes(segment)


_STATE = ("_data", "_infos", "_bases", "_start", "_flushed_pos", "_flushed_offset", "_cache", "_snapshots")


def open_metadata_log(directory: Path) -> tuple[WriteThroughRaftLog, FileQuorumStateStore]:
    return WriteThroughRaftLog(directory), FileQuorumStateStore(directory)
