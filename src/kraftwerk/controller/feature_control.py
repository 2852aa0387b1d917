"""FeatureControlManager: UpdateFeatures (KIP-778 upgrades and downgrades, KIP-584 features) as
the active controller judges it, against the committed image plus what it appended but has not
yet seen commit, and KIP-920's automatic metadata.version upgrade through the same checks. The
rules themselves are the pure checks in :mod:`kraftwerk.controller.features`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from kraftwerk.controller import features as fc
from kraftwerk.controller.auto_upgrade import (
    AUTO_UPGRADE,
    AutoUpgrade,
    AutoUpgradeTimer,
    auto_upgrade_settings,
)
from kraftwerk.controller.common import ranges_of, rec
from kraftwerk.controller.effects import AppendThenRespond, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.controller.responses import update_features_error_body, update_features_response
from kraftwerk.image.audit import MetadataVersionAudit, audit_metadata_version_change
from kraftwerk.image.model import ConfigResource, ConfigResourceType, ZkMigrationState
from kraftwerk.image.writer import broker_registration_value, image_losses
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.features import UpdateFeaturesRequest
from kraftwerk.protocol.routing import Request
from kraftwerk.versions.features import KRAFT_VERSION, VersionRange
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

log = logging.getLogger(__name__)


class FeatureControlManager:
    """Finalized feature levels: UpdateFeatures, and the levels appended but not yet committed."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller
        self.inflight_levels: dict[str, int] = {}
        """Feature → level this active controller appended and has not replayed yet."""
        self._auto_upgrade_timer = AutoUpgradeTimer()

    def on_leader_change(self) -> None:
        """Forget in-flight levels; KIP-920's first check is one interval after becoming active."""
        self.inflight_levels.clear()
        self._auto_upgrade_timer.reset()

    def on_committed(self, record: MetadataRecord) -> None:
        """A replayed record: a level that committed is no longer in flight."""
        if record.spec.name == "FeatureLevelRecord" and self.inflight_levels.get(record.value["name"]) == \
                record.value["featureLevel"]:
            del self.inflight_levels[record.value["name"]]

    def latest_metadata_version(self) -> MetadataVersion | None:
        """The metadata.version this controller appended and has not replayed yet, if any."""
        level = self.inflight_levels.get(FEATURE_NAME)
        return None if level is None else MetadataVersion.from_feature_level(level)

    def registration_error(
        self, ranges: Mapping[str, VersionRange], mv: MetadataVersion
    ) -> ApiError | None:
        """Why a node supporting ``ranges`` cannot register: against the finalized levels, then
        against the levels about to commit."""
        finalized = dict(self._c.image.features.finalized)
        if self._c.kraft_version > 0:
            finalized[KRAFT_VERSION] = self._c.kraft_version
        err = fc.registration_feature_error(ranges, mv, finalized)
        if err is None and self.inflight_levels:  # and against the levels about to commit
            pending = {**finalized, **self.inflight_levels}
            pending_mv = MetadataVersion.from_feature_level(pending.pop(FEATURE_NAME, mv.feature_level))
            err = fc.registration_feature_error(ranges, pending_mv, pending)
        return err

    def feature_state(self) -> fc.FeatureControlState:
        """The image as the feature checks see it, with this controller's appended but not yet
        committed registrations and levels on top."""
        c = self._c
        image = c.image
        mv = image.metadata_version
        if mv is None:
            raise ApiError(Errors.NOT_CONTROLLER, "The controller has not finished activation")
        ranges = dict(c.software.supported_features())
        supported = {b.id: ranges_of(b.supported_features) for b in image.cluster.brokers.values()}
        supported.update(c.cluster.inflight_brokers)
        brokers = tuple(fc.NodeSupport(bid, supported[bid]) for bid in sorted(supported))
        inflight_mv = self.inflight_levels.get(FEATURE_NAME)
        if inflight_mv is not None:
            mv = MetadataVersion.from_feature_level(inflight_mv)
        finalized = dict(image.features.finalized)
        finalized.update(
            {n: v for n, v in self.inflight_levels.items() if n not in (FEATURE_NAME, KRAFT_VERSION)}
        )
        controllers = tuple(
            fc.NodeSupport(reg.id, ranges_of(reg.supported_features))
            for reg in image.cluster.controllers.values()
        )
        return fc.FeatureControlState(
            c.node_id,
            mv,
            {n: v for n, v in finalized.items() if v > 0},
            ranges,
            brokers,
            controllers,
            c.voters,
            c.kraft_version,
            image.features.zk_migration_state in (ZkMigrationState.PRE_MIGRATION, ZkMigrationState.MIGRATION),
        )

    def update_features(self, request: Request) -> Respond | AppendThenRespond:
        version, body = request.version, cast(UpdateFeaturesRequest, request.body)
        updates = parse_feature_updates(version, body)
        state = self.feature_state()
        image = self._c.image
        refusal = self.auto_upgrade_settings().manual_change_error(
            version, state.metadata_version, {u.feature: u.level for u in updates}
        )
        if refusal is not None:
            refused = update_features_error_body(version, [u.feature for u in updates], *refusal)
            return Respond(as_body(refused))

        def losses_at(mv: MetadataVersion) -> tuple[str, ...]:
            return image_losses(image, mv)

        outcome = fc.update_features(
            state,
            updates,
            validate_only=bool(body.get("validateOnly", False)),
            losses_at=losses_at,
            allow_unsafe_downgrade=self._c.allow_unsafe_downgrade,
        )
        mv_level = next((u.level for u in updates if u.feature == FEATURE_NAME), None)
        audit = None
        if outcome.ok and mv_level is not None:
            audit = self.config_audit(mv_level, skip=bool(body.get("skipConfigAudit", False)))
        if audit is not None and audit.refused:
            log.warning("[QuorumController id=%d] %s", self._c.node_id, audit.message())
            response = update_features_error_body(
                version, outcome.feature_names, Errors.INVALID_UPDATE_VERSION,
                f"{fc.ATOMIC_FAILURE_PREFIX}Invalid update version {mv_level} for feature {FEATURE_NAME}. "
                + audit.message())
        else:
            response = update_features_response(version, outcome)
            for text in outcome.announcements:  # only now that the audit passed too
                log.warning("[QuorumController id=%d] %s", self._c.node_id, text)
        if audit is not None and version >= 3:
            response["configAudit"] = json.dumps(audit.to_json())
        if audit is not None and audit.refused:
            return Respond(as_body(response))
        if not outcome.ok or not outcome.records:
            return Respond(as_body(response))
        records = self._elr_config_records(outcome.records) + list(outcome.records)
        records += self._static_config_records(outcome.records)
        for r in outcome.records:
            if r.spec.name == "FeatureLevelRecord":
                self.inflight_levels[r.value["name"]] = r.value["featureLevel"]
        return AppendThenRespond(
            tuple(records),
            as_body(response),
            atomic=True,
            not_controller_body=as_body(update_features_error_body(
                version, outcome.feature_names, Errors.NOT_CONTROLLER, None
            )),
            kraft_version_upgrade=outcome.kraft_version_upgrade,
        )

    # ------------------------------------------------------------------ KIP-920

    def auto_upgrade_settings(self) -> AutoUpgrade:
        """KIP-920's settings in force on this controller."""
        c = self._c
        return auto_upgrade_settings(c.image, c.node_id, c.static_configs, c.static_metadata_version)

    def next_check_ms(self) -> int | None:
        return self._auto_upgrade_timer.next_check_ms

    def auto_upgrade(self, now_ms: int) -> list[MetadataRecord]:
        """KIP-920: when the check is due, raise metadata.version to this controller's static value
        through the UpdateFeatures checks; never lower it; a refusal is logged and retried at the
        next interval."""
        settings = self.auto_upgrade_settings()
        if not self._auto_upgrade_timer.due(settings, now_ms) or settings.target is None:
            return []
        state = self.feature_state()
        current, target = state.metadata_version, settings.target
        if target.feature_level <= current.feature_level:
            return []
        update = fc.FeatureUpdate(FEATURE_NAME, target.feature_level, fc.UpgradeType.UPGRADE)
        image = self._c.image
        outcome = fc.update_features(state, [update], losses_at=lambda mv: image_losses(image, mv))
        node = self._c.node_id
        audit = self.config_audit(target.feature_level, skip=False)
        if outcome.ok and audit is not None and audit.refused:
            outcome = fc.UpdateFeaturesOutcome(Errors.INVALID_UPDATE_VERSION, audit.message())
        if not outcome.ok:
            log.warning("[QuorumController id=%d] Automatic upgrade of metadata.version from %s to %s "
                        "refused (retrying in %d ms): %s", node, current, target, settings.interval_ms,
                        outcome.message)
            return []
        for text in outcome.announcements:
            log.warning("[QuorumController id=%d] %s", node, text)
        log.info("[QuorumController id=%d] Automatically upgrading metadata.version from %s to %s "
                 "(%s=true).", node, current, target, AUTO_UPGRADE)
        self.inflight_levels[FEATURE_NAME] = target.feature_level
        records = self._elr_config_records(outcome.records) + list(outcome.records)
        return records + self._static_config_records(outcome.records)

    # ------------------------------------------------------------------ KIP-1294

    def config_audit(self, level: int, *, skip: bool) -> MetadataVersionAudit | None:
        """The pre-flight config audit of moving metadata.version to ``level`` (None: no change)."""
        current = self.feature_state().metadata_version.feature_level
        if level == current:
            return None
        audit = audit_metadata_version_change(
            self._c.configs.pending_image(), current, level, reported=self._c.cluster.reported_static_configs,
            skip=skip, pending=self._c.cluster.inflight_brokers)
        if skip and (audit.findings or audit.unknown_brokers):
            log.warning("[QuorumController id=%d] Skipping the config audit (--skip-config-audit): %s",
                        self._c.node_id, audit.message())
        return audit

    def _static_config_records(self, records: Sequence[MetadataRecord]) -> list[MetadataRecord]:
        """At the upgrade that lets RegisterBrokerRecord carry static configs (4.4-IV1), re-state
        each registered broker whose reported static configs were so far kept in memory only."""
        level = next((r.value["featureLevel"] for r in records if r.spec.name == "FeatureLevelRecord"
                      and r.value["name"] == FEATURE_NAME), None)
        if level is None:
            return []
        mv = MetadataVersion.from_feature_level(level)
        if not mv.is_broker_static_configs_supported():
            return []
        reported = self._c.cluster.reported_static_configs
        out = []
        for broker in sorted(self._c.image.cluster.brokers.values(), key=lambda b: b.id):
            if not broker.static_configs and reported.get(broker.id):
                restated = replace(broker, static_configs=reported[broker.id])
                out.append(rec("RegisterBrokerRecord", mv.register_broker_record_version(),
                               broker_registration_value(restated, mv)))
        return out

    def _elr_config_records(self, records: Sequence[MetadataRecord]) -> list[MetadataRecord]:
        """Enabling ELR (Kafka's ``ConfigurationControlManager.updateFeatures``): create the
        cluster-level ``min.insync.replicas`` if missing and delete broker-level overrides."""
        enabling = any(
            r.spec.name == "FeatureLevelRecord"
            and r.value["name"] == "eligible.leader.replicas.version"
            and r.value["featureLevel"] > 0
            for r in records
        )
        if not enabling:
            return []
        out: list[MetadataRecord] = []
        key = "min.insync.replicas"
        cluster = ConfigResource(ConfigResourceType.BROKER, "")
        if key not in self._c.image.configs.get(cluster, {}):
            value = self._c.image.configs.get(cluster, {}).get(key, str(self._c.default_min_isr))
            out.append(
                rec("ConfigRecord", 0, {"resourceType": 4, "resourceName": "", "name": key, "value": value})
            )
        for resource in sorted(self._c.image.configs):
            if (
                resource.type == ConfigResourceType.BROKER
                and resource.name
                and key in self._c.image.configs[resource]
            ):
                out.append(
                    rec(
                        "ConfigRecord",
                        0,
                        {"resourceType": 4, "resourceName": resource.name, "name": key, "value": None},
                    )
                )
        return out


def parse_feature_updates(version: int, body: UpdateFeaturesRequest) -> list[fc.FeatureUpdate]:
    """The request's updates in Kafka's iteration order (a Java HashMap keyed by feature name).

    v0's ``AllowDowngrade`` maps to SAFE_DOWNGRADE (Kafka's ``UpdateFeaturesRequest.upgradeType``).
    """
    by_name: dict[str, fc.FeatureUpdate] = {}
    for u in body.get("featureUpdates") or ():
        if version == 0:
            utype = fc.UpgradeType.SAFE_DOWNGRADE if u.get("allowDowngrade") else fc.UpgradeType.UPGRADE
        else:
            utype = fc.UpgradeType.from_code(u.get("upgradeType", 1))
        by_name[u["feature"]] = fc.FeatureUpdate(u["feature"], u["maxVersionLevel"], utype)
    return [by_name[n] for n in fc.java_hash_map_order(list(by_name))]
