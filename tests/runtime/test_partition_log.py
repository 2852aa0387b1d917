"""A partition log on disk: offsets assigned by the leader, reads by offset across segments,
rolls, retention, truncation, leader epochs, recovery of a torn tail, and the KIP-724 rewrite."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from kraftwerk.records.batch import iter_records
from kraftwerk.records.builder import build_records
from kraftwerk.records.recovery import scan_batches
from kraftwerk.runtime.partition_log import LogAppendError, LogConfig, PartitionLog, batch_infos
from kraftwerk.storage.checkpoints import EpochEntry, read_leader_epoch_checkpoint
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.segment import list_segments

TOPIC_ID = uuid.UUID(int=5)


def _batch(n: int, first: int = 0, size: int = 10) -> bytes:
    return build_records([(i, 1000 + first + i, b"k%d" % (first + i), b"v" * size, ()) for i in range(n)],
                         base_offset=0)


def _append(plog: PartitionLog, data: bytes, epoch: int = 0, now: int = 0) -> tuple[int, int]:
    return plog.append(data, batch_infos(data), assign_from=plog.log_end_offset, leader_epoch=epoch,
                       now_ms=now)


def _offsets(data: bytes) -> list[int]:
    return [r.offset for r in iter_records(data)]


def test_leader_appends_assign_offsets_and_epochs(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    assert _append(plog, _batch(3)) == (0, 2)
    assert _append(plog, _batch(2), epoch=4) == (3, 4)
    data = plog.read(0, 1 << 20, plog.log_end_offset)
    assert _offsets(data) == [0, 1, 2, 3, 4]
    assert [b.partition_leader_epoch for b in scan_batches(data).batches] == [0, 4]
    assert plog.read(3, 1 << 20, 5) == plog.read(4, 1 << 20, 5)  # whole batches only
    assert plog.read(0, 1 << 20, 3) == data[: scan_batches(data).batches[1].position]  # up to the HW
    assert plog.epochs == [EpochEntry(0, 0), EpochEntry(4, 3)]
    assert plog.end_offset_for_epoch(2) == (0, 3) and plog.end_offset_for_epoch(4) == (4, 5)
    plog.close()
    assert read_leader_epoch_checkpoint(tmp_path / "t-0" / "leader-epoch-checkpoint") == plog.epochs
    with pytest.raises(StorageError, match="does not match"):
        PartitionLog(tmp_path / "t-0", uuid.UUID(int=6), LogConfig(), now_ms=0)


def test_rolls_reads_across_segments_retention_and_truncation(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(segment_bytes=600, retention_bytes=1500,
                                                               index_interval_bytes=100), now_ms=0)
    for i in range(20):
        _append(plog, _batch(2, 2 * i, size=60))
    segments = list_segments(tmp_path / "t-0")
    assert len(segments) > 3 and all(s.index_path.exists() for s in segments[:-1])
    assert _offsets(plog.read(0, 1 << 30, 40)) == list(range(40))
    middle = _offsets(plog.read(17, 300, 40))
    assert middle[0] <= 17 < middle[-1] + 1 and len(middle) < 40  # max_bytes respected
    assert len(_offsets(plog.read(17, 1, 40))) == 2  # at least one batch (KIP-74)
    assert plog.apply_retention(0) > 0
    assert 0 < plog.log_start_offset == list_segments(tmp_path / "t-0")[0].base_offset
    assert _offsets(plog.read(plog.log_start_offset, 1 << 30, 40))[-1] == 39
    start = plog.log_start_offset  # a batch base: batches hold offsets 2k and 2k+1
    plog.truncate_to(start + 3)
    assert plog.log_end_offset == start + 2  # the batch holding start+2 and start+3 goes whole
    assert _offsets(plog.read(plog.log_start_offset, 1 << 30, 100))[-1] == plog.log_end_offset - 1
    assert _append(plog, _batch(1))[0] == plog.log_end_offset - 1
    plog.close()


def test_follower_appends_keep_the_leaders_offsets(tmp_path: Path) -> None:
    leader = PartitionLog(tmp_path / "l" / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    _append(leader, _batch(3), epoch=2)
    data = leader.read(0, 1 << 20, 3)
    follower = PartitionLog(tmp_path / "f" / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    assert follower.append(data, batch_infos(data), assign_from=None, leader_epoch=-1, now_ms=0) == (0, 2)
    assert follower.epochs == [EpochEntry(2, 0)]
    with pytest.raises(LogAppendError, match="below the log end offset"):
        follower.append(data, batch_infos(data), assign_from=None, leader_epoch=-1, now_ms=0)
    legacy = build_records([(0, 1, b"k", b"v", ())], magic=1)
    with pytest.raises(LogAppendError, match="magic 2"):
        leader.append(legacy, batch_infos(legacy), assign_from=3, leader_epoch=2, now_ms=0)
    with pytest.raises(LogAppendError):
        batch_infos(data[:-3])


def test_a_torn_tail_is_cut_on_open(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    _append(plog, _batch(3))
    _append(plog, _batch(3))
    plog.close()
    log_file = list_segments(tmp_path / "t-0")[0].log_path
    whole = log_file.read_bytes()
    log_file.write_bytes(whole + _batch(2)[:30])  # a crash mid-write
    reopened = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    assert reopened.log_end_offset == 6 and log_file.read_bytes() == whole
    assert _append(reopened, _batch(1)) == (6, 6)
    reopened.close()


def test_force_upgrade_rewrites_legacy_segments_as_v2(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    rows = [(i, 1000 + i, b"k%d" % i, b"v%d" % i, ()) for i in range(6)]
    legacy = build_records(rows[:3], magic=0) + build_records(rows[3:], magic=1)
    (pdir / "00000000000000000000.log").write_bytes(legacy)
    plain = PartitionLog(pdir, TOPIC_ID, LogConfig(), now_ms=0)
    assert plain.read(0, 1 << 20, 6) == legacy  # served as stored
    plain.close()
    upgraded = PartitionLog(pdir, TOPIC_ID, LogConfig(force_upgrade_to_v2=True), now_ms=0)
    data = upgraded.read(0, 1 << 20, 6)
    assert {b.magic for b in scan_batches(data).batches} == {2}
    assert [(r.offset, r.key, r.value) for r in iter_records(data)] == [(o, k, v) for o, _t, k, v, _h in rows]
    assert upgraded.log_end_offset == 6
    upgraded.close()


def test_end_offset_for_epoch_is_kafkas_lookup(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(), now_ms=0)
    assert plog.end_offset_for_epoch(0) == (-1, -1)
    _append(plog, _batch(2), epoch=2)
    _append(plog, _batch(2), epoch=5)
    _append(plog, _batch(1), epoch=7)
    assert plog.end_offset_for_epoch(7) == (7, 5)  # the latest epoch ends at the log end
    assert plog.end_offset_for_epoch(6) == (5, 4)
    assert plog.end_offset_for_epoch(5) == (5, 4)
    assert plog.end_offset_for_epoch(1) == (1, 0)  # below the first epoch: where it starts
    assert plog.end_offset_for_epoch(9) == (-1, -1)
    assert plog.end_offset_for_epoch(-1) == (-1, -1)
    plog.close()


def test_segment_ms_rolls_a_non_empty_segment(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(segment_ms=1000), now_ms=0)
    plog.roll_if_due(5000)
    assert len(list_segments(tmp_path / "t-0")) == 1  # empty: nothing to roll
    _append(plog, _batch(2), now=10)
    plog.roll_if_due(900)
    assert len(list_segments(tmp_path / "t-0")) == 1
    plog.roll_if_due(1000)
    assert [s.base_offset for s in list_segments(tmp_path / "t-0")] == [0, 2]
    plog.close()


def test_a_truncated_then_refilled_log_reads_the_new_batches(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", TOPIC_ID, LogConfig(segment_bytes=400, index_interval_bytes=50),
                        now_ms=0)
    for i in range(12):
        _append(plog, _batch(1, i, size=100))
    old_bases = [s.base_offset for s in list_segments(tmp_path / "t-0")]
    assert 4 in old_bases
    assert _offsets(plog.read(5, 1 << 30, 12))[0] == 5  # caches the closed segments' indexes
    plog.truncate_to(3)
    _append(plog, _batch(1, 100, size=130))  # offset 3 fills segment 2
    for i in range(8):
        _append(plog, _batch(1, 101 + i, size=10))  # segment 4 again, with other positions
    assert 4 in [s.base_offset for s in list_segments(tmp_path / "t-0")][:-1]
    data = plog.read(6, 1 << 30, plog.log_end_offset)
    assert [(r.offset, r.key) for r in iter_records(data)][:2] == [(6, b"k103"), (7, b"k104")]
    plog.close()
