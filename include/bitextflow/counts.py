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

    def seen(self, n: int = 1) -> None:
        self.items_in += n

    def keep(self, n: int = 1) -> None:
        self.kept += n

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] += n

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "in": self.items_in,
            "kept": self.kept,
            "dropped": dict(sorted(self.dropped.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StageCounts:
        return cls(data["stage"], data["in"], data["kept"], Counter(data.get("dropped", {})))

    @classmethod
    def merged(cls, stage: str, parts: Iterable[StageCounts]) -> StageCounts:
        total = cls(stage)
        for part in parts:
            total.items_in += part.items_in
            total.kept += part.kept
            total.dropped.update(part.dropped)
        return total

    def summary(self) -> str:
        reasons = ", ".join(f"{reason}={n}" for reason, n in sorted(self.dropped.items())) or "none"
        return f"{self.stage}: in={self.items_in} kept={self.kept} dropped={self.dropped_total} ({reasons})"
