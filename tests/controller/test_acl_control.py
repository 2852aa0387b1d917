"""CreateAcls / DeleteAcls / DescribeAcls on the controller: AccessControlEntryRecords with Uuid
ids, Kafka's validation texts, idempotent creation, filters, and replay into the image."""

from __future__ import annotations

from typing import Any

from kraftwerk.controller import features as fc
from kraftwerk.image.model import StandardAcl
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.controller.harness import Log, activate, call, controller


def _creation(
    name: str, op: int = 3, pattern: int = 3, principal: str = "User:alice", **kw: Any
) -> dict[str, Any]:
    return {
        "resourceType": 2,
        "resourceName": name,
        "resourcePatternType": pattern,
        "principal": principal,
        "host": "*",
        "operation": op,
        "permissionType": 3,
        **kw,
    }


def _filter(**kw: Any) -> dict[str, Any]:
    return {
        "resourceTypeFilter": 1,
        "resourceNameFilter": None,
        "patternTypeFilter": 1,
        "principalFilter": None,
        "hostFilter": None,
        "operation": 1,
        "permissionType": 1,
        **kw,
    }


def test_create_describe_delete() -> None:
    log = Log()
    ctl = controller(
        1, (1,), bootstrap_records=[fc.feature_level_record("metadata.version", MV.IBP_4_0_IV3.feature_level)]
    )
    log.controllers.append(ctl)
    activate(log, ctl)
    created = call(
        log,
        ctl,
        30,
        3,
        {
            "creations": [
                _creation("orders"),
                _creation("ord", op=4, pattern=4),
                _creation("orders"),
                _creation("x", pattern=2),
                _creation("y", principal="alice"),
            ]
        },
    )
    assert [(r["errorCode"], r["errorMessage"]) for r in created["results"]] == [
        (0, None),
        (0, None),
        (0, None),
        (42, "Invalid patternType MATCH"),
        (42, "Invalid principal alice: expected Type:name"),
    ]
    written = [r for r in log.decoded() if r.spec.name == "AccessControlEntryRecord"]
    assert len(written) == 2  # the duplicate in the same request writes nothing
    assert len({r.value["id"] for r in written}) == 2
    assert set(ctl.image.acls.values()) == {
        StandardAcl(2, "orders", 3, "User:alice", "*", 3, 3),
        StandardAcl(2, "ord", 4, "User:alice", "*", 4, 3),
    }
    again = call(log, ctl, 30, 3, {"creations": [_creation("orders")]})
    assert again["results"] == [{"errorCode": 0, "errorMessage": None}]
    assert len(ctl.image.acls) == 2

    described = call(
        log, ctl, 29, 3, _filter(resourceTypeFilter=2, resourceNameFilter="orders2", patternTypeFilter=2)
    )
    assert described["resources"] == [
        {
            "resourceType": 2,
            "resourceName": "ord",
            "patternType": 4,
            "acls": [{"principal": "User:alice", "host": "*", "operation": 4, "permissionType": 3}],
        }
    ]
    assert call(log, ctl, 29, 3, _filter(resourceTypeFilter=0))["errorCode"] == 42

    deleted = call(log, ctl, 31, 3, {"filters": [_filter(operation=3), _filter(operation=3)]})
    assert [len(r["matchingAcls"]) for r in deleted["filterResults"]] == [1, 1]
    assert deleted["filterResults"][0]["matchingAcls"][0]["resourceName"] == "orders"
    assert [r.spec.name for r in log.decoded()][-1:] == ["RemoveAccessControlEntryRecord"]  # once, not twice
    assert list(ctl.image.acls.values()) == [StandardAcl(2, "ord", 4, "User:alice", "*", 4, 3)]
