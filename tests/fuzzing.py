"""What every parser fuzz test checks: bad input ends in the layer's typed error, nothing else,
and parsing never allocates more than the input can justify."""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

ALLOCATION_SLACK = 256 * 1024
"""What a parser may allocate regardless of its input (interpreter caches, one codec table)."""
ALLOCATION_PER_BYTE = 64
"""What it may allocate per input byte (a decoded value is a few Python objects per byte)."""


def parse_or_typed_error(parse: Callable[[], Any], errors: type[Exception] | tuple[type[Exception], ...],
                         input_size: int) -> Any:
    """Run ``parse``: it returns a value or raises one of ``errors``; any other exception fails the
    test, and so does a peak allocation above what ``input_size`` bytes allow (measured on a second
    run, once the codec has built and cached its decoders)."""
    with contextlib.suppress(errors):
        parse()
    tracemalloc.start()
    try:
        try:
            result = parse()
        except errors:
            result = None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    budget = ALLOCATION_SLACK + ALLOCATION_PER_BYTE * input_size
    assert peak <= budget, f"parsing {input_size} bytes allocated {peak} bytes at its peak (budget {budget})"
    return result


@st.composite
def damaged(draw: st.DrawFn, valid: bytes) -> bytes:
    """``valid`` with a few bit flips, then maybe truncated, maybe with bytes appended."""
    data = bytearray(valid)
    for _ in range(draw(st.integers(0, 4)) if data else 0):
        pos = draw(st.integers(0, len(data) - 1))
        data[pos] ^= 1 << draw(st.integers(0, 7))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    if draw(st.integers(0, 4)) == 0:
        data += draw(st.binary(max_size=8))
    return bytes(data)
