"""Errors raised by the protocol layer."""

from __future__ import annotations

from kraftwerk.errors import KraftwerkError


class ProtocolError(KraftwerkError):
    """Base class of every protocol-layer failure."""


class DecodeError(ProtocolError):
    """Bytes that are truncated, oversized or otherwise not a valid encoding."""


class EncodeError(ProtocolError):
    """A value that cannot be written at the requested version."""


class UnsupportedVersionError(ProtocolError):
    """A message version (or a field value) that the version cannot carry."""


class UnknownMessageError(ProtocolError):
    """A message name or api key that is not declared."""
