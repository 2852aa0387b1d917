"""Errors of the runtime layer: network and node-process failures (config errors are the config
layer's, re-exported here)."""

from __future__ import annotations

from kraftwerk.config.errors import ConfigError as ConfigError  # an invalid server.properties
from kraftwerk.errors import KraftwerkError


class RuntimeLayerError(KraftwerkError):
    """Root of the runtime layer's errors (named so it does not shadow the builtin RuntimeError)."""


class NetworkError(RuntimeLayerError):
    """A connection failed, closed, or sent bytes we cannot accept."""


class ConnectionClosedError(NetworkError):
    """The peer closed the connection (or we did) before a response arrived."""


class FrameTooLargeError(NetworkError):
    """A size prefix above the configured maximum (Kafka's ``InvalidReceiveException``)."""


class RequestTimeoutError(NetworkError):
    """No response within the request timeout; the connection is closed, as Kafka's client does."""


class NodeError(RuntimeLayerError):
    """A node process cannot start or must stop (fatal fault)."""
