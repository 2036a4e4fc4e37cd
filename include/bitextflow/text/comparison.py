"""When two texts, or two sentence pairs, count as the same: the identity used for de-duplication."""

from __future__ import annotations

import hashlib
import unicodedata


def normalise_for_comparison(text: str) -> str:
    """Case-folded letters, with their combining marks, and digits only: two texts equal under this are 'identical'.

    The marks stay because in Devanagari, Tamil or Thai they are vowels, not accents: "उसने काम किया" and "उसने काम
    की" differ in a vowel sign alone (after NFKC, Latin and Cyrillic accents are part of their letter).
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if ch.isalnum() or unicodedata.category(ch).startswith("M"))


def pair_hash(text_a: str, text_b: str) -> str:
    """Identity of a pair for de-duplication: equal after case folding and dropping non-alphanumerics."""
    joined = f"{normalise_for_comparison(text_a)}\t{normalise_for_comparison(text_b)}"
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()
