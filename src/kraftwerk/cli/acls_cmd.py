"""``kraftwerk acls``: ``kafka-acls.sh`` over CreateAcls / DescribeAcls / DeleteAcls, with its
flags (``--add|--remove|--list``, principals, hosts, operations, resources, ``--producer`` /
``--consumer``, ``--resource-pattern-type``, ``--force``) and its output lines."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from kraftwerk.cli.args import acl_operation, acl_principal, acl_resource_name, resource_pattern_type
from kraftwerk.cli.features_cmd import add_connection_flags, client_settings, open_client
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.controller.authorizer import CLUSTER_NAME
from kraftwerk.errors import KraftwerkError
from kraftwerk.image.model import AclOperation, AclPatternType, AclPermissionType, AclResourceType
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.runtime.admin_client import AdminClient, AdminClientError

#: (resource type, name, pattern type) and (principal, host, operation, permission), by enum names
Pattern = tuple[str, str | None, str]
Entry = tuple[str, str, str, str]

_PRODUCER_TOPIC_OPS = ("WRITE", "DESCRIBE", "CREATE")
_CONSUMER_TOPIC_OPS = ("READ", "DESCRIBE")


class AclCommandError(KraftwerkError):
    """Kafka's "Error while executing ACL command" or a usage error: one stderr line, exit 1."""


def register(groups: Any) -> None:
    parser = groups.add_parser("acls", help="manage ACLs (kafka-acls)",
                               description="This tool helps to manage acls on kafka.")
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--add", action="store_true", help="Indicates you are trying to add ACLs.")
    actions.add_argument("--remove", action="store_true", help="Indicates you are trying to remove ACLs.")
    actions.add_argument("--list", action="store_true",
                         help="List ACLs for the specified resource, use --topic <topic> or --group <group> "
                              "or --cluster to specify a resource.")
    parser.add_argument("--topic", action="append", default=[], type=acl_resource_name,
                        help="topic to which ACLs should be added or removed. A value of '*' indicates ACL "
                             "should apply to all topics.")
    parser.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    parser.add_argument("--group", action="append", default=[], type=acl_resource_name,
                        help="Consumer Group to which the ACLs should be added or removed.")
    parser.add_argument("--transactional-id", action="append", default=[], type=acl_resource_name,
                        help="The transactionalId to which ACLs should be added or removed.")
    parser.add_argument("--resource-pattern-type", type=resource_pattern_type, default="LITERAL",
                        help="The type of the resource pattern or pattern filter: literal or prefixed when "
                             "adding; also any or match when listing or removing (default literal).")
    parser.add_argument("--operation", action="append", default=[], type=acl_operation,
                        help="Operation that is being allowed or denied (Read, Write, Create, Delete, Alter, "
                             "Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, "
                             "CreateTokens, DescribeTokens, All; default All).")
    parser.add_argument("--allow-principal", action="append", default=[], type=acl_principal,
                        help="principal is in principalType:name format, e.g. User:alice or User:'*'.")
    parser.add_argument("--deny-principal", action="append", default=[], type=acl_principal,
                        help="principal is in principalType:name format. DENY RULES TAKE PRECEDENCE OVER "
                             "ALLOW RULES.")
    parser.add_argument("--allow-host", action="append", default=[], type=acl_resource_name,
                        help="Host from which --allow-principal principals have access (default '*').")
    parser.add_argument("--deny-host", action="append", default=[], type=acl_resource_name,
                        help="Host from which --deny-principal principals are denied access (default '*').")
    parser.add_argument("--principal", action="append", default=[], type=acl_principal,
                        help="List ACLs for the specified principal (with --list).")
    parser.add_argument("--producer", action="store_true",
                        help="Convenience option to add/remove ACLs for producer role: WRITE, DESCRIBE and "
                             "CREATE on topic.")
    parser.add_argument("--consumer", action="store_true",
                        help="Convenience option to add/remove ACLs for consumer role: READ, DESCRIBE on "
                             "topic and READ on group.")
    parser.add_argument("--force", action="store_true", help="Assume Yes to all queries and do not prompt.")
    add_connection_flags(parser, None)
    add_output_flag(parser)
    parser.set_defaults(func=_run)


# ---------------------------------------------------------------------- Kafka's texts

def pattern_text(pattern: Pattern) -> str:
    """Kafka's ``ResourcePattern.toString`` (and ``ResourcePatternFilter``'s)."""
    kind, name, pattern_type = pattern
    return f"ResourcePattern(resourceType={kind}, name={'<any>' if name is None else name}, " \
           f"patternType={pattern_type})"


def entry_text(entry: Entry) -> str:
    """Kafka's ``AccessControlEntry.toString``."""
    principal, host, operation, permission = entry
    return f"(principal={principal}, host={host}, operation={operation}, permissionType={permission})"


def _block(head: str, entries: Iterable[Entry]) -> str:
    lines = "\n".join("\t" + entry_text(e) for e in entries)
    return f"{head}: \n {lines} \n"


# ---------------------------------------------------------------------- options → ACLs

def _check_usage(args: argparse.Namespace) -> None:
    def fail(text: str) -> None:
        raise AclCommandError(text)

    if args.list and (args.producer or args.consumer or args.allow_host or args.allow_principal
                      or args.deny_host or args.deny_principal):
        fail("Option \"[list]\" can't be used with options \"[producer, consumer, allow-host, "
             "allow-principal, deny-host, deny-principal]\"")
    if (args.producer or args.consumer) and (args.operation or args.deny_principal or args.deny_host):
        fail("Option \"[producer|consumer]\" can't be used with options \"[operation, deny-principal, "
             "deny-host]\"")
    if args.principal and not args.list:
        fail("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        fail("With --producer you must specify a --topic")
    if args.consumer and (not args.topic or not args.group or (
            not args.producer and (args.cluster or args.transactional_id))):
        fail("With --consumer you must specify a --topic and a --group and no --cluster or "
             "--transactional-id option should be specified.")


def _resources(args: argparse.Namespace, required: bool) -> list[Pattern]:
    pattern = args.resource_pattern_type
    out: list[Pattern] = [("TOPIC", t, pattern) for t in args.topic]
    if args.cluster and pattern == "LITERAL":
        out.append(("CLUSTER", CLUSTER_NAME, "LITERAL"))
    out += [("GROUP", g, pattern) for g in args.group]
    out += [("TRANSACTIONAL_ID", t, pattern) for t in args.transactional_id]
    if not out and required:
        raise AclCommandError("You must provide at least one resource: --topic <topic> or --cluster or "
                              "--group <group> or --delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(out))


def _entries(args: argparse.Namespace, operations: Iterable[str]) -> list[Entry]:
    allow_hosts = args.allow_host or (["*"] if args.allow_principal else [])
    deny_hosts = args.deny_host or (["*"] if args.deny_principal else [])
    out = [(p, h, op, "ALLOW") for p in args.allow_principal for op in operations for h in allow_hosts]
    out += [(p, h, op, "DENY") for p in args.deny_principal for op in operations for h in deny_hosts]
    return list(dict.fromkeys(out))


def _resource_acls(args: argparse.Namespace) -> dict[Pattern, list[Entry]]:
    """Kafka's ``getResourceFilterToAcls``: the options' ACLs by resource."""
    resources = _resources(args, required=True)
    out: dict[Pattern, list[Entry]] = {}
    ops: tuple[str, ...]
    if not args.producer and not args.consumer:
        entries = _entries(args, args.operation or ["ALL"])
        out = {r: entries for r in resources}
    if args.producer:
        for r in resources:
            if r[0] in ("TOPIC", "TRANSACTIONAL_ID"):
                ops = _PRODUCER_TOPIC_OPS if r[0] == "TOPIC" else ("WRITE", "DESCRIBE")
                out[r] = _entries(args, ops)
    if args.consumer:
        for r in resources:
            if r[0] in ("TOPIC", "GROUP"):
                ops = _CONSUMER_TOPIC_OPS if r[0] == "TOPIC" else ("READ",)
                out[r] = list(dict.fromkeys([*out.get(r, []), *_entries(args, ops)]))
    return out


def _filter(pattern: Pattern | None, entry: Entry | None = None) -> dict[str, Any]:
    kind, name, pattern_type = pattern if pattern is not None else ("ANY", None, "ANY")
    principal, host, operation, permission = entry if entry is not None else (None, None, "ANY", "ANY")
    return {"resourceTypeFilter": int(AclResourceType[kind]), "resourceNameFilter": name,
            "patternTypeFilter": int(AclPatternType[pattern_type]), "principalFilter": principal,
            "hostFilter": host, "operation": int(AclOperation[operation]),
            "permissionType": int(AclPermissionType[permission])}


def _name(enum_type: Any, code: int) -> str:
    try:
        return str(enum_type(code).name)
    except ValueError:
        return "UNKNOWN"


def _binding(pattern: Pattern, entry: Entry) -> dict[str, Any]:
    return {"resourceType": pattern[0], "resourceName": pattern[1], "patternType": pattern[2],
            "principal": entry[0], "host": entry[1], "operation": entry[2], "permissionType": entry[3]}


def _fail(error_code: int, message: str | None) -> AclCommandError:
    text = message or Errors.for_code(error_code).message or Errors.for_code(error_code).name
    return AclCommandError(f"Error while executing ACL command: {text}")


# ---------------------------------------------------------------------- actions

def _run(args: argparse.Namespace) -> int:
    _check_usage(args)
    settings = client_settings(args)
    with open_client(settings) as client:
        try:
            if args.add:
                return _add(client, args)
            if args.remove:
                return _remove(client, args)
            return _list(client, args)
        except AdminClientError as exc:
            raise AclCommandError(f"Error while executing ACL command: {exc}") from None


def _add(client: AdminClient, args: argparse.Namespace) -> int:
    if args.resource_pattern_type not in ("LITERAL", "PREFIXED"):
        raise AclCommandError(f"A '--resource-pattern-type' value of '{args.resource_pattern_type}' is not "
                              "valid when adding acls.")
    resource_acls = _resource_acls(args)
    if any(not entries for entries in resource_acls.values()):
        raise AclCommandError("You must specify one of: --allow-principal, --deny-principal when trying to "
                              "add ACLs.")
    added: list[dict[str, Any]] = []
    for pattern, entries in resource_acls.items():
        if args.output != "json":
            print(_block(f"Adding ACLs for resource `{pattern_text(pattern)}`", entries))
        creations = [{"resourceType": int(AclResourceType[pattern[0]]), "resourceName": pattern[1],
                      "resourcePatternType": int(AclPatternType[pattern[2]]), "principal": e[0], "host": e[1],
                      "operation": int(AclOperation[e[2]]), "permissionType": int(AclPermissionType[e[3]])}
                     for e in entries]
        response = client.create_acls(creations)
        for result in response["results"]:
            if result["errorCode"]:
                raise _fail(result["errorCode"], result["errorMessage"])
        added += [_binding(pattern, e) for e in entries]
    if args.output == "json":
        print_json({"added": added})
    return 0


def _confirm(args: argparse.Namespace, question: str) -> bool:
    if args.force:
        return True
    print(question)
    return sys.stdin.readline().strip().lower() == "y"


def _remove(client: AdminClient, args: argparse.Namespace) -> int:
    removed: list[dict[str, Any]] = []
    for pattern, entries in _resource_acls(args).items():
        if entries:
            question = _block("Are you sure you want to remove ACLs", entries) + \
                f" from resource filter `{pattern_text(pattern)}`? (y/n)"
            filters = [_filter(pattern, e) for e in entries]
        else:
            question = ("Are you sure you want to delete all ACLs for resource filter "
                        f"`{pattern_text(pattern)}`? (y/n)")
            filters = [_filter(pattern)]
        if not _confirm(args, question):
            continue
        response = client.delete_acls(filters)
        for result in response["filterResults"]:
            if result["errorCode"]:
                raise _fail(result["errorCode"], result["errorMessage"])
            removed += [_described(m) for m in result["matchingAcls"]]
    if args.output == "json":
        print_json({"removed": removed})
    return 0


def _described(acl: dict[str, Any]) -> dict[str, Any]:
    return {"resourceType": _name(AclResourceType, acl["resourceType"]), "resourceName": acl["resourceName"],
            "patternType": _name(AclPatternType, acl["patternType"]), "principal": acl["principal"],
            "host": acl["host"], "operation": _name(AclOperation, acl["operation"]),
            "permissionType": _name(AclPermissionType, acl["permissionType"])}


def _list(client: AdminClient, args: argparse.Namespace) -> int:
    resources: list[Pattern | None] = [*_resources(args, required=False)]
    found: dict[Pattern, list[Entry]] = {}
    for pattern in resources or [None]:
        response = client.describe_acls(_filter(pattern))
        if response["errorCode"]:
            raise _fail(response["errorCode"], response["errorMessage"])
        for resource in response["resources"]:
            key = (_name(AclResourceType, resource["resourceType"]), resource["resourceName"],
                   _name(AclPatternType, resource["patternType"]))
            entries = found.setdefault(key, [])
            entries += [(a["principal"], a["host"], _name(AclOperation, a["operation"]),
                         _name(AclPermissionType, a["permissionType"])) for a in resource["acls"]]
    if args.output == "json":
        print_json({"acls": [_binding(p, e) for p, entries in found.items() for e in entries
                             if not args.principal or e[0] in args.principal]})
        return 0
    for principal in args.principal or [None]:
        if principal is not None:
            print(f"ACLs for principal `{principal}`")
        for pattern, entries in found.items():
            shown = [e for e in entries if principal is None or e[0] == principal]
            if shown:
                print(_block(f"Current ACLs for resource `{pattern_text(pattern)}`", shown))
    return 0
