"""A decision about one page: allowed, or set aside for a named reason (the name its count is reported under)."""

from __future__ import annotations

from dataclasses import dataclass

OPTOUT_ROBOTS = "optout_robots"
OPTOUT_TDMREP = "optout_tdmrep"
OPTOUT_NOAI = "optout_noai"
MACHINE_TRANSLATED = "machine_translated"


@dataclass(frozen=True, slots=True)
class Verdict:
    """``reason`` is empty when the page may be used; ``detail`` says what decided it (for logs, never counted)."""

    reason: str = ""
    detail: str = ""

    @property
    def allowed(self) -> bool:
        return not self.reason


ALLOWED = Verdict()
