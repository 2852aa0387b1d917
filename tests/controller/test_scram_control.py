"""AlterUserScramCredentials and DescribeUserScramCredentials on the controller: records, Kafka's
checks and texts, the metadata.version gate, and the keys a SCRAM login is checked against."""

from __future__ import annotations

import hashlib
from typing import Any

from kraftwerk.controller import features as fc
from kraftwerk.protocol.sasl_mechanisms import ScramServer, scram_credential
from kraftwerk.runtime.security import scram_lookup_from
from kraftwerk.versions.metadata_version import MetadataVersion as MV
from tests.controller.harness import Log, activate, call, controller


def _started(mv: MV) -> tuple[Log, Any]:
    log = Log()
    bootstrap = [fc.feature_level_record("metadata.version", mv.feature_level)]
    ctl = controller(1, (1,), bootstrap_records=bootstrap)
    log.controllers.append(ctl)
    activate(log, ctl)
    return log, ctl


def _upsert(name: str, mechanism: int = 1, iterations: int = 4096, password: bytes = b"pw") -> dict[str, Any]:
    salt = b"salt-" + name.encode()
    digest = "sha256" if mechanism == 1 else "sha512"
    return {"name": name, "mechanism": mechanism, "iterations": iterations, "salt": salt,
            "saltedPassword": hashlib.pbkdf2_hmac(digest, password, salt, iterations)}


def _results(response: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    return {r["user"]: (r["errorCode"], r["errorMessage"]) for r in response["results"]}


def test_alter_then_describe_and_log_in() -> None:
    log, ctl = _started(MV.IBP_4_0_IV3)
    response = call(log, ctl, 51, 0, {"deletions": [], "upsertions": [
        _upsert("alice"), _upsert("alice2", 2, 8192), _upsert("", 1), _upsert("bob", 3),
        _upsert("carol", 1, 100), _upsert("dave", 1, 20000), _upsert("erin"), _upsert("erin", 2)]})
    assert _results(response) == {
        "alice": (0, None), "alice2": (0, None),
        "": (93, "Username must not be empty"), "bob": (33, "Unknown SCRAM mechanism"),
        "carol": (93, "Too few iterations"), "dave": (93, "Too many iterations"),
        "erin": (92, "A user credential cannot be altered twice in the same request")}
    assert [r.spec.name for r in log.decoded()][-2:] == ["UserScramCredentialRecord"] * 2
    assert b"pw" not in b"".join(bytes(r.value["storedKey"]) for r in log.decoded()[-2:])

    lookup = scram_lookup_from(lambda: ctl.image)
    credential = lookup("SCRAM-SHA-256", "alice")
    assert credential == scram_credential("SCRAM-SHA-256", "pw", salt=b"salt-alice")
    assert lookup("SCRAM-SHA-512", "alice") is None
    server = ScramServer("SCRAM-SHA-256", lambda u: lookup("SCRAM-SHA-256", u))
    assert server.step(b"n,,n=alice,r=x").token.startswith(b"r=x")

    described = call(log, ctl, 50, 0, {"users": None})
    assert [(r["user"], r["credentialInfos"]) for r in described["results"]] == [
        ("alice", [{"mechanism": 1, "iterations": 4096}]), ("alice2", [{"mechanism": 2, "iterations": 8192}])]
    described = call(log, ctl, 50, 0, {"users": [{"name": "zed"}, {"name": "alice"}, {"name": "alice"}]})
    assert _results(described) == {
        "zed": (91, "Attempt to describe a user credential that does not exist: zed"),
        "alice": (92, "Cannot describe SCRAM credentials for the same user twice in a single request: alice")}

    response = call(log, ctl, 51, 0, {"deletions": [{"name": "alice", "mechanism": 1},
                                                    {"name": "alice2", "mechanism": 1}], "upsertions": []})
    assert _results(response) == {"alice": (0, None), "alice2": (91, "Attempt to delete a user credential "
                                                                  "that does not exist")}
    assert lookup("SCRAM-SHA-256", "alice") is None


def test_scram_needs_metadata_version_3_5_iv2() -> None:
    log, ctl = _started(MV.IBP_3_5_IV1)
    response = call(log, ctl, 51, 0, {"deletions": [], "upsertions": [_upsert("alice")]})
    assert _results(response) == {"alice": (35, "The current metadata.version does not support SCRAM")}
