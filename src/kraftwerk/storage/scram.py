"""``kafka-storage format --add-scram``: SCRAM users written into the bootstrap metadata as
UserScramCredentialRecords, so that a SASL/SCRAM listener has users from its first start.

The argument syntax and error texts are Kafka's ``ScramParser``
(``SCRAM-SHA-256=[name=alice,password=alice-secret]``, or ``salt`` + ``saltedpassword`` in base64,
with optional ``iterations``), except that no error quotes a password or salted password.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from kraftwerk.protocol.frame import MetadataRecord
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.protocol.sasl_mechanisms import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    SaltedCredential,
    salted_credential,
    scram_credential,
)
from kraftwerk.storage.format import FormatError


def scram_records(arguments: Iterable[str]) -> list[MetadataRecord]:
    """One UserScramCredentialRecord per ``--add-scram`` argument."""
    spec = lookup_record("UserScramCredentialRecord")
    records = []
    for argument in arguments:
        mechanism, name, credential = _parse(argument.strip())
        records.append(MetadataRecord(spec, 0, {
            "name": name, "mechanism": SCRAM_MECHANISMS[mechanism][0], "salt": credential.salt,
            "storedKey": credential.stored_key, "serverKey": credential.server_key,
            "iterations": credential.iterations}))
    return records


def _parse(text: str) -> tuple[str, str, SaltedCredential]:
    mechanism, equals, config = text.partition("=")
    if not equals:
        raise FormatError(f"Failed to find equals sign in SCRAM argument '{mechanism}=...'")
    if mechanism not in SCRAM_MECHANISMS:
        raise FormatError(f"The add-scram mechanism {mechanism} is not supported.")
    if not config.startswith("["):
        raise FormatError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise FormatError("Expected configuration string to end with ]")
    components: dict[str, str] = {}
    for item in config[1:-1].split(","):
        key, eq, value = item.partition("=")
        if not eq:
            raise FormatError(f"Unable to find equals sign in SCRAM component '{key.strip()}'")
        components[key.strip()] = value.strip().strip('"')
    name = components.pop("name", None)
    if name is None:
        raise FormatError("You must supply 'name' to add-scram")
    salt = _base64(components.pop("salt", None), "salt")
    iterations_text = components.pop("iterations", None)
    try:
        iterations = MIN_ITERATIONS if iterations_text is None else int(iterations_text)
    except ValueError:
        raise FormatError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted = components.pop("saltedpassword", None)
    if components:
        raise FormatError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise FormatError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using "
                          f"{mechanism}")
    if iterations > MAX_ITERATIONS:
        raise FormatError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using "
                          f"{mechanism}")
    if password is not None:
        return mechanism, name, scram_credential(mechanism, password, iterations=iterations, salt=salt)
    if salted is None:
        raise FormatError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if salt is None:
        raise FormatError("You must supply 'salt' with 'saltedpassword' to add-scram")
    salted_password = _base64(salted, "saltedPassword")
    assert salted_password is not None
    return mechanism, name, salted_credential(mechanism, salted_password, salt, iterations)


def _base64(text: str | None, what: str) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise FormatError(f"Failed to decode given {what} (not base64)") from None
