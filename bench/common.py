"""Small timing helpers shared by the benchmarks: best-of-N loops, never assertions."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def _calibrate(func: Callable[[], object], min_seconds: float) -> int:
    """How many calls make a timed loop of about ``min_seconds`` (doubling from one)."""
    loops = 1
    while True:
        start = time.perf_counter()
        for _ in range(loops):
            func()
        if time.perf_counter() - start >= min_seconds / 4:
            return loops
        loops *= 2


def _timed(func: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        func()
    return loops / (time.perf_counter() - start)


def best_rate(func: Callable[[], object], *, min_seconds: float = 0.3, repeats: int = 5) -> float:
    """Calls per second of ``func``: the best of ``repeats`` timed loops of at least ``min_seconds``."""
    loops = _calibrate(func, min_seconds)
    return max(_timed(func, loops) for _ in range(repeats))


def best_rates(funcs: Sequence[Callable[[], object]], *, rounds: int = 7, min_seconds: float = 0.15
               ) -> list[float]:
    """Calls per second of each function: the best of ``rounds`` timed loops, the functions taking
    turns within every round so that load from other processes on a shared machine hits them alike."""
    loops = [_calibrate(func, min_seconds) for func in funcs]
    best = [0.0] * len(funcs)
    for _ in range(rounds):
        for i, func in enumerate(funcs):
            best[i] = max(best[i], _timed(func, loops[i]))
    return best
