"""Building metadata records for image tests (through the real codec, so values are valid)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.image.writer import ImageWriteResult
from kraftwerk.protocol import codec
from kraftwerk.protocol.frame import MetadataRecord, decode_metadata_record, encode_metadata_record
from kraftwerk.protocol.registry import lookup_record
from kraftwerk.versions.metadata_version import MetadataVersion


def rec(record_name: str, version: int = 0, /, **fields: Any) -> MetadataRecord:
    """A record as a reader decodes it: defaults filled in, encoded and decoded once."""
    spec = lookup_record(record_name)
    value = codec.default_value(spec)
    value.update(fields)
    return decode_metadata_record(encode_metadata_record(spec, version, value))


def mv_record(mv: MetadataVersion) -> MetadataRecord:
    return rec("FeatureLevelRecord", name="metadata.version", featureLevel=mv.feature_level)


def replay(records: Iterable[MetadataRecord], image: MetadataImage = EMPTY_IMAGE) -> MetadataImage:
    delta = MetadataDelta(image)
    for r in records:
        delta.replay(r)
    return delta.apply()


def reread(result: ImageWriteResult) -> list[MetadataRecord]:
    """The written records as a reader would decode them from the snapshot bytes."""
    return [decode_metadata_record(b) for b in result.encoded()]


def as_tuples(records: Iterable[MetadataRecord]) -> list[tuple[str, int, dict[str, Any]]]:
    return [(r.spec.name, r.version, r.value) for r in records]


def uid(n: int) -> uuid.UUID:
    return uuid.UUID(int=(n << 64) | 0xABCDEF)
