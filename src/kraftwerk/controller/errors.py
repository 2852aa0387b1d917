"""Errors of the controller and broker cores."""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError
from kraftwerk.protocol.error_codes import Errors


class ControllerError(KraftwerkError):
    """Base class of every controller/broker core failure."""


class ApiError(ControllerError):
    """A request refused with a Kafka error code and message (Kafka's ``ApiError``).

    Raised inside the cores by the check functions and turned into a response body; the runtime
    never sees it.
    """

    def __init__(self, error: Errors, message: str | None = None) -> None:
        self.error = error
        self.text = message
        super().__init__(message if message is not None else error.describe())


class FatalFaultError(ControllerError):
    """KIP-778 fail-stop: the node replayed a record its software cannot support.

    The runtime must stop the node (a controller resigns first, a broker unregisters first) and
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
