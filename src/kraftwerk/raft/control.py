"""KIP-853's control state of one replica: the kraft.version and voter set its log and snapshot hold.

Kafka's KRaftControlRecordStateMachine: (offset of the record, value) in log order, so that a
truncation forgets what it cut and a snapshot header can name the values in force at its end. The
entries read from a snapshot's header sit at its end offset - 1.
"""

from __future__ import annotations

from collections.abc import Callable

from kraftwerk.protocol import codec
from kraftwerk.protocol.control_records import (
    KRAFT_VERSION_RECORD,
    VOTERS_RECORD,
    ControlRecordType,
    parse_control_key,
)
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.raft.log import RaftLog
from kraftwerk.raft.types import Body, RaftConfig, RaftStateError
from kraftwerk.raft.voters import VoterSet
from kraftwerk.records.batch import iter_batches
from kraftwerk.records.errors import RecordsError


def kraft_controls(raw: bytes) -> list[tuple[int, ControlRecordType, bytes]]:
    """The KRaftVersion and KRaftVoters records of the control batches in ``raw``: (offset of the
    record, type, value). Data batches are skipped without decoding their records."""
    out: list[tuple[int, ControlRecordType, bytes]] = []
    for batch in iter_batches(raw):
        if not batch.is_control:
            continue
        for rec in batch.records():
            try:
                rtype, _code = parse_control_key(None if rec.key is None else bytes(rec.key))
            except ProtocolError:
                continue
            if rtype in (ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS) and rec.value:
                out.append((rec.offset, rtype, bytes(rec.value)))
    return out


class KRaftControl:
    """The kraft.version and VotersRecord history of the log; ``voters_changed`` runs whenever the
    latest voter set may have changed (the leader then tracks the new voters' progress)."""

    def __init__(self, config: RaftConfig, log: RaftLog, voters_changed: Callable[[], None]) -> None:
        self.log = log
        self.kraft_history: list[tuple[int, int]] = []
        self.voters_history: list[tuple[int, VoterSet]] = []
        self.static_voters = VoterSet.static(
            config.voters, config.voter_endpoints, config.kraft_version_range
        )
        self.voter_set = self.static_voters
        self._voters_changed = voters_changed

    @property
    def kraft_version(self) -> int:
        return self.kraft_history[-1][1] if self.kraft_history else 0

    def kraft_version_at(self, offset: int) -> int:
        level = 0
        for at, value in self.kraft_history:
            if at >= offset:
                break
            level = value
        return level

    def voters_record_at(self, offset: int) -> Body | None:
        """The VotersRecord value in force for the log below ``offset`` (a snapshot's header)."""
        found: VoterSet | None = None
        for at, value in self.voters_history:
            if at >= offset:
                break
            found = value
        return None if found is None else found.to_record()

    @property
    def last_voters_offset(self) -> int | None:
        """Where the latest VotersRecord is (negative: only in the bootstrap snapshot)."""
        return self.voters_history[-1][0] if self.voters_history else None

    def _refresh(self) -> None:
        self.voter_set = self.voters_history[-1][1] if self.voters_history else self.static_voters
        self._voters_changed()

    def _add(self, offset: int, rtype: ControlRecordType, value: bytes) -> None:
        if rtype is ControlRecordType.KRAFT_VERSION:
            self.kraft_history.append(
                (offset, int(codec.decode(KRAFT_VERSION_RECORD, 0, value)["kRaftVersion"]))
            )
        else:
            self.voters_history.append((offset, VoterSet.from_record(codec.decode(VOTERS_RECORD, 0, value))))

    def track(self, raw: bytes, node_id: int) -> None:
        """Record the KRaftVersion/KRaftVoters records of batches just added to the log."""
        try:
            controls = kraft_controls(raw)
        except RecordsError as exc:
            raise RaftStateError(f"node {node_id}: corrupt control batch: {exc}") from None
        for offset, rtype, value in controls:
            self._add(offset, rtype, value)
            if rtype is ControlRecordType.KRAFT_VOTERS:
                self._refresh()

    def rebuild(self, node_id: int) -> None:
        """Read the control state from the latest snapshot and the log after it (start-up, a
        downloaded snapshot): it persists across restarts through the log."""
        self.kraft_history = []
        self.voters_history = []
        log = self.log
        start = log.start_offset
        snap = log.latest_snapshot()
        if snap is not None and snap.end_offset >= start:
            raw = log.read_snapshot(snap, 0, log.snapshot_size(snap) or 0)
            try:
                controls = kraft_controls(raw)
            except RecordsError as exc:
                raise RaftStateError(f"snapshot {snap.file_name} is corrupt: {exc}") from None
            for _offset, rtype, value in controls:
                self._add(snap.end_offset - 1, rtype, value)
            start = snap.end_offset
        if start < log.end_offset:
            for _info, raw in log.batches(start, log.end_offset):
                self.track(raw, node_id)
        self._refresh()

    def forget_from(self, offset: int) -> None:
        """The log was truncated to ``offset``: its control records there are gone."""
        self.kraft_history = [e for e in self.kraft_history if e[0] < offset]
        self.voters_history = [e for e in self.voters_history if e[0] < offset]
        self._refresh()

    def upgraded(self, base: int, level: int, voters: VoterSet) -> None:
        """The leader appended the 0 -> 1 batch at ``base``: KRaftVersionRecord, then VotersRecord."""
        self.kraft_history.append((base, level))
        self.voters_history.append((base + 1, voters))
        self._refresh()
