"""The data plane's request handling on real files, without sockets: produce validation (magic,
corrupt bytes, min.insync.replicas, idempotent sequences), acks=all waiting for the followers,
fetches that wait for data, divergence answers to followers, ListOffsets, OffsetForLeaderEpoch,
the versions each software release parses (KIP-724), and ISR changes: resent after a lost answer,
releasing waiting produces once decided."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.broker.replica import TopicPartition
from kraftwerk.controller.common import rec
from kraftwerk.controller.partitions import alter_partition
from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.records.batch import iter_records
from kraftwerk.records.builder import build_records
from kraftwerk.runtime import data_plane
from kraftwerk.runtime.data_plane import DataPlane, kip724_min_versions
from kraftwerk.runtime.errors import NetworkError
from kraftwerk.versions.metadata_version import MetadataVersion
from kraftwerk.versions.software import SoftwareVersion

TOPIC_ID = uuid.UUID(int=99)
TP = TopicPartition("t", 0)


def _image(isr: list[int], configs: dict[str, str] | None = None, partition_epoch: int = 0) -> MetadataImage:
    delta = MetadataDelta()
    delta.replay(rec("TopicRecord", 0, {"name": "t", "topicId": TOPIC_ID}))
    delta.replay(rec("PartitionRecord", 0, {
        "partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2], "isr": isr, "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 3, "partitionEpoch": partition_epoch}))
    for name, value in (configs or {}).items():
        delta.replay(rec("ConfigRecord", 0, {"resourceType": 2, "resourceName": "t", "name": name,
                                             "value": value}))
    return delta.apply()


@pytest.fixture
def plane(tmp_path: Path) -> Iterator[DataPlane]:
    sent: list[Any] = []

    async def controller(api_key: int, version: int, body: Any) -> Any:
        sent.append((api_key, version, body))
        return {"errorCode": 0, "topics": []}

    dp = DataPlane(1, (str(tmp_path),), SoftwareVersion.for_release("4.3"), {}, controller, lambda: 7, None)
    dp.sent = sent  # type: ignore[attr-defined]
    yield dp
    asyncio.run(dp.close())


def _produce(dp: DataPlane, records: bytes, *, acks: int = 1, version: int = 9, timeout_ms: int = 200
             ) -> dict[str, Any]:
    body = {"transactionalId": None, "acks": acks, "timeoutMs": timeout_ms,
            "topicData": [{"name": "t", "partitionData": [{"index": 0, "records": records}]}]}
    response = asyncio.run(dp.handle(0, version, body))
    assert response is not None
    out: dict[str, Any] = response["responses"][0]["partitionResponses"][0]
    return out


def _batch(values: list[bytes], *, pid: int = -1, seq: int = -1) -> bytes:
    return build_records([(i, 1000 + i, None, v, ()) for i, v in enumerate(values)], base_offset=0,
                         producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq)


def _fetch_body(offset: int, *, replica: int = -1, max_wait: int = 0, last_epoch: int = -1) -> dict[str, Any]:
    return {"replicaId": replica, "maxWaitMs": max_wait, "minBytes": 1, "maxBytes": 1 << 20,
            "isolationLevel": 0,
            "sessionId": 0, "sessionEpoch": -1, "forgottenTopicsData": [], "rackId": "",
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "currentLeaderEpoch": -1,
                                                      "fetchOffset": offset, "lastFetchedEpoch": last_epoch,
                                                      "logStartOffset": -1, "partitionMaxBytes": 1 << 20}]}]}


def test_produce_checks_and_fetch(plane: DataPlane) -> None:
    plane.on_image(_image([1]))
    assert _produce(plane, _batch([b"a", b"b"]))["baseOffset"] == 0
    assert _produce(plane, _batch([b"c"]))["baseOffset"] == 2
    legacy = build_records([(0, 1, None, b"old", ())], magic=1)
    refused = _produce(plane, legacy)
    assert refused["errorCode"] == Errors.INVALID_RECORD.code
    assert refused["errorMessage"] == ("Produce requests with version 9 are only allowed to contain record "
                                       "batches with magic version 2")
    assert _produce(plane, _batch([b"x"])[:-2])["errorCode"] == Errors.CORRUPT_MESSAGE.code
    response = asyncio.run(plane.handle(1, 12, _fetch_body(1)))
    part = response["responses"][0]["partitions"][0]
    assert part["highWatermark"] == 3
    assert [r.value for r in iter_records(part["records"])] == [b"a", b"b", b"c"]  # whole batches
    out_of_range = asyncio.run(plane.handle(1, 12, _fetch_body(9)))["responses"][0]["partitions"][0]
    assert out_of_range["errorCode"] == Errors.OFFSET_OUT_OF_RANGE.code


def test_acks_all_waits_for_the_follower_and_min_isr_refuses(plane: DataPlane) -> None:
    plane.on_image(_image([1, 2], {"min.insync.replicas": "2"}))

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        produce = asyncio.ensure_future(plane.handle(0, 9, {
            "transactionalId": None, "acks": -1, "timeoutMs": 5000,
            "topicData": [{"name": "t", "partitionData": [{"index": 0, "records": _batch([b"a"])}]}]}))
        await asyncio.sleep(0.05)
        assert not produce.done()  # the follower has not fetched the record yet
        first = await plane.handle(1, 12, _fetch_body(0, replica=2))
        await plane.handle(1, 12, _fetch_body(1, replica=2))  # the follower's log now ends at 1
        return await asyncio.wait_for(produce, 2), first

    produced, fetched = asyncio.run(scenario())
    assert produced["responses"][0]["partitionResponses"][0]["errorCode"] == 0
    assert [r.value for r in iter_records(fetched["responses"][0]["partitions"][0]["records"])] == [b"a"]
    assert plane.replicas.partitions[next(iter(plane.replicas.partitions))].high_watermark == 1
    plane.on_image(_image([1], {"min.insync.replicas": "2"}, partition_epoch=1))
    assert _produce(plane, _batch([b"b"]), acks=-1)["errorCode"] == Errors.NOT_ENOUGH_REPLICAS.code
    assert _produce(plane, _batch([b"b"]), acks=1)["errorCode"] == 0


def test_acks_all_times_out_without_the_follower(plane: DataPlane) -> None:
    plane.on_image(_image([1, 2]))
    assert _produce(plane, _batch([b"a"]), acks=-1,
                    timeout_ms=100)["errorCode"] == Errors.REQUEST_TIMED_OUT.code


def test_idempotent_sequences(plane: DataPlane) -> None:
    plane.on_image(_image([1]))
    assert _produce(plane, _batch([b"a", b"b"], pid=5, seq=0))["baseOffset"] == 0
    assert _produce(plane, _batch([b"a", b"b"], pid=5, seq=0))["baseOffset"] == 0  # a retry: same offset
    assert _produce(plane, _batch([b"c"], pid=5,
                                  seq=5))["errorCode"] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code
    assert _produce(plane, _batch([b"c"], pid=5, seq=2))["baseOffset"] == 2
    ids = asyncio.run(plane.handle(22, 4, {"transactionalId": None, "transactionTimeoutMs": 1}))
    other = asyncio.run(plane.handle(22, 4, {"transactionalId": None, "transactionTimeoutMs": 1}))
    assert ids["errorCode"] == 0 and ids["producerId"] != other["producerId"] and ids["producerId"] > 0


def test_a_fetch_waits_for_data_and_wakes_on_produce(plane: DataPlane) -> None:
    plane.on_image(_image([1]))

    async def scenario() -> dict[str, Any]:
        fetch = asyncio.ensure_future(plane.handle(1, 12, _fetch_body(0, max_wait=5000)))
        await asyncio.sleep(0.05)
        assert not fetch.done()
        partition = {"index": 0, "records": _batch([b"z"])}
        await plane.handle(0, 9, {"transactionalId": None, "acks": 1, "timeoutMs": 1000,
                                  "topicData": [{"name": "t", "partitionData": [partition]}]})
        return await asyncio.wait_for(fetch, 1)

    response = asyncio.run(scenario())
    assert [r.value for r in iter_records(response["responses"][0]["partitions"][0]["records"])] == [b"z"]


def test_divergence_list_offsets_and_epochs(plane: DataPlane) -> None:
    plane.on_image(_image([1]))
    _produce(plane, _batch([b"a", b"b", b"c"]))
    diverged = asyncio.run(plane.handle(1, 12, _fetch_body(5, replica=2, last_epoch=1)))
    part = diverged["responses"][0]["partitions"][0]
    assert part["divergingEpoch"] == {"epoch": 1, "endOffset": 0}  # the follower truncates to 0
    assert part["records"] == b""
    ahead = asyncio.run(plane.handle(1, 12, _fetch_body(5, replica=2, last_epoch=3)))["responses"][0]
    assert ahead["partitions"][0]["divergingEpoch"] == {"epoch": 3, "endOffset": 3}
    offsets = asyncio.run(plane.handle(2, 7, {"replicaId": -1, "isolationLevel": 0, "topics": [
        {"name": "t", "partitions": [{"partitionIndex": 0, "currentLeaderEpoch": -1, "timestamp": t}
                                     for t in (-2, -1, 1001)]}]}))
    assert [p["offset"] for p in offsets["topics"][0]["partitions"]] == [0, 3, 1]
    epochs = asyncio.run(plane.handle(23, 4, {"replicaId": -1, "topics": [
        {"topic": "t", "partitions": [{"partition": 0, "currentLeaderEpoch": 3, "leaderEpoch": 3}]}]}))
    assert epochs["topics"][0]["partitions"][0] == {"errorCode": 0, "partition": 0, "leaderEpoch": 3,
                                                    "endOffset": 3}


def test_versions_each_release_parses() -> None:
    declared = {0: (0, 13), 1: (0, 18), 2: (0, 11), 3: (0, 13)}
    v43, v39 = SoftwareVersion.for_release("4.3"), SoftwareVersion.for_release("3.9")
    assert DataPlane.accepted_ranges(declared, v43) == {0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13)}
    assert DataPlane.advertised_ranges(declared, v43) == {0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13)}
    assert DataPlane.accepted_ranges(declared, v39) == declared and kip724_min_versions(v39) == {}


def test_old_produce_and_fetch_on_3x_are_converted(tmp_path: Path) -> None:
    async def controller(api_key: int, version: int, body: Any) -> Any:
        raise AssertionError("no controller call expected")

    dp = DataPlane(1, (str(tmp_path),), SoftwareVersion.for_release("3.9"), {}, controller, lambda: 7, None)
    try:
        dp.on_image(_image([1]))
        legacy = build_records([(0, 5, b"k", b"v", ()), (1, 6, b"k2", b"v2", ())], magic=1)
        assert _produce(dp, legacy, version=2)["baseOffset"] == 0
        stored = dp.logs[next(iter(dp.logs))].read(0, 1 << 20, 2)
        assert stored[16] == 2  # kept as v2
        body = _fetch_body(0)
        old = asyncio.run(dp.handle(1, 3, body))["responses"][0]["partitions"][0]["records"]
        assert old[16] == 1 and [(r.key, r.value) for r in iter_records(old)] == [(b"k", b"v"), (b"k2",
                                                                                                 b"v2")]
    finally:
        asyncio.run(dp.close())


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.binary(max_size=300))
def test_garbage_records_get_an_error_never_a_crash(plane: DataPlane, garbage: bytes) -> None:
    plane.on_image(_image([1]))
    out = _produce(plane, garbage)
    assert out["errorCode"] in (0, Errors.CORRUPT_MESSAGE.code, Errors.INVALID_RECORD.code)


def test_a_lost_alter_partition_answer_keeps_acks_all_waiting_for_the_new_member(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller (its real AlterPartition rule) commits ISR {1, 2, 3} but the answer is lost:
    replica 3 may now be elected, so acks=all must not answer before 3 has the records; the same
    change goes out again after the backoff, and the metadata settles it."""
    monkeypatch.setattr(data_plane, "ALTER_PARTITION_BACKOFF", ExponentialBackoff(1, 4))
    delta = MetadataDelta()
    for b in (1, 2, 3):
        delta.replay(rec("RegisterBrokerRecord", 0, {"brokerId": b, "brokerEpoch": 10 + b, "fenced": False,
                                                     "incarnationId": uuid.UUID(int=b)}))
    delta.replay(rec("TopicRecord", 0, {"name": "t", "topicId": TOPIC_ID}))
    delta.replay(rec("PartitionRecord", 0, {
        "partitionId": 0, "topicId": TOPIC_ID, "replicas": [1, 2, 3], "isr": [1, 2], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 3, "partitionEpoch": 0}))
    committed = delta.apply()
    sent: list[Any] = []

    async def controller(api_key: int, version: int, body: Any) -> Any:
        nonlocal committed
        sent.append(body)
        records, response = alter_partition(committed, MetadataVersion.latest_production(), version, body)
        change = MetadataDelta(committed)
        for record in records:
            change.replay(record)
        committed = change.apply()
        if len(sent) == 1:
            raise NetworkError("the answer was lost")
        return response

    dp = DataPlane(1, (str(tmp_path),), SoftwareVersion.for_release("4.3"), {}, controller, lambda: 11, None)
    dp.on_image(committed)

    async def scenario() -> tuple[int, int]:
        await dp.handle(1, 12, _fetch_body(0, replica=2))
        await dp.handle(1, 12, _fetch_body(0, replica=3))  # caught up: {1, 2, 3} goes out
        for _ in range(500):  # committed, answer lost, sent again (INVALID_UPDATE_VERSION: await metadata)
            if len(sent) >= 2:
                break
            await asyncio.sleep(0.01)
        assert len(sent) == 2
        produce = asyncio.ensure_future(dp.handle(0, 9, {
            "transactionalId": None, "acks": -1, "timeoutMs": 300,
            "topicData": [{"name": "t", "partitionData": [{"index": 0, "records": _batch([b"a"])}]}]}))
        await asyncio.sleep(0.05)
        await dp.handle(1, 12, _fetch_body(1, replica=2))  # 2 has the record, 3 has not
        timed_out = (await produce)["responses"][0]["partitionResponses"][0]["errorCode"]
        dp.on_image(committed)  # the metadata: 3 is in the ISR
        assert dp.replicas.partitions[TP].isr == (1, 2, 3) and dp.replicas.partitions[TP].pending is None
        await dp.handle(1, 12, _fetch_body(1, replica=3))
        await dp.close()
        return timed_out, dp.replicas.partitions[TP].high_watermark

    timed_out, high_watermark = asyncio.run(scenario())
    assert timed_out == Errors.REQUEST_TIMED_OUT.code  # never acknowledged below 3's log end
    assert high_watermark == 1  # 3 fetched it: now it is replicated on every ISR member
    first, again = (s["topics"][0]["partitions"][0] for s in sent)
    assert first == again and first["partitionEpoch"] == 0  # the same change, sent twice
    assert [b["brokerId"] for b in first["newIsrWithEpochs"]] == [1, 2, 3]


def test_an_isr_shrink_the_controller_accepts_releases_the_waiting_acks_all_produce(tmp_path: Path) -> None:
    """Kafka's maybeIncrementLeaderHW after an ISR update: with the silent follower out of the ISR
    the HW is the leader's log end, so the produce waiting on that follower is answered at once."""
    async def controller(api_key: int, version: int, body: Any) -> Any:
        return {"errorCode": 0, "topics": [{"topicId": TOPIC_ID, "partitions": [
            {"partitionIndex": 0, "errorCode": 0, "leaderId": 1, "leaderEpoch": 3, "isr": [1],
             "leaderRecoveryState": 0, "partitionEpoch": 1}]}]}

    dp = DataPlane(1, (str(tmp_path),), SoftwareVersion.for_release("4.3"), {}, controller, lambda: 7, None)
    dp.on_image(_image([1, 2]))

    async def scenario() -> int:
        produce = asyncio.ensure_future(dp.handle(0, 9, {
            "transactionalId": None, "acks": -1, "timeoutMs": 30_000,
            "topicData": [{"name": "t", "partitionData": [{"index": 0, "records": _batch([b"a"])}]}]}))
        await asyncio.sleep(0.05)
        [shrink] = dp.replicas.lagging_followers(10 ** 13)  # follower 2 never fetched
        await dp._alter_partition([shrink])
        code: int = (await asyncio.wait_for(produce, 5))["responses"][0]["partitionResponses"][0]["errorCode"]
        await dp.close()
        return code

    assert asyncio.run(scenario()) == 0
    assert dp.replicas.partitions[TP].isr == (1,) and dp.replicas.partitions[TP].high_watermark == 1


@pytest.mark.parametrize("turns", range(5))
def test_a_cancelled_acks_all_produce_stays_cancelled_even_if_woken_in_the_same_turn(
        plane: DataPlane, turns: int) -> None:
    """Python 3.11's wait_for dropped a cancellation (the connection closing) that landed with the
    partition's wake-up: the handler then waited on for the whole produce timeout."""
    plane.on_image(_image([1, 2]))

    async def scenario() -> None:
        produce = asyncio.ensure_future(plane.handle(0, 9, {
            "transactionalId": None, "acks": -1, "timeoutMs": 1000,
            "topicData": [{"name": "t", "partitionData": [{"index": 0, "records": _batch([b"a"])}]}]}))
        while TP not in plane._changed:  # created as the handler starts waiting for the follower
            await asyncio.sleep(0)
        plane._notify(TP)
        for _ in range(turns):
            await asyncio.sleep(0)
        assert produce.cancel()
        with pytest.raises(asyncio.CancelledError):
            await produce

    asyncio.run(scenario())
