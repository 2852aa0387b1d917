"""A small blocking producer and consumer speaking Kafka's protocol (for ``kraftwerk produce|consume``).

kcat-like quick checks need no third-party client: Metadata finds each partition's leader,
Produce sends one v2 batch per partition, Fetch reads from an offset until the high watermark
(or a count). Built on :class:`kraftwerk.runtime.admin_client.Connection` (version negotiation,
framing); no idempotence, no consumer groups: partitions are assigned by the caller.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.records.batch import Header, iter_batches
from kraftwerk.records.builder import RecordsBuilder
from kraftwerk.records.types import CompressionType
from kraftwerk.runtime.admin_client import AdminClient, AdminClientError, Connection

EARLIEST, LATEST = -2, -1
RETRIABLE = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.LEADER_NOT_AVAILABLE,
                       Errors.UNKNOWN_TOPIC_OR_PARTITION,
                       Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT, Errors.FENCED_LEADER_EPOCH,
                       Errors.UNKNOWN_LEADER_EPOCH})


@dataclass(frozen=True, slots=True)
class Message:
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed 0x9747b28c), as a signed 32-bit int."""
    m, r, mask = 0x5BD1E995, 24, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def default_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class DataClient:
    """Produce to and fetch from the partition leaders of one topic."""

    def __init__(self, bootstrap: str, *, timeout_s: float = 30.0) -> None:
        self.admin = AdminClient(bootstrap, client_id="kraftwerk-cli", request_timeout_s=timeout_s,
                                 api_timeout_s=timeout_s)
        self.timeout_s = timeout_s
        self.topic_ids: dict[str, uuid.UUID] = {}

    def close(self) -> None:
        self.admin.close()

    def __enter__(self) -> DataClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def leaders(self, topic: str) -> dict[int, Connection]:
        """partition → a connection to its leader (retried while leaders are being elected)."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            conn = self.admin.any_node()
            _, body = conn.request(ApiKey.METADATA, {"topics": [{"name": topic, "topicId": uuid.UUID(int=0)}],
                                              "allowAutoTopicCreation": False,
                                              "includeTopicAuthorizedOperations": False})
            brokers = {b["nodeId"]: (b["host"], b["port"]) for b in body["brokers"]}
            t = next((t for t in body["topics"] if t["name"] == topic), None)
            error = Errors.for_code(t["errorCode"]) if t is not None else Errors.UNKNOWN_TOPIC_OR_PARTITION
            if error is Errors.NONE and all(p["leaderId"] in brokers for p in t["partitions"]):  # type: ignore[index]
                assert t is not None
                self.topic_ids[topic] = t["topicId"]
                return {p["partitionIndex"]: self.admin.connection(*brokers[p["leaderId"]])
                        for p in t["partitions"]}
            if time.monotonic() > deadline:
                why = error.name if error is not Errors.NONE else "no leader"
                raise AdminClientError(f"Topic {topic}: {why}")
            time.sleep(0.2)

    def produce(self, topic: str, partition: int, messages: Sequence[Message], *, acks: int = -1,
                compression: CompressionType = CompressionType.NONE) -> int:
        """One batch to ``partition``; returns its base offset (retries leader changes). ``acks`` is
        1 or -1: a request with acks=0 gets no response, which this blocking client cannot wait for."""
        now = int(time.time() * 1000)
        builder = RecordsBuilder(compression=compression)
        for m in messages:
            builder.append(m.timestamp if m.timestamp >= 0 else now, m.key, m.value, m.headers)
        records = builder.build()
        deadline = time.monotonic() + self.timeout_s
        while True:
            conn = self.leaders(topic)[partition]
            body = {"transactionalId": None, "acks": acks, "timeoutMs": int(self.timeout_s * 1000),
                    "topicData": [{"name": topic, "topicId": self.topic_ids[topic],
                                   "partitionData": [{"index": partition, "records": records}]}]}
            _, response = conn.request(ApiKey.PRODUCE, body)
            p = response["responses"][0]["partitionResponses"][0]
            error = Errors.for_code(p["errorCode"])
            if error is Errors.NONE:
                return int(p["baseOffset"])
            if error not in RETRIABLE or time.monotonic() > deadline:
                raise AdminClientError(f"Produce to {topic}-{partition} failed: {error.name}"
                                       + (f": {p.get('errorMessage')}" if p.get("errorMessage") else ""))
            time.sleep(0.2)

    def list_offset(self, topic: str, partition: int, timestamp: int) -> int:
        conn = self.leaders(topic)[partition]
        _, body = conn.request(ApiKey.LIST_OFFSETS, {"replicaId": -1, "isolationLevel": 0, "timeoutMs": 0,
                                              "topics": [
            {"name": topic, "partitions": [{"partitionIndex": partition, "currentLeaderEpoch": -1,
                                            "timestamp": timestamp}]}]})
        p = body["topics"][0]["partitions"][0]
        if p["errorCode"]:
            error = Errors.for_code(p["errorCode"])
            raise AdminClientError(f"ListOffsets on {topic}-{partition}: {error.name}")
        return int(p["offset"])

    def fetch(self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 500
              ) -> tuple[list[Consumed], int]:
        """Records from ``offset`` (at most one response's worth) and the high watermark."""
        conn = self.leaders(topic)[partition]
        version = conn.usable_version(ApiKey.FETCH)
        tid = self.topic_ids[topic]
        body = {"replicaId": -1, "maxWaitMs": max_wait_ms, "minBytes": 1, "maxBytes": 50 << 20,
                "isolationLevel": 0, "sessionId": 0, "sessionEpoch": -1, "forgottenTopicsData": [],
                "rackId": "",
                "topics": [{"topic": topic, "topicId": tid, "partitions": [
                    {"partition": partition, "currentLeaderEpoch": -1, "fetchOffset": offset,
                     "lastFetchedEpoch": -1, "logStartOffset": -1, "partitionMaxBytes": 10 << 20}]}]}
        _, response = conn.request(ApiKey.FETCH, body, version)
        p = response["responses"][0]["partitions"][0]
        if p["errorCode"]:
            raise AdminClientError(f"Fetch from {topic}-{partition}: {Errors.for_code(p['errorCode']).name}")
        out = []
        for batch in iter_batches(p["records"] or b""):
            if batch.is_control:
                continue
            for r in batch:
                if r.offset >= offset:
                    out.append(Consumed(partition, r.offset, r.timestamp, r.key, r.value, tuple(r.headers)))
        return out, int(p["highWatermark"])

    def consume(self, topic: str, partition: int, start: int, *, count: int | None = None,
                follow: bool = False) -> Iterator[Consumed]:
        """Records from ``start`` (an offset, or EARLIEST/LATEST) up to the high watermark (or
        ``count`` records; ``follow`` waits for more instead of stopping at the end)."""
        offset = self.list_offset(topic, partition, start) if start < 0 else start
        seen = 0
        while count is None or seen < count:
            records, hw = self.fetch(topic, partition, offset)
            for r in records:
                yield r
                seen += 1
                offset = r.offset + 1
                if count is not None and seen >= count:
                    return
            if not records and offset >= hw and not follow:
                return
