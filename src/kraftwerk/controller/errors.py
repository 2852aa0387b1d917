"""Errors of the controller and broker cores (KIP-778's fail-stop is the image layer's: replay raises it)."""

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

