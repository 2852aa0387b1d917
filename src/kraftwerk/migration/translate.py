"""The KIP-866 translation: a ZooKeeper-mode cluster's state as KRaft metadata records, in the order
and at the record versions Kafka 3.9's migration writes them.

Order (``ZkMigrationClient.readAllMetadata``): per topic its TopicRecord, its ConfigRecords, its
PartitionRecords; broker configs; per user its SCRAM credentials then its quotas, then client,
user/client and IP quotas; the producer id block; ACLs; delegation tokens. Kafka wraps them in a
metadata transaction (from 3.6-IV1) ending with ``ZkMigrationStateRecord(MIGRATION)``. Kafka takes
topics and config entities in ZooKeeper's (unordered) listing order; here they are sorted by name so
that two runs over the same tree give the same bytes.

What the target metadata.version cannot hold (SCRAM credentials below 3.5-IV2, delegation tokens
below 3.6-IV2) is reported as a loss, never dropped silently; invalid znodes are refused, or skipped
and listed with ``skip_invalid``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kraftwerk.image.model import ZkMigrationState
from kraftwerk.image.snapshot import SnapshotId, snapshot_batches
from kraftwerk.image.writer import WrittenRecord
from kraftwerk.migration.errors import (
    InvalidZnodesError,
    MissingTopicIdError,
    UnsupportedMetadataVersionError,
    ZnodeError,
)
from kraftwerk.migration.state import AclResource, ZkClusterState
from kraftwerk.migration.znodes import DEFAULT_ENTITY, SCRAM_MECHANISMS, desanitize, parse_quota, parse_scram
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion

#: ConfigRecord resource types (Kafka's ConfigResource.Type ids).
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
#: The namespace of the ids given to migrated ACLs (Kafka draws random ones; see _acl_id).
_ACL_ID_NAMESPACE = uuid.UUID("6b726166-7477-6572-6b2d-61636c2d6964")


@dataclass(frozen=True, slots=True)
class Translation:
    """The migration's records and what it could not carry over."""

    metadata_version: MetadataVersion
    records: tuple[WrittenRecord, ...]
    """The migrated data, in Kafka's order, without the transaction and state records."""
    losses: tuple[str, ...] = ()
    """Data the target metadata.version cannot represent (left out of ``records``)."""
    skipped: tuple[ZnodeError, ...] = ()
    """Invalid znodes left out (only with ``skip_invalid``)."""
    notes: tuple[str, ...] = ()
    """What Kafka's migration leaves out too (pending deletions, reassignment requests...)."""

    @property
    def transactional(self) -> bool:
        return self.metadata_version.is_metadata_transaction_supported()

    def log_records(self) -> list[WrittenRecord]:
        """What Kafka appends to the metadata log: the records, then ZkMigrationStateRecord(MIGRATION),
        inside Begin/EndTransactionRecord where the metadata.version has transactions."""
        out = [*self.records, _migration_state()]
        if self.transactional:
            out = [_record("BeginTransactionRecord", 0, name="ZK Migration"), *out,
                   _record("EndTransactionRecord", 0)]
        return out

    def snapshot_records(self) -> list[WrittenRecord]:
        """A snapshot's worth: metadata.version first (as every KRaft snapshot starts), the records, the
        migration state. Transaction markers belong to a log, never to a snapshot."""
        level = self.metadata_version.feature_level
        return [_record("FeatureLevelRecord", 0, name=FEATURE_NAME, featureLevel=level), *self.records,
                _migration_state()]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.spec.name] = out.get(r.spec.name, 0) + 1
        return out


def _record(record_name: str, version: int, /, **value: Any) -> WrittenRecord:
    return WrittenRecord(lookup_record(record_name), version, value)


def _migration_state() -> WrittenRecord:
    return _record("ZkMigrationStateRecord", 0, zkMigrationState=int(ZkMigrationState.MIGRATION))


def _acl_id(resource: AclResource, index: int) -> uuid.UUID:
    """Kafka gives each migrated ACL a random Uuid; a name-based one keeps exports reproducible."""
    return uuid.uuid5(_ACL_ID_NAMESPACE, f"{resource.path}#{index}")


def _entity_name(sanitized: str) -> str | None:
    return None if sanitized == DEFAULT_ENTITY else desanitize(sanitized)


class _Translator:
    def __init__(self, state: ZkClusterState, mv: MetadataVersion) -> None:
        self.state = state
        self.mv = mv
        self.records: list[WrittenRecord] = []
        self.errors: list[ZnodeError] = list(state.invalid)
        self.losses: list[str] = []
        self.notes: list[str] = []

    def add(self, record_name: str, /, **value: Any) -> None:
        self.records.append(_record(record_name, 0, **value))

    def run(self) -> None:
        self._topics()
        self._broker_configs()
        self._quotas_and_scram()
        self._producer_ids()
        self._acls()
        self._tokens()
        self._notes()

    def _topics(self) -> None:
        deleting = set(self.state.pending_deletions)
        for name in sorted(self.state.topics):
            if name in deleting:
                continue
            topic = self.state.topics[name]
            tid = topic.znode.topic_id
            if tid is None:
                self.errors.append(MissingTopicIdError(f"/brokers/topics/{name}", f"topic {name} has no "
                                                       f"topic_id (version {topic.znode.version})"))
                continue
            batch = [_record("TopicRecord", 0, name=name, topicId=tid)]
            for key, value in self.state.entity_configs("topics").get(name, {}).items():
                batch.append(_record("ConfigRecord", 0, resourceType=TOPIC_RESOURCE, resourceName=name,
                                     name=key, value=value))
            for p in sorted(topic.znode.partitions):
                s, z = topic.states[p], topic.znode
                batch.append(_record(
                    "PartitionRecord", 0, partitionId=p, topicId=tid, replicas=list(z.partitions[p]),
                    isr=list(s.isr), removingReplicas=list(z.removing_replicas.get(p, ())),
                    addingReplicas=list(z.adding_replicas.get(p, ())), leader=s.leader,
                    leaderRecoveryState=s.leader_recovery_state, leaderEpoch=s.leader_epoch,
                    partitionEpoch=s.partition_epoch))
            self.records.extend(batch)

    def _broker_configs(self) -> None:
        for entity, config in sorted(self.state.entity_configs("brokers").items()):
            resource_name = "" if entity == DEFAULT_ENTITY else entity
            for key, value in config.items():
                self.add("ConfigRecord", resourceType=BROKER_RESOURCE, resourceName=resource_name, name=key,
                         value=value)

    def _quota_batch(self, path: str, entity: list[tuple[str, str | None]], config: dict[str, str]
                     ) -> list[WrittenRecord]:
        data = [{"entityType": t, "entityName": n} for t, n in entity]
        return [_record("ClientQuotaRecord", 0, entity=data, key=key, value=parse_quota(path, key, value),
                        remove=False)
                for key, value in config.items() if key not in SCRAM_MECHANISMS]

    def _quotas_and_scram(self) -> None:
        scram_users: list[str] = []
        for user, config in sorted(self.state.entity_configs("users").items()):
            path = f"/config/users/{user}"
            try:
                batch = []
                for key in SCRAM_MECHANISMS:
                    if key in config:
                        cred = parse_scram(path, key, config[key])
                        if self.mv.is_scram_supported():
                            batch.append(_record(
                                "UserScramCredentialRecord", 0, name=desanitize(user),
                                mechanism=cred.mechanism, salt=cred.salt, storedKey=cred.stored_key,
                                serverKey=cred.server_key, iterations=cred.iterations))
                        else:
                            scram_users.append(f"{desanitize(user)} ({key})")
                batch += self._quota_batch(path, [("user", _entity_name(user))], config)
            except ZnodeError as exc:
                self.errors.append(exc)
                continue
            self.records.extend(batch)
        if scram_users:
            self.losses.append(f"the SCRAM credentials of {', '.join(scram_users)}: "
                               "UserScramCredentialRecord needs metadata.version "
                               f"{MetadataVersion.IBP_3_5_IV2} or later")
        groups: list[tuple[str, list[tuple[str, str | None]], dict[str, str]]] = []
        for client, config in sorted(self.state.entity_configs("clients").items()):
            groups.append((f"/config/clients/{client}", [("client-id", _entity_name(client))], config))
        for (user, client), config in sorted(self.state.user_client_configs.items()):
            groups.append((f"/config/users/{user}/clients/{client}",
                           [("user", _entity_name(user)), ("client-id", _entity_name(client))], config))
        for ip, config in sorted(self.state.entity_configs("ips").items()):
            groups.append((f"/config/ips/{ip}", [("ip", None if ip == DEFAULT_ENTITY else ip)], config))
        for path, entity, config in groups:
            try:
                self.records.extend(self._quota_batch(path, entity, config))
            except ZnodeError as exc:
                self.errors.append(exc)

    def _producer_ids(self) -> None:
        block = self.state.producer_id_block
        if block is not None:  # KAFKA-15552 (3.5.2+): the next id is after the block's end
            self.add("ProducerIdsRecord", brokerId=block.broker, brokerEpoch=-1,
                     nextProducerId=block.block_end + 1)

    def _acls(self) -> None:
        # AclAuthorizer's ResourceOrdering: resource type, then pattern type, then name descending.
        by_name = sorted(self.state.acls, key=lambda r: r.name, reverse=True)
        for resource in sorted(by_name, key=lambda r: (r.resource_type, r.pattern_type)):
            for i, ace in enumerate(resource.entries):
                self.add("AccessControlEntryRecord", id=_acl_id(resource, i),
                         resourceType=resource.resource_type, resourceName=resource.name,
                         patternType=resource.pattern_type, principal=ace.principal, host=ace.host,
                         operation=ace.operation, permissionType=ace.permission_type)

    def _tokens(self) -> None:
        tokens = self.state.delegation_tokens
        if not tokens:
            return
        if not self.mv.is_delegation_token_supported():
            self.losses.append(f"the delegation tokens {', '.join(t.token_id for t in tokens)}: "
                               "DelegationTokenRecord needs metadata.version "
                               f"{MetadataVersion.IBP_3_6_IV2} or later")
            return
        for t in tokens:
            self.add("DelegationTokenRecord", owner=t.owner, requester=t.requester, renewers=list(t.renewers),
                     issueTimestamp=t.issue_timestamp, maxTimestamp=t.max_timestamp,
                     expirationTimestamp=t.expiry_timestamp, tokenId=t.token_id)

    def _notes(self) -> None:
        s = self.state
        if s.pending_deletions:
            self.notes.append("topics pending deletion are not migrated: " + ", ".join(s.pending_deletions))
        if s.reassignments:
            self.notes.append(f"/admin/reassign_partitions ({len(s.reassignments)} partitions) is not "
                              "migrated")
        if not self.mv.is_metadata_transaction_supported():
            self.notes.append(f"metadata.version {self.mv} has no metadata transactions: Kafka writes the "
                              "migration without one (\"not safe\") and 3.9 starts a new migration only from "
                              f"{MetadataVersion.IBP_3_6_IV1}")
        encrypted = s.encrypted_broker_configs()
        if encrypted:
            self.notes.append("encrypted password configs are copied as stored (Kafka decodes them with the "
                              "controllers' password.encoder.secret): " + ", ".join(encrypted))


def translate(state: ZkClusterState, metadata_version: MetadataVersion, *, skip_invalid: bool = False
              ) -> Translation:
    """The migration records of ``state`` at ``metadata_version``.

    Raises UnsupportedMetadataVersionError below 3.4-IV0, and InvalidZnodesError (listing every bad
    znode) unless ``skip_invalid``.
    """
    if not metadata_version.is_migration_supported():
        raise UnsupportedMetadataVersionError(
            f"metadata.version {metadata_version} does not support ZK migrations (the minimum is "
            f"{MetadataVersion.IBP_3_4_IV0})")
    t = _Translator(state, metadata_version)
    t.run()
    if t.errors and not skip_invalid:
        raise InvalidZnodesError(t.errors)
    return Translation(metadata_version, tuple(t.records), tuple(t.losses), tuple(t.errors), tuple(t.notes))



#: The epoch of the exported snapshot: the first KRaft leader epoch.
SNAPSHOT_EPOCH = 1


def snapshot_file_bytes(translation: Translation, now_ms: int) -> tuple[bytes, SnapshotId]:
    """The KRaft snapshot file of ``translation`` (Kafka's layout: header, records, footer), with the id
    a log holding exactly these records would give it."""
    records = translation.snapshot_records()
    sid = SnapshotId(len(records), SNAPSHOT_EPOCH)
    return b"".join(snapshot_batches((r.encode() for r in records), sid, now_ms)), sid
