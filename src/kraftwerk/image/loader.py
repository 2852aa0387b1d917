"""Loading images: replay a snapshot and the log after it, batch by batch.

The loader is pure: it takes :class:`MetadataBatch` values (offsets, epoch, decoded records) and
returns images. Reading them from files is :mod:`kraftwerk.image.source`'s job.

``replay_batches`` builds one delta for the whole stream and applies it once (a cold load:
cheapest for big logs). A node following the log batch by batch (a "hot" follower, Kafka's
MetadataLoader) uses :class:`kraftwerk.image.replay.ImageReplayer`, which adds fail-stop and the
effects of a metadata.version change on top of these functions.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage, Provenance
from kraftwerk.protocol.frame import MetadataRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MetadataBatch:
    """A batch of metadata records from a log or snapshot.

    ``records`` pairs each decoded record with its offset. Control batches (leader change, KRaft
    version/voters, snapshot header/footer) carry no metadata records and are passed as
    ``is_control`` with no records: they still advance the provenance.
    """

    base_offset: int
    last_offset: int
    epoch: int
    append_time_ms: int
    records: tuple[tuple[int, MetadataRecord], ...]
    is_control: bool = False


def _provenance(batch: MetadataBatch) -> Provenance:
    return Provenance(batch.last_offset, batch.epoch, batch.append_time_ms, True)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a log is replayed, on again after (if it was).

    A cold load builds millions of objects that all survive and form no cycle; with the collector
    on, its passes over the growing image cost more than the replay itself (2.7x the time in
    ``bench/bench_image.py``). Nothing the replay makes needs it: reference counting frees the
    decoded records as it goes.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def replay_batches(batches: Iterable[MetadataBatch], image: MetadataImage = EMPTY_IMAGE,
                   *, snapshot: bool = False) -> MetadataImage:
    """Replay every batch into one delta over ``image`` and apply it once.

    A transaction still open at the end stays unapplied (its End record has not been committed).
    """
    delta = MetadataDelta(image, snapshot=snapshot)
    provenance = image.provenance
    count = 0
    with _collector_paused():
        for batch in batches:
            for offset, record in batch.records:
                delta.replay(record, offset)
            provenance = _provenance(batch)
            count += 1
    if delta.in_transaction:
        pending = delta.pending_transaction or []
        log.warning("The log ends inside a metadata transaction; %d record(s) are not applied", len(pending))
    log.debug("Replayed %d batch(es), %d record(s)", count, delta.records_replayed)
    return delta.apply(provenance)


def load_snapshot(batches: Iterable[MetadataBatch], image: MetadataImage = EMPTY_IMAGE,
                  snapshot_offset: int = -1, snapshot_epoch: int = -1) -> MetadataImage:
    """Load a snapshot, over ``image`` or cold: the result does not depend on ``image``.

    ``snapshot_offset``/``snapshot_epoch`` come from the snapshot id (end offset, epoch); the
    image then contains offsets up to ``snapshot_offset - 1``, as Kafka's provenance says.
    """
    result = replay_batches(batches, image, snapshot=True)
    if snapshot_offset >= 0:
        prov = Provenance(snapshot_offset - 1, snapshot_epoch, result.provenance.last_log_time_ms, True)
        from dataclasses import replace

        result = replace(result, provenance=prov, features_epoch=snapshot_offset - 1)
    return result
