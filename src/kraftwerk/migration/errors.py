"""Errors of the migration layer: bad znodes (always naming their path) and ZooKeeper failures."""

from __future__ import annotations

from collections.abc import Sequence

from kraftwerk.errors import KraftwerkError


class MigrationError(KraftwerkError):
    """Root of the migration layer's errors."""


class ZnodeError(MigrationError):
    """A znode Kafka could not read either; ``path`` is the znode, ``reason`` says what is wrong."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class MalformedZnodeError(ZnodeError):
    """Not UTF-8, not JSON, or a field missing or of the wrong type."""


class UnknownZnodeVersionError(ZnodeError):
    """A JSON ``version`` this reader (like Kafka 3.9) does not know."""


class MissingPartitionStateError(ZnodeError):
    """A partition of a topic's assignment without its ``.../partitions/<p>/state`` znode."""


class MissingTopicIdError(ZnodeError):
    """A topic znode without ``topic_id``: Kafka's migration aborts on it (ZkTopicMigrationClient)."""


class InvalidZnodesError(MigrationError):
    """One or more znodes are invalid and ``--skip-invalid`` was not given."""

    def __init__(self, errors: Sequence[ZnodeError]) -> None:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        super().__init__(f"Invalid znode {first}{more}; use --skip-invalid to skip invalid znodes")
        self.errors = tuple(errors)


class ZooKeeperError(MigrationError):
    """ZooKeeper is unreachable, the chroot is missing, or the tree kept changing while it was read."""


class DumpError(MigrationError):
    """A ``migration dump`` file line that is not a znode record."""


class UnsupportedMetadataVersionError(MigrationError):
    """A target metadata.version below the first one that supports a migration (3.4-IV0)."""
