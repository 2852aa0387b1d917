"""A broker's data plane over asyncio: Produce, Fetch, ListOffsets, OffsetForLeaderEpoch,
InitProducerId, and follower fetching.

The decisions (roles, high watermark, ISR changes) are :class:`~kraftwerk.broker.replica.ReplicaManager`'s;
the records go through :class:`~kraftwerk.runtime.partition_log.PartitionLog`. This module waits:
an ``acks=all`` produce until the high watermark passes its records, a fetch until data arrives
or ``max.wait.ms`` passes, and runs one fetcher task per leader this broker follows.

KIP-724 by software release: 4.x parses no Produce below v3 and no Fetch below v4 (the connection
is dropped, :meth:`DataPlane.accepted_ranges`) while ApiVersions still advertises Produce from v0
(KAFKA-18659); 3.x accepts them, up-converting produced v0/v1 message sets to v2 and
down-converting fetched v2 batches to the magic the old version reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import shutil
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from kraftwerk.backoff import ExponentialBackoff
from kraftwerk.broker.replica import (
    BecomeFollower,
    BecomeLeader,
    IsrChange,
    PartitionState,
    ReplicaManager,
    StopReplica,
    TopicPartition,
    alter_partition_answers,
    alter_partition_body,
)
from kraftwerk.controller.common import shape_response
from kraftwerk.image.model import MetadataImage
from kraftwerk.protocol import codec
from kraftwerk.protocol.api_keys import ApiKey
from kraftwerk.protocol.error_codes import Errors
from kraftwerk.records.convert import downconvert, upconvert
from kraftwerk.records.errors import RecordsError
from kraftwerk.runtime.client import ReconnectingClient
from kraftwerk.runtime.client_security import PLAINTEXT, ClientSecurity
from kraftwerk.runtime.errors import NetworkError
from kraftwerk.runtime.partition_log import LogAppendError, LogConfig, PartitionLog, batch_infos
from kraftwerk.runtime.raft_host import wall_clock_ms
from kraftwerk.storage.errors import StorageError
from kraftwerk.storage.segment import partition_dir_name
from kraftwerk.versions.software import SoftwareVersion

log = logging.getLogger(__name__)

DATA_API_KEYS = (
    ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.INIT_PRODUCER_ID, ApiKey.OFFSET_FOR_LEADER_EPOCH
)
FOLLOWER_FETCH_VERSION = 12
ALTER_PARTITION_VERSION = 3
ALTER_PARTITION_BACKOFF = ExponentialBackoff(50, 1000, jitter=0.2)
"""Kafka's 50 ms after a failed AlterPartition, growing to reconnect.backoff.max.ms while it keeps failing."""
FOLLOWER_MAX_WAIT_MS = 500
REPLICA_FETCH_MAX_BYTES = 1 << 20
LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
FORCE_UPGRADE_CONFIG = "log.record.version.force.upgrade"

ControllerRequest = Callable[[int, int, codec.Value], Awaitable[codec.Value]]


def kip724_min_versions(software: SoftwareVersion) -> dict[int, int]:
    """The lowest Produce, Fetch and ListOffsets versions this software parses (KIP-896 removed the
    rest in 4.0)."""
    if int(software.release.split(".")[0]) >= 4:
        return {ApiKey.PRODUCE: 3, ApiKey.FETCH: 4, ApiKey.LIST_OFFSETS: 1}
    return {}


class DataPlane:
    """One broker's partitions and the requests that read and write them."""

    def __init__(self, node_id: int, log_dirs: tuple[str, ...], software: SoftwareVersion,
                 static_configs: Mapping[str, str], controller_request: ControllerRequest,
                 broker_epoch: Callable[[], int], listener_name: str | None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.node_id = node_id
        self._security = security
        """How this broker reaches the leaders' inter-broker listener."""
        self.log_dirs = tuple(Path(d) for d in log_dirs)
        self.software = software
        self.static_configs = dict(static_configs)
        self.replicas = ReplicaManager(node_id, replica_lag_time_max_ms=int(
            self.static_configs.get("replica.lag.time.max.ms", "30000")))
        self.logs: dict[TopicPartition, PartitionLog] = {}
        self._controller_request = controller_request
        self._broker_epoch = broker_epoch
        self._listener = listener_name
        self._image = MetadataImage()
        self._changed: dict[TopicPartition, asyncio.Event] = {}
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        self._leader_clients: dict[int, ReconnectingClient] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._pids = itertools.count(1)
        self._rng = random.Random()
        self._producers: dict[tuple[TopicPartition, int], tuple[int, int, int, int]] = {}
        """(tp, producer id) → (epoch, last sequence, first offset, last offset) of its last batch."""

    @staticmethod
    def advertised_ranges(declared: Mapping[int, tuple[int, int]], software: SoftwareVersion
                          ) -> dict[int, tuple[int, int]]:
        """What ApiVersions advertises: the accepted versions, except that Produce stays advertised
        from v0 (KAFKA-18659: librdkafka refuses a broker without it)."""
        out = DataPlane.accepted_ranges(declared, software)
        if ApiKey.PRODUCE in out:
            out[ApiKey.PRODUCE] = (declared[ApiKey.PRODUCE][0], out[ApiKey.PRODUCE][1])
        return out

    @staticmethod
    def accepted_ranges(advertised: Mapping[int, tuple[int, int]], software: SoftwareVersion
                        ) -> dict[int, tuple[int, int]]:
        """The versions the request parser accepts: the advertised ones, minus what KIP-896 removed
        from 4.x brokers (a request below the minimum drops the connection)."""
        out = dict(advertised)
        for key, low in kip724_min_versions(software).items():
            if key in out:
                out[key] = (max(out[key][0], low), out[key][1])
        return out

    # ------------------------------------------------------------------ metadata

    def on_image(self, image: MetadataImage) -> None:
        """Adopt a new metadata image: open logs, become leader or follower, start fetchers."""
        unchanged = image.topics is self._image.topics and image.cluster is self._image.cluster
        self._image = image
        if unchanged:
            return
        now = wall_clock_ms()
        for change in self.replicas.apply_image(image, now):
            try:
                if isinstance(change, StopReplica):
                    self._stop(change.tp, change.delete)
                    continue
                plog = self._open_log(change.tp, change.topic_id)
                st = self.replicas.partitions[change.tp]
                if isinstance(change, BecomeLeader):
                    log.info("[Partition %s broker=%d] Leader with epoch %d, log end offset %d", change.tp,
                             self.node_id, change.leader_epoch, plog.log_end_offset)
                    self.replicas.update_high_watermark(st, plog.log_end_offset)
                elif isinstance(change, BecomeFollower):
                    log.info("[Partition %s broker=%d] Follower of %d with epoch %d", change.tp, self.node_id,
                             change.leader, change.leader_epoch)
                self._notify(change.tp)
            except StorageError as exc:
                log.error("[ReplicaManager broker=%d] cannot open %s: %s", self.node_id, change.tp, exc)
        for tp in list(self.replicas.partitions):
            self._isr_settled(tp)
        self._sync_fetchers()

    def _isr_settled(self, tp: TopicPartition) -> None:
        """An ISR the controller decided may let the HW move at once (a shrink away from a silent
        follower: Kafka's maybeIncrementLeaderHW after an ISR update), waking acks=all produces."""
        st = self.replicas.leader(tp)
        plog = self.logs.get(tp)
        if not isinstance(st, Errors) and plog is not None and \
                self.replicas.update_high_watermark(st, plog.log_end_offset):
            self._notify(tp)

    def _log_config(self, topic: str) -> LogConfig:
        def cfg(name: str, broker_name: str, default: str) -> int:
            value = self.replicas.topic_config(self._image, topic, name, self.static_configs, broker_name,
                                               default)
            return int(value)
        retention_ms = cfg("retention.ms", "log.retention.ms", str(
            int(self.static_configs.get("log.retention.hours", "168")) * 3600 * 1000))
        segment_ms = cfg("segment.ms", "log.roll.ms", str(
            int(self.static_configs.get("log.roll.hours", "168")) * 3600 * 1000))
        return LogConfig(segment_bytes=cfg("segment.bytes", "log.segment.bytes", str(1 << 30)),
                         segment_ms=segment_ms,
                         retention_bytes=cfg("retention.bytes", "log.retention.bytes", "-1"),
                         retention_ms=retention_ms,
                         force_upgrade_to_v2=self.static_configs.get(FORCE_UPGRADE_CONFIG) == "2")

    def _min_isr(self, topic: str) -> int:
        return int(self.replicas.topic_config(self._image, topic, "min.insync.replicas", self.static_configs,
                                              "min.insync.replicas", "1"))

    def _open_log(self, tp: TopicPartition, topic_id: uuid.UUID) -> PartitionLog:
        plog = self.logs.get(tp)
        if plog is not None:
            return plog
        name = partition_dir_name(tp.topic, tp.partition)
        existing = [d for d in self.log_dirs if (d / name).is_dir()]
        base = existing[0] if existing else min(
            self.log_dirs, key=lambda d: sum(1 for p in self.logs.values() if p.directory.parent == d))
        plog = PartitionLog(base / name, topic_id, self._log_config(tp.topic), now_ms=wall_clock_ms())
        self.logs[tp] = plog
        return plog

    def _stop(self, tp: TopicPartition, delete: bool) -> None:
        plog = self.logs.pop(tp, None)
        if plog is not None:
            plog.close()
            if delete:
                shutil.rmtree(plog.directory, ignore_errors=True)
        self._notify(tp)

    def _notify(self, tp: TopicPartition) -> None:
        event = self._changed.pop(tp, None)
        if event is not None:
            event.set()

    def _event(self, tp: TopicPartition) -> asyncio.Event:
        event = self._changed.get(tp)
        if event is None:
            event = self._changed[tp] = asyncio.Event()
        return event

    async def close(self) -> None:
        for task in [*self._fetchers.values(), *self._tasks]:
            task.cancel()
        for task in [*self._fetchers.values(), *self._tasks]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for client in self._leader_clients.values():
            await client.close()
        for plog in self.logs.values():
            plog.close()
        self.logs.clear()

    async def housekeeping(self) -> None:
        """Every second: ISR shrinks for lagging followers, retention, time-based rolls."""
        while True:
            await asyncio.sleep(1.0)
            now = wall_clock_ms()
            shrinks = self.replicas.lagging_followers(now)
            if shrinks:
                self._spawn(self._alter_partition(shrinks))
            for plog in list(self.logs.values()):
                try:
                    plog.roll_if_due(now)
                    plog.apply_retention(now)
                except StorageError as exc:
                    log.error("retention on %s failed: %s", plog.directory, exc)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("[ReplicaManager broker=%d] task failed", self.node_id, exc_info=task.exception())

    # ------------------------------------------------------------------ requests

    async def handle(self, api_key: int, version: int, body: Mapping[str, Any]) -> codec.Value | None:
        """The response body at ``version`` (None: Produce with acks=0 gets no response)."""
        if api_key == ApiKey.PRODUCE:
            response = await self._produce(version, body)
        elif api_key == ApiKey.FETCH:
            response = await self._fetch(version, body)
        elif api_key == ApiKey.LIST_OFFSETS:
            response = self._list_offsets(version, body)
        elif api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH:
            response = self._offset_for_leader_epoch(body)
        else:
            response = self._init_producer_id(body)
        return None if response is None else shape_response(api_key, version, response)

    def _topic_name(self, version: int, t: Mapping[str, Any], name_key: str, id_since: int) -> str | None:
        if version >= id_since:
            topic = self._image.topics.by_id.get(t["topicId"])
            return None if topic is None else topic.name
        return t.get(name_key)

    # --- Produce

    async def _produce(self, version: int, body: Mapping[str, Any]) -> codec.Value | None:
        acks = body["acks"]
        waits: list[tuple[dict[str, Any], PartitionState, int]] = []
        responses = []
        for t in body.get("topicData", ()):
            name = self._topic_name(version, t, "name", 13)
            parts = []
            for p in t.get("partitionData", ()):
                out = {"index": p["index"], "errorCode": 0, "baseOffset": -1, "logAppendTimeMs": -1,
                       "logStartOffset": -1, "recordErrors": [], "errorMessage": None}
                parts.append(out)
                if name is None:
                    out["errorCode"] = Errors.UNKNOWN_TOPIC_ID.code if version >= 13 else \
                        Errors.UNKNOWN_TOPIC_OR_PARTITION.code
                    continue
                self._produce_partition(version, acks, TopicPartition(name, p["index"]),
                                        p.get("records") or b"",
                                        out, waits)
            responses.append({"name": t.get("name"), "topicId": t.get("topicId"),
                              "partitionResponses": parts})
        if acks == 0:
            return None
        if waits:
            await self._await_replication(waits, body.get("timeoutMs", 30000))
        return {"responses": responses, "throttleTimeMs": 0}

    def _produce_partition(self, version: int, acks: int, tp: TopicPartition, records: bytes,
                           out: dict[str, Any], waits: list[tuple[dict[str, Any], PartitionState,
                                                                  int]]) -> None:
        st = self.replicas.leader(tp)
        plog = self.logs.get(tp)
        if isinstance(st, Errors) or plog is None:
            out["errorCode"] = (st if isinstance(st, Errors) else Errors.NOT_LEADER_OR_FOLLOWER).code
            return
        try:
            infos = batch_infos(records)
            if version < 3 and infos:
                records = upconvert(records)  # KIP-724 on 3.x software: stored as v2
                infos = batch_infos(records)
            if not infos:
                raise LogAppendError("no record batch in the produce request")
            if version >= 3 and any(i.magic != 2 for i in infos):
                out["errorCode"] = Errors.INVALID_RECORD.code
                out["errorMessage"] = (f"Produce requests with version {version} are only allowed to contain "
                                       "record batches with magic version 2")
                return
        except (LogAppendError, RecordsError) as exc:
            out["errorCode"] = Errors.CORRUPT_MESSAGE.code
            out["errorMessage"] = str(exc)
            return
        error = self.replicas.check_produce(st, acks, self._min_isr(tp.topic))
        if error is not Errors.NONE:
            out["errorCode"] = error.code
            return
        duplicate = self._check_sequence(tp, records, infos)
        if isinstance(duplicate, Errors):
            out["errorCode"] = duplicate.code
            return
        if duplicate is not None:
            out["baseOffset"] = duplicate
            out["logStartOffset"] = plog.log_start_offset
            return
        now = wall_clock_ms()
        first, last = plog.append(records, infos, assign_from=plog.log_end_offset,
                                  leader_epoch=st.leader_epoch,
                                  now_ms=now)
        self._remember_sequence(tp, records, first, last)
        out["baseOffset"] = first
        out["logStartOffset"] = plog.log_start_offset
        self.replicas.update_high_watermark(st, plog.log_end_offset)
        self._notify(tp)
        if acks == -1:
            waits.append((out, st, last + 1))

    def _check_sequence(self, tp: TopicPartition, records: bytes, infos: list[Any]) -> int | Errors | None:
        """Idempotent producers: a repeat of the last batch returns its offset, a gap is refused."""
        pid, epoch, seq, count = _producer_fields(records)
        if pid < 0:
            return None
        known = self._producers.get((tp, pid))
        if known is None:
            return None
        k_epoch, k_last_seq, k_first, _ = known
        if epoch < k_epoch:
            return Errors.INVALID_PRODUCER_EPOCH
        if epoch > k_epoch:
            return None if seq == 0 else Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        if seq + count - 1 == k_last_seq:
            return k_first  # Kafka answers a duplicate with the original offset
        if seq != (k_last_seq + 1) & 0x7FFFFFFF:
            return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    def _remember_sequence(self, tp: TopicPartition, records: bytes, first: int, last: int) -> None:
        pid, epoch, seq, count = _producer_fields(records)
        if pid >= 0:
            self._producers[(tp, pid)] = (epoch, seq + count - 1, first, last)

    async def _await_replication(self, waits: list[tuple[dict[str, Any], PartitionState, int]],
                                 timeout_ms: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        for out, st, needed in waits:
            while st.high_watermark < needed:
                current = self.replicas.partitions.get(st.tp)
                if current is not st and (current is None or current.leader != self.node_id):
                    out["errorCode"] = Errors.NOT_LEADER_OR_FOLLOWER.code
                    break
                st = current
                left = deadline - loop.time()
                if left <= 0:
                    out["errorCode"] = Errors.REQUEST_TIMED_OUT.code
                    break
                # Not wait_for: Python 3.11's drops a cancellation (the connection closing) that lands
                # with the wake-up, and the handler then waited on for up to the produce timeout.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(left):
                        await self._event(st.tp).wait()

    # --- Fetch

    async def _fetch(self, version: int, body: Mapping[str, Any]) -> codec.Value:
        replica_id = body.get("replicaState", {}).get("replicaId",
                                                      -1) if version >= 15 else body.get("replicaId", -1)
        max_wait = body.get("maxWaitMs", 0)
        min_bytes = max(body.get("minBytes", 1), 1)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait / 1000
        while True:
            response, size, wanted = self._fetch_once(version, body, replica_id)
            left = deadline - loop.time()
            if size >= min_bytes or left <= 0 or not wanted:
                return response
            events = [asyncio.ensure_future(self._event(tp).wait()) for tp in wanted]
            try:
                await asyncio.wait(events, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for e in events:
                    e.cancel()

    def _fetch_once(self, version: int, body: Mapping[str, Any], replica_id: int
                    ) -> tuple[codec.Value, int, list[TopicPartition]]:
        total = 0
        budget = body.get("maxBytes", 0x7FFFFFFF)
        wanted: list[TopicPartition] = []
        topics_out = []
        now = wall_clock_ms()
        for t in body.get("topics", ()):
            name = self._topic_name(version, t, "topic", 13)
            parts = []
            for p in t.get("partitions", ()):
                out: dict[str, Any] = {"partitionIndex": p["partition"], "errorCode": 0, "highWatermark": -1,
                                       "lastStableOffset": -1, "logStartOffset": -1,
                                       "divergingEpoch": {"epoch": -1, "endOffset": -1},
                                       "currentLeader": {"leaderId": -1, "leaderEpoch": -1},
                                       "snapshotId": {"endOffset": -1, "epoch": -1},
                                       "abortedTransactions": None, "preferredReadReplica": -1,
                                       "records": b""}
                parts.append(out)
                if name is None:
                    out["errorCode"] = Errors.UNKNOWN_TOPIC_ID.code
                    continue
                tp = TopicPartition(name, p["partition"])
                data = self._fetch_partition(version, tp, p, replica_id, min(budget - total,
                                                                             p["partitionMaxBytes"]),
                                             out, now)
                if data is None:
                    continue
                total += len(data)
                if not data:
                    wanted.append(tp)
            topics_out.append({"topic": t.get("topic"), "topicId": t.get("topicId"), "partitions": parts})
        response = {"throttleTimeMs": 0, "errorCode": 0, "sessionId": 0, "responses": topics_out,
                    "nodeEndpoints": []}
        return response, total, wanted

    def _fetch_partition(self, version: int, tp: TopicPartition, p: Mapping[str, Any], replica_id: int,
                         max_bytes: int, out: dict[str, Any], now: int) -> bytes | None:
        st = self.replicas.leader(tp, p.get("currentLeaderEpoch", -1))
        plog = self.logs.get(tp)
        if isinstance(st, Errors) or plog is None:
            out["errorCode"] = (st if isinstance(st, Errors) else Errors.NOT_LEADER_OR_FOLLOWER).code
            known = self.replicas.partitions.get(tp)
            if known is not None:
                out["currentLeader"] = {"leaderId": known.leader, "leaderEpoch": known.leader_epoch}
            return None
        offset = p["fetchOffset"]
        if replica_id >= 0:
            last_epoch = p.get("lastFetchedEpoch", -1)
            if last_epoch >= 0:
                epoch, end = plog.end_offset_for_epoch(last_epoch)
                if epoch != last_epoch or end < offset:
                    out["divergingEpoch"] = {"epoch": epoch, "endOffset": end}
                    out["highWatermark"] = st.high_watermark
                    return None
            moved, expand = self.replicas.on_follower_fetch(st, replica_id, offset, plog.log_end_offset,
                                                            self._epoch_start(plog, st.leader_epoch), now)
            if moved:
                self._notify(tp)
            if expand is not None:
                self._spawn(self._alter_partition([expand]))
        upto = plog.log_end_offset if replica_id >= 0 else st.high_watermark
        out["highWatermark"] = st.high_watermark
        out["lastStableOffset"] = st.high_watermark
        out["logStartOffset"] = plog.log_start_offset
        if offset < plog.log_start_offset or offset > plog.log_end_offset:
            out["errorCode"] = Errors.OFFSET_OUT_OF_RANGE.code
            return None
        data = plog.read(offset, max(max_bytes, 1), upto)
        if version < 4 and data:
            data = downconvert(data, 1 if version >= 2 else 0, offset)  # KIP-724 on 3.x software
        out["records"] = data
        return data

    @staticmethod
    def _epoch_start(plog: PartitionLog, epoch: int) -> int:
        for e in plog.epochs:
            if e.epoch == epoch:
                return e.start_offset
        return plog.log_end_offset

    # --- ListOffsets and OffsetForLeaderEpoch

    def _list_offsets(self, version: int, body: Mapping[str, Any]) -> codec.Value:
        topics = []
        for t in body.get("topics", ()):
            parts = []
            for p in t.get("partitions", ()):
                tp = TopicPartition(t["name"], p["partitionIndex"])
                out: dict[str, Any] = {"partitionIndex": tp.partition, "errorCode": 0, "oldStyleOffsets": [],
                                       "timestamp": -1, "offset": -1, "leaderEpoch": -1}
                parts.append(out)
                st = self.replicas.leader(tp, p.get("currentLeaderEpoch", -1))
                plog = self.logs.get(tp)
                if isinstance(st, Errors) or plog is None:
                    out["errorCode"] = (st if isinstance(st, Errors) else Errors.NOT_LEADER_OR_FOLLOWER).code
                    continue
                ts = p["timestamp"]
                out["leaderEpoch"] = st.leader_epoch
                if ts == EARLIEST:
                    out["offset"] = plog.log_start_offset
                elif ts in (LATEST, MAX_TIMESTAMP) or ts < 0:
                    out["offset"] = st.high_watermark
                else:
                    found = plog.offset_for_timestamp(ts)
                    if found is not None and found[0] < st.high_watermark:
                        out["offset"], out["timestamp"] = found
                out["oldStyleOffsets"] = [out["offset"]] if out["offset"] >= 0 else []
            topics.append({"name": t["name"], "partitions": parts})
        return {"throttleTimeMs": 0, "topics": topics}

    def _offset_for_leader_epoch(self, body: Mapping[str, Any]) -> codec.Value:
        topics = []
        for t in body.get("topics", ()):
            parts = []
            for p in t.get("partitions", ()):
                tp = TopicPartition(t["topic"], p["partition"])
                st = self.replicas.leader(tp, p.get("currentLeaderEpoch", -1))
                plog = self.logs.get(tp)
                if isinstance(st, Errors) or plog is None:
                    code = (st if isinstance(st, Errors) else Errors.NOT_LEADER_OR_FOLLOWER).code
                    parts.append({"errorCode": code, "partition": tp.partition, "leaderEpoch": -1,
                                  "endOffset": -1})
                    continue
                epoch, end = plog.end_offset_for_epoch(p["leaderEpoch"])
                parts.append({"errorCode": 0, "partition": tp.partition, "leaderEpoch": epoch,
                              "endOffset": end})
            topics.append({"topic": t["topic"], "partitions": parts})
        return {"throttleTimeMs": 0, "topics": topics}

    def _init_producer_id(self, body: Mapping[str, Any]) -> codec.Value:
        """Idempotent producers only (transactions are out of scope): a producer id unique to this
        broker's id and epoch."""
        if body.get("transactionalId") is not None:
            return {"throttleTimeMs": 0, "errorCode": Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code,
                    "producerId": -1, "producerEpoch": -1}
        epoch = max(self._broker_epoch(), 0)
        pid = ((self.node_id & 0xFFFF) << 44) | ((epoch & 0xFFFFFF) << 20) | (next(self._pids) & 0xFFFFF)
        return {"throttleTimeMs": 0, "errorCode": 0, "producerId": pid, "producerEpoch": 0}

    # ------------------------------------------------------------------ ISR changes

    async def _alter_partition(self, changes: list[IsrChange]) -> None:
        """Send ``changes`` until each is settled (Kafka's AlterPartitionManager, which never times
        an AlterPartition out): a lost answer, a controller switch or a retriable error resends the
        same change after a backoff, with the broker epoch of the moment."""
        for attempt in itertools.count():
            changes = [c for c in changes if self.replicas.is_pending(c)]
            if not changes:
                return
            if attempt:
                await asyncio.sleep(ALTER_PARTITION_BACKOFF.jittered_ms(attempt - 1, self._rng) / 1000)
            changes = await self._alter_partition_once(changes)

    async def _alter_partition_once(self, changes: list[IsrChange]) -> list[IsrChange]:
        """One AlterPartition for ``changes``; returns those to send again."""
        epochs = {b.id: b.epoch for b in self._image.cluster.brokers.values()}
        body = alter_partition_body(self.node_id, self._broker_epoch(), changes, epochs,
                                    ALTER_PARTITION_VERSION)
        try:
            response = await self._controller_request(ApiKey.ALTER_PARTITION, ALTER_PARTITION_VERSION, body)
        except NetworkError as exc:
            log.info("[Partition broker=%d] AlterPartition got no answer (%s): retrying", self.node_id, exc)
            return [c for c in changes if self.replicas.on_alter_partition_result(c, Errors.NETWORK_EXCEPTION,
                                                                                  None)]
        again = []
        for c, error, result in alter_partition_answers(changes, response):
            retry = self.replicas.on_alter_partition_result(c, error, result)
            again += [c] if retry else []
            outcome = error.name if result is not None or error is not Errors.NONE else "not in the answer"
            log.info("[Partition %s broker=%d] ISR update to %s: %s%s", c.tp, self.node_id, list(c.new_isr),
                     outcome, ", retrying" if retry else "")
            self._isr_settled(c.tp)
        return again

    # ------------------------------------------------------------------ follower fetching

    def _sync_fetchers(self) -> None:
        leaders = {st.leader for st in self.replicas.partitions.values()
                   if st.leader not in (self.node_id, -1)}
        for leader_id in list(self._fetchers):
            if leader_id not in leaders:
                self._fetchers.pop(leader_id).cancel()
        for leader_id in leaders:
            if leader_id not in self._fetchers or self._fetchers[leader_id].done():
                self._fetchers[leader_id] = asyncio.ensure_future(self._fetch_from(leader_id))

    def _leader_client(self, leader_id: int) -> ReconnectingClient | None:
        broker = self._image.cluster.brokers.get(leader_id)
        if broker is None or not broker.listeners:
            return None
        endpoint = next((e for e in broker.listeners if e.name == self._listener), broker.listeners[0])
        client = self._leader_clients.get(leader_id)
        if client is None or (client.host, client.port) != (endpoint.host, endpoint.port):
            client = ReconnectingClient(endpoint.host, endpoint.port,
                                        client_id=f"replica-fetcher-{self.node_id}", security=self._security)
            self._leader_clients[leader_id] = client
        return client

    async def _fetch_from(self, leader_id: int) -> None:
        """Kafka's ReplicaFetcherThread for one leader: fetch, truncate on divergence, append."""
        while True:
            followed = {tp: st for tp, st in self.replicas.partitions.items()
                        if st.leader == leader_id and tp in self.logs}
            client = self._leader_client(leader_id)
            if not followed or client is None:
                await asyncio.sleep(0.2)
                continue
            body = self._follower_fetch_body(followed)
            try:
                response = await client.request(ApiKey.FETCH, FOLLOWER_FETCH_VERSION, body, timeout_s=10)
                useful = self._apply_fetch(response, followed)
            except NetworkError as exc:
                log.debug("fetch from leader %d failed: %s", leader_id, exc)
                await asyncio.sleep(0.5)
                continue
            except StorageError as exc:
                log.error("[ReplicaFetcher broker=%d] fetch from %d failed: %s", self.node_id, leader_id, exc)
                useful = False
            if not useful:
                await asyncio.sleep(0.2)

    def _follower_fetch_body(self, followed: Mapping[TopicPartition, PartitionState]) -> dict[str, Any]:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, st in sorted(followed.items()):
            plog = self.logs[tp]
            by_topic.setdefault(tp.topic, []).append({
                "partition": tp.partition, "currentLeaderEpoch": st.leader_epoch,
                "fetchOffset": plog.log_end_offset,
                "lastFetchedEpoch": plog.epochs[-1].epoch if plog.epochs else -1,
                "logStartOffset": plog.log_start_offset, "partitionMaxBytes": REPLICA_FETCH_MAX_BYTES})
        return {"replicaId": self.node_id, "maxWaitMs": FOLLOWER_MAX_WAIT_MS, "minBytes": 1,
                "maxBytes": 10 * REPLICA_FETCH_MAX_BYTES, "isolationLevel": 0, "sessionId": 0,
                "sessionEpoch": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                "forgottenTopicsData": [], "rackId": ""}

    def _apply_fetch(self, response: Mapping[str, Any], followed: Mapping[TopicPartition,
                                                                          PartitionState]) -> bool:
        """Apply one fetch response; False when nothing was usable (errors only: back off)."""
        useful = False
        now = wall_clock_ms()
        for t in response.get("responses", ()):
            for p in t.get("partitions", ()):
                tp = TopicPartition(t["topic"], p["partitionIndex"])
                st, plog = followed.get(tp), self.logs.get(tp)
                if st is None or plog is None or self.replicas.partitions.get(tp) is not st:
                    continue
                error = Errors.for_code(p["errorCode"])
                if error is not Errors.NONE:
                    log.debug("[ReplicaFetcher broker=%d] %s: %s", self.node_id, tp, error.name)
                    continue
                useful = True
                diverging = p.get("divergingEpoch") or {}
                if diverging.get("epoch", -1) >= 0 or diverging.get("endOffset", -1) >= 0:
                    end = diverging["endOffset"]
                    log.info("[ReplicaFetcher broker=%d] %s diverged at epoch %d: truncating to %d",
                             self.node_id,
                             tp, diverging["epoch"], end)
                    plog.truncate_to(max(end, 0) if end >= 0 else plog.log_start_offset)
                    continue
                data = p.get("records") or b""
                if data:
                    try:
                        plog.append(data, batch_infos(data), assign_from=None, leader_epoch=-1, now_ms=now)
                    except (LogAppendError, RecordsError) as exc:
                        log.warning("[ReplicaFetcher broker=%d] %s: %s", self.node_id, tp, exc)
                        continue
                st.high_watermark = min(p["highWatermark"], plog.log_end_offset)
                self._notify(tp)
        return useful


def _producer_fields(records: bytes) -> tuple[int, int, int, int]:
    """(producer id, epoch, base sequence, record count) of a v2 batch's header."""
    if len(records) < 61 or records[16] != 2:
        return -1, -1, -1, 0
    pid = int.from_bytes(records[43:51], "big", signed=True)
    epoch = int.from_bytes(records[51:53], "big", signed=True)
    seq = int.from_bytes(records[53:57], "big", signed=True)
    count = int.from_bytes(records[57:61], "big", signed=True)
    return pid, epoch, seq, count
