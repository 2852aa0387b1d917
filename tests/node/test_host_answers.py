"""When the node host answers a controller write: after this controller replayed it, not merely
after raft committed it (read-your-writes for `features upgrade` then `features describe`)."""

from __future__ import annotations

from typing import Any

from kraftwerk.controller.features import feature_level_record
from kraftwerk.controller.quorum import QuorumController
from kraftwerk.node.host import NodeHost
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.frame import encode_metadata_record
from kraftwerk.raft import CommittedBatch
from tests.controller.harness import Log, activate, controller


class _Log:
    def __init__(self, log: Log) -> None:
        self._log = log

    @property
    def end_offset(self) -> int:
        return self._log.end


class _Raft:
    """What the host reads of raft: a leader whose log is the harness log."""

    def __init__(self, log: Log) -> None:
        self.log = _Log(log)
        self.is_leader = True
        self.epoch = log.epoch
        self.leader_id = 1

    def kraft_version_at(self, offset: int) -> int:
        return 1


class _IO:
    """Appends land in the harness log's offsets; commits are reported when the test says so."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.appended: list[tuple[int, list[bytes]]] = []
        self.commit_waits: list[Any] = []

    def now_ms(self) -> int:
        return 0

    def append(self, values: list[bytes]) -> int:
        base = self.log.end + sum(len(v) for _, v in self.appended)
        self.appended.append((base, values))
        return base + len(values) - 1

    def wait_committed(self, offset: int, epoch: int, done: Any) -> None:
        self.commit_waits.append(done)

    def mark_ready(self) -> None:
        pass


def _active_host() -> tuple[Log, QuorumController, _IO, NodeHost]:
    """An active controller's host; its log's replay is the test's to hand over."""
    log, ctl = Log(), controller()
    log.join(ctl)
    activate(log, ctl)
    io = _IO(log)
    host = NodeHost(1, _Raft(log), io, controller=ctl,  # type: ignore[arg-type]
                    idle_interval_ms=500, registration_retry_ms=1000)
    return log, ctl, io, host


def _upgrade(feature: str, level: int) -> dict[str, Any]:
    return {"timeoutMs": 1000, "validateOnly": False,
            "featureUpdates": [{"feature": feature, "maxVersionLevel": level, "upgradeType": 1}]}


def test_an_update_is_answered_after_the_leader_replayed_it_not_at_the_commit() -> None:
    log, ctl, io, host = _active_host()
    before = ctl.finalized_features()[0].get("transaction.version", 0)
    answers: list[dict[str, Any]] = []
    update = _upgrade("transaction.version", before + 1)
    host.serve_controller(ApiKey.UPDATE_FEATURES, 1, update, answers.append)
    assert len(io.appended) == 1 and len(io.commit_waits) == 1
    # Raft reports the commit (two followers flushed it) before handing the leader its own batch
    # (its flush is still pending): no answer yet, since this controller still shows the old level.
    io.commit_waits[0](True)
    assert answers == []
    base, values = io.appended[0]
    host.on_committed([CommittedBatch(base, base + len(values) - 1, log.epoch, 0, False, tuple(values))])
    assert [a["errorCode"] for a in answers] == [0]
    assert ctl.finalized_features()[0]["transaction.version"] == before + 1


def test_an_update_already_replayed_is_answered_at_the_commit() -> None:
    log, _ctl, io, host = _active_host()
    answers: list[dict[str, Any]] = []
    host.serve_controller(ApiKey.UPDATE_FEATURES, 1, _upgrade("transaction.version", 1), answers.append)
    base, values = io.appended[0]
    host.on_committed([CommittedBatch(base, base + len(values) - 1, log.epoch, 0, False, tuple(values))])
    assert answers == []  # replayed, but raft has not said the offset is committed in this epoch
    io.commit_waits[0](True)
    assert [a["errorCode"] for a in answers] == [0]


def test_a_lost_commit_answers_not_controller_and_releases_nothing_later() -> None:
    log, _ctl, io, host = _active_host()
    answers: list[dict[str, Any]] = []
    host.serve_controller(ApiKey.UPDATE_FEATURES, 1, _upgrade("transaction.version", 1), answers.append)
    io.commit_waits[0](False)
    # a later batch from the new leader replays: the lost request stays answered once, NOT_CONTROLLER
    record = feature_level_record("group.version", 1)
    log_end = io.appended[0][0]
    frame = encode_metadata_record(record.spec, record.version, record.value)
    host.on_committed([CommittedBatch(log_end, log_end, log.epoch + 1, 0, False, (frame,))])
    assert [a["errorCode"] for a in answers] == [41]
