"""Hard rules on sentence pairs.

Each rule returns the tag of the violation or nothing; a pair with any tag is rejected, kept for
inspection with its tags, and counted under each tag. With ``score.use_bicleaner``, bifixer,
bicleaner-hardrules and bicleaner-ai (:mod:`~bitextflow.score.bicleaner`) run after these rules.
"""

from __future__ import annotations

import re

from bitextflow.config import ScoreConfig
from bitextflow.text.comparison import normalise_for_comparison

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def numbers_of(text: str) -> list[str]:
    """Numbers with separators removed, sorted: 1,000.5 and 1.000,5 both become 10005."""
    return sorted(re.sub(r"[.,]", "", n) for n in _NUMBER.findall(text))


def hard_rule_violations(text_a: str, text_b: str, config: ScoreConfig) -> list[str]:
    """Tags of the rules the pair breaks, in a fixed order; empty when it passes."""
    tags: list[str] = []
    a, b = text_a.strip(), text_b.strip()
    if len(a) < config.min_characters or len(b) < config.min_characters:
        tags.append("too_short")
    if min(len(a), len(b)) and max(len(a), len(b)) / min(len(a), len(b)) > config.max_length_ratio:
        tags.append("length_ratio")
    if normalise_for_comparison(a) == normalise_for_comparison(b):
        tags.append("identical_sides")
    if numbers_of(a) != numbers_of(b):
        tags.append("numbers_mismatch")
    return tags
