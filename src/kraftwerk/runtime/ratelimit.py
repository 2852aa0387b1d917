"""A rate-limited warning: one line per refused request or peer, without letting a flood of bad
frames (or a misconfigured peer retrying every 100 ms) flood the node's log."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable


class RateLimitedLog:
    """Logs at most ``burst`` warnings per ``interval_s``; the first warning logged after some were
    dropped says how many, so the log never hides that refusals went on."""

    def __init__(self, logger: logging.Logger, *, burst: int = 5, interval_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.burst = burst
        self.interval_s = interval_s
        self._clock = clock
        self._window_start = float("-inf")
        self._in_window = 0
        self.suppressed = 0

    def warning(self, message: str, *args: object) -> bool:
        """Log ``message % args`` unless the window is full; True when it was logged."""
        now = self._clock()
        if now - self._window_start >= self.interval_s:
            self._window_start = now
            self._in_window = 0
        if self._in_window >= self.burst:
            self.suppressed += 1
            return False
        self._in_window += 1
        if self.suppressed:
            self.logger.warning("(%d similar warning(s) suppressed in the last %gs)", self.suppressed,
                                self.interval_s)
            self.suppressed = 0
        self.logger.warning(message, *args)
        return True
