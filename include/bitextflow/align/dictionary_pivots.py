"""A small bilingual dictionary completed through third languages.

Debian's dictionaries are uneven: English-Russian has 2,121 lemma pairs (FreeDict), where German-Russian, French-Russian
and five more Russian dictionaries, and English dictionaries of those languages, hold hundreds of thousands between
them. Composing them gives English-Russian entries: ``(e, r)`` whenever a word ``p`` of a third language translates
``e`` in the English dictionary and ``r`` in the Russian one. This is the construction of Tanaka, K. and Umemura, K.
(1994), "Construction of a bilingual dictionary intermediated by a third language", COLING 1994, 297-303, with their
inverse consultation: a pivot word's senses mix (German "Hund" is a dog and a mine cart), so a composed pair is kept
only when :data:`MIN_PIVOT_LEMMAS` pivot lemmas or more lead to it, in one pivot language or across them.

Measured with ``bench/dictionaries.py`` (docs/benchmarks.md, "Dictionaries"): the share of sentences whose translation
the dictionary overlap ranks first among Tatoeba's 1,000 test pairs, and among 1,500 blocks of Debian's installation
guide. English-Russian goes from 0.174 and 0.270 to 0.434 and 0.491 (29,228 pairs); keeping every composition (one
pivot lemma, 213,365 pairs) gives 0.430 and 0.484, three lemmas 0.408 and 0.455. A composition pays where the direct
dictionary is small: English-Spanish, -French and -Greek cut to 10,000 random pairs go from 0.266, 0.350 and 0.096 on
Tatoeba to 0.573, 0.612 and 0.388 with it. Their whole dictionaries (17,342 to 69,642 pairs) and English-Japanese's
gain little or lose with it (French 0.586 -> 0.611 on Tatoeba but 0.529 -> 0.519 on the guide, Japanese 0.559 ->
0.553 on the guide), and composing costs every build a minute or more, hence :data:`MIN_DIRECT_PAIRS`.

Each leg is read from its own Debian packages (never from a composed dictionary, so compositions never chain), and the
manifest lists every leg's packages under ``pivots``.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from bitextflow.align.dictionary_dumps import DictionaryUnavailable

log = logging.getLogger(__name__)

#: A direct dictionary with fewer lemma pairs than this is completed through :data:`PIVOT_LANGUAGES` (see the module).
MIN_DIRECT_PAIRS = 10_000
#: Pivot lemmas, in one pivot language or across them, that must lead from a lemma to its translation (see the module).
MIN_PIVOT_LEMMAS = 2
#: The third languages tried, in order: those with the most Debian dictionaries (FreeDict and Apertium).
PIVOT_LANGUAGES = ("de", "fr", "es", "it", "nl", "pl", "sv", "el", "pt", "fi")

#: Reads the direct dictionary of a pair from its Debian packages: its ``(lang_a, lang_b)`` lemma pairs and the
#: manifest entries of the packages, or raises :class:`DictionaryUnavailable`.
DirectReader = Callable[[str, str], tuple[set[tuple[str, str]], list[dict[str, Any]]]]
#: Whether Debian has a package for a pair's direct dictionary (cheap: no download).
HasPackages = Callable[[str, str], bool]


def compose(a_to_pivot: Iterable[tuple[str, str]], pivot_to_b: Iterable[tuple[str, str]]) -> Counter[tuple[str, str]]:
    """The ``(a, b)`` pairs whose two lemmas translate one pivot lemma, ``(a, p)`` in the first and ``(p, b)`` in the
    second dictionary, each with the number of pivot lemmas it came through (Tanaka and Umemura's inverse consultation
    asks for two or more; see the module)."""
    b_of: defaultdict[str, set[str]] = defaultdict(set)
    for pivot, b in pivot_to_b:
        b_of[pivot].add(b)
    return Counter((a, b) for a, pivot in a_to_pivot if pivot in b_of for b in b_of[pivot])


def pivot_compositions(
    lang_a: str, lang_b: str, read_direct: DirectReader, has_packages: HasPackages
) -> tuple[Counter[tuple[str, str]], list[dict[str, Any]]]:
    """Every ``(lang_a, lang_b)`` lemma pair composed through the pivot languages both legs of which Debian has, with
    the number of pivot lemmas that lead to it over all of them, and a manifest entry per pivot used (its language, the
    pairs it composed and both legs' packages)."""
    counts: Counter[tuple[str, str]] = Counter()
    pivots: list[dict[str, Any]] = []
    for pivot in PIVOT_LANGUAGES:
        if pivot in (lang_a, lang_b) or not (has_packages(lang_a, pivot) and has_packages(pivot, lang_b)):
            continue  # asked before anything is read: a leg can be FreeDict de-en's 1.8 million pairs
        try:
            to_pivot, packages_a = read_direct(lang_a, pivot)
            to_b, packages_b = read_direct(pivot, lang_b)
        except DictionaryUnavailable as missing:
            log.debug("dictionary %s-%s: no pivot through %s: %s", lang_a, lang_b, pivot, missing)
            continue
        found = compose(to_pivot, to_b)
        log.info("dictionary %s-%s: %d lemma pairs through %s", lang_a, lang_b, len(found), pivot)
        counts.update(found)
        pivots.append({"language": pivot, "pairs": len(found), "packages": packages_a + packages_b})
    return counts, pivots


def through_pivots(
    lang_a: str, lang_b: str, read_direct: DirectReader, has_packages: HasPackages
) -> tuple[set[tuple[str, str]], list[dict[str, Any]]]:
    """The :func:`pivot_compositions` that :data:`MIN_PIVOT_LEMMAS` pivot lemmas or more lead to, and the manifest
    entries of the pivots."""
    counts, pivots = pivot_compositions(lang_a, lang_b, read_direct, has_packages)
    return {pair for pair, lemmas in counts.items() if lemmas >= MIN_PIVOT_LEMMAS}, pivots
