"""Shared test fixtures: where the bytes real Kafka produced live.

Everything the tests need is in ``tests/data/kafka/`` (its README says which Kafka release and
command produced each file). Only the Kafka 3.7 data dir of another project stays outside the
repository, at ``../shared/golden/kafka-3.7-cluster``; ``tests/kafka37`` reads it and skips as a
whole when it is absent.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KAFKA_DATA = REPO / "tests" / "data" / "kafka"
KAFKA_37_CLUSTER = REPO.parent / "shared" / "golden" / "kafka-3.7-cluster"


def golden_path(*parts: str) -> Path:
    """A file or directory under ``tests/data/kafka``; a missing one is a broken checkout, not a skip."""
    path = KAFKA_DATA.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the checkout (see tests/data/kafka/README.md)")
    return path
