"""Kafka's StandardAuthorizer model: who may do what to which resource, decided from the ACLs the
metadata image holds (AccessControlEntryRecord), with Kafka's rules.

Pure: the caller passes the image's ACLs, the session's principal and client address, and the
action. The rules are Kafka's ``StandardAuthorizerData``: a super user may do anything; an ACL
applies when its principal is the session's or ``User:*``, its host is the client's address or
``*``, and its resource pattern matches (LITERAL: the same name or ``*``; PREFIXED: a prefix of
the name); one matching DENY wins over every ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER also
allows DESCRIBE, one of ALTER_CONFIGS also allows DESCRIBE_CONFIGS (never for DENY); with no
matching ALLOW the action is denied, unless no ACL at all names the resource and
``allow.everyone.if.no.acl.found`` is true. The filters (DescribeAcls, DeleteAcls) are Kafka's
``AclBindingFilter``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kraftwerk.controller.errors import ApiError
from kraftwerk.image.model import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    StandardAcl,
)
from kraftwerk.protocol.error_codes import Errors

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"
"""The principal of a connection no SASL exchange authenticated (Kafka's ``KafkaPrincipal.ANONYMOUS``)."""

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
#: What an ACL (not a filter) may name: no UNKNOWN, ANY or MATCH.
_CONCRETE_RESOURCE_TYPES = frozenset(AclResourceType) - {AclResourceType.UNKNOWN, AclResourceType.ANY}
_CONCRETE_PATTERN_TYPES = frozenset({AclPatternType.LITERAL, AclPatternType.PREFIXED})
_CONCRETE_OPERATIONS = frozenset(AclOperation) - {AclOperation.UNKNOWN, AclOperation.ANY}
_CONCRETE_PERMISSIONS = frozenset({AclPermissionType.ALLOW, AclPermissionType.DENY})


class AuthorizerConfigError(ValueError):
    """An ``authorizer.class.name`` kraftwerk does not run."""


@dataclass(frozen=True, slots=True)
class Session:
    """Who sent a request: Kafka's ``KafkaPrincipal`` as ``Type:name`` and the client's IP address."""

    principal: str
    host: str


@dataclass(frozen=True, slots=True)
class StandardAuthorizer:
    """``authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer``."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False

    @classmethod
    def from_config(cls, props: Mapping[str, str]) -> StandardAuthorizer | None:
        """The authorizer ``server.properties`` configure; None when ``authorizer.class.name`` is
        empty (Kafka's default: every request is allowed)."""
        name = props.get("authorizer.class.name", "").strip()
        if not name:
            return None
        if name != STANDARD_AUTHORIZER:
            raise AuthorizerConfigError(f"authorizer.class.name={name} is not supported: kraftwerk runs "
                                        f"{STANDARD_AUTHORIZER} only")
        supers = frozenset(u.strip() for u in props.get("super.users", "").split(";") if u.strip())
        everyone = props.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
        return cls(supers, everyone)

    def authorize(self, acls: Iterable[StandardAcl], session: Session, operation: AclOperation,
                  resource_type: AclResourceType, name: str) -> bool:
        if session.principal in self.super_users:
            return True
        allowed = found = False
        for acl in acls:
            if acl.resource_type != resource_type or not _pattern_matches(acl, name):
                continue
            found = True
            verdict = _verdict(acl, session, operation)
            if verdict is AclPermissionType.DENY:
                return False
            allowed = allowed or verdict is AclPermissionType.ALLOW
        return allowed or (not found and self.allow_everyone_if_no_acl_found)

    def authorize_any(self, acls: Iterable[StandardAcl], session: Session, operation: AclOperation,
                      resource_type: AclResourceType) -> bool:
        """Whether some resource of the type may be acted on (Kafka's ``authorizeByResourceType``,
        simplified: an ALLOW for the session on any pattern of the type, or the no-ACL rule)."""
        if session.principal in self.super_users:
            return True
        acls = [a for a in acls if a.resource_type == resource_type]
        if any(_verdict(a, session, operation) is AclPermissionType.ALLOW for a in acls):
            return True
        return not acls and self.allow_everyone_if_no_acl_found


def _pattern_matches(acl: StandardAcl, name: str) -> bool:
    if acl.pattern_type == AclPatternType.LITERAL:
        return acl.resource_name in (name, WILDCARD)
    return acl.pattern_type == AclPatternType.PREFIXED and name.startswith(acl.resource_name)


def _verdict(acl: StandardAcl, session: Session, operation: AclOperation) -> AclPermissionType | None:
    """ALLOW or DENY when ``acl`` speaks for this session and operation, else None."""
    if acl.principal not in (session.principal, WILDCARD_PRINCIPAL):
        return None
    if acl.host not in (WILDCARD, session.host):
        return None
    if acl.operation != AclOperation.ALL:
        if acl.permission_type == AclPermissionType.ALLOW and operation == AclOperation.DESCRIBE:
            if acl.operation not in _IMPLIES_DESCRIBE:
                return None
        elif acl.permission_type == AclPermissionType.ALLOW and operation == AclOperation.DESCRIBE_CONFIGS:
            if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        elif acl.operation != operation:
            return None
    if acl.permission_type in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return AclPermissionType(acl.permission_type)
    return None


# ---------------------------------------------------------------------- bindings and filters

def binding_from(value: Mapping[str, Any], *, pattern_key: str = "resourcePatternType") -> StandardAcl:
    """A CreateAcls creation as an ACL, checked as Kafka's ``AclControlManager.validateNewAcl``
    (INVALID_REQUEST with Kafka's text)."""
    acl = StandardAcl(int(value["resourceType"]), value["resourceName"], int(value.get(pattern_key, 3)),
                      value["principal"], value["host"], int(value["operation"]),
                      int(value["permissionType"]))
    checks = (("resourceType", AclResourceType, acl.resource_type, _CONCRETE_RESOURCE_TYPES),
              ("patternType", AclPatternType, acl.pattern_type, _CONCRETE_PATTERN_TYPES),
              ("operation", AclOperation, acl.operation, _CONCRETE_OPERATIONS),
              ("permissionType", AclPermissionType, acl.permission_type, _CONCRETE_PERMISSIONS))
    for what, enum_type, code, concrete in checks:
        if code not in concrete:
            raise ApiError(Errors.INVALID_REQUEST, f"Invalid {what} {_name(enum_type, code)}")
    if not acl.resource_name:
        raise ApiError(Errors.INVALID_REQUEST, "Resource name should not be empty")
    kind, colon, user = acl.principal.partition(":")
    if not colon or not kind or not user:
        raise ApiError(Errors.INVALID_REQUEST, f"Invalid principal {acl.principal}: expected Type:name")
    return acl


def _name(enum_type: Any, code: int) -> str:
    try:
        return str(enum_type(code).name)
    except ValueError:
        return "UNKNOWN"


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's ``AclBindingFilter``: None or ANY matches every value."""

    resource_type: int = AclResourceType.ANY
    resource_name: str | None = None
    pattern_type: int = AclPatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = AclOperation.ANY
    permission_type: int = AclPermissionType.ANY

    @classmethod
    def from_request(cls, value: Mapping[str, Any]) -> AclFilter:
        """A DescribeAcls body or a DeleteAcls filter (INVALID_REQUEST when a part is UNKNOWN)."""
        out = cls(int(value["resourceTypeFilter"]), value.get("resourceNameFilter"),
                  int(value.get("patternTypeFilter", AclPatternType.LITERAL)), value.get("principalFilter"),
                  value.get("hostFilter"), int(value["operation"]), int(value["permissionType"]))
        if out.resource_type == AclResourceType.UNKNOWN or out.pattern_type == AclPatternType.UNKNOWN:
            raise ApiError(Errors.INVALID_REQUEST, "Unknown patternFilter.")
        if out.operation == AclOperation.UNKNOWN or out.permission_type == AclPermissionType.UNKNOWN:
            raise ApiError(Errors.INVALID_REQUEST, "Unknown entryFilter.")
        return out

    def matches(self, acl: StandardAcl) -> bool:
        return self._pattern(acl) and (
            self.principal is None or self.principal == acl.principal) and (
            self.host is None or self.host == acl.host) and (
            self.operation in (AclOperation.ANY, acl.operation)) and (
            self.permission_type in (AclPermissionType.ANY, acl.permission_type))

    def _pattern(self, acl: StandardAcl) -> bool:
        if self.resource_type not in (AclResourceType.ANY, acl.resource_type):
            return False
        if self.pattern_type not in (AclPatternType.ANY, AclPatternType.MATCH, acl.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (AclPatternType.ANY, acl.pattern_type):
            return self.resource_name == acl.resource_name
        if acl.pattern_type == AclPatternType.LITERAL:  # MATCH: the patterns that would apply to the name
            return acl.resource_name in (self.resource_name, WILDCARD)
        prefixed = acl.pattern_type == AclPatternType.PREFIXED
        return prefixed and self.resource_name.startswith(acl.resource_name)
