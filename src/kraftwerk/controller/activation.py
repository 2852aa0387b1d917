"""Controller activation (Kafka's ``ActivationRecordsGenerator``): the records a newly active
controller appends first, bootstrap records on an empty log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kraftwerk.controller import features as fc
from kraftwerk.controller.common import rec
from kraftwerk.controller.errors import ApiError
from kraftwerk.image.errors import FatalFaultError
from kraftwerk.image.model import MetadataImage, ZkMigrationState
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.versions.metadata_version import FEATURE_NAME, LATEST_PRODUCTION, MetadataVersion

ACTIVATION_SOURCE_DEFAULT = "the default bootstrap"


@dataclass(frozen=True, slots=True)
class Activation:
    """What becoming active produced: the records to append first and Kafka's log line."""

    records: tuple[MetadataRecord, ...]
    message: str
    atomic: bool


def bootstrap_metadata_version(records: Sequence[MetadataRecord]) -> MetadataVersion:
    for r in records:
        if r.spec.name == "FeatureLevelRecord" and r.value["name"] == FEATURE_NAME:
            return MetadataVersion.from_feature_level(r.value["featureLevel"])
    raise ApiError(
        Errors.INVALID_REQUEST,
        "No FeatureLevelRecord for metadata.version was found in the bootstrap metadata",
    )


def default_bootstrap_records(mv: MetadataVersion = LATEST_PRODUCTION) -> tuple[MetadataRecord, ...]:
    """Kafka's ``BootstrapMetadata.fromVersion``: just the metadata.version record."""
    return (fc.feature_level_record(FEATURE_NAME, mv.feature_level),)


def activation_records_for_empty_log(
    bootstrap: Sequence[MetadataRecord],
    source: str,
    transaction_start_offset: int = -1,
    default_min_isr: int = 1,
    zk_migration_enabled: bool = False,
) -> Activation:
    """Kafka 4.x ``ActivationRecordsGenerator.recordsForEmptyLog`` (its log text, its records).

    From 3.6-IV1 the bootstrap records go in a metadata transaction (Begin/End); a partial
    bootstrap transaction left by a failed controller is aborted first. Enabling ELR at bootstrap
    adds the cluster-level ``min.insync.replicas`` config, as Kafka does.
    """
    mv = bootstrap_metadata_version(bootstrap)
    txn = mv.is_metadata_transaction_supported()
    text = "Performing controller activation. "
    records: list[MetadataRecord] = []
    if transaction_start_offset != -1:
        if not txn:
            raise ApiError(
                Errors.UNKNOWN_SERVER_ERROR,
                f"Detected partial bootstrap records transaction at {transaction_start_offset}, but "
                f"the metadata.version {mv} does not support transactions. Cannot continue.",
            )
        text += (
            f"Aborting partial bootstrap records transaction at offset {transaction_start_offset}. "
            f"Re-appending {len(bootstrap)} bootstrap record(s) in new metadata transaction at "
            f"metadata.version {mv} from bootstrap source '{source}'. "
        )
        records.append(rec("AbortTransactionRecord", 0, {"reason": "Controller failover"}))
        records.append(rec("BeginTransactionRecord", 0, {"name": "Bootstrap records"}))
    else:
        text += f"The metadata log appears to be empty. Appending {len(bootstrap)} bootstrap record(s) "
        if txn:
            records.append(rec("BeginTransactionRecord", 0, {"name": "Bootstrap records"}))
            text += "in metadata transaction "
        text += f"at metadata.version {mv} from bootstrap source '{source}'. "
    records.extend(bootstrap)
    if zk_migration_enabled:
        if not mv.is_migration_supported():
            raise FatalFaultError(f"The bootstrap metadata.version {mv} does not support ZK migrations. "
                                  "Cannot continue with ZK migrations enabled.")
        text += ("Putting the controller into pre-migration mode. No metadata updates will be allowed until "
                 "the ZK metadata has been migrated. ")
        records.append(zk_migration_state_record(ZkMigrationState.PRE_MIGRATION))
    elr = any(
        r.spec.name == "FeatureLevelRecord"
        and r.value["name"] == "eligible.leader.replicas.version"
        and r.value["featureLevel"] > 0
        for r in bootstrap
    )
    if elr:
        records.append(
            rec(
                "ConfigRecord",
                0,
                {
                    "resourceType": 4,
                    "resourceName": "",
                    "name": "min.insync.replicas",
                    "value": str(default_min_isr),
                },
            )
        )
    if txn:
        records.append(rec("EndTransactionRecord", 0, {}))
    return Activation(tuple(records), text.strip(), atomic=not txn)


def zk_migration_state_record(state: ZkMigrationState) -> MetadataRecord:
    return rec("ZkMigrationStateRecord", 0, {"zkMigrationState": int(state)})


def activation_records_for_non_empty_log(
    image: MetadataImage, transaction_start_offset: int, zk_migration_enabled: bool
) -> Activation:
    """Kafka's ``recordsForNonEmptyLog``: abort an open transaction; and KIP-866's rules (Kafka 3.9)
    on the migration state: a KRaft-born cluster cannot be migrated, a controller without the
    migration flag finalizes a migration (POST_MIGRATION, permanent)."""
    text = "Performing controller activation. "
    records: list[MetadataRecord] = []
    if transaction_start_offset != -1:
        text += f"Aborting in-progress metadata transaction at offset {transaction_start_offset}. "
        records.append(rec("AbortTransactionRecord", 0, {"reason": "Controller failover"}))
    mv = image.metadata_version
    state = image.features.zk_migration_state
    if zk_migration_enabled and (mv is None or not mv.is_migration_supported()):
        raise FatalFaultError(
            f"Should not have ZK migrations enabled on a cluster running metadata.version {mv}")
    if zk_migration_enabled or state is not ZkMigrationState.NONE:
        text += f"Loaded ZK migration state of {state.name}. "
    if state is ZkMigrationState.NONE and zk_migration_enabled:
        raise FatalFaultError(
            "Should not have ZK migrations enabled on a cluster that was created in KRaft mode.")
    if state is ZkMigrationState.MIGRATION and not zk_migration_enabled:
        text += ("Completing the ZK migration since this controller was configured with "
                 "'zookeeper.metadata.migration.enable' set to 'false'. ")
        records.append(zk_migration_state_record(ZkMigrationState.POST_MIGRATION))
    elif state is ZkMigrationState.MIGRATION:
        text += "Staying in ZK migration mode since 'zookeeper.metadata.migration.enable' is still 'true'. "
    elif state is ZkMigrationState.POST_MIGRATION and zk_migration_enabled:
        text += ("Ignoring 'zookeeper.metadata.migration.enable' value of 'true' since the ZK migration has "
                 "been completed. ")
    return Activation(tuple(records), text.strip(), atomic=True)
