"""URL-pair rules: which URL in one language is the translation of which URL in the other.

Used by the crawler's ``url-rules`` strategy (a link whose key matches a fetched page of the other
language completes a pair) and measured by ``bench/url_pairs.py`` on the WMT16 gold URL pairs.

Matching is one-to-one per web site, in passes from the most to the least certain; each pass pairs
only keys that exactly one unmatched URL of each language shares:

1. ``url_key``: the WMT16 token-removal rule over every language
   (:func:`bitextflow.text.urls.url_key`: ISO 639-1/2 codes, English names, endonyms,
   language-country tags as whole tokens);
2. ``pair_markers``: markers only a pair makes safe, removed as whole tokens: the languages' initials
   (``news-e/`` and ``news-f/``, ``_e_12911`` and ``_f_12911``) and their names in the major languages
   (``englisch``/``franzoesisch``, ``anglais``, ``inglés``);
3. ``glued_markers``: the pair's codes and names glued to a word (``musiqueen``/``musiquefr``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from urllib.parse import urlsplit

from bitextflow.text.languages import normalise_language
from bitextflow.text.urls import url_key

# Locales whose names of languages appear in URLs often enough to be worth removing.
_NAME_LOCALES = (
    "en fr de es it pt nl ca gl eu pl cs sk sl hr sr ro hu fi sv da nb nn is et lv lt el tr ru uk bg "
    "ja zh ko ar he fa hi id ms vi th"
).split()

_TOKEN = re.compile(r"([^A-Za-z0-9\u00c0-\uffff]+)")


def _folded(text: str) -> set[str]:
    """The text lower-cased, and its ASCII spellings (``français`` -> francais; ``ö`` -> o and oe)."""
    lowered = text.lower()
    variants = {lowered, lowered.replace("ö", "oe").replace("ä", "ae").replace("ü", "ue")}
    out = set(variants)
    for variant in variants:
        out.add("".join(c for c in unicodedata.normalize("NFKD", variant) if not unicodedata.combining(c)))
    return {v for v in out if v}


@functools.cache
def pair_markers(lang_a: str, lang_b: str) -> dict[str, str]:
    """Tokens that mark one of the two languages in URLs of this pair: token -> language code."""
    from babel import Locale, UnknownLocaleError

    markers: dict[str, str] = {}
    for code in (normalise_language(lang_a), normalise_language(lang_b)):
        tokens = {code, code[0]}
        for locale in _NAME_LOCALES:
            try:
                name = Locale.parse(locale).languages.get(code)
            except (UnknownLocaleError, ValueError):
                continue
            if name and " " not in name:
                tokens |= _folded(name)
        for token in tokens:
            markers.setdefault(token, code)
    # a token that marks both languages (a shared initial) marks neither
    initials = [normalise_language(lang_a)[0], normalise_language(lang_b)[0]]
    if initials[0] == initials[1]:
        markers.pop(initials[0], None)
    return markers


def _strip_tokens(text: str, markers: dict[str, str]) -> str:
    parts = _TOKEN.split(text)
    kept = [part for k, part in enumerate(parts) if k % 2 or part.lower() not in markers]
    return "".join(kept)


def _strip_glued(text: str, markers: dict[str, str]) -> str:
    glued = sorted((m for m in markers if len(m) >= 2), key=len, reverse=True)

    def strip(token: str) -> str:
        lowered = token.lower()
        for marker in glued:
            if len(lowered) >= len(marker) + 3:
                if lowered.endswith(marker):
                    return token[: -len(marker)]
                if lowered.startswith(marker):
                    return token[len(marker) :]
        return token

    parts = _TOKEN.split(text)
    return "".join(part if k % 2 else strip(part) for k, part in enumerate(parts))


def key_url_key(url: str, lang_a: str, lang_b: str) -> str:
    return url_key(url)[0]


def key_pair_markers(url: str, lang_a: str, lang_b: str) -> str:
    return _strip_tokens(url_key(url)[0], pair_markers(lang_a, lang_b))


def key_glued_markers(url: str, lang_a: str, lang_b: str) -> str:
    markers = pair_markers(lang_a, lang_b)
    return _strip_glued(_strip_tokens(url_key(url)[0], markers), markers)


PASSES: tuple[tuple[str, Callable[[str, str, str], str]], ...] = (
    ("url_key", key_url_key),
    ("pair_markers", key_pair_markers),
    ("glued_markers", key_glued_markers),
)


def site_of(url: str) -> str:
    """The web site a URL belongs to: its host without ``www.`` (matching never crosses sites)."""
    return (urlsplit(url).hostname or "").removeprefix("www.")


def match_url_pairs(
    urls_a: Iterable[str], urls_b: Iterable[str], lang_a: str, lang_b: str, passes: Sequence[str] | None = None
) -> list[tuple[str, str, str]]:
    """One-to-one ``(url_a, url_b, pass)`` matches between URLs in ``lang_a`` and in ``lang_b``."""
    chosen = [(name, fn) for name, fn in PASSES if passes is None or name in passes]
    left_a, left_b = list(dict.fromkeys(urls_a)), list(dict.fromkeys(urls_b))
    matches: list[tuple[str, str, str]] = []
    for name, key in chosen:
        groups: dict[tuple[str, str], tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
        for url in left_a:
            groups[site_of(url), key(url, lang_a, lang_b)][0].append(url)
        for url in left_b:
            groups[site_of(url), key(url, lang_a, lang_b)][1].append(url)
        paired: set[str] = set()
        for (_site, _key), (side_a, side_b) in sorted(groups.items()):
            if len(side_a) == 1 and len(side_b) == 1 and side_a[0] != side_b[0]:
                matches.append((side_a[0], side_b[0], name))
                paired.update((side_a[0], side_b[0]))
        left_a = [u for u in left_a if u not in paired]
        left_b = [u for u in left_b if u not in paired]
    return matches
