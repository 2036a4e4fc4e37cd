"""Domain terms in text: the one matcher of a pair's weighted terms, and the relevance scores built on it.

A document's relevance is ILSP-FC's: p = sum over terms i and locations j of n_ij * w_i * w_j, where n_ij
counts term i in location j, w_i is the term's weight from the pair config and w_j the location's weight
(title 10, metadata 4, keywords 2, text 1 by default); m = the number of distinct terms found. A document is
relevant when p and m reach the pair's thresholds. A sentence's is 1 - exp(-10 * weighted terms per word)
(:meth:`TermMatcher.sentence_relevance`), and the crawler ranks links by the weighted terms of their text
(:meth:`TermMatcher.weighted`). Terms and text are matched after lower-casing and, where the language has a
Snowball stemmer (PyStemmer), stemming (an Arabic term meets its word behind the article, الحزمة for حزمة); a
term may be several words; in a script without spaces words are ICU's.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from bitextflow.extract.model import ExtractedPage
from bitextflow.text.lengths import PLAIN_WORD, words
from bitextflow.text.scripts import base_language

# ISO 639-1 -> Snowball algorithm (the languages PyStemmer ships).
SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "cs": "czech", "da": "danish", "nl": "dutch",
    "en": "english", "eo": "esperanto", "et": "estonian", "fi": "finnish", "fr": "french", "de": "german",
    "el": "greek", "hi": "hindi", "hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian",
    "lt": "lithuanian", "ne": "nepali", "no": "norwegian", "nb": "norwegian", "fa": "persian", "pl": "polish",
    "pt": "portuguese", "ro": "romanian", "ru": "russian", "sr": "serbian", "st": "sesotho", "es": "spanish",
    "sv": "swedish", "ta": "tamil", "tr": "turkish", "yi": "yiddish",
}  # fmt: skip
DEFAULT_LOCATION_WEIGHTS = {"title": 10.0, "metadata": 4.0, "keywords": 2.0, "text": 1.0}
# One term of weight 1 in a 10-word sentence gives a sentence relevance of about 0.63.
_DENSITY_SCALE = 10.0
_MAX_CACHED_STEMS = 200_000  # a shard's vocabulary; the cache starts again past it, so memory stays bounded


@functools.cache
def _stemmer(language: str):
    algorithm = SNOWBALL.get(base_language(language))
    if algorithm is None:
        return None
    try:
        import Stemmer
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    return Stemmer.Stemmer(algorithm)


#: Languages that write particles and endings onto the word (패키지를, 설치하려면: Korean) and have no Snowball stemmer.
PREFIX_MATCHED = frozenset({"ko"})
_MIN_PREFIX_CHARS = 2  # a one-syllable term word starts too many other words


class _TermWordPrefixes:
    """A stemmer of :data:`PREFIX_MATCHED` languages: a word is reduced to the longest term word it starts with, of
    :data:`_MIN_PREFIX_CHARS` or more characters (설치하려면 -> 설치), so a term is found behind its particles."""

    def __init__(self, term_words: Iterable[str]) -> None:
        self._prefixes = sorted({word for word in term_words if len(word) >= _MIN_PREFIX_CHARS}, key=len, reverse=True)

    def stemWords(self, words: list[str]) -> list[str]:  # noqa: N802 - PyStemmer's name, for the same caller
        return [next((prefix for prefix in self._prefixes if word.startswith(prefix)), word) for word in words]


class TermMatcher:
    """Counts the occurrences of weighted terms (single or multi-word) in texts of one language."""

    def __init__(self, terms: Mapping[str, float], language: str, stem: bool = True):
        self.language = language
        self.weights = dict(terms)
        self._stemmer = _stemmer(language) if stem else None
        if stem and base_language(language) in PREFIX_MATCHED:
            self._stemmer = _TermWordPrefixes(word for term in terms for word in words(term.casefold(), PLAIN_WORD))
        self._stems: dict[str, str] = {}  # word -> stem: a dict lookup is a tenth of a Snowball call
        self._by_tokens: dict[tuple[str, ...], str] = {}
        for term in terms:
            tokens = tuple(self._normalise_all([words(term.casefold(), PLAIN_WORD)])[0])
            if tokens:
                self._by_tokens.setdefault(tokens, term)
        self._lengths = sorted({len(tokens) for tokens in self._by_tokens}, reverse=True)
        self._first_tokens = frozenset(tokens[0] for tokens in self._by_tokens)

    def _normalise_all(self, word_lists: list[list[str]]) -> list[list[str]]:
        """Each list's words stemmed; the words not seen before, of all lists, in one Snowball call."""
        if self._stemmer is None:
            return word_lists
        stems = self._stems
        if len(stems) > _MAX_CACHED_STEMS:
            stems.clear()
        if missing := list(set().union(*word_lists).difference(stems)):
            stems.update(zip(missing, self._stemmer.stemWords(missing), strict=True))
        return [list(map(stems.__getitem__, words)) for words in word_lists]

    def count(self, text: str) -> Counter[str]:
        """Occurrences of each term in ``text``; longer terms win where they overlap shorter ones."""
        return self.count_all([text])[0]

    def count_all(self, texts: Sequence[str]) -> list[Counter[str]]:
        """:meth:`count` of each text (a document's paragraphs: one stemming call for all of them)."""
        if not self._by_tokens:
            return [Counter() for _text in texts]
        token_lists = self._normalise_all([words(text.casefold(), PLAIN_WORD) for text in texts])
        return [self._terms_in(tokens) for tokens in token_lists]

    def weighted(self, text: str) -> float:
        """The weighted count of the terms in ``text``: sum of n_i * w_i."""
        return self._weight_of(self.count(text)) if text else 0.0

    def sentence_relevance(self, text: str) -> tuple[float, list[str]]:
        """A sentence's relevance in [0, 1) and its terms, most weighted first: a saturating score of the weighted
        terms per word, so a long sentence is not favoured for its length (a pair's is the larger of its sides')."""
        tokens = self._normalise_all([words(text.casefold(), PLAIN_WORD)])[0] if self._by_tokens else []
        if not tokens:
            return 0.0, []
        found = self._terms_in(tokens)
        density = self._weight_of(found) / len(tokens)
        return 1.0 - math.exp(-_DENSITY_SCALE * density), sorted(found, key=lambda t: (-self.weights[t], t))

    def _weight_of(self, found: Counter[str]) -> float:
        return float(sum(n * self.weights[term] for term, n in found.items()))

    def _terms_in(self, tokens: list[str]) -> Counter[str]:
        found: Counter[str] = Counter()
        first_tokens = self._first_tokens
        if first_tokens.isdisjoint(tokens):  # most paragraphs: a test in C instead of a loop over every word
            return found
        free = 0  # tokens before this are part of a term already counted
        # only where a term can start: most words of a page start none
        for start in [index for index, token in enumerate(tokens) if token in first_tokens]:
            if start < free:
                continue
            for length in self._lengths:
                term = self._by_tokens.get(tuple(tokens[start : start + length]))
                if term is not None:
                    found[term] += 1
                    free = start + length
                    break
        return found


def score(document: ExtractedPage, matcher: TermMatcher | None, location_weights: Mapping[str, float]) -> None:
    """Set ``relevance`` (p), ``relevance_terms`` (m) and each paragraph's ``terms`` on ``document``."""
    if matcher is None or not matcher.weights:
        document.relevance, document.relevance_terms = 0.0, 0
        return
    paragraphs = [paragraph for paragraph in document.paragraphs if paragraph.type != "title"]
    metadata = document.metadata
    title, description, keywords, *counted_paragraphs = matcher.count_all(
        [metadata.title, metadata.description, metadata.keywords, *(paragraph.text for paragraph in paragraphs)]
    )
    by_location: dict[str, Counter[str]] = {"title": title, "metadata": description, "keywords": keywords, "text": Counter()}
    for paragraph, counted in zip(paragraphs, counted_paragraphs, strict=True):
        paragraph.terms = sorted(counted)
        if not paragraph.boilerplate:
            by_location["text"].update(counted)
    document.relevance = relevance(by_location.items(), matcher.weights, location_weights)
    document.relevance_terms = len({term for counted in by_location.values() for term in counted})


def relevance(
    counts: Iterable[tuple[str, Counter[str]]], term_weights: Mapping[str, float], location_weights: Mapping[str, float]
) -> float:
    """ILSP-FC's p = sum_ij n_ij * w_i * w_j."""
    return float(
        sum(
            n * term_weights[term] * location_weights.get(location, 0.0)
            for location, counted in counts
            for term, n in counted.items()
        )
    )
