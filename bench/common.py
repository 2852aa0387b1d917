"""Small timing helpers shared by the benchmarks: best-of-N loops, never assertions."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_rate(func: Callable[[], object], *, min_seconds: float = 0.3, repeats: int = 5) -> float:
    """Calls per second of ``func``: the best of ``repeats`` timed loops of at least ``min_seconds``."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            func()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds / 4:
            break
        loops *= 2
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            func()
        best = max(best, loops / (time.perf_counter() - start))
    return best
