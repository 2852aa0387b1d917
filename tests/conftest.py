"""Shared test fixtures: where the golden vectors from real Kafka live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO.parent / "shared" / "golden"


def golden_path(*parts: str) -> Path:
    """A path under ../shared/golden, or skip the test with the reason when it is absent."""
    path = GOLDEN.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"golden data {path} is absent (../shared/golden sits beside the clone in CI)")
    return path
