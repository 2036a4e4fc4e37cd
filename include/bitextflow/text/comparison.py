"""When two texts, or two sentence pairs, count as the same: the identity used for de-duplication."""

from __future__ import annotations

import hashlib
import unicodedata

import regex

from bitextflow.text.lengths import SPELLING_MARK

# What str.isalnum keeps is \p{L} and \p{N} (the same for every assigned character); one pass deletes the rest.
_NOT_COMPARED = regex.compile(rf"[^\p{{L}}\p{{N}}{SPELLING_MARK}]+", regex.V1)


def normalise_for_comparison(text: str) -> str:
    """Case-folded letters and digits, and the marks that spell a vowel (:data:`~bitextflow.text.lengths.SPELLING_MARK`)
    only: two texts equal under this are 'identical'.

    In Devanagari, Tamil or Thai a vowel sign is a combining mark: "उसने काम किया" and "उसने काम की" differ in theirs
    alone. Accents, harakat, Hebrew's points and emoji's variation selectors go, as before, so a text written with or
    without them is the same text.
    """
    return _NOT_COMPARED.sub("", unicodedata.normalize("NFKC", text).casefold())


def pair_hash(text_a: str, text_b: str) -> str:
    """Identity of a pair for de-duplication: equal under :func:`normalise_for_comparison` on both sides."""
    joined = f"{normalise_for_comparison(text_a)}\t{normalise_for_comparison(text_b)}"
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()
