"""A readable description of an image (what ``kraftwerk metadata show`` prints).

Config values that may be secrets are redacted with the config layer's rule (Kafka's
``maybeSensitive``: a PASSWORD-typed config, or one whose type is unknown). SCRAM credentials and
delegation tokens are counted, never shown.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kraftwerk.config.secrets import redact
from kraftwerk.image.model import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    BrokerRegistration,
    ConfigResourceType,
    ControllerRegistration,
    Endpoint,
    MetadataImage,
    PartitionRegistration,
    StandardAcl,
    SupportedRange,
    TopicImage,
)
from kraftwerk.protocol.json_form import uuid_to_str
from kraftwerk.versions.metadata_version import FEATURE_NAME, MetadataVersion


def resource_type_name(rtype: int) -> str:
    try:
        return ConfigResourceType(rtype).name
    except ValueError:
        return f"UNKNOWN({rtype})"


def _uid(u: uuid.UUID) -> str:
    return uuid_to_str(u)


def _mv_text(level: int) -> str:
    try:
        return str(MetadataVersion.from_feature_level(level, allow_legacy=True))
    except Exception:
        return f"UNKNOWN {level}"


def _endpoint(e: Endpoint) -> dict[str, Any]:
    return {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}


def _ranges(features: tuple[tuple[str, SupportedRange], ...]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, rng in features:
        entry: dict[str, Any] = {"min": rng.min, "max": rng.max}
        if name == FEATURE_NAME:
            entry["minVersion"] = _mv_text(rng.min)
            entry["maxVersion"] = _mv_text(rng.max)
        out[name] = entry
    return out


def describe_broker(b: BrokerRegistration) -> dict[str, Any]:
    return {
        "id": b.id,
        "epoch": b.epoch,
        "incarnationId": _uid(b.incarnation_id),
        "listeners": [_endpoint(e) for e in b.listeners],
        "rack": b.rack,
        "fenced": b.fenced,
        "inControlledShutdown": b.in_controlled_shutdown,
        "isMigratingZkBroker": b.is_migrating_zk_broker,
        "logDirs": [_uid(d) for d in b.directories],
        "cordonedLogDirs": [_uid(d) for d in b.cordoned_directories],
        "supportedFeatures": _ranges(b.supported_features),
        "staticConfigs": {n: redact(ConfigResourceType.BROKER, n, v) for n, v in b.static_configs},
    }


def describe_controller(c: ControllerRegistration) -> dict[str, Any]:
    return {
        "id": c.id,
        "incarnationId": _uid(c.incarnation_id),
        "zkMigrationReady": c.zk_migration_ready,
        "listeners": [_endpoint(e) for e in c.listeners],
        "supportedFeatures": _ranges(c.supported_features),
    }


def describe_partition(pid: int, p: PartitionRegistration) -> dict[str, Any]:
    return {
        "partition": pid,
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "partitionEpoch": p.partition_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "removingReplicas": list(p.removing_replicas),
        "addingReplicas": list(p.adding_replicas),
        "elr": list(p.elr),
        "lastKnownElr": list(p.last_known_elr),
        "leaderRecoveryState": p.leader_recovery_state.name,
        "directories": [_uid(d) for d in p.directories],
    }


def describe_topic(t: TopicImage) -> dict[str, Any]:
    return {
        "name": t.name,
        "topicId": _uid(t.id),
        "partitionCount": len(t.partitions),
        "partitions": [describe_partition(pid, t.partitions[pid]) for pid in sorted(t.partitions)],
    }


def describe_configs(configs: Mapping[Any, Mapping[str, str]]) -> list[dict[str, Any]]:
    out = []
    for resource in sorted(configs):
        out.append({
            "resourceType": resource_type_name(resource.type),
            "resourceName": resource.name,
            "configs": {n: redact(resource.type, n, v) for n, v in sorted(configs[resource].items())},
        })
    return out


def _code_name(enum_type: Any, code: int) -> str:
    try:
        return str(enum_type(code).name)
    except ValueError:
        return f"UNKNOWN({code})"


def describe_acl(acl: StandardAcl) -> dict[str, Any]:
    """One ACL with Kafka's enum names (as ``kafka-acls --list`` prints them)."""
    return {"resourceType": _code_name(AclResourceType, acl.resource_type), "resourceName": acl.resource_name,
            "patternType": _code_name(AclPatternType, acl.pattern_type), "principal": acl.principal,
            "host": acl.host, "operation": _code_name(AclOperation, acl.operation),
            "permissionType": _code_name(AclPermissionType, acl.permission_type)}


def describe_image(image: MetadataImage) -> dict[str, Any]:
    """The whole image as JSON-ready data (secrets redacted)."""
    mv = image.metadata_version
    features: list[dict[str, Any]] = [{
        "name": FEATURE_NAME,
        "level": mv.feature_level if mv else None,
        "version": str(mv) if mv else None,
    }]
    features.extend({"name": n, "level": lvl} for n, lvl in sorted(image.features.finalized.items()))
    return {
        "provenance": {
            "lastContainedOffset": image.provenance.last_offset,
            "lastContainedEpoch": image.provenance.last_epoch,
            "lastContainedLogTimeMs": image.provenance.last_log_time_ms,
        },
        "metadataVersion": str(mv) if mv else None,
        "features": features,
        "featuresEpoch": image.features_epoch,
        "zkMigrationState": image.features.zk_migration_state.name,
        "brokers": [describe_broker(b) for b in image.cluster.brokers.values()],
        "controllers": [describe_controller(c) for c in image.cluster.controllers.values()],
        "topics": [describe_topic(image.topics.by_name[n]) for n in sorted(image.topics.by_name)],
        "configs": describe_configs(image.configs),
        "clientQuotas": [
            {"entity": {t: n for t, n in entity}, "quotas": dict(image.client_quotas[entity])}
            for entity in sorted(image.client_quotas, key=lambda e: [(t, n or "") for t, n in e])
        ],
        "nextProducerId": image.producer_ids_next,
        "aclCount": len(image.acls),
        "acls": sorted((describe_acl(a) for a in image.acls.values()),
                       key=lambda a: tuple(str(v) for v in a.values())),
        "scramCredentialCount": len(image.scram),
        "delegationTokenCount": len(image.delegation_tokens),
    }


def _ints(values: list[int]) -> str:
    return ",".join(str(v) for v in values)


def render_text(desc: Mapping[str, Any]) -> list[str]:
    """Text lines for ``metadata show``; tab-separated fields like Kafka's tools."""
    lines: list[str] = []
    prov = desc["provenance"]
    lines.append(f"Metadata image at offset {prov['lastContainedOffset']} "
                 f"(epoch {prov['lastContainedEpoch']})")
    epoch = desc["featuresEpoch"]
    for f in desc["features"]:
        level = f.get("version") or f["level"]
        lines.append(f"Feature: {f['name']}\tFinalizedVersionLevel: {level}\t"
                     f"Epoch: {epoch if epoch >= 0 else '-'}")
    lines.append(f"ZkMigrationState: {desc['zkMigrationState']}")
    for b in desc["brokers"]:
        state = "fenced" if b["fenced"] else "unfenced"
        if b["inControlledShutdown"]:
            state += ",inControlledShutdown"
        if b["isMigratingZkBroker"]:
            state += ",migratingZkBroker"
        listeners = ",".join(f"{e['name']}://{e['host']}:{e['port']}" for e in b["listeners"])
        lines.append(f"Broker: {b['id']}\tEpoch: {b['epoch']}\tIncarnationId: {b['incarnationId']}\t"
                     f"State: {state}\tRack: {b['rack'] or '-'}\tListeners: {listeners}\t"
                     f"LogDirs: {','.join(b['logDirs']) or '-'}\t"
                     f"SupportedFeatures: {_range_text(b['supportedFeatures'])}")
        if b["cordonedLogDirs"]:
            lines.append(f"\tCordonedLogDirs: {','.join(b['cordonedLogDirs'])}")
        for name, value in b["staticConfigs"].items():
            lines.append(f"\tStaticConfig: {name}={value}")
    for c in desc["controllers"]:
        listeners = ",".join(f"{e['name']}://{e['host']}:{e['port']}" for e in c["listeners"])
        lines.append(f"Controller: {c['id']}\tIncarnationId: {c['incarnationId']}\t"
                     f"ZkMigrationReady: {str(c['zkMigrationReady']).lower()}\tListeners: {listeners}\t"
                     f"SupportedFeatures: {_range_text(c['supportedFeatures'])}")
    for t in desc["topics"]:
        lines.append(f"Topic: {t['name']}\tTopicId: {t['topicId']}\tPartitionCount: {t['partitionCount']}")
        for p in t["partitions"]:
            lines.append(
                f"\tTopic: {t['name']}\tPartition: {p['partition']}\tLeader: {p['leader']}\t"
                f"LeaderEpoch: {p['leaderEpoch']}\tPartitionEpoch: {p['partitionEpoch']}\t"
                f"Replicas: {_ints(p['replicas'])}\tIsr: {_ints(p['isr'])}\t"
                f"Elr: {_ints(p['elr'])}\tLastKnownElr: {_ints(p['lastKnownElr'])}"
                + (f"\tLeaderRecoveryState: {p['leaderRecoveryState']}"
                   if p["leaderRecoveryState"] != "RECOVERED" else "")
            )
    for c in desc["configs"]:
        pairs = ",".join(f"{k}={v}" for k, v in c["configs"].items())
        what = f"{c['resourceType'].lower()} '{c['resourceName']}'" if c["resourceName"] else \
            f"{c['resourceType'].lower()} (cluster default)"
        lines.append(f"Configs for {what}: {pairs}")
    for q in desc["clientQuotas"]:
        ent = ",".join(f"{t}={n if n is not None else '<default>'}" for t, n in q["entity"].items())
        lines.append(f"ClientQuotas for {ent}: " + ",".join(f"{k}={v}" for k, v in q["quotas"].items()))
    for a in desc["acls"]:
        lines.append(f"Acl: ResourcePattern(resourceType={a['resourceType']}, name={a['resourceName']}, "
                     f"patternType={a['patternType']})\t(principal={a['principal']}, host={a['host']}, "
                     f"operation={a['operation']}, permissionType={a['permissionType']})")
    lines.append(f"NextProducerId: {desc['nextProducerId']}\tAcls: {desc['aclCount']}\t"
                 f"ScramCredentials: {desc['scramCredentialCount']}\t"
                 f"DelegationTokens: {desc['delegationTokenCount']}")
    return lines


def _range_text(features: Mapping[str, Mapping[str, Any]]) -> str:
    return ",".join(f"{name}={r['min']}-{r['max']}" for name, r in features.items()) or "-"
