"""Frontier ranking strategies: which discovered link is fetched next (higher priority first).

Every strategy is a :class:`LinkScorer`; the crawler calls :meth:`LinkScorer.score` with the links of
each fetched HTML page, and :meth:`LinkScorer.fetched` after each page so a strategy can re-rank URLs
that are already waiting (what it returns replaces their priorities). Seeds are fetched first by the
frontier whatever the strategy. :func:`bitextflow.crawl.strategies.make_scorer` gives the scorer of a
strategy; this module holds the interface and the first three:

- ``bfs``: breadth first (priority = -depth), the baseline of the seed papers.
- ``terms``: the ILSP-FC link score s = c + p/L + sum(n_i * w_i): p is the domain relevance of the
  page holding the link (weighted term counts in title x10, description x4, keywords x2, text x1), L
  its number of links, n_i the count of term i (weight w_i) in the link's anchor and surrounding text,
  and c (``crawl.terms_other_language_bonus``) is added when the link points to the other language
  of the pair (hreflang, an anchor that names the language, or a language marker in the URL). Terms
  are those of the page's language. ILSP-FC stores only pages in the targeted languages, so links on
  pages in neither language of the pair, and links known to lead to a third language, score 0.
- ``url-rules``: priority = P(target in a pair language) x P(target completes a pair), both read from
  URLs: the language is the most trusted marker (:func:`bitextflow.crawl.urls.predicted_language`), and
  a URL whose language-neutral key (:func:`bitextflow.text.urls.url_key`, the WMT16
  token-removal rule, then the pair's own markers of :mod:`bitextflow.crawl.urlpairs`) equals the
  key of a fetched page in the other pair language completes a pair.
- ``smart``: priority(v) = P(lang(v) = other language) x P(parallel(u, v)) from two URL models (the
  smart-crawling seed), in :mod:`bitextflow.crawl.smart_scorer`. Without models it falls back to
  ``url-rules``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bitextflow.crawl.urlpairs import key_pair_markers
from bitextflow.crawl.urls import Link, ParsedPage, language_of_anchor, predicted_language
from bitextflow.extract.relevance import TermMatcher
from bitextflow.text.urls import url_key


@dataclass(frozen=True)
class PageView:
    """A fetched HTML page as the scorers see it; ``language`` is CLD2's guess ("" if none)."""

    url: str
    depth: int
    language: str
    page: ParsedPage


@dataclass(frozen=True)
class PairContext:
    """The pair a crawl is for: its two languages and the domain terms (language -> term -> weight)."""

    source: str = ""
    target: str = ""
    terms: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: whether terms match after Snowball stemming (``domain.stem_terms``)
    stem_terms: bool = True

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(lang for lang in (self.source, self.target) if lang)

    def other(self, language: str) -> str | None:
        """The other language of the pair, or None when ``language`` is not one of them."""
        if language == self.source:
            return self.target or None
        if language == self.target:
            return self.source or None
        return None


class LinkScorer:
    """Base class: priorities of new links, and optional re-ranking of waiting URLs."""

    name = "base"
    #: Whether the crawler puts the language version a fetched page declares (``hreflang`` alternates, sitemaps)
    #: ahead of the page's host's other waiting URLs: the strategies that look for pairs do.
    follows_declared_versions = False

    def __init__(self, pair: PairContext):
        self.pair = pair

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        raise NotImplementedError

    def seed_priority(self, url: str) -> float:
        return 0.0

    def fetched(self, page: PageView) -> dict[str, float]:
        """Called for every fetched HTML page, before its links are scored; returns new priorities of
        waiting URLs (only those that change)."""
        return {}

    def queued(self, url: str, priority: float) -> None:
        """A URL entered the frontier with ``priority``."""

    def dequeued(self, url: str) -> None:
        """A URL left the frontier (fetched or dropped)."""

    def state(self) -> dict[str, Any]:
        return {}

    def restore(self, state: dict[str, Any], waiting: Mapping[str, float]) -> None:
        """Load :meth:`state` from a checkpoint; ``waiting`` are the URLs in the restored frontier, with
        their priorities."""
        for url, priority in waiting.items():
            self.queued(url, priority)


class BfsScorer(LinkScorer):
    name = "bfs"

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        return [-(page.depth + 1.0)] * len(links)


class TermsScorer(LinkScorer):
    """ILSP-FC: s = c + p/L + sum(n_i * w_i)."""

    name = "terms"
    LOCATION_WEIGHTS = (("title", 10.0), ("description", 4.0), ("keywords", 2.0), ("text", 1.0))

    def __init__(self, pair: PairContext, other_language_bonus: float):
        super().__init__(pair)
        self.bonus = other_language_bonus
        merged: dict[str, float] = {}
        for terms in pair.terms.values():
            for term, weight in terms.items():
                merged[term] = max(weight, merged.get(term, 0.0))
        self._matchers = {
            language: TermMatcher(terms, language, pair.stem_terms) for language, terms in pair.terms.items() if terms
        }
        self._any_language = TermMatcher(merged, "")  # a page of no known language: every term, unstemmed

    def _matcher_for(self, language: str) -> TermMatcher:
        return self._matchers.get(language) or self._any_language

    def relevance(self, page: PageView) -> float:
        """ILSP-FC page relevance p = sum over locations j and terms i of n_ij * w_i * w_j."""
        matcher = self._matcher_for(page.language)
        return sum(weight * matcher.weighted(getattr(page.page, location)) for location, weight in self.LOCATION_WEIGHTS)

    @staticmethod
    def link_language(link: Link) -> str:
        """The language a link says its target is in (hreflang, anchor, trusted URL marker), or ""."""
        language = language_of_anchor(link)
        if not language:
            language, trust = predicted_language(link.url)
            if trust < 0.7:
                return ""
        return language

    def points_to_other_language(self, page: PageView, link: Link) -> bool:
        language = self.link_language(link)
        other = self.pair.other(page.language)
        if other is not None:
            return language == other
        return bool(language) and language in self.pair.languages

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        if not links:
            return []
        if self.pair.languages and page.language not in self.pair.languages:
            # ILSP-FC keeps only pages in the targeted languages: their links are followed last
            return [0.0] * len(links)
        share = self.relevance(page) / len(links)
        matcher = self._matcher_for(page.language)
        scores = []
        for link in links:
            language = self.link_language(link)
            if language and self.pair.languages and language not in self.pair.languages:
                scores.append(0.0)  # known to lead to a third language, which ILSP-FC would discard
                continue
            bonus = self.bonus if self.points_to_other_language(page, link) else 0.0
            scores.append(bonus + share + matcher.weighted(link.context or link.anchor))
        return scores


class UrlRulesScorer(LinkScorer):
    """P(pair language) x P(completes a pair), from URL language markers and language-neutral keys."""

    name = "url-rules"
    follows_declared_versions = True
    UNKNOWN_LANGUAGE = 0.5  # no marker: many sites leave their main language unmarked
    BASE_PARALLEL = 0.5
    SIBLING_PARALLEL = 0.6  # a URL with the same key waits in the other language
    UNMARKED_OF_PAIR = 0.8  # no marker, but a marked version of the key was fetched
    COMPLETES_PAIR = 1.0

    def __init__(self, pair: PairContext):
        super().__init__(pair)
        self._fetched: dict[str, set[str]] = {}  # key -> pair languages fetched under it
        self._waiting: dict[str, tuple[str, str, float]] = {}  # url -> (key, language, trust)
        self._by_key: dict[str, set[str]] = {}  # key -> waiting urls

    def _info(self, url: str) -> tuple[str, str, float]:
        info = self._waiting.get(url)
        if info is None:
            language, trust = predicted_language(url)
            info = (self.key(url), language, trust)
        return info

    def key(self, url: str) -> str:
        """Language-neutral key: the WMT16 rule over all languages, then the pair's own markers."""
        if len(self.pair.languages) == 2:
            return key_pair_markers(url, self.pair.source, self.pair.target)
        return url_key(url)[0]

    def _priority(self, url: str, info: tuple[str, str, float]) -> float:
        key, language, trust = info
        pair = self.pair.languages
        if not language:
            p_language = self.UNKNOWN_LANGUAGE
        elif not pair or language in pair:
            p_language = trust
        else:
            p_language = (1.0 - trust) * self.UNKNOWN_LANGUAGE
        fetched = self._fetched.get(key, set())
        others = {lang for lang in pair if lang != language}
        if language and fetched & others:
            p_parallel = self.COMPLETES_PAIR
        elif not language and fetched:
            p_parallel = self.UNMARKED_OF_PAIR
        elif any(self._waiting[u][1] in others for u in self._by_key.get(key, ()) if u != url):
            p_parallel = self.SIBLING_PARALLEL
        else:
            p_parallel = self.BASE_PARALLEL
        return p_language * p_parallel

    def seed_priority(self, url: str) -> float:
        return self._priority(url, self._info(url))

    def priority(self, url: str) -> float:
        """The priority of ``url`` now (a waiting URL's changes as pages are fetched)."""
        return self._priority(url, self._info(url))

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        return [self._priority(link.url, self._info(link.url)) for link in links]

    def queued(self, url: str, priority: float) -> None:
        info = self._info(url)
        self._waiting[url] = info
        self._by_key.setdefault(info[0], set()).add(url)

    def dequeued(self, url: str) -> None:
        info = self._waiting.pop(url, None)
        if info is not None:
            urls = self._by_key.get(info[0])
            if urls is not None:
                urls.discard(url)
                if not urls:
                    del self._by_key[info[0]]

    def fetched(self, page: PageView) -> dict[str, float]:
        if page.language not in self.pair.languages:
            return {}
        key = self.key(page.url)
        languages = self._fetched.setdefault(key, set())
        if page.language in languages:
            return {}
        languages.add(page.language)
        return {url: self._priority(url, self._waiting[url]) for url in self._by_key.get(key, ())}

    def state(self) -> dict[str, Any]:
        return {"fetched": {key: sorted(langs) for key, langs in self._fetched.items()}}

    def restore(self, state: dict[str, Any], waiting: Mapping[str, float]) -> None:
        self._fetched = {key: set(langs) for key, langs in state.get("fetched", {}).items()}
        super().restore(state, waiting)
