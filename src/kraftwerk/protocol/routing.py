"""One api key → handler table per core: adding an RPC is one handler method and one table line.

A core (the controller, the broker) keeps a module-level table from api key to a handler; the
handler is a method of the core or of one of its managers (:func:`via`), and every handler takes
the same :class:`Request`, so the table, not a chain of ``if api_key == ...``, says who answers what.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

Owner = TypeVar("Owner")
Part = TypeVar("Part")
Reply = TypeVar("Reply")


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request as a core sees it: the body is the codec dict at ``version``."""

    api_key: int
    version: int
    body: Mapping[str, Any]
    now_ms: int
    listener_name: str | None = None
    """The listener it arrived on (a broker answers with that listener's endpoints)."""


def via(
    part: Callable[[Owner], Part], handler: Callable[[Part, Request], Reply]
) -> Callable[[Owner, Request], Reply]:
    """A table entry answered by one of the core's managers: ``part(core)`` picks the manager."""

    def call(owner: Owner, request: Request) -> Reply:
        return handler(part(owner), request)

    return call
