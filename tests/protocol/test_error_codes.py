"""Kafka's error-code table."""

from __future__ import annotations

import pytest

from kraftwerk.protocol.error_codes import Errors, all_errors, by_name, lookup


def test_codes_are_unique_and_contiguous() -> None:
    codes = [e.code for e in Errors]
    assert len(codes) == len(set(codes))
    assert sorted(codes) == list(range(-1, 135))  # Kafka 4.3's -1..133, then kraftwerk's KIP-920 code
    assert [e.code for e in all_errors()] == sorted(codes)


@pytest.mark.parametrize(("name", "code", "retriable"), [
    ("UNKNOWN_SERVER_ERROR", -1, False),
    ("NONE", 0, False),
    ("CORRUPT_MESSAGE", 2, True),
    ("NOT_LEADER_OR_FOLLOWER", 6, True),
    ("REQUEST_TIMED_OUT", 7, True),
    ("UNSUPPORTED_VERSION", 35, False),
    ("INVALID_CONFIG", 40, False),
    ("NOT_CONTROLLER", 41, True),
    ("INVALID_REQUEST", 42, False),
    ("UNSUPPORTED_FOR_MESSAGE_FORMAT", 43, False),
    ("CONCURRENT_TRANSACTIONS", 51, True),
    ("KAFKA_STORAGE_ERROR", 56, True),
    ("PRODUCER_FENCED", 90, False),
    ("INVALID_UPDATE_VERSION", 95, False),
    ("FEATURE_UPDATE_FAILED", 96, False),
    ("UNKNOWN_TOPIC_ID", 100, True),
    ("DUPLICATE_BROKER_REGISTRATION", 101, False),
    ("BROKER_ID_NOT_REGISTERED", 102, False),
    ("INCONSISTENT_CLUSTER_ID", 104, False),
    ("INVALID_REGISTRATION", 119, False),
    ("SHARE_SESSION_NOT_FOUND", 122, True),
    ("VOTER_NOT_FOUND", 127, False),
    ("SHARE_SESSION_LIMIT_REACHED", 133, True),
    ("MANUAL_METADATA_VERSION_MANAGEMENT_DISABLED", 134, False),
])
def test_spot_checks(name: str, code: int, retriable: bool) -> None:
    e = by_name(name)
    assert e.code == code
    assert e.retriable is retriable
    assert Errors.for_code(code) is e
    assert lookup(code) is e


def test_messages() -> None:
    assert Errors.NONE.message is None
    assert Errors.NONE.describe() == "NONE"
    assert Errors.INVALID_UPDATE_VERSION.message == "The given update version was invalid."
    assert Errors.FEATURE_UPDATE_FAILED.message == (
        "Unable to update finalized features due to an unexpected server error.")
    assert Errors.UNSUPPORTED_VERSION.describe() == "The version of API is not supported."
    for e in Errors:
        if e is not Errors.NONE:
            assert e.message and e.message.strip() == e.message


def test_unknown_codes_and_names() -> None:
    assert Errors.for_code(32000) is Errors.UNKNOWN_SERVER_ERROR
    assert lookup(32000) is None
    assert by_name("not_leader_for_partition") is Errors.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(KeyError):
        by_name("NO_SUCH_ERROR")


def test_agrees_with_kio_where_it_is_installed() -> None:
    kio_errors = pytest.importorskip("kio.schema.errors")
    for theirs in kio_errors.ErrorCode:
        ours = Errors.for_code(int(theirs))
        assert ours.name == theirs.name.upper()
        assert ours.retriable is bool(theirs.retriable)
