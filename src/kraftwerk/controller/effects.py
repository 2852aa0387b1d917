"""What the cores hand back to the runtime: replies to requests and effects of replay.

The cores are sans-I/O: they never append, send, write or sleep. A request yields a *reply*
(:class:`Respond`, :class:`AppendThenRespond`, or on a broker :class:`Forward`); replaying
committed records yields *effects* (the image layer's :class:`WriteSnapshot` and
:class:`MetadataVersionChanged`, and the broker's :class:`CloseClientConnections`). Response
bodies are codec dicts (camelCase keys) for the response of the request's api key at the
request's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kraftwerk.image.replay import MetadataVersionChanged, WriteSnapshot
from kraftwerk.protocol.frame import MetadataRecord, encode_metadata_record

Body = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Respond:
    """Send ``body`` as the response now; nothing to append."""

    body: Body


@dataclass(frozen=True, slots=True)
class AppendThenRespond:
    """Append ``records`` through raft (one batch when ``atomic``), wait until the high watermark
    passes the last one, then send ``response_body``. If the append fails or leadership is lost
    first, answer the request with NOT_CONTROLLER instead (``not_controller_body``).

    ``kraft_version_upgrade`` is set when an UpdateFeatures raised kraft.version: the level lives
    in KRaft control records, so the runtime asks raft to write it (the records carry only Kafka's
    NoOpRecord for it).
    """

    records: tuple[MetadataRecord, ...]
    response_body: Body
    atomic: bool = True
    not_controller_body: Body | None = None
    kraft_version_upgrade: int | None = None

    def encoded_records(self) -> list[bytes]:
        """The framed record values, ready for ``RaftNode.append``."""
        return [encode_metadata_record(r.spec, r.version, r.value) for r in self.records]


@dataclass(frozen=True, slots=True)
class Forward:
    """(Broker) send this request to the active controller, wrapped in an Envelope, and relay
    the controller's response to the client unchanged."""

    api_key: int
    version: int
    body: Body


@dataclass(frozen=True, slots=True)
class CloseClientConnections:
    """(Broker) close every client connection so clients renegotiate ApiVersions."""

    reason: str


Effect = WriteSnapshot | MetadataVersionChanged | CloseClientConnections
Reply = Respond | AppendThenRespond | Forward


__all__ = [
    "AppendThenRespond",
    "Body",
    "CloseClientConnections",
    "Effect",
    "Forward",
    "MetadataVersionChanged",
    "Reply",
    "Respond",
    "WriteSnapshot",
]
