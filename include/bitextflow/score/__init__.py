"""Hard rules on sentence pairs.

Each rule returns the tag of the violation or nothing; a pair with any tag is rejected, kept for
inspection with its tags, and counted under each tag. With ``score.use_bicleaner``, bifixer,
bicleaner-hardrules and bicleaner-ai (:mod:`~bitextflow.score.bicleaner`) run after these rules.
"""

from __future__ import annotations

import re
from collections import Counter

from text_to_num import alpha2digit

from bitextflow.config import ScoreConfig
from bitextflow.text.comparison import normalise_for_comparison

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
#: The languages whose spelled numbers text2num reads (``alpha2digit``).
SPELLED_NUMBER_LANGUAGES = frozenset({"da", "de", "en", "es", "fr", "it", "nl", "pt"})


def numbers_of(text: str) -> list[str]:
    """Numbers written in digits, separators removed, sorted: 1,000.5 and 1.000,5 both become 10005."""
    return sorted(re.sub(r"[.,]", "", n) for n in _NUMBER.findall(text))


def numbers_read(text: str, lang: str) -> list[str]:
    """:func:`numbers_of` the text with its spelled numbers read as digits too where text2num reads ``lang``: "dos"
    2, "treinta y cinco" 35, "primera" 1, "cero" 0. Every number word counts, so "un libro" holds a 1: these are the
    numbers a side offers, never the ones it requires (:func:`unmatched_numbers`)."""
    language = lang.split("-")[0].lower()
    return numbers_of(alpha2digit(text, language, threshold=0) if language in SPELLED_NUMBER_LANGUAGES else text)


def unmatched_numbers(text_a: str, text_b: str, lang_a: str, lang_b: str) -> bool:
    """Whether a number one side writes in digits is missing from the other, in digits or in words ("There are 2
    types" and "Hay dos tipos" match; "Chapter 12" and "capítulo 13" do not). Each occurrence needs its own. Words
    are read only on a side whose digits fall short, so most pairs cost two regular-expression scans."""
    digits_a, digits_b = Counter(numbers_of(text_a)), Counter(numbers_of(text_b))
    missing_in_b, missing_in_a = digits_a - digits_b, digits_b - digits_a
    return bool(missing_in_b and missing_in_b - Counter(numbers_read(text_b, lang_b))) or bool(
        missing_in_a and missing_in_a - Counter(numbers_read(text_a, lang_a))
    )


def hard_rule_violations(text_a: str, text_b: str, config: ScoreConfig, lang_a: str = "", lang_b: str = "") -> list[str]:
    """Tags of the rules the pair breaks, in a fixed order; empty when it passes. ``lang_a``, ``lang_b``: the sides'
    languages, which say how numbers are spelled (none given: digits only)."""
    tags: list[str] = []
    a, b = text_a.strip(), text_b.strip()
    if len(a) < config.min_characters or len(b) < config.min_characters:
        tags.append("too_short")
    if min(len(a), len(b)) and max(len(a), len(b)) / min(len(a), len(b)) > config.max_length_ratio:
        tags.append("length_ratio")
    if normalise_for_comparison(a) == normalise_for_comparison(b):
        tags.append("identical_sides")
    if unmatched_numbers(a, b, lang_a, lang_b):
        tags.append("numbers_mismatch")
    return tags
