"""One exponential backoff (Kafka's ``ExponentialBackoff``) for every retry loop: client reconnects,
broker registration, AlterPartition, the migration driver's retries."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExponentialBackoff:
    """``initial_ms * 2^attempts``, capped at ``max_ms``; with ``jitter`` j, a uniform factor in
    [1 - j, 1 + j] spreads retries of many clients apart."""

    initial_ms: int
    max_ms: int
    jitter: float = 0.0

    def delay_ms(self, attempts: int) -> int:
        """The delay before retry number ``attempts + 1`` (``attempts`` = failures so far - 1)."""
        return min(self.max_ms, self.initial_ms * (1 << min(max(attempts, 0), 62)))

    def jittered_ms(self, attempts: int, rng: random.Random) -> float:
        """:meth:`delay_ms` times the jitter factor drawn from ``rng``."""
        raw = self.delay_ms(attempts)
        return raw * rng.uniform(1 - self.jitter, 1 + self.jitter) if self.jitter else float(raw)
