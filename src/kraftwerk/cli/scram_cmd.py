"""``kraftwerk scram describe|alter``: SCRAM users of a running cluster, what
``kafka-configs.sh --entity-type users`` does with ``SCRAM-SHA-256=[iterations=N,password=P]``.

The password is salted here (a fresh random salt, RFC 5802's SaltedPassword) and only the salted
form travels (AlterUserScramCredentials, as Kafka's admin client sends it); the controller stores
the derived keys. Output lines are Kafka's ConfigCommand's.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import secrets
from typing import Any

from kraftwerk.cli.args import scram_mechanism_config, user_name
from kraftwerk.cli.features_cmd import FeatureCommandError, add_connection_flags, client_settings, open_client
from kraftwerk.cli.output import add_output_flag, print_json
from kraftwerk.controller.scram_control import MECHANISM_NAMES
from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.sasl_mechanisms import MIN_ITERATIONS, SCRAM_MECHANISMS
from kraftwerk.runtime.admin_client import AdminClientError

_ADD = re.compile(r"(?P<mechanism>SCRAM-SHA-(?:256|512))=\[(?P<items>[^\]]*)\]")


class ScramCommandError(KraftwerkError):
    """A bad ``--add``/``--delete`` value or a refused alteration (one stderr line, exit 1)."""


def register(groups: Any) -> None:
    parser = groups.add_parser("scram", help="manage SCRAM users (kafka-configs --entity-type users)")
    add_connection_flags(parser, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    describe = commands.add_parser("describe", help="list users' SCRAM mechanisms and iterations")
    describe.add_argument("--user", action="append", default=[], type=user_name,
                          help="a user to describe (default: all)")
    add_connection_flags(describe, argparse.SUPPRESS)
    add_output_flag(describe)
    describe.set_defaults(func=_describe)
    alter = commands.add_parser("alter", help="add, replace or delete a user's SCRAM credentials")
    alter.add_argument("--user", required=True, type=user_name, help="the user name")
    alter.add_argument("--add", action="append", default=[], type=scram_mechanism_config,
                       metavar="MECHANISM=[iterations=N,password=P]",
                       help="e.g. 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' (repeatable)")
    alter.add_argument("--delete", action="append", default=[], choices=sorted(SCRAM_MECHANISMS),
                       help="a mechanism whose credential to delete (repeatable)")
    add_connection_flags(alter, argparse.SUPPRESS)
    alter.set_defaults(func=_alter)


def _describe(args: argparse.Namespace) -> int:
    with open_client(client_settings(args)) as client:
        try:
            response = client.describe_user_scram_credentials(args.user)
        except AdminClientError as exc:
            raise FeatureCommandError(str(exc)) from None
    found = [r for r in response["results"] if r["errorCode"] == 0]
    if args.output == "json":
        print_json({r["user"]: {_mechanism(c["mechanism"]): {"iterations": c["iterations"]}
                                for c in r["credentialInfos"]} for r in found})
        return 0
    for result in found:
        infos = ", ".join(f"{_mechanism(c['mechanism'])}=iterations={c['iterations']}"
                          for c in result["credentialInfos"])
        print(f"SCRAM credential configs for user-principal '{result['user']}' are {infos}")
    return 0


def _mechanism(number: int) -> str:
    return MECHANISM_NAMES.get(number, str(number))


def upsertion(user: str, text: str) -> dict[str, Any]:
    """One ``--add`` value as an AlterUserScramCredentials upsertion (the password salted here)."""
    match = _ADD.fullmatch(text.strip())
    if match is None:
        raise ScramCommandError("Invalid --add value: expected SCRAM-SHA-256=[iterations=N,password=P] or "
                                "SCRAM-SHA-512=[...]")
    items: dict[str, str] = {}
    for item in match["items"].split(","):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in ("iterations", "password"):
            raise ScramCommandError(f"Invalid --add value for {match['mechanism']}: only iterations and "
                                    "password may be given")
        items[key.strip()] = value
    if "password" not in items:
        raise ScramCommandError(f"Invalid --add value for {match['mechanism']}: no password")
    try:
        iterations = int(items.get("iterations", MIN_ITERATIONS))
    except ValueError:
        raise ScramCommandError(f"Invalid --add value for {match['mechanism']}: iterations is not a number") \
            from None
    number, digest = SCRAM_MECHANISMS[match["mechanism"]]
    salt = secrets.token_bytes(32)
    salted = hashlib.pbkdf2_hmac(digest, items["password"].encode(), salt, max(iterations, 1))
    return {"name": user, "mechanism": number, "iterations": iterations, "salt": salt,
            "saltedPassword": salted}


def _alter(args: argparse.Namespace) -> int:
    if not args.add and not args.delete:
        raise ScramCommandError("Nothing to alter: give --add or --delete")
    upsertions = [upsertion(args.user, text) for text in args.add]
    deletions = [{"name": args.user, "mechanism": SCRAM_MECHANISMS[m][0]} for m in args.delete]
    with open_client(client_settings(args)) as client:
        try:
            response = client.alter_user_scram_credentials(deletions, upsertions)
        except AdminClientError as exc:
            raise FeatureCommandError(str(exc)) from None
    failed = [r for r in response["results"] if r["errorCode"] != 0]
    if failed:
        text = failed[0]["errorMessage"] or Errors.for_code(failed[0]["errorCode"]).message
        raise ScramCommandError(f"Error while altering SCRAM credentials of user {args.user}: {text}")
    print(f"Completed updating config for user {args.user}.")
    return 0
