"""The StandardAuthorizer's rules (Kafka's ``StandardAuthorizerData``) and the ACL filters."""

from __future__ import annotations

import pytest

from kraftwerk.controller.authorizer import (
    STANDARD_AUTHORIZER,
    AclFilter,
    AuthorizerConfigError,
    Session,
    StandardAuthorizer,
    binding_from,
)
from kraftwerk.controller.errors import ApiError
from kraftwerk.image.model import AclOperation as Op
from kraftwerk.image.model import AclPatternType as Pt
from kraftwerk.image.model import AclPermissionType as Perm
from kraftwerk.image.model import AclResourceType as Rt
from kraftwerk.image.model import StandardAcl

ALICE = Session("User:alice", "10.0.0.1")


def acl(
    name: str,
    op: Op,
    perm: Perm = Perm.ALLOW,
    *,
    pattern: Pt = Pt.LITERAL,
    rt: Rt = Rt.TOPIC,
    principal: str = "User:alice",
    host: str = "*",
) -> StandardAcl:
    return StandardAcl(rt, name, pattern, principal, host, op, perm)


def allowed(
    acls: list[StandardAcl],
    op: Op,
    name: str = "orders",
    *,
    session: Session = ALICE,
    rt: Rt = Rt.TOPIC,
    authorizer: StandardAuthorizer | None = None,
) -> bool:
    return (authorizer or StandardAuthorizer()).authorize(acls, session, op, rt, name)


def test_config() -> None:
    assert StandardAuthorizer.from_config({}) is None
    configured = StandardAuthorizer.from_config(
        {
            "authorizer.class.name": STANDARD_AUTHORIZER,
            "super.users": "User:admin; User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "true",
        }
    )
    assert configured == StandardAuthorizer(frozenset({"User:admin", "User:ANONYMOUS"}), True)
    with pytest.raises(AuthorizerConfigError, match="kraftwerk runs"):
        StandardAuthorizer.from_config({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})


def test_literal_prefixed_wildcard_and_no_acl_rule() -> None:
    assert not allowed([], Op.READ)  # no ACL, allow.everyone.if.no.acl.found=false
    assert allowed([], Op.READ, authorizer=StandardAuthorizer(allow_everyone_if_no_acl_found=True))
    # an ACL on the resource for someone else: the no-ACL rule no longer applies
    bob_only = [acl("orders", Op.READ, principal="User:bob")]
    assert not allowed(bob_only, Op.READ, authorizer=StandardAuthorizer(allow_everyone_if_no_acl_found=True))
    assert allowed([acl("orders", Op.READ)], Op.READ)
    assert not allowed([acl("orders", Op.READ)], Op.READ, "orders2")
    assert allowed([acl("ord", Op.READ, pattern=Pt.PREFIXED)], Op.READ, "orders2")
    assert not allowed([acl("ord", Op.READ, pattern=Pt.LITERAL)], Op.READ, "orders2")
    assert allowed([acl("*", Op.READ)], Op.READ, "anything")
    assert allowed([acl("orders", Op.READ, principal="User:*")], Op.READ)
    assert not allowed([acl("orders", Op.READ, host="10.0.0.2")], Op.READ)
    assert allowed([acl("orders", Op.READ, host="10.0.0.1")], Op.READ)
    assert not allowed([acl("orders", Op.READ, rt=Rt.GROUP)], Op.READ)
    assert allowed([acl("orders", Op.ALL)], Op.DELETE)


def test_deny_wins_and_implied_operations() -> None:
    assert not allowed([acl("orders", Op.READ), acl("ord", Op.READ, Perm.DENY, pattern=Pt.PREFIXED)], Op.READ)
    assert not allowed([acl("orders", Op.ALL), acl("*", Op.ALL, Perm.DENY)], Op.WRITE)
    for implying in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert allowed([acl("orders", implying)], Op.DESCRIBE)
    assert not allowed([acl("orders", Op.CREATE)], Op.DESCRIBE)
    assert allowed([acl("orders", Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS)
    assert not allowed([acl("orders", Op.DESCRIBE_CONFIGS)], Op.ALTER_CONFIGS)
    # a DENY of READ does not deny DESCRIBE (implication holds for ALLOW only)
    assert allowed([acl("orders", Op.DESCRIBE), acl("orders", Op.READ, Perm.DENY)], Op.DESCRIBE)


def test_super_users_may_do_anything() -> None:
    admin = StandardAuthorizer(frozenset({"User:admin"}))
    deny_all = [acl("*", Op.ALL, Perm.DENY, principal="User:*", rt=Rt.CLUSTER)]
    assert allowed(
        deny_all,
        Op.ALTER,
        "kafka-cluster",
        session=Session("User:admin", "1.1.1.1"),
        rt=Rt.CLUSTER,
        authorizer=admin,
    )
    assert not allowed(deny_all, Op.ALTER, "kafka-cluster", rt=Rt.CLUSTER, authorizer=admin)


def test_bindings_are_validated_as_kafka_does() -> None:
    good = {
        "resourceType": 2,
        "resourceName": "t",
        "resourcePatternType": 3,
        "principal": "User:a",
        "host": "*",
        "operation": 3,
        "permissionType": 3,
    }
    assert binding_from(good) == StandardAcl(2, "t", 3, "User:a", "*", 3, 3)
    for change, text in (
        ({"resourceType": 1}, "Invalid resourceType ANY"),
        ({"resourcePatternType": 2}, "Invalid patternType MATCH"),
        ({"operation": 1}, "Invalid operation ANY"),
        ({"permissionType": 1}, "Invalid permissionType ANY"),
        ({"resourceName": ""}, "Resource name should not be empty"),
        ({"principal": "alice"}, "Invalid principal alice"),
    ):
        with pytest.raises(ApiError) as refused:
            binding_from({**good, **change})
        assert refused.value.text is not None and refused.value.text.startswith(text)


def test_filters() -> None:
    literal, prefixed, wildcard = (
        acl("orders", Op.READ),
        acl("ord", Op.WRITE, pattern=Pt.PREFIXED),
        acl("*", Op.READ),
    )
    every = (literal, prefixed, wildcard)
    assert [a for a in every if AclFilter().matches(a)] == list(every)
    match = AclFilter(Rt.TOPIC, "orders", Pt.MATCH)
    assert [a for a in every if match.matches(a)] == list(every)
    assert [a for a in every if AclFilter(Rt.TOPIC, "orders", Pt.ANY).matches(a)] == [literal]
    assert [a for a in every if AclFilter(Rt.TOPIC, "ord", Pt.PREFIXED).matches(a)] == [prefixed]
    assert [a for a in every if AclFilter(operation=Op.WRITE).matches(a)] == [prefixed]
    assert not AclFilter(principal="User:bob").matches(literal)
    with pytest.raises(ApiError, match="Unknown patternFilter"):
        AclFilter.from_request({"resourceTypeFilter": 0, "operation": 1, "permissionType": 1})
