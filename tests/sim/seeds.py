"""How many seeds the seeded-mix simulations play: the default run's ~1,000, or a nightly profile's.

``KRAFTWERK_SIM_SEEDS=10000`` (for instance) scales every seeded mix of ``tests/sim`` in proportion,
so that the mixes play about that many seeds in all; unset, they play the default counts below.
"""

from __future__ import annotations

import os

DEFAULT_TOTAL = 1000
"""About what the default counts of every seeded mix in tests/sim add up to."""


def seeds(default: int) -> int:
    """The seed count of one mix: ``default`` scaled by ``KRAFTWERK_SIM_SEEDS`` / DEFAULT_TOTAL."""
    wanted = os.environ.get("KRAFTWERK_SIM_SEEDS")
    if not wanted:
        return default
    total = int(wanted)
    if total <= 0:
        raise ValueError(f"KRAFTWERK_SIM_SEEDS must be a positive number of seeds, not {wanted!r}")
    return max(1, round(default * total / DEFAULT_TOTAL))
