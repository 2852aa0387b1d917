"""Shared test fixtures: where the golden vectors from real Kafka live; hypothesis's CI profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import Phase, settings

# CI runs every hypothesis test derandomized (the same examples every run, no example database), so a
# failure there is reproducible; set CI=1 locally to get the same. Mutation testing
# (scripts/mutation.sh) also skips shrinking: it only needs to know that a test fails.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("mutation", derandomize=True, database=None,
                          phases=[Phase.explicit, Phase.generate])
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
elif os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO.parent / "shared" / "golden"


def golden_path(*parts: str) -> Path:
    """A path under ../shared/golden, or skip the test with the reason when it is absent."""
    path = GOLDEN.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"golden data {path} is absent (../shared/golden sits beside the clone in CI)")
    return path
