"""The api key → handler tables of the controller and the broker: what ApiVersions advertises and
what an Envelope may carry follow the tables, so adding an RPC is one handler and one line."""

from __future__ import annotations

import uuid

from kraftwerk.broker.node import BROKER_API_KEYS, DATA_PLANE_API_KEYS
from kraftwerk.broker.node import ROUTES as BROKER_ROUTES
from kraftwerk.controller.quorum import CONTROLLER_API_KEYS, RAFT_API_KEYS, ROUTES, QuorumController
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.registry import by_api_key
from kraftwerk.protocol.schema import Kind
from kraftwerk.runtime.forwarding import envelope_body
from kraftwerk.versions import SoftwareVersion
from tests.controller.harness import CLUSTER_ID


def _standby() -> QuorumController:
    return QuorumController(1, CLUSTER_ID, SoftwareVersion.latest(), (1, 2, 3), incarnation_id=uuid.uuid4())


def test_every_routed_key_is_declared_and_advertised() -> None:
    # the data plane's requests are served by the runtime (they wait on partition I/O), not a route
    assert tuple(ROUTES) == CONTROLLER_API_KEYS and (*BROKER_ROUTES, *DATA_PLANE_API_KEYS) == BROKER_API_KEYS
    assert not set(BROKER_ROUTES) & set(DATA_PLANE_API_KEYS)
    for key in (*ROUTES, *BROKER_API_KEYS):
        assert by_api_key(Kind.REQUEST, key).api_key == key == by_api_key(Kind.RESPONSE, key).api_key
    body = _standby().handle_request(ApiKey.API_VERSIONS, 3, {}, 0)
    assert isinstance(body.body, dict)
    advertised = {k["apiKey"] for k in body.body["apiKeys"]}
    assert advertised == set(ROUTES) | set(RAFT_API_KEYS)


def test_an_envelope_carries_only_forwardable_requests() -> None:
    controller = _standby()
    for key, route in ROUTES.items():
        version = by_api_key(Kind.REQUEST, key).valid_versions.lowest
        inner = envelope_body(key, version, 7, "client", {}, "127.0.0.1")
        reply = controller.handle_request(ApiKey.ENVELOPE, 0, inner, 0)
        error = reply.body["errorCode"] if hasattr(reply, "body") else None
        # a forwardable request reaches the controller (a standby: NOT_CONTROLLER); others are refused
        expected = Errors.NOT_CONTROLLER if route.forwardable else Errors.INVALID_REQUEST
        assert error == expected.code, (key, reply)
