"""Crawl-time language identification of a downloaded page with CLD2 (the smart-crawling seed's choice), and with
heliport for a pair language CLD2 cannot name (:func:`bitextflow.extract.language.named_by_heliport`)."""

from __future__ import annotations

from bitextflow.extract.language import first_opinion, named_by_heliport
from bitextflow.text.languages import UNKNOWN, cld2, language_of_tag

_MAX_CHARS = 100_000  # a page's language shows in its first 100k characters; CLD2 time grows with length


def detect_language(text: str, heliport_only: frozenset[str] = frozenset()) -> tuple[str, bool]:
    """ISO 639-1 code of the page's main language and whether CLD2 calls it reliable; ``("", False)``
    when the text is empty or CLD2 cannot tell. A page in one of ``heliport_only`` (the pair's languages CLD2
    cannot name, :func:`~bitextflow.extract.language.beyond_cld2`) is named by heliport."""
    text = text[:_MAX_CHARS].strip()
    if not text:
        return "", False
    first = first_opinion("heliport") if heliport_only else None
    code, reliable, _shares = named_by_heliport(text, cld2(text, best_effort=True), heliport_only, first)
    if code in (UNKNOWN, "xxx"):
        return "", False
    return language_of_tag(code), reliable
