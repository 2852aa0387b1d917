"""Errors of the image layer."""

from __future__ import annotations

from collections.abc import Sequence

from kraftwerk.errors import KraftwerkError
from kraftwerk.versions.metadata_version import MetadataVersion


class ImageError(KraftwerkError):
    """Base class of every image-layer failure."""


class MetadataReplayError(ImageError):
    """A record that cannot be applied to the image (unknown topic, epoch mismatch, bad value).

    Kafka treats these as fatal faults of the metadata loader; so do we: the log is inconsistent.
    """


class FatalFaultError(ImageError):
    """KIP-778 fail-stop: the node replayed a record its software cannot support.

    The host must stop the node (a controller resigns first, a broker unregisters first) and
    exit non-zero after logging ``str(error)``, which names the level and the node's own range.
    """

    def __init__(
        self,
        message: str,
        *,
        feature: str = "",
        level: int = -1,
        supported_min: int = -1,
        supported_max: int = -1,
    ) -> None:
        self.cleanup: tuple[object, ...] = ()
        """What to do before exiting (a broker's UnregisterBroker call), in order."""
        self.feature = feature
        self.level = level
        self.supported_min = supported_min
        self.supported_max = supported_max
        super().__init__(message)


class UnwritableMetadataError(ImageError):
    """The image holds data that the target metadata.version cannot represent.

    ``losses`` lists every loss found (the writer collects them all before raising), each with
    Kafka's wording where Kafka has one.
    """

    def __init__(self, metadata_version: MetadataVersion, losses: Sequence[str]) -> None:
        self.metadata_version = metadata_version
        self.losses = tuple(losses)
        super().__init__(loss_message(metadata_version, self.losses))

    @property
    def loss(self) -> str:
        """The first loss (Kafka's exception carries exactly one)."""
        return self.losses[0] if self.losses else ""


def loss_message(metadata_version: MetadataVersion, losses: Sequence[str]) -> str:
    """Kafka's UnwritableMetadataException text; several losses are joined with ``; ``."""
    return (
        "Metadata has been lost because the following could not be represented in "
        f"metadata.version {metadata_version}: {'; '.join(losses)}"
    )
