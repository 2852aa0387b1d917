"""The controller's response bodies that more than one handler builds: errors in each RPC's shape,
UpdateFeatures results, DescribeCluster broker lists, Envelope payloads."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from kraftwerk.controller import features as fc
from kraftwerk.controller.effects import Body
from kraftwerk.image.model import Endpoint, MetadataImage
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.header import encode_response_header, response_header_version
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.features import (
    UpdateFeaturesResponse,
    UpdateFeaturesResponseUpdatableFeatureResult,
)
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind


def encode_response(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]) -> bytes:
    """Header + body bytes of a response (what an EnvelopeResponse carries)."""
    spec = by_api_key(Kind.RESPONSE, api_key)
    header = encode_response_header({"correlationId": correlation_id}, response_header_version(spec, version))
    return header + codec.encode(spec, version, dict(body))


def update_features_error_body(
    version: int, names: Sequence[str], error: Errors, message: str | None
) -> UpdateFeaturesResponse:
    """Kafka's ``UpdateFeaturesResponse.createWithErrors``: v0-1 repeat the error per feature."""
    results: list[UpdateFeaturesResponseUpdatableFeatureResult] = (
        [{"feature": n, "errorCode": error.code, "errorMessage": message} for n in sorted(names)]
        if version < 2
        else []
    )
    return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": message, "results": results}


def update_features_response(version: int, outcome: fc.UpdateFeaturesOutcome) -> UpdateFeaturesResponse:
    return update_features_error_body(version, outcome.feature_names, outcome.error, outcome.message)


def not_controller_body(api_key: int, version: int, body: Mapping[str, Any]) -> Body:
    return error_body(api_key, version, Errors.NOT_CONTROLLER, None, body)


def error_body(
    api_key: int, version: int, error: Errors, message: str | None, body: Mapping[str, Any]
) -> Body:
    """A response of ``api_key`` carrying ``error`` (the shapes of the controller RPCs)."""
    if api_key == ApiKey.UPDATE_FEATURES:
        names = [u["feature"] for u in body.get("featureUpdates") or ()]
        return as_body(update_features_error_body(version, names, error, message))
    if api_key == ApiKey.BROKER_REGISTRATION:
        return {"throttleTimeMs": 0, "errorCode": error.code, "brokerEpoch": -1}
    if api_key == ApiKey.BROKER_HEARTBEAT:
        return {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "isCaughtUp": False,
            "isFenced": True,
            "shouldShutDown": False,
        }
    if api_key in (ApiKey.CONTROLLER_REGISTRATION, ApiKey.UNREGISTER_BROKER):
        return {"throttleTimeMs": 0, "errorCode": error.code, "errorMessage": message}
    if api_key in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS):
        return topics_error_body(api_key, version, error, message, body)
    if api_key in (ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS):
        return alter_error_body(error, message, body)
    if api_key == ApiKey.DESCRIBE_CLUSTER:
        return {
            "throttleTimeMs": 0,
            "errorCode": error.code,
            "errorMessage": message,
            "endpointType": 1,
            "clusterId": "",
            "controllerId": -1,
            "brokers": [],
            "clusterAuthorizedOperations": -2147483648,
        }
    if api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:  # Kafka's getErrorResponse: every user named
        users = dict.fromkeys(c["name"] for c in (*body.get("deletions", ()), *body.get("upsertions", ())))
        return {"throttleTimeMs": 0, "results": [{"user": u, "errorCode": error.code, "errorMessage": message}
                                                 for u in users]}
    spec = by_api_key(Kind.RESPONSE, api_key)
    out = codec.default_value(spec)
    if "errorCode" in out:
        out["errorCode"] = error.code
    return out


def topics_error_body(
    api_key: int, version: int, error: Errors, message: str | None, body: Mapping[str, Any]
) -> Body:
    """A CreateTopics (19), DeleteTopics (20) or CreatePartitions (37) response refusing every
    topic of ``body`` with ``error`` (NOT_CONTROLLER, a request-level failure)."""
    text = message if message is not None else error.describe()
    if api_key == ApiKey.CREATE_TOPICS:
        return {
            "throttleTimeMs": 0,
            "topics": [
                {
                    "name": t["name"],
                    "topicId": uuid.UUID(int=0),
                    "errorCode": error.code,
                    "errorMessage": text,
                    "numPartitions": -1,
                    "replicationFactor": -1,
                    "configs": None,
                }
                for t in body.get("topics") or ()
            ],
        }
    if api_key == ApiKey.DELETE_TOPICS:
        wanted = (
            [(t.get("name"), t.get("topicId")) for t in body.get("topics") or ()]
            if version >= 6
            else [(n, None) for n in body.get("topicNames") or ()]
        )
        return {
            "throttleTimeMs": 0,
            "responses": [
                {"name": n, "topicId": tid or uuid.UUID(int=0), "errorCode": error.code, "errorMessage": text}
                for n, tid in wanted
            ],
        }
    return {
        "throttleTimeMs": 0,
        "results": [
            {"name": t["name"], "errorCode": error.code, "errorMessage": text}
            for t in body.get("topics") or ()
        ],
    }


def alter_error_body(error: Errors, message: str | None, body: Mapping[str, Any]) -> Body:
    """An AlterConfigs / IncrementalAlterConfigs response refusing every resource with ``error``."""
    return {
        "throttleTimeMs": 0,
        "responses": [
            {
                "errorCode": error.code,
                "errorMessage": message,
                "resourceType": r["resourceType"],
                "resourceName": r["resourceName"],
            }
            for r in body.get("resources") or ()
        ],
    }


BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


def describe_cluster_brokers(
    image: MetadataImage,
    cluster_id: str,
    controller_id: int | None,
    include_fenced: bool,
    listener_name: str | None = None,
) -> Body:
    """DescribeCluster listing brokers from the image (unfenced only unless ``include_fenced``)."""
    brokers = []
    for b in image.cluster.brokers.values():
        if b.fenced and not include_fenced:
            continue
        endpoint = pick_listener(b.listeners, listener_name)
        if endpoint is None:
            continue
        brokers.append(
            {
                "brokerId": b.id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": b.rack,
                "isFenced": b.fenced,
            }
        )
    return {
        "throttleTimeMs": 0,
        "errorCode": 0,
        "errorMessage": None,
        "endpointType": BROKER_ENDPOINT,
        "clusterId": cluster_id,
        "controllerId": -1 if controller_id is None else controller_id,
        "brokers": brokers,
        "clusterAuthorizedOperations": -2147483648,
    }


def describe_cluster_endpoint_error(version: int, body: Mapping[str, Any], expected: int) -> Body | None:
    """Kafka's check of DescribeCluster's EndpointType (``AuthHelper.computeDescribeClusterResponse``,
    KIP-919): an unknown type is UNSUPPORTED_ENDPOINT_TYPE, a broker asked for controllers or a
    controller asked for brokers is MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST for both at v0, whose
    requests are implicitly BROKER); None when this node answers."""
    requested = body.get("endpointType", BROKER_ENDPOINT) if version >= 1 else BROKER_ENDPOINT
    if requested not in _ENDPOINT_NAMES:
        error, message = Errors.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {requested}"
    elif requested != expected:
        error, message = Errors.MISMATCHED_ENDPOINT_TYPE, (
            f"The request was sent to an endpoint of type {_ENDPOINT_NAMES[expected]}, but we wanted an "
            f"endpoint of type {_ENDPOINT_NAMES[requested]}")
    else:
        return None
    # Kafka's error response leaves every other field at its schema default
    return {"throttleTimeMs": 0, "errorCode": (Errors.INVALID_REQUEST if version == 0 else error).code,
            "errorMessage": message, "endpointType": BROKER_ENDPOINT, "clusterId": "", "controllerId": -1,
            "brokers": [], "clusterAuthorizedOperations": -2147483648}


def pick_listener(listeners: Sequence[Endpoint], name: str | None) -> Endpoint | None:
    """The endpoint named ``name`` (the listener a request came in on), else the first one."""
    if not listeners:
        return None
    if name is not None:
        for e in listeners:
            if e.name == name:
                return e
        return None
    return listeners[0]
