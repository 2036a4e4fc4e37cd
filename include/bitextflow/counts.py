"""Per-stage accounting: every item that enters a stage is either kept or dropped for a named reason.

Stages never drop silently: each writes its :class:`StageCounts` next to its output, the DAG shows
them in the task log, and the release aggregates them into its statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StageCounts:
    stage: str
    items_in: int = 0
    kept: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    # Items kept after a repair (mojibake fixed, oversized page cut), by what was repaired; not a drop.
    repaired: Counter[str] = field(default_factory=Counter)

    def seen(self, n: int = 1) -> None:
        self.items_in += n

    def keep(self, n: int = 1) -> None:
        self.kept += n

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] += n

    def repair(self, what: str, n: int = 1) -> None:
        if n:
            self.repaired[what] += n

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def unbalanced(self) -> str | None:
        """Why the counts lose or invent items (``in`` is not ``kept`` plus the dropped counts); None when they
        add up. Repairs are kept items, counted in ``kept`` already."""
        if self.items_in == self.kept + self.dropped_total:
            return None
        missing = self.items_in - self.kept - self.dropped_total
        return (
            f"in={self.items_in} but kept={self.kept} + dropped={self.dropped_total} "
            f"({'lost' if missing > 0 else 'invented'} {abs(missing)} without a reason)"
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            "stage": self.stage,
            "in": self.items_in,
            "kept": self.kept,
            "dropped": dict(sorted(self.dropped.items())),
        }
        if self.repaired:
            data["repaired"] = dict(sorted(self.repaired.items()))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageCounts:
        return cls(data["stage"], data["in"], data["kept"], Counter(data.get("dropped", {})), Counter(data.get("repaired", {})))

    @classmethod
    def merged(cls, stage: str, parts: Iterable[StageCounts]) -> StageCounts:
        total = cls(stage)
        for part in parts:
            total.items_in += part.items_in
            total.kept += part.kept
            total.dropped.update(part.dropped)
            total.repaired.update(part.repaired)
        return total

    def summary(self) -> str:
        reasons = ", ".join(f"{reason}={n}" for reason, n in sorted(self.dropped.items())) or "none"
        line = f"{self.stage}: in={self.items_in} kept={self.kept} dropped={self.dropped_total} ({reasons})"
        if self.repaired:
            line += " repaired: " + ", ".join(f"{what}={n}" for what, n in sorted(self.repaired.items()))
        return line
