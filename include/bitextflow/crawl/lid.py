"""Crawl-time language identification of a downloaded page with CLD2 (the smart-crawling seed's choice), and with
heliport for a pair language CLD2 cannot name, in the terms of the pair
(:func:`bitextflow.extract.language.page_language`)."""

from __future__ import annotations

from bitextflow.extract.language import beyond_cld2, first_opinion, page_language
from bitextflow.text.languages import UNKNOWN, cld2, language_of_tag

_MAX_CHARS = 100_000  # a page's language shows in its first 100k characters; CLD2 time grows with length


def detect_language(text: str, pair_languages: frozenset[str] = frozenset()) -> tuple[str, bool]:
    """ISO 639-1 code of the page's main language and whether CLD2 calls it reliable; ``("", False)``
    when the text is empty or CLD2 cannot tell. A page in one of the pair's languages CLD2 cannot name
    (:func:`~bitextflow.extract.language.beyond_cld2`) is named by heliport, and one CLD2 names after another language
    of a pair language's group is in the pair's (:func:`~bitextflow.extract.language.page_language`)."""
    text = text[:_MAX_CHARS].strip()
    if not text:
        return "", False
    first = first_opinion("heliport") if beyond_cld2(pair_languages) else None
    code, reliable, _shares = page_language(text, cld2(text, best_effort=True), pair_languages, first)
    if code in (UNKNOWN, "xxx"):
        return "", False
    return language_of_tag(code), reliable
