"""Shared test fixtures: where the golden vectors from real Kafka live; hypothesis's CI profile."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs every hypothesis test derandomized (the same examples every run, no example database), so a
# failure there is reproducible; set CI=1 locally to get the same.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO.parent / "shared" / "golden"


def golden_path(*parts: str) -> Path:
    """A path under ../shared/golden, or skip the test with the reason when it is absent."""
    path = GOLDEN.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"golden data {path} is absent (../shared/golden sits beside the clone in CI)")
    return path
