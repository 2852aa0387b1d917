"""SCRAM credentials (KIP-554) as Kafka's ``ScramControlManager`` and ``ScramImage`` keep them:
AlterUserScramCredentials judged by the active controller into UserScramCredentialRecord /
RemoveUserScramCredentialRecord, and DescribeUserScramCredentials answered from any image (a
broker's included). Only salted keys are stored; a salted password never reaches the log."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from kraftwerk.controller.common import rec
from kraftwerk.controller.effects import AppendThenRespond, Body, Respond
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.protocol.messages import as_body
from kraftwerk.protocol.messages.sasl import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsRequestScramCredentialDeletion,
    AlterUserScramCredentialsRequestScramCredentialUpsertion,
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResponseAlterUserScramCredentialsResult,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    DescribeUserScramCredentialsResponseCredentialInfo,
    DescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult,
)
from kraftwerk.protocol.routing import Request
from kraftwerk.protocol.sasl_mechanisms import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    salted_credential,
)
from kraftwerk.versions.metadata_version import MetadataVersion

if TYPE_CHECKING:
    from kraftwerk.controller.quorum import QuorumController

#: UserScramCredentialRecord's mechanism byte → the SCRAM mechanism's name.
MECHANISM_NAMES = {number: name for name, (number, _) in SCRAM_MECHANISMS.items()}
_TWICE = "A user credential cannot be altered twice in the same request"
_NO_SCRAM = "The current metadata.version does not support SCRAM"

Deletion = AlterUserScramCredentialsRequestScramCredentialDeletion
Upsertion = AlterUserScramCredentialsRequestScramCredentialUpsertion
AlterResult = AlterUserScramCredentialsResponseAlterUserScramCredentialsResult
CredentialInfo = DescribeUserScramCredentialsResponseCredentialInfo
DescribeResult = DescribeUserScramCredentialsResponseDescribeUserScramCredentialsResult


def _error(user: str, error: Errors, message: str | None) -> AlterResult:
    return {"user": user, "errorCode": error.code, "errorMessage": message}


def _described(user: str, error: Errors, message: str | None, infos: list[CredentialInfo]) -> DescribeResult:
    return {"user": user, "errorCode": error.code, "errorMessage": message, "credentialInfos": infos}


class ScramControlManager:
    """AlterUserScramCredentials against the committed image, with Kafka's checks and texts."""

    def __init__(self, controller: QuorumController) -> None:
        self._c = controller

    def alter(self, request: Request) -> AppendThenRespond:
        mv = self._c.image.metadata_version
        supported = mv is not None and mv >= MetadataVersion.IBP_3_5_IV2
        errors: dict[str, tuple[Errors, str]] = {}
        deletions: dict[str, Deletion] = {}
        upsertions: dict[str, Upsertion] = {}
        body = cast(AlterUserScramCredentialsRequest, request.body)
        batches: tuple[tuple[str, list[Deletion] | list[Upsertion]], ...] = (
            ("delete", body["deletions"]), ("upsert", body["upsertions"]))
        for kind, items in batches:
            for item in items:
                name = item["name"]
                if name in errors:
                    continue
                if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
                    errors[name] = (Errors.DUPLICATE_RESOURCE, _TWICE)
                elif not supported:
                    errors[name] = (Errors.UNSUPPORTED_VERSION, _NO_SCRAM)
                elif (problem := self._problem(kind, item)) is not None:
                    errors[name] = problem
                elif kind == "delete":
                    deletions[name] = item
                else:
                    upsertions[name] = cast(Upsertion, item)
        records = [rec("RemoveUserScramCredentialRecord", 0, {"name": d["name"], "mechanism": d["mechanism"]})
                   for d in deletions.values()]
        records += [_credential_record(u) for u in upsertions.values()]
        results = [_error(name, Errors.NONE, None) for name in (*deletions, *upsertions)]
        results += [_error(name, error, text) for name, (error, text) in errors.items()]
        response: AlterUserScramCredentialsResponse = {"throttleTimeMs": 0, "results": results}
        return AppendThenRespond(tuple(records), as_body(response))

    def _problem(self, kind: str, item: Deletion | Upsertion) -> tuple[Errors, str] | None:
        if not item["name"]:
            return Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if item["mechanism"] not in MECHANISM_NAMES:
            return Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if kind == "delete":
            if (item["mechanism"], item["name"]) not in self._c.image.scram:
                return Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            return None
        iterations = cast(Upsertion, item)["iterations"]
        if iterations < MIN_ITERATIONS:
            return Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if iterations > MAX_ITERATIONS:
            return Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
        return None

    def describe(self, request: Request) -> Respond:
        return Respond(describe_scram(self._c.image, request.body))


def _credential_record(upsertion: Upsertion) -> Any:
    """The record of an upsertion: the salted password turned into RFC 5802's stored and server keys."""
    mechanism = MECHANISM_NAMES[upsertion["mechanism"]]
    credential = salted_credential(mechanism, bytes(upsertion["saltedPassword"]), bytes(upsertion["salt"]),
                                   upsertion["iterations"])
    return rec("UserScramCredentialRecord", 0, {
        "name": upsertion["name"], "mechanism": upsertion["mechanism"], "salt": credential.salt,
        "storedKey": credential.stored_key, "serverKey": credential.server_key,
        "iterations": credential.iterations})


def describe_scram(image: MetadataImage, body: Mapping[str, Any]) -> Body:
    """DescribeUserScramCredentials as Kafka's ``ScramImage.describe``: every user when none is
    named; a user named twice is DUPLICATE_RESOURCE, an unknown one RESOURCE_NOT_FOUND."""
    return as_body(_describe_scram(image, cast(DescribeUserScramCredentialsRequest, body)))


def _describe_scram(image: MetadataImage, body: DescribeUserScramCredentialsRequest,
                    ) -> DescribeUserScramCredentialsResponse:
    by_user: dict[str, list[CredentialInfo]] = {}
    for (mechanism, user), credential in sorted(image.scram.items()):
        by_user.setdefault(user, []).append({"mechanism": mechanism, "iterations": credential.iterations})
    names = [u["name"] for u in body.get("users") or ()] or sorted(by_user)
    results = []
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            text = f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
            results.append(_described(name, Errors.DUPLICATE_RESOURCE, text, []))
        elif name not in by_user:
            text = f"Attempt to describe a user credential that does not exist: {name}"
            results.append(_described(name, Errors.RESOURCE_NOT_FOUND, text, []))
        else:
            results.append(_described(name, Errors.NONE, None, by_user[name]))
    return {"throttleTimeMs": 0, "errorCode": 0, "errorMessage": None, "results": results}
