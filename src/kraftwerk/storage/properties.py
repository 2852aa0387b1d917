"""Kafka's ``meta.properties`` (versions 0 and 1), read and written as Kafka does.

The text is Java ``Properties`` text, parsed by :mod:`kraftwerk.config.properties` (ISO-8859-1);
a malformed ``\\u`` escape or a bad value raises :class:`CorruptFileError` with the line number.
Kafka writes the file with ``Properties.store(writer, "")`` (PropertiesUtils): an empty comment
line ``#``, a ``#<Date.toString()>`` line, then ``key=value`` lines in the iteration order of the
JDK 17 ``Properties`` map (a ConcurrentHashMap with 16 bins), which is why the golden files list
``node.id, directory.id, version, cluster.id``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kraftwerk.config.errors import PropertiesSyntaxError
from kraftwerk.config.properties import PropertyEntry, escape_property, parse_properties, properties_dict
from kraftwerk.protocol.errors import ProtocolError
from kraftwerk.protocol.json_form import uuid_from_str, uuid_to_str
from kraftwerk.storage.errors import CorruptFileError, UnsupportedFileVersionError
from kraftwerk.storage.fileio import atomic_write, read_bytes

log = logging.getLogger(__name__)

META_PROPERTIES_FILE = "meta.properties"

VERSION_KEY = "version"
CLUSTER_ID_KEY = "cluster.id"
BROKER_ID_KEY = "broker.id"
NODE_ID_KEY = "node.id"
DIRECTORY_ID_KEY = "directory.id"

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1


# ---------------------------------------------------------------------- writing

def java_date(when: datetime) -> str:
    """``java.util.Date.toString()``: ``EEE MMM dd HH:mm:ss zzz yyyy`` (naive datetimes are UTC)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    zone = when.tzname() or "UTC"
    return (f"{_DAYS[when.weekday()]} {_MONTHS[when.month - 1]} {when.day:02d} "
            f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} {zone} {when.year}")


def _java_string_hash(s: str) -> int:
    data = s.encode("utf-16-be")  # Java hashes UTF-16 code units
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def java_properties_order(keys: Iterable[str]) -> list[str]:
    """The order JDK 17's ``Properties.store`` writes ``keys`` in (ConcurrentHashMap bins).

    Exact for up to 12 keys (the map's first resize threshold), which covers every file Kafka
    writes this way; beyond that the bin order of the grown table is used (an approximation of
    the map's split order within a bin).
    """
    ordered = list(dict.fromkeys(keys))
    table = 16
    while len(ordered) > table * 3 // 4:
        table *= 2

    def bin_of(k: str) -> int:
        h = _java_string_hash(k)
        return ((h ^ (h >> 16)) & 0x7FFFFFFF) & (table - 1)

    return sorted(ordered, key=bin_of)  # sorted() is stable: insertion order within a bin


def format_properties(props: Mapping[str, str], when: datetime) -> bytes:
    """The bytes ``Properties.store(printWriter, "")`` writes on JDK 17 (UTF-8, ``\\n`` lines)."""
    lines = ["#", "#" + java_date(when)]
    lines += [f"{escape_property(k, is_key=True)}={escape_property(props[k], is_key=False)}"
              for k in java_properties_order(props)]
    return ("\n".join(lines) + "\n").encode("utf-8")


# ---------------------------------------------------------------------- meta.properties

@dataclass(frozen=True, slots=True)
class MetaProperties:
    """The per-log-directory identity Kafka keeps in ``meta.properties``.

    Version 0 (ZooKeeper era) may lack the cluster id and carries the node id as ``broker.id``;
    version 1 (KRaft) requires ``cluster.id`` and ``node.id``. ``directory.id`` is optional in both.
    """

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: uuid.UUID | None = None

    def __post_init__(self) -> None:
        if self.version not in (0, 1):
            raise ValueError(f"Unknown meta.properties version number {self.version}")
        if self.version == 1 and (self.cluster_id is None or self.node_id is None):
            raise ValueError("meta.properties version 1 needs both cluster.id and node.id")

    def to_properties(self) -> dict[str, str]:
        """The key/value pairs in the order Kafka's MetaProperties.toProperties sets them."""
        props = {VERSION_KEY: str(self.version)}
        if self.cluster_id is not None:
            props[CLUSTER_ID_KEY] = self.cluster_id
        if self.node_id is not None:
            props[BROKER_ID_KEY if self.version == 0 else NODE_ID_KEY] = str(self.node_id)
        if self.directory_id is not None:
            props[DIRECTORY_ID_KEY] = uuid_to_str(self.directory_id)
        return props


def _int_prop(path: Path | str, entry: PropertyEntry) -> int:
    text = entry.value
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit():
        raise CorruptFileError(path, f"Unable to read {entry.key} as a base-10 number: {text!r}",
                               line=entry.line)
    # more than 10 digits is out of range whatever they are (and is never converted: Python refuses
    # to convert more than 4300 digits)
    value = int(text) if len(body.lstrip("0")) <= 10 else _INT32_MAX + 1
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise CorruptFileError(path, f"{entry.key} {text} is out of the int32 range", line=entry.line)
    return value


def parse_meta_properties(data: bytes, path: Path | str = META_PROPERTIES_FILE) -> MetaProperties:
    """Validate meta.properties content the way Kafka's MetaProperties.Builder does."""
    try:
        entries = properties_dict(parse_properties(data.decode("latin-1"), str(path)))
    except PropertiesSyntaxError as exc:
        raise CorruptFileError(path, exc.detail, line=exc.line) from None
    version_entry = entries.get(VERSION_KEY)
    version_text = "0" if version_entry is None else version_entry.value
    if version_text not in ("0", "1"):
        raise UnsupportedFileVersionError(path, f"Unknown meta.properties version number {version_text}",
                                          line=None if version_entry is None else version_entry.line)
    version = int(version_text)
    node_id: int | None = None
    if version == 0:
        if BROKER_ID_KEY in entries:
            node_id = _int_prop(path, entries[BROKER_ID_KEY])
    else:
        if NODE_ID_KEY not in entries:
            raise CorruptFileError(path, "Failed to find node.id")
        node_id = _int_prop(path, entries[NODE_ID_KEY])
    cluster = entries.get(CLUSTER_ID_KEY)
    if version == 1 and cluster is None:
        raise CorruptFileError(path, "cluster.id was not found.")
    directory_id: uuid.UUID | None = None
    dir_entry = entries.get(DIRECTORY_ID_KEY)
    if dir_entry is not None:
        try:
            directory_id = uuid_from_str(dir_entry.value)
        except ProtocolError as exc:
            raise CorruptFileError(path, f"Unable to read directory.id as a Uuid: {exc}",
                                   line=dir_entry.line) from None
    return MetaProperties(version, None if cluster is None else cluster.value, node_id, directory_id)


def read_meta_properties(path: Path) -> MetaProperties:
    """Read ``meta.properties`` (pass the file or its log directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / META_PROPERTIES_FILE
    return parse_meta_properties(read_bytes(path), path)


def format_meta_properties(meta: MetaProperties, when: datetime | None = None) -> bytes:
    """The bytes Kafka writes for ``meta`` with ``when`` in the date comment (default: now, UTC)."""
    return format_properties(meta.to_properties(), when or datetime.now(UTC))


def write_meta_properties(path: Path, meta: MetaProperties, when: datetime | None = None) -> None:
    """Write crash-safely through ``meta.properties.tmp`` like PropertiesUtils.writePropertiesFile."""
    path = Path(path)
    if path.is_dir():
        path = path / META_PROPERTIES_FILE
    atomic_write(path, format_meta_properties(meta, when))
    log.info("wrote %s: %s", path, meta)
