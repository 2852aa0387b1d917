"""The host rules the node host applies for both drivers (``node/hosting.py``)."""

from __future__ import annotations

import logging

import pytest

from kraftwerk.controller.activation import default_bootstrap_records
from kraftwerk.controller.effects import WriteSnapshot
from kraftwerk.controller.features import feature_level_record, noop_record
from kraftwerk.node.hosting import LeaderWatch, activate, snapshot_at_batch_end, timer_records
from kraftwerk.versions.metadata_version import MetadataVersion
from tests.controller.harness import Log, controller


class _Follower:
    def __init__(self) -> None:
        self.controllers: list[int | None] = []

    def set_controller(self, controller_id: int | None) -> None:
        self.controllers.append(controller_id)


def _observe(watch: LeaderWatch, ctl: object, follower: _Follower | None, **state: object) -> int | None:
    values: dict[str, object] = {"high_watermark": None, "epoch_start_offset": 0, "now_ms": 0}
    values.update(state)
    return watch.observe(ctl, follower, **values)  # type: ignore[arg-type]


def test_follower_learns_the_leader_once_per_epoch() -> None:
    watch, follower = LeaderWatch(), _Follower()
    assert _observe(watch, None, follower, leader_id=None, epoch=1, is_leader=False) is None
    assert _observe(watch, None, follower, leader_id=2, epoch=1, is_leader=False) is None
    assert _observe(watch, None, follower, leader_id=2, epoch=1, is_leader=False, high_watermark=5) is None
    assert _observe(watch, None, follower, leader_id=3, epoch=2, is_leader=False) is None
    assert follower.controllers == [None, 2, 3]


def test_leader_activates_once_its_leader_change_commits() -> None:
    ctl, watch = controller(), LeaderWatch()
    # elected: the LeaderChange record at offset 0 is not committed yet
    assert _observe(watch, ctl, None, leader_id=1, epoch=1, is_leader=True, epoch_start_offset=0) is None
    assert _observe(watch, ctl, None, leader_id=1, epoch=1, is_leader=True, high_watermark=0) is None
    assert _observe(watch, ctl, None, leader_id=1, epoch=1, is_leader=True, high_watermark=1) == 1
    # once per epoch
    assert _observe(watch, ctl, None, leader_id=1, epoch=1, is_leader=True, high_watermark=2) is None
    # a new epoch in which this node leads activates again after its own LeaderChange commits
    assert _observe(watch, ctl, None, leader_id=1, epoch=2, is_leader=True, high_watermark=2,
                    epoch_start_offset=2) is None
    assert _observe(watch, ctl, None, leader_id=1, epoch=2, is_leader=True, high_watermark=3,
                    epoch_start_offset=2) == 2


def test_activation_bootstraps_an_empty_log_then_idle_noops() -> None:
    log, ctl = Log(), controller()
    log.join(ctl)
    activation = activate(ctl, ctl.node_id, log.epoch, 0)
    assert activation is not None and activation.records
    log.append(activation.records)
    assert ctl.is_active and ctl.image.metadata_version is not None
    # the core's own tick records come first (the active controller registers itself) ...
    tick = timer_records(ctl, 600, 0, 500)
    assert [r.spec.name for r in tick] == ["RegisterControllerRecord"]
    log.append(tick)
    # ... then a NoOpRecord only once the log was idle for the interval
    assert timer_records(ctl, 100, 0, 500) == []
    noop = timer_records(ctl, 600, 0, 500)
    assert [r.spec.name for r in noop] == ["NoOpRecord"]
    assert timer_records(ctl, 600, 0, 0) == []  # metadata.max.idle.interval.ms=0 disables it


def _after_change_snapshot(tail: list[object]) -> tuple[Log, WriteSnapshot]:
    """A 4.2-IV1 cluster, then one batch upgrading to 4.3-IV0 followed by ``tail``."""
    log = Log()
    ctl = controller(bootstrap_records=default_bootstrap_records(MetadataVersion.from_feature_level(29)))
    log.join(ctl)
    activation = activate(ctl, ctl.node_id, log.epoch, 0)
    assert activation is not None
    log.append(activation.records)
    effects = log.append([feature_level_record("metadata.version", 30), *tail])  # type: ignore[list-item]
    after = [e for e in effects if isinstance(e, WriteSnapshot) and "changed" in e.reason]
    assert len(after) == 1
    return log, after[0]


def test_the_snapshot_after_a_version_change_moves_to_the_batch_end() -> None:
    """The FeatureLevelRecord sits inside its batch; the snapshot moves to the batch's end, where a
    node loading it takes the same features epoch as every node that replayed the batch."""
    log, effect = _after_change_snapshot([feature_level_record("group.version", 1)])
    ctl = log.controllers[0]
    assert effect.end_offset == log.end - 1  # right after the metadata.version record: mid-batch
    moved = snapshot_at_batch_end(effect, ctl.image, ctl.last_committed_offset)
    assert moved.end_offset == log.end and moved.image is ctl.image
    loaded = controller(node_id=2)
    image = loaded.load_snapshot(list(moved.render().encoded()), end_offset=moved.end_offset)
    assert image.features_epoch == ctl.image.features_epoch == log.end - 1
    assert dict(image.features.finalized) == dict(ctl.image.features.finalized)


def test_the_snapshot_stays_when_moving_it_would_change_the_features_epoch() -> None:
    log, effect = _after_change_snapshot([noop_record()])
    ctl = log.controllers[0]
    assert ctl.image.features_epoch == log.end - 2  # the NoOpRecord does not move it
    assert snapshot_at_batch_end(effect, ctl.image, ctl.last_committed_offset) is effect


def test_a_restarted_former_leader_is_not_active_until_it_wins_again(
        caplog: pytest.LogCaptureFixture) -> None:
    # Raft restarts Resigned from a quorum-state that names this node as leader of epoch 3: the
    # controller must neither become active nor claim (in the one log an operator reads after a
    # failover) that it is the active controller of an empty log.
    log = Log()
    ctl = controller()
    log.join(ctl)
    with caplog.at_level(logging.INFO):
        assert _observe(LeaderWatch(), ctl, None, leader_id=ctl.node_id, epoch=3, is_leader=False) is None
    assert not ctl.is_active and ctl.leader_id is None
    assert "Becoming the active controller" not in caplog.text
    assert "appears to be empty" not in caplog.text
