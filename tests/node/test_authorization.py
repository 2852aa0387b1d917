"""Which ACL each request needs (node/authorization.py): whole refusals on the cluster, per-topic
refusals merged into the core's answer, listings filtered."""

from __future__ import annotations

import logging
import uuid

import pytest
from immutables import Map

from kraftwerk.controller.authorizer import Session, StandardAuthorizer
from kraftwerk.image.model import AclOperation as Op
from kraftwerk.image.model import MetadataImage, StandardAcl
from kraftwerk.node.authorization import authorize_request
from kraftwerk.protocol.api_keys import ApiKey

AUTHORIZER = StandardAuthorizer(frozenset({"User:admin"}))
ALICE = Session("User:alice", "127.0.0.1")
IMAGE = MetadataImage(
    acls=Map(
        {
            uuid.UUID(int=1): StandardAcl(2, "orders", 3, "User:alice", "*", Op.WRITE, 3),
            uuid.UUID(int=2): StandardAcl(2, "orders", 3, "User:alice", "*", Op.READ, 3),
            uuid.UUID(int=3): StandardAcl(2, "alice-", 4, "User:alice", "*", Op.CREATE, 3),
        }
    )
)


def _verdict(api_key: int, version: int, body: dict, session: Session = ALICE):  # type: ignore[no-untyped-def,type-arg]
    return authorize_request(AUTHORIZER, IMAGE, session, api_key, version, body)


def test_no_authorizer_allows_everything() -> None:
    body = {"featureUpdates": []}
    assert authorize_request(None, IMAGE, ALICE, ApiKey.UPDATE_FEATURES, 1, body).body is body


def test_cluster_actions_are_refused_whole() -> None:
    body = {"timeoutMs": 1, "featureUpdates": [{"feature": "metadata.version", "maxVersionLevel": 27}]}
    verdict = _verdict(ApiKey.UPDATE_FEATURES, 1, body)
    assert verdict.body is None
    response = verdict.finish(None)
    assert response is not None and response["errorCode"] == 31
    assert _verdict(ApiKey.UPDATE_FEATURES, 1, body, Session("User:admin", "1.2.3.4")).body is body
    refused = _verdict(ApiKey.CREATE_ACLS, 3, {"creations": [{}, {}]}).finish(None)
    assert refused is not None and [r["errorCode"] for r in refused["results"]] == [31, 31]
    follower = {"replicaState": {"replicaId": 2}, "topics": []}
    response = _verdict(ApiKey.FETCH, 15, follower).finish(None)
    assert response is not None and response["errorCode"] == 31


def test_topics_are_checked_one_by_one() -> None:
    body = {"topics": [{"name": "alice-1"}, {"name": "other"}], "timeoutMs": 1, "validateOnly": False}
    verdict = _verdict(ApiKey.CREATE_TOPICS, 7, body)
    assert verdict.body == {**body, "topics": [{"name": "alice-1"}]}
    merged = verdict.finish({"throttleTimeMs": 0, "topics": [{"name": "alice-1", "errorCode": 0}]})
    assert merged is not None and [(t["name"], t["errorCode"]) for t in merged["topics"]] == [
        ("alice-1", 0),
        ("other", 29),
    ]

    produce = {
        "acks": -1,
        "timeoutMs": 1,
        "topicData": [
            {"name": "orders", "partitionData": [{"index": 0}]},
            {"name": "secret", "partitionData": [{"index": 3}]},
        ],
    }
    verdict = _verdict(ApiKey.PRODUCE, 9, produce)
    assert verdict.body is not None and [t["name"] for t in verdict.body["topicData"]] == ["orders"]
    merged = verdict.finish(
        {"responses": [{"name": "orders", "partitionResponses": [{"index": 0, "errorCode": 0}]}]}
    )
    assert merged is not None and merged["responses"][1]["partitionResponses"] == [
        {"index": 3, "errorCode": 29, "baseOffset": -1, "logAppendTimeMs": -1, "logStartOffset": -1}
    ]

    only_refused = _verdict(
        ApiKey.FETCH, 12, {"replicaId": -1, "topics": [{"topic": "secret", "partitions": [{"partition": 0}]}]}
    )
    assert only_refused.body is None
    answer = only_refused.finish(None)
    assert answer is not None and answer["responses"][0]["partitions"][0]["errorCode"] == 29


def test_metadata_listing_hides_topics_without_describe() -> None:
    verdict = _verdict(ApiKey.METADATA, 12, {"topics": None})
    listed = verdict.finish({"topics": [{"name": "orders"}, {"name": "secret"}]})
    assert listed is not None and [t["name"] for t in listed["topics"]] == ["orders"]
    named = _verdict(ApiKey.METADATA, 12, {"topics": [{"name": "secret", "topicId": None}]})
    assert named.body is not None and named.body["topics"] == []
    answered = named.finish({"topics": []})
    assert answered is not None and [(t["name"], t["errorCode"]) for t in answered["topics"]] == [
        ("secret", 29)
    ]


def test_config_resources() -> None:
    body = {
        "resources": [
            {"resourceType": 2, "resourceName": "orders", "configurationKeys": None},
            {"resourceType": 4, "resourceName": "1", "configurationKeys": None},
        ]
    }
    verdict = _verdict(ApiKey.DESCRIBE_CONFIGS, 4, body)
    assert verdict.body is None  # WRITE/READ do not imply DESCRIBE_CONFIGS; the broker needs the cluster's
    answer = verdict.finish(None)
    assert answer is not None and [r["errorCode"] for r in answer["results"]] == [29, 31]


def test_refusals_are_audited(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, "kraftwerk.authorizer"):
        _verdict(ApiKey.UPDATE_FEATURES, 1, {"featureUpdates": []})
        _verdict(ApiKey.METADATA, 12, {"topics": None}).finish({"topics": [{"name": "secret"}]})
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "Principal = User:alice is Denied operation = ALTER from host = 127.0.0.1 on resource = "
                 "Cluster:LITERAL:kafka-cluster"),
        ("DEBUG", "Principal = User:alice is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
                  "Topic:LITERAL:secret")]
