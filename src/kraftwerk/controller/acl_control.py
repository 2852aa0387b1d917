"""ACLs as Kafka's ``AclControlManager`` keeps them: CreateAcls and DeleteAcls judged by the active
controller into AccessControlEntryRecord (a fresh Uuid id each) / RemoveAccessControlEntryRecord,
and DescribeAcls answered from any image (a broker's included)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from kraftwerk.controller.authorizer import AclFilter, binding_from
from kraftwerk.controller.common import rec
from kraftwerk.controller.effects import AppendThenRespond, Body, Respond
from kraftwerk.controller.errors import ApiError
from kraftwerk.image.model import MetadataImage, StandardAcl
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    CreateAclsResponseAclCreationResult,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteAclsResponseDeleteAclsFilterResult,
    DeleteAclsResponseDeleteAclsMatchingAcl,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeAclsResponseAclDescription,
    DescribeAclsResponseDescribeAclsResource,
)
from kraftwerk.protocol.routing import Request

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

#: Kafka's ``MAX_RECORDS_PER_USER_OP``: one request writes at most this many records.
MAX_RECORDS_PER_USER_OP = 10_000


def _result(error: Errors = Errors.NONE, message: str | None = None) -> CreateAclsResponseAclCreationResult:
    return {"errorCode": error.code, "errorMessage": message}


def _acl_fields(acl: StandardAcl) -> dict[str, Any]:
    return {"resourceType": acl.resource_type, "resourceName": acl.resource_name,
            "patternType": acl.pattern_type, "principal": acl.principal, "host": acl.host,
            "operation": acl.operation, "permissionType": acl.permission_type}


def _matching(acl: StandardAcl) -> DeleteAclsResponseDeleteAclsMatchingAcl:
    return {"errorCode": 0, "errorMessage": None, "resourceType": acl.resource_type,
            "resourceName": acl.resource_name, "patternType": acl.pattern_type, "principal": acl.principal,
            "host": acl.host, "operation": acl.operation, "permissionType": acl.permission_type}


class AclControlManager:
    """CreateAcls / DeleteAcls against the committed image, with Kafka's checks and texts."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller

    def create_acls(self, request: Request) -> AppendThenRespond:
        existing = set(self._c.image.acls.values())
        taken = set(self._c.image.acls)
        body = cast(CreateAclsRequest, request.body)
        records, results = [], []
        for creation in body["creations"]:
            try:
                acl = binding_from(creation)
            except ApiError as err:
                results.append(_result(err.error, err.text))
                continue
            if acl not in existing:  # an ACL that exists already is a success that writes nothing
                existing.add(acl)
                acl_id = self._new_id(taken)
                records.append(rec("AccessControlEntryRecord", 0, {"id": acl_id, **_acl_fields(acl)}))
            results.append(_result())
        if len(records) > MAX_RECORDS_PER_USER_OP:
            raise ApiError(Errors.POLICY_VIOLATION, f"Cannot create more than {MAX_RECORDS_PER_USER_OP} "
                                                    "acls in a single create operation.")
        response: CreateAclsResponse = {"throttleTimeMs": 0, "results": results}
        return AppendThenRespond(tuple(records), as_body(response))

    def _new_id(self, taken: set[uuid.UUID]) -> uuid.UUID:
        while True:
            candidate = uuid.UUID(int=self._c.rng.getrandbits(128))
            if candidate not in taken and candidate.int != 0:
                taken.add(candidate)
                return candidate

    def delete_acls(self, request: Request) -> AppendThenRespond:
        removed: set[uuid.UUID] = set()
        results: list[DeleteAclsResponseDeleteAclsFilterResult] = []
        for value in cast(DeleteAclsRequest, request.body)["filters"]:
            try:
                acl_filter = AclFilter.from_request(value)
            except ApiError as err:
                results.append({"errorCode": err.error.code, "errorMessage": err.text, "matchingAcls": []})
                continue
            matching = []
            for acl_id, acl in self._c.image.acls.items():
                if acl_filter.matches(acl):
                    removed.add(acl_id)
                    matching.append(_matching(acl))
            results.append({"errorCode": 0, "errorMessage": None, "matchingAcls": matching})
        if len(removed) > MAX_RECORDS_PER_USER_OP:
            raise ApiError(Errors.POLICY_VIOLATION, f"Cannot remove more than {MAX_RECORDS_PER_USER_OP} "
                                                    "acls in a single delete operation.")
        records = tuple(rec("RemoveAccessControlEntryRecord", 0, {"id": i}) for i in sorted(removed, key=str))
        response: DeleteAclsResponse = {"throttleTimeMs": 0, "filterResults": results}
        return AppendThenRespond(records, as_body(response))

    def describe_acls(self, request: Request) -> Respond:
        return Respond(describe_acls(self._c.image, request.body))


def describe_acls(image: MetadataImage, body: Mapping[str, Any]) -> Body:
    """DescribeAcls from an image: the matching ACLs grouped by resource pattern."""
    return as_body(_describe_acls(image, cast(DescribeAclsRequest, body)))


def _describe_acls(image: MetadataImage, body: DescribeAclsRequest) -> DescribeAclsResponse:
    try:
        acl_filter = AclFilter.from_request(body)
    except ApiError as err:
        return {"throttleTimeMs": 0, "errorCode": err.error.code, "errorMessage": err.text, "resources": []}
    resources: dict[tuple[int, str, int], list[DescribeAclsResponseAclDescription]] = {}
    for acl in sorted(image.acls.values(), key=_acl_order):
        if acl_filter.matches(acl):
            resources.setdefault((acl.resource_type, acl.resource_name, acl.pattern_type), []).append(
                {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
                 "permissionType": acl.permission_type})
    described: list[DescribeAclsResponseDescribeAclsResource] = [
        {"resourceType": t, "resourceName": n, "patternType": p, "acls": acls}
        for (t, n, p), acls in resources.items()]
    return {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "resources": described}


def _acl_order(acl: StandardAcl) -> tuple[int, str, int, str, str, int, int]:
    return (acl.resource_type, acl.resource_name, acl.pattern_type, acl.principal, acl.host, acl.operation,
            acl.permission_type)
