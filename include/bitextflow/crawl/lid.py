"""Crawl-time language identification of a downloaded page with CLD2 (the smart-crawling seed's choice)."""

from __future__ import annotations

import re

import pycld2

from bitextflow.align.documents import normalise_language

# CLD2 refuses some control characters and invalid surrogates; they carry no language anyway.
_UNSAFE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_MAX_CHARS = 100_000


def detect_language(text: str) -> tuple[str, bool]:
    """ISO 639-1 code of the page's main language and whether CLD2 calls it reliable; ``("", False)``
    when the text is empty or CLD2 cannot tell."""
    text = _UNSAFE.sub(" ", text[:_MAX_CHARS]).strip()
    if not text:
        return "", False
    try:
        reliable, _bytes, details = pycld2.detect(text, isPlainText=True, bestEffort=True)
    except pycld2.error:
        return "", False
    code = details[0][1] if details else "un"
    if code in ("un", "xxx"):
        return "", False
    return normalise_language(code), bool(reliable)
