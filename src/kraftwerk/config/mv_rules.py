"""KIP-1294's catalogue: config constraints that arrive with a metadata.version, each citing its source.

Kafka 4.0 and 4.1 raised minimums by *release*: a broker whose ``server.properties`` held a 3.x
value no longer started after the binary upgrade (KIP-1294's motivation). kraftwerk keeps the 3.x
rule as the base validator and re-expresses each raise as a rule of 4.0-IV0 (level 22), so the
new minimum binds once the cluster's metadata.version reaches 4.0 -- and an operator who cannot
meet it yet sees the refusal at the upgrade, with the cluster still running. The KIP's own example
(the 3 MiB ``segment.bytes`` minimum) arrives with 4.4-IV1, kraftwerk's 4.4 release.

A rule named here for a topic config also binds the broker configs that supply its default (its
synonyms): ``segment.bytes`` and ``log.segment.bytes`` obey the same minimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from kraftwerk.config.definition import MvRule
from kraftwerk.config.validators import Range, Validator
from kraftwerk.versions.metadata_version import MetadataVersion

MIB = 1 << 20
IBP_4_0_IV0 = MetadataVersion.IBP_4_0_IV0.feature_level
IBP_4_4_IV1 = MetadataVersion.IBP_4_4_IV1.feature_level


@dataclass(frozen=True, slots=True)
class ConstraintChange:
    """One tightened constraint: the config it is declared on, from which level, the rule, why."""

    config: str
    level: int
    validator: Validator
    source: str

    def rule(self) -> MvRule:
        return MvRule(self.level, self.validator, self.source)


CONSTRAINT_CHANGES: tuple[ConstraintChange, ...] = (
    ConstraintChange(
        "segment.bytes", IBP_4_0_IV0, Range.at_least(1 * MIB),
        "KIP-1030 row 2 (KAFKA-16368): at least 1 MiB; Kafka 4.0.0 for log.segment.bytes (PR #18140), "
        "4.1.0 for segment.bytes (KAFKA-19080, PR #19371)"),
    ConstraintChange(
        "segment.bytes", IBP_4_4_IV1, Range.at_least(3 * MIB),
        "KIP-1294's example: metadata.version 4.4-IV1 raises the minimum to 3 MiB"),
    ConstraintChange(
        "metadata.log.segment.bytes", IBP_4_0_IV0, Range.at_least(8 * MIB),
        "KAFKA-19080 (Kafka 4.1.0): at least 8 MiB, formerly an internal floor"),
    ConstraintChange(
        "remote.log.manager.copier.thread.pool.size", IBP_4_0_IV0, Range.at_least(1),
        "KIP-1030 row 9 (PR #18137, Kafka 4.0.0): -1 is no longer allowed"),
    ConstraintChange(
        "remote.log.manager.expiration.thread.pool.size", IBP_4_0_IV0, Range.at_least(1),
        "KIP-1030 row 10 (PR #18137, Kafka 4.0.0): -1 is no longer allowed"),
)


def rules_by_config(changes: tuple[ConstraintChange, ...] = CONSTRAINT_CHANGES
                    ) -> Mapping[str, tuple[MvRule, ...]]:
    """Config name → its rules sorted by level (the KIP's ``NavigableMap<Short, Validator>``)."""
    table: dict[str, list[MvRule]] = {}
    for change in changes:
        table.setdefault(change.config, []).append(change.rule())
    return MappingProxyType({name: tuple(sorted(rules, key=lambda r: r.level))
                             for name, rules in table.items()})
