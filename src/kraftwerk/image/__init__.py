"""The metadata image: replay a metadata log into an immutable image, write it at any version.

Public API:

* :class:`MetadataImage` and its parts (``kraftwerk.image.model``), :class:`MetadataDelta`;
* :func:`replay_batches`, :func:`load_snapshot` (pure loading); :class:`ImageReplayer` (a node
  following the log batch by batch: fail-stop, snapshots at a metadata.version change);
* :func:`load_log_dir`, :func:`load_snapshot_file` (a ``__cluster_metadata-0`` dir or a snapshot);
* :func:`write_image`, :func:`image_losses`, :class:`ImageWriterOptions`, :class:`LossPolicy`;
* :func:`write_snapshot` (a crash-safe KRaft snapshot file of an image at a version).
"""

from kraftwerk.image.delta import MetadataDelta
from kraftwerk.image.errors import ImageError, MetadataReplayError, UnwritableMetadataError
from kraftwerk.image.loader import MetadataBatch, load_snapshot, replay_batches
from kraftwerk.image.model import EMPTY_IMAGE, MetadataImage
from kraftwerk.image.replay import ImageReplayer
from kraftwerk.image.snapshot import SnapshotId, write_snapshot
from kraftwerk.image.source import load_log_dir, load_snapshot_file
from kraftwerk.image.writer import ImageWriteResult, ImageWriterOptions, LossPolicy, image_losses, write_image

__all__ = [
    "EMPTY_IMAGE",
    "ImageError",
    "ImageReplayer",
    "ImageWriteResult",
    "ImageWriterOptions",
    "LossPolicy",
    "MetadataBatch",
    "MetadataDelta",
    "MetadataImage",
    "MetadataReplayError",
    "SnapshotId",
    "UnwritableMetadataError",
    "image_losses",
    "load_log_dir",
    "load_snapshot",
    "load_snapshot_file",
    "replay_batches",
    "write_image",
    "write_snapshot",
]
