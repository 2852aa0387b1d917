"""Argument types for every ``kraftwerk`` option that takes a value.

A type says what kind of value an option takes; ``tests/cli/test_walk.py`` walks the parser and
feeds every option the wrong values of its kind, so an option must use one of these types (or
``choices``). Most types check their text at once (numbers, paths before anything is read or
written, addresses, levels) and raise ``argparse.ArgumentTypeError`` with one line naming the
problem. The values Kafka's own tools check inside the command, with texts and an order of checks
the tests compare against Kafka's (cluster ids, releases, ``name=level`` specs, voter lists), are
only declared here: the command checks them, still before it writes or sends anything.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraftwerk.errors import KraftwerkError

# --------------------------------------------------------------------------------- numbers


def _integer(text: str, minimum: int) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer value: {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """A count or an id: 0 or more."""
    return _integer(text, 0)


def positive_int(text: str) -> int:
    """A count that must be at least 1."""
    return _integer(text, 1)


def non_negative_float(text: str) -> float:
    """Seconds that may be 0 (a grace period)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """Seconds that must be more than 0 (a timeout)."""
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


# --------------------------------------------------------------------------------- paths


def _readable(text: str, is_kind: Callable[[Path], bool], kind: str) -> Path:
    """``text`` as a path that exists, can be read and is of the wanted kind."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path}: No such file or directory")
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{path}: Permission denied")
    if not is_kind(path):
        raise argparse.ArgumentTypeError(f"{path} is not a {kind}")
    return path


def input_file(text: str) -> Path:
    """A file to read (a config, a snapshot): it must exist and be a readable regular file."""
    return _readable(text, Path.is_file, "regular file")


def input_files(text: str) -> list[Path]:
    """A comma-separated list of files to read (``dump-log --files``)."""
    names = [n for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("no file given")
    return [input_file(n.strip()) for n in names]


def input_dir(text: str) -> Path:
    """A directory to read (a metadata log dir, a cluster dir): it must exist."""
    return _readable(text, Path.is_dir, "directory")


def _local(text: str) -> str:
    """A path or a ``file://`` URL as a local path (the Spark pipeline takes both)."""
    from kraftwerk.storage.fileio import local_path

    try:
        return local_path(text)
    except KraftwerkError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def dir_list(text: str) -> str:
    """Directories like ``log.dirs`` (comma separated; paths or ``file://`` URLs); which of them exist
    is the command's call (a fleet scan reports the missing ones and goes on)."""
    dirs = [d for d in text.split(",") if d.strip()]
    if not dirs:
        raise argparse.ArgumentTypeError("no directory given")
    for d in dirs:
        _local(d.strip())
    return text


def _nearest_existing(path: Path) -> Path:
    probe = path.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def output_dir(text: str) -> Path:
    """A directory to create or fill (a path or a ``file://`` URL): an existing directory, or a path
    whose nearest existing ancestor is a writable directory."""
    path = Path(_local(text))
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} exists and is not a directory")
    base = _nearest_existing(path)
    if not base.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"{path}: Permission denied ({base} is not writable)")
    return path


def output_file(text: str) -> Path:
    """A file to write (a log file, a snapshot): not a directory, in an existing writable one."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory")
    parent = path.absolute().parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"{path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{path}: Permission denied")
    return path


def output_file_or_dir(text: str) -> Path:
    """Where ``metadata rewrite`` writes: a file, or an existing directory that gets Kafka's
    ``<offset>-<epoch>.checkpoint`` name."""
    path = Path(text)
    return output_dir(text) if path.is_dir() else output_file(text)


# --------------------------------------------------------------------------------- Kafka values


def cluster_id(text: str) -> str:
    """What ``storage random-uuid`` prints; ``format_node`` checks it with Kafka 3.x's text."""
    return text


def directory_id(text: str) -> str:
    """A log dir's ``directory.id`` (a base64 UUID like ``storage random-uuid`` prints); the command
    parses it with Kafka's Uuid rules."""
    return text


def release_version(text: str) -> str:
    """A metadata.version or release (``3.9``, ``3.9-IV0``); the command resolves it with its own
    bounds and Kafka's "Unknown metadata.version" text."""
    return text


def release_or_level(text: str) -> str:
    """``storage format --metadata-version``: a release or a numeric level (checked by format)."""
    return text


def software_version(text: str) -> str:
    """A Kafka release whose feature ranges a node's software has, or ``latest``."""
    if text == "latest":
        return text
    from kraftwerk.versions.software import SoftwareVersion

    try:
        SoftwareVersion.for_release(text)
    except (KraftwerkError, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"Invalid software version {text!r}: {exc}") from None
    return text


def node_software_version(text: str) -> tuple[int, str]:
    """``ID=VERSION``: one node on another software version."""
    node_text, sep, version = text.partition("=")
    if not sep or not node_text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"Invalid {text!r}: expected ID=VERSION")
    return int(node_text), software_version(version.strip())


def feature_level(text: str) -> str:
    """``name=level``; the command parses it in Kafka's order (earlier results stay printed) with
    Kafka's "Can't parse feature=level string" texts."""
    return text


def feature_name(text: str) -> str:
    """A feature name (``features disable``); whether it exists is the controller's call."""
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError("Provided feature can not be empty.")
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        raise argparse.ArgumentTypeError(f"Invalid feature name {text!r}")
    return name


def scram_credential(text: str) -> str:
    """``--add-scram MECHANISM=[name=...,password=...]``: format parses it with Kafka's
    ScramParser texts (never echoing a password)."""
    return text


def scram_mechanism_config(text: str) -> str:
    """``scram alter --add MECHANISM=[iterations=N,password=P]``, parsed by the command."""
    return text


def user_name(text: str) -> str:
    """A SCRAM user name: anything but empty."""
    if not text:
        raise argparse.ArgumentTypeError("A user name can not be empty.")
    return text


def bootstrap_servers(text: str) -> str:
    """``host:port,...`` as Kafka's ``ClientUtils.parseAndValidateAddresses`` checks it."""
    from kraftwerk.runtime.admin_client import parse_bootstrap

    try:
        parse_bootstrap(text)
    except KraftwerkError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def start_offset(text: str) -> str:
    """``beginning``, ``end`` or a non-negative offset (kcat's ``-o``)."""
    if text in ("beginning", "end") or (text.isdigit() and text.isascii()):
        return text
    raise argparse.ArgumentTypeError(f"must be beginning, end or a non-negative offset, not {text!r}")


def delimiter(text: str) -> str:
    """A non-empty separator string."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def zookeeper_connect(text: str) -> str:
    """``host:port[,host:port...][/chroot]``, as Kafka's ``zookeeper.connect``."""
    from kraftwerk.migration.reader import parse_connect

    try:
        parse_connect(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"Invalid ZooKeeper connect string {text!r}: {exc}") from None
    return text


def initial_controllers(text: str) -> str:
    """``--initial-controllers``: ``id@host:port:directoryId,...`` (KIP-853), parsed by format
    after the config, as Kafka's tool does."""
    return text


def key_value(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` (``server start --override``)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"Invalid override {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def spark_master(text: str) -> str:
    """A Spark master URL in one of the forms Spark accepts."""
    if re.fullmatch(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?|local-cluster\[[0-9]+,[0-9]+,[0-9]+\]|yarn"
                    r"|(spark|mesos)://\S+|k8s://\S+", text.strip()):
        return text.strip()
    raise argparse.ArgumentTypeError(f"Could not parse Master URL: '{text}'")


def api_name(text: str) -> str:
    """A message name as Kafka's schemas spell it (``UpdateFeatures``, ``FEATURE_LEVEL_RECORD``)."""
    from kraftwerk.protocol.registry import all_specs

    if not any(text in (s.name, s.api_name, s.record_type_name) for s in all_specs()):
        raise argparse.ArgumentTypeError(f"unknown message {text!r}")
    return text


def hex_bytes(text: str) -> bytes:
    """Hexadecimal bytes (spaces allowed)."""
    try:
        return bytes.fromhex(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError("input is not hexadecimal") from None


def json_value(text: str) -> Any:
    """A JSON document."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"input is not valid JSON: {exc}") from None


def log_level(text: str) -> str:
    """A ``logging`` level name, in any case (``info``, ``WARNING``)."""
    level = text.strip().upper()
    if level not in logging.getLevelNamesMapping():
        names = ", ".join(n for n in logging.getLevelNamesMapping() if n not in ("WARN", "FATAL", "NOTSET"))
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (choose from {names})")
    return level


# --------------------------------------------------------------------------------- topics and configs

_CONFIG_KEY = re.compile(r"[a-zA-Z0-9._-]*")


def topic_name(text: str) -> str:
    """A topic name as Kafka's ``Topic.validate`` accepts it (``--topic``)."""
    from kraftwerk.controller.topics import topic_name_error

    error = topic_name_error(text)
    if error is not None:
        raise argparse.ArgumentTypeError(error)
    return text


def entity_name(text: str) -> str:
    """``--entity-name``: a topic name or a node id; which one the entity type says, so the
    command checks it (with kafka-configs' texts)."""
    return text


def config_pairs(text: str) -> dict[str, str]:
    """``--add-config 'k1=v1,k2=[a,b]'`` as kafka-configs splits it: commas outside ``[...]``
    separate the pairs, brackets are dropped, spaces around ``=`` are trimmed, ``k=`` is allowed."""
    pairs: list[str] = []
    depth, current = 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            pairs.append(current)
            current = ""
        else:
            current += ch
    pairs.append(current)
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key or not _CONFIG_KEY.fullmatch(key):
            raise argparse.ArgumentTypeError('Invalid entity config: all configs to be added must be in the '
                                             'format "key=val".')
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        out[key] = value
    return out


def config_keys(text: str) -> list[str]:
    """``--delete-config k1,k2``: config names."""
    keys = [k.strip() for k in text.split(",")]
    if any(not k or not _CONFIG_KEY.fullmatch(k) for k in keys):
        raise argparse.ArgumentTypeError(f"Invalid config name(s): {text!r}")
    return keys


def replica_assignment(text: str) -> list[list[int]]:
    """``--replica-assignment 1:2,2:3``: per partition, its broker ids (the first the preferred
    leader); every partition lists as many as the first."""
    partitions = []
    for part in text.split(","):
        try:
            ids = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"Invalid replica assignment {text!r}: expected broker ids as "
                                             "1:2,2:3") from None
        if len(set(ids)) != len(ids):
            raise argparse.ArgumentTypeError(f"Partition replica lists may not contain duplicate entries: "
                                             f"{part.strip()}")
        partitions.append(ids)
    for index, replicas in enumerate(partitions):
        if len(replicas) != len(partitions[0]):
            raise argparse.ArgumentTypeError(f"Partition {index} has different replication factor: "
                                             f"{replicas}")
    return partitions


def acl_principal(text: str) -> str:
    """``--allow-principal User:alice``: Kafka's ``SecurityUtils.parseKafkaPrincipal``."""
    kind, colon, name = text.strip().partition(":")
    if not colon or not kind or not name:
        raise argparse.ArgumentTypeError("expected a string in format principalType:principalName but got "
                                         + text)
    return f"{kind}:{name}"


def acl_operation(text: str) -> str:
    """``--operation Read`` (Kafka's names, e.g. DescribeConfigs; UPPER_SNAKE also accepted) as
    the AclOperation's name."""
    from kraftwerk.image.model import AclOperation

    name = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", text.strip()).upper().replace("-", "_")
    if name not in AclOperation.__members__ or name in ("UNKNOWN", "ANY"):
        raise argparse.ArgumentTypeError(f"Invalid operation: {text}")
    return name


def acl_resource_name(text: str) -> str:
    """``--topic``/``--group``/``--transactional-id`` of an ACL: a name or ``*``, never empty."""
    if not text.strip():
        raise argparse.ArgumentTypeError("A resource name can not be empty.")
    return text.strip()


def resource_pattern_type(text: str) -> str:
    """``--resource-pattern-type``: literal, prefixed, any or match (Kafka's PatternTypeConverter)."""
    name = text.strip().upper()
    if name not in ("LITERAL", "PREFIXED", "ANY", "MATCH"):
        raise argparse.ArgumentTypeError(f"Unknown resource-pattern-type: {text}")
    return name
