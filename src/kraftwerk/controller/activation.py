"""Controller activation (Kafka's ``ActivationRecordsGenerator``): the records a newly active
controller appends first, bootstrap records on an empty log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kraftwerk.controller import features as fc
from kraftwerk.controller.common import rec
from kraftwerk.controller.errors import ApiError
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
