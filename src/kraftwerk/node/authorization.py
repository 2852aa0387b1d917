"""Which request needs which ACL, checked once where a node dispatches requests, as Kafka's
``KafkaApis`` / ``ControllerApis`` check them.

:func:`authorize_request` takes the session (principal and client address), the request and the
node's image, and says what the core may serve: all of it, a part (the topics or config resources
the principal may touch; the others are answered here with TOPIC_AUTHORIZATION_FAILED or
CLUSTER_AUTHORIZATION_FAILED, merged into the core's response), or nothing (a request that needs
an ACL on the cluster, refused as a whole). Listing every topic (Metadata with a null topic list,
DescribeTopicPartitions) leaves out the topics the principal may not DESCRIBE, as Kafka does.
Pure: the runtime calls it before handing a request to a core.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kraftwerk.config import ConfigResourceType
from kraftwerk.controller.authorizer import CLUSTER_NAME, Session, StandardAuthorizer
from kraftwerk.controller.responses import error_body
from kraftwerk.image.model import AclOperation, AclResourceType, MetadataImage
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors

Value = dict[str, Any]
Body = Value
_ZERO = uuid.UUID(int=0)
audit_log = logging.getLogger("kraftwerk.authorizer")
#: Kafka's ``ResourceType.toString`` names, as its audit lines print them
_RESOURCE_NAMES = {AclResourceType.TOPIC: "Topic", AclResourceType.GROUP: "Group",
                   AclResourceType.CLUSTER: "Cluster", AclResourceType.TRANSACTIONAL_ID: "TransactionalId",
                   AclResourceType.DELEGATION_TOKEN: "DelegationToken", AclResourceType.USER: "User"}
_TOPIC_DENIED = Errors.TOPIC_AUTHORIZATION_FAILED
_CLUSTER_DENIED = Errors.CLUSTER_AUTHORIZATION_FAILED
_OP = AclOperation

#: Requests that only need an ACL on the cluster (Kafka's checks), with the operation.
_CLUSTER_ACTIONS: Mapping[int, AclOperation] = {
    ApiKey.UPDATE_FEATURES: _OP.ALTER,
    ApiKey.CREATE_ACLS: _OP.ALTER,
    ApiKey.DELETE_ACLS: _OP.ALTER,
    ApiKey.DESCRIBE_ACLS: _OP.DESCRIBE,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _OP.ALTER,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _OP.DESCRIBE,
    ApiKey.UNREGISTER_BROKER: _OP.ALTER,
    ApiKey.ADD_RAFT_VOTER: _OP.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: _OP.ALTER,
    ApiKey.DESCRIBE_QUORUM: _OP.DESCRIBE,
    # the cluster's own traffic: Kafka's CLUSTER_ACTION
    ApiKey.BROKER_REGISTRATION: _OP.CLUSTER_ACTION,
    ApiKey.BROKER_HEARTBEAT: _OP.CLUSTER_ACTION,
    ApiKey.CONTROLLER_REGISTRATION: _OP.CLUSTER_ACTION,
    ApiKey.ALTER_PARTITION: _OP.CLUSTER_ACTION,
    ApiKey.ENVELOPE: _OP.CLUSTER_ACTION,
    ApiKey.VOTE: _OP.CLUSTER_ACTION,
    ApiKey.BEGIN_QUORUM_EPOCH: _OP.CLUSTER_ACTION,
    ApiKey.END_QUORUM_EPOCH: _OP.CLUSTER_ACTION,
    ApiKey.FETCH_SNAPSHOT: _OP.CLUSTER_ACTION,
    ApiKey.LEADER_AND_ISR: _OP.CLUSTER_ACTION,  # a (migrating) controller to ZK-mode brokers
    ApiKey.STOP_REPLICA: _OP.CLUSTER_ACTION,
    ApiKey.UPDATE_METADATA: _OP.CLUSTER_ACTION,
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the core serves (``body``; None: nothing) and how its response is completed."""

    body: Value | None
    refused: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Response list key → the items answered here (refused resources)."""
    listed: Callable[[dict[str, Any]], bool] | None = None
    """Keeps a listed topic (by its response item) in the response."""
    whole: Value | None = None
    """The whole response, when nothing reaches the core."""

    def finish(self, response: Value | None) -> Value | None:
        if self.whole is not None:
            return self.whole
        if response is None or (not self.refused and self.listed is None):
            return response
        out = dict(response)
        if self.listed is not None:
            out["topics"] = [t for t in out.get("topics") or () if self.listed(t)]
        for key, items in self.refused.items():
            out[key] = [*(out.get(key) or ()), *items]
        return out


def _allowed(body: Body) -> Verdict:
    return Verdict(body)


class _Check:
    """One request's checks against one image."""

    def __init__(self, authorizer: StandardAuthorizer, image: MetadataImage, session: Session) -> None:
        self.authorizer = authorizer
        self.image = image
        self.session = session

    def may(self, operation: AclOperation, resource_type: AclResourceType, name: str, *,
            audit: bool = True) -> bool:
        """The authorizer's answer; a refusal is logged as Kafka's ``kafka.authorizer.logger`` does
        (INFO; not for topics a listing leaves out, which Kafka logs at DEBUG)."""
        acls = self.image.acls.values()
        allowed = self.authorizer.authorize(acls, self.session, operation, resource_type, name)
        if not allowed:
            level = logging.INFO if audit else logging.DEBUG
            audit_log.log(level, "Principal = %s is Denied operation = %s from host = %s on resource = "
                          "%s:LITERAL:%s", self.session.principal, operation.name, self.session.host,
                          _RESOURCE_NAMES[resource_type], name)
        return allowed

    def cluster(self, operation: AclOperation) -> bool:
        return self.may(operation, AclResourceType.CLUSTER, CLUSTER_NAME)

    def topic(self, operation: AclOperation, name: str | None, *, audit: bool = True) -> bool:
        return name is not None and self.may(operation, AclResourceType.TOPIC, name, audit=audit)

    def topic_name(self, item: Mapping[str, Any], key: str = "name") -> str | None:
        name = item.get(key)
        if name:
            return str(name)
        topic = self.image.topics.by_id.get(item.get("topicId") or _ZERO)
        return None if topic is None else topic.name


def authorize_request(authorizer: StandardAuthorizer | None, image: MetadataImage, session: Session,
                      api_key: int, version: int, body: Body) -> Verdict:
    """The verdict for one request (everything allowed when no authorizer is configured)."""
    if authorizer is None:
        return _allowed(body)
    check = _Check(authorizer, image, session)
    operation = _CLUSTER_ACTIONS.get(api_key)
    if operation is not None:
        if check.cluster(operation):
            return _allowed(body)
        return Verdict(None, whole=_refusal(api_key, version, body, _CLUSTER_DENIED))
    per_api = _PER_RESOURCE.get(api_key)
    return _allowed(body) if per_api is None else per_api(check, version, body)


def _refusal(api_key: int, version: int, body: Body, error: Errors) -> Value:
    text = error.describe()
    if api_key == ApiKey.DESCRIBE_ACLS:
        return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": text, "resources": []}
    if api_key == ApiKey.CREATE_ACLS:
        return {"throttleTimeMs": 0, "results": [{"errorCode": error.code, "errorMessage": text}
                                                 for _ in body.get("creations") or ()]}
    if api_key == ApiKey.DELETE_ACLS:
        return {"throttleTimeMs": 0, "filterResults": [
            {"errorCode": error.code, "errorMessage": text, "matchingAcls": []}
            for _ in body.get("filters") or ()]}
    if api_key == ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
        return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": text, "results": []}
    return error_body(api_key, version, error, None, body)


def _split(items: Iterable[Mapping[str, Any]], allowed: Callable[[Mapping[str, Any]], bool]
           ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    kept: list[Mapping[str, Any]] = []
    refused: list[Mapping[str, Any]] = []
    for item in items:
        (kept if allowed(item) else refused).append(item)
    return kept, refused


def _partial(body: Body, key: str, kept: list[Mapping[str, Any]], response_key: str,
             refused: list[dict[str, Any]], empty: Value) -> Verdict:
    """Serve ``kept`` of the request's ``key`` list; ``refused`` are answered here."""
    if not refused:
        return _allowed(body)
    if not kept:
        return Verdict(None, whole={**empty, response_key: refused})
    return Verdict({**body, key: kept}, {response_key: refused})


# ---------------------------------------------------------------------- admin requests

def _topics_admin(api_key: int, operation: AclOperation) -> Callable[[_Check, int, Body], Verdict]:
    """CreateTopics (CREATE on the cluster, else per topic), DeleteTopics (DELETE), CreatePartitions
    (ALTER): refused topics get TOPIC_AUTHORIZATION_FAILED."""
    def check_topics(check: _Check, version: int, body: Body) -> Verdict:
        if api_key == ApiKey.CREATE_TOPICS and check.cluster(_OP.CREATE):
            return _allowed(body)
        key = "topicNames" if api_key == ApiKey.DELETE_TOPICS and version < 6 else "topics"
        if key == "topicNames":
            names = list(body.get(key) or ())
            kept_names = [n for n in names if check.topic(operation, n)]
            refused_names = [n for n in names if n not in kept_names]
            refusal = error_body(api_key, version, _TOPIC_DENIED, None, {key: refused_names})
            return _partial(body, key, kept_names, "responses", refusal["responses"], {"throttleTimeMs": 0})
        kept, refused = _split(body.get(key) or (), lambda t: check.topic(operation, check.topic_name(t)))
        shaped = error_body(api_key, version, _TOPIC_DENIED, None, {key: refused})
        response_key = next(k for k in shaped if k != "throttleTimeMs")
        return _partial(body, key, kept, response_key, shaped[response_key], {"throttleTimeMs": 0})
    return check_topics


def _config_resource(check: _Check, operation: AclOperation, resource: Mapping[str, Any]) -> Errors:
    """NONE when the principal may act on the config resource, else the refusal's error."""
    kind = resource["resourceType"]
    if kind == ConfigResourceType.TOPIC:
        return Errors.NONE if check.topic(operation, resource["resourceName"]) else _TOPIC_DENIED
    if kind == ConfigResourceType.GROUP:
        allowed = check.may(operation, AclResourceType.GROUP, resource["resourceName"])
        return Errors.NONE if allowed else Errors.GROUP_AUTHORIZATION_FAILED
    return Errors.NONE if check.cluster(operation) else _CLUSTER_DENIED


def _alter_configs(check: _Check, version: int, body: Body) -> Verdict:
    kept, refused = _split(body.get("resources") or (),
                           lambda r: _config_resource(check, _OP.ALTER_CONFIGS, r) is Errors.NONE)
    items = [{"errorCode": _config_resource(check, _OP.ALTER_CONFIGS, r).code, "errorMessage": None,
              "resourceType": r["resourceType"], "resourceName": r["resourceName"]} for r in refused]
    return _partial(body, "resources", kept, "responses", items, {"throttleTimeMs": 0})


def _describe_configs(check: _Check, version: int, body: Body) -> Verdict:
    kept, refused = _split(body.get("resources") or (),
                           lambda r: _config_resource(check, _OP.DESCRIBE_CONFIGS, r) is Errors.NONE)
    items: list[dict[str, Any]] = []
    for r in refused:
        error = _config_resource(check, _OP.DESCRIBE_CONFIGS, r)
        items.append({"errorCode": error.code, "errorMessage": error.describe(),
                      "resourceType": r["resourceType"], "resourceName": r["resourceName"], "configs": []})
    return _partial(body, "resources", kept, "results", items, {"throttleTimeMs": 0})


def _metadata(check: _Check, version: int, body: Body) -> Verdict:
    """Named topics the principal may not DESCRIBE get TOPIC_AUTHORIZATION_FAILED (and are not
    auto-created); a listing of every topic leaves them out."""
    topics = body.get("topics")
    if topics is None or (version == 0 and not topics):  # every topic (v0 says so with an empty list)
        return Verdict(body, listed=lambda t: check.topic(_OP.DESCRIBE, t.get("name"), audit=False))
    kept, refused = _split(topics, lambda t: check.topic(_OP.DESCRIBE, check.topic_name(t)))
    if not refused:
        return _allowed(body)
    items: list[dict[str, Any]] = [{"errorCode": _TOPIC_DENIED.code, "name": t.get("name"),
              "topicId": t.get("topicId") or _ZERO, "isInternal": False, "partitions": []} for t in refused]
    if not kept and version == 0:  # v0 would read the empty list as "every topic"
        return Verdict({**body, "topics": kept}, {"topics": items}, listed=lambda t: False)
    return Verdict({**body, "topics": kept}, {"topics": items})


def _describe_topic_partitions(check: _Check, version: int, body: Body) -> Verdict:
    return Verdict(body, listed=lambda t: check.topic(_OP.DESCRIBE, t.get("name"), audit=False))


# ---------------------------------------------------------------------- data requests

def _produce(check: _Check, version: int, body: Body) -> Verdict:
    kept, refused = _split(body.get("topicData") or (), lambda t: check.topic(_OP.WRITE, check.topic_name(t)))
    error = _TOPIC_DENIED.code
    items = [{"name": t.get("name", ""), "topicId": t.get("topicId") or _ZERO, "partitionResponses": [
        {"index": p["index"], "errorCode": error, "baseOffset": -1, "logAppendTimeMs": -1,
         "logStartOffset": -1} for p in t.get("partitionData") or ()]} for t in refused]
    if refused and body.get("acks") == 0:
        return Verdict({**body, "topicData": kept}) if kept else Verdict(None)
    return _partial(body, "topicData", kept, "responses", items, {"throttleTimeMs": 0})


def _is_replica(body: Body) -> bool:
    state = body.get("replicaState") or {}
    return int(state.get("replicaId", -1)) >= 0 or int(body.get("replicaId", -1)) >= 0


def _fetch(check: _Check, version: int, body: Body) -> Verdict:
    """A follower's fetch needs CLUSTER_ACTION on the cluster; a consumer's READ on each topic."""
    if _is_replica(body):
        if check.cluster(_OP.CLUSTER_ACTION):
            return _allowed(body)
        return Verdict(None, whole={"throttleTimeMs": 0, "errorCode": _CLUSTER_DENIED.code, "sessionId": 0,
                                    "responses": []})
    kept, refused = _split(body.get("topics") or (),
                           lambda t: check.topic(_OP.READ, check.topic_name(t, "topic")))
    error = _TOPIC_DENIED.code
    items = [{"topic": t.get("topic", ""), "topicId": t.get("topicId") or _ZERO, "partitions": [
        {"partitionIndex": p["partition"], "errorCode": error, "highWatermark": -1, "lastStableOffset": -1,
         "logStartOffset": -1, "records": b""} for p in t.get("partitions") or ()]} for t in refused]
    return _partial(body, "topics", kept, "responses", items,
                    {"throttleTimeMs": 0, "errorCode": 0, "sessionId": body.get("sessionId", 0)})


def _list_offsets(check: _Check, version: int, body: Body) -> Verdict:
    kept, refused = _split(body.get("topics") or (), lambda t: check.topic(_OP.DESCRIBE, t.get("name")))
    error = _TOPIC_DENIED.code
    items = [{"name": t["name"], "partitions": [
        {"partitionIndex": p["partitionIndex"], "errorCode": error, "timestamp": -1, "offset": -1,
         "leaderEpoch": -1} for p in t.get("partitions") or ()]} for t in refused]
    return _partial(body, "topics", kept, "topics", items, {"throttleTimeMs": 0})


def _offset_for_leader_epoch(check: _Check, version: int, body: Body) -> Verdict:
    if int(body.get("replicaId", -1)) >= 0:
        if check.cluster(_OP.CLUSTER_ACTION):
            return _allowed(body)
        refused_all = list(body.get("topics") or ())
        error = _CLUSTER_DENIED
    else:
        refused_all = []
        error = _TOPIC_DENIED
    kept, refused = _split(body.get("topics") or (),
                           lambda t: not refused_all and check.topic(_OP.DESCRIBE, t.get("topic")))
    items = [{"topic": t["topic"], "partitions": [
        {"partition": p["partition"], "errorCode": error.code, "leaderEpoch": -1, "endOffset": -1}
        for p in t.get("partitions") or ()]} for t in refused]
    return _partial(body, "topics", kept, "topics", items, {"throttleTimeMs": 0})


def _init_producer_id(check: _Check, version: int, body: Body) -> Verdict:
    """An idempotent producer: IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679)."""
    if body.get("transactionalId") is not None:
        allowed = check.may(_OP.WRITE, AclResourceType.TRANSACTIONAL_ID, body["transactionalId"])
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        allowed = check.cluster(_OP.IDEMPOTENT_WRITE) or check.authorizer.authorize_any(
            check.image.acls.values(), check.session, _OP.WRITE, AclResourceType.TOPIC)
        error = _CLUSTER_DENIED
    if allowed:
        return _allowed(body)
    return Verdict(None, whole={"throttleTimeMs": 0, "errorCode": error.code, "producerId": -1,
                                "producerEpoch": -1})


_PER_RESOURCE: Mapping[int, Callable[[_Check, int, Body], Verdict]] = {
    ApiKey.CREATE_TOPICS: _topics_admin(ApiKey.CREATE_TOPICS, _OP.CREATE),
    ApiKey.DELETE_TOPICS: _topics_admin(ApiKey.DELETE_TOPICS, _OP.DELETE),
    ApiKey.CREATE_PARTITIONS: _topics_admin(ApiKey.CREATE_PARTITIONS, _OP.ALTER),
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.METADATA: _metadata,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: _describe_topic_partitions,
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: _offset_for_leader_epoch,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
}
"""Requests checked resource by resource; every other api key needs no ACL (ApiVersions,
DescribeCluster, the SASL exchange), as in Kafka."""
