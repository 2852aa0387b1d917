"""The metadata record frame: how a metadata record sits in a KRaft log record's value.

Kafka's MetadataRecordSerde writes an unsigned-varint frame version (1), the record's api key and
its version (both unsigned varints), then the record body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from kraftwerk.native import compiled
from kraftwerk.protocol import codec
from kraftwerk.protocol.errors import DecodeError, UnknownMessageError
from kraftwerk.protocol.registry import all_specs, by_api_key
from kraftwerk.protocol.schema import Kind, MessageSpec

FRAME_VERSION = 1

#: the compiled twin of the frame decoder, or None (pure Python)
NATIVE = compiled("kraftwerk.protocol._ccodec")


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """A decoded metadata record: its declaration, version and body."""

    spec: MessageSpec
    version: int
    value: codec.Value


def encode_metadata_record(spec: MessageSpec, version: int, value: codec.Value) -> bytes:
    out = bytearray(codec.uvarint(FRAME_VERSION))
    out += codec.uvarint(spec.api_key)
    out += codec.uvarint(version)
    codec.encode_into(spec, version, value, out)
    return bytes(out)


@cache
def _metadata_specs() -> dict[int, MessageSpec]:
    """Metadata records by api key, keyed by the bare int: the registry's (kind, key) lookup hashes
    an enum in Python, which a cold load would do once per record."""
    return {s.api_key: s for s in all_specs() if s.kind is Kind.METADATA}


def _decode_metadata_record_py(data: bytes) -> MetadataRecord:
    """Decode a framed metadata record; unknown frame versions and api keys are DecodeErrors.

    The pure reference of ``_ccodec.FrameDecoder``, which hands it every input it does not take."""
    if len(data) > 2 and data[0] < 0x80 and data[1] < 0x80 and data[2] < 0x80:  # the usual: one byte each
        frame, api_key, version, pos = data[0], data[1], data[2], 3
    else:
        try:
            frame, pos = codec.read_uvarint(data, 0)
            api_key, pos = codec.read_uvarint(data, pos)
            version, pos = codec.read_uvarint(data, pos)
        except IndexError:
            raise DecodeError("truncated metadata record frame") from None
    if frame != FRAME_VERSION:
        raise DecodeError(f"unknown metadata record frame version {frame}")
    spec = _metadata_specs().get(api_key)
    if spec is None:
        try:
            spec = by_api_key(Kind.METADATA, api_key)
        except UnknownMessageError as exc:
            raise DecodeError(str(exc)) from None
    value, end = codec.decode_from(spec, version, data, pos)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing bytes after {spec.name} v{version}")
    record = _new_record(MetadataRecord)  # the frozen __init__, without its Python frame: once per record
    _set_spec(record, spec)
    _set_version(record, version)
    _set_value(record, value)
    return record


_new_record = object.__new__
_set_spec = MetadataRecord.__dict__["spec"].__set__
_set_version = MetadataRecord.__dict__["version"].__set__
_set_value = MetadataRecord.__dict__["value"].__set__


def _known_frame(api_key: int, version: int) -> tuple[MessageSpec, codec.Decoder] | None:
    """The record and decoder of a frame :func:`_decode_metadata_record_py` would decode, else None."""
    spec = _metadata_specs().get(api_key)
    if spec is None or version not in spec.valid_versions:
        return None
    return spec, codec.decoder_for(spec, version)


#: the frame decoder in use: the compiled twin when built (see :mod:`kraftwerk.native`)
decode_metadata_record: Callable[[bytes], MetadataRecord] = (
    _decode_metadata_record_py if NATIVE is None
    else NATIVE.frame_decoder(MetadataRecord, _known_frame, _decode_metadata_record_py))
