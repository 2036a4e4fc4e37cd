"""Frontier ranking strategies: which discovered link is fetched next (higher priority first).

Every strategy is a :class:`LinkScorer`; the crawler calls :meth:`LinkScorer.score` with the links of
each fetched HTML page, and :meth:`LinkScorer.fetched` after each page so a strategy can re-rank URLs
that are already waiting (what it returns replaces their priorities). Seeds are fetched first by the
frontier whatever the strategy.

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
  a URL whose language-neutral key (:func:`bitextflow.align.documents.url_key`, the WMT16
  token-removal rule, then the pair's own markers of :mod:`bitextflow.crawl.urlpairs`) equals the
  key of a fetched page in the other pair language completes a pair.
- ``smart``: priority(v) = P(lang(v) = other language) x P(parallel(u, v)) from two URL models (the
  smart-crawling seed); see :class:`UrlModels`. A fetched page re-ranks the waiting URLs it may be the
  translation of (see :class:`SmartScorer`). Without models it falls back to ``url-rules``.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol, runtime_checkable

from bitextflow.align.documents import url_key
from bitextflow.classify import term_matches
from bitextflow.config import CrawlConfig
from bitextflow.crawl.urlpairs import key_pair_markers
from bitextflow.crawl.urls import Link, ParsedPage, language_of_anchor, predicted_language, url_tokens

log = logging.getLogger(__name__)

STRATEGIES = ("bfs", "terms", "url-rules", "smart")


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
        self._all_terms = merged

    def _terms_for(self, language: str) -> Mapping[str, float]:
        return self.pair.terms.get(language) or self._all_terms

    @staticmethod
    def _weighted(text: str, terms: Mapping[str, float]) -> float:
        if not text or not terms:
            return 0.0
        return sum(count * terms[term] for term, count in term_matches(text, dict(terms)).items())

    def relevance(self, page: PageView) -> float:
        """ILSP-FC page relevance p = sum over locations j and terms i of n_ij * w_i * w_j."""
        terms = self._terms_for(page.language)
        return sum(weight * self._weighted(getattr(page.page, location), terms) for location, weight in self.LOCATION_WEIGHTS)

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
        terms = self._terms_for(page.language)
        scores = []
        for link in links:
            language = self.link_language(link)
            if language and self.pair.languages and language not in self.pair.languages:
                scores.append(0.0)  # known to lead to a third language, which ILSP-FC would discard
                continue
            bonus = self.bonus if self.points_to_other_language(page, link) else 0.0
            scores.append(bonus + share + self._weighted(link.context or link.anchor, terms))
        return scores


class UrlRulesScorer(LinkScorer):
    """P(pair language) x P(completes a pair), from URL language markers and language-neutral keys."""

    name = "url-rules"
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
            info = (self._key(url), language, trust)
        return info

    def _key(self, url: str) -> str:
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
        key = self._key(page.url)
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


@runtime_checkable
class UrlModels(Protocol):
    """The two URL classifiers of the smart strategy (the seed fine-tunes XLM-R; ours come from the
    multilingual encoder of DESIGN.md section 5). They are found by :func:`load_url_models`."""

    version: str

    def language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        """P(the document at each URL is in ``language``)."""
        ...

    def parallel_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the documents at the two URLs of each pair are translations of each other)."""
        ...


_url_model_loader: Callable[[str], UrlModels | None] | None = None


def register_url_model_loader(loader: Callable[[str], UrlModels | None]) -> None:
    """Install the function that loads URL models from a folder or s3:// prefix (``crawl.url_models``)."""
    global _url_model_loader
    _url_model_loader = loader


URL_MODELS_MODULE = "bitextflow.models.url_models"


def load_url_models(location: str | None) -> UrlModels | None:
    """The URL models at ``location``, or None (no location, no loader, or no models there).

    The loader is the registered one, else ``load_url_models(location)`` of the module
    ``bitextflow.models.url_models`` when that module exists (the contract for the URL-model code).
    """
    if not location:
        return None
    loader = _url_model_loader
    if loader is None:
        try:
            module = importlib.import_module(URL_MODELS_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name in (URL_MODELS_MODULE, "bitextflow.models"):
                return None
            raise
        loader = getattr(module, "load_url_models", None)
        if loader is None:
            return None
    return loader(location)


def _smart_default(name: str) -> Any:
    return CrawlConfig.model_fields[f"smart_{name}"].default


@dataclass(frozen=True)
class SmartSettings:
    """How :class:`SmartScorer` explores and re-ranks: the pair config's ``crawl.smart_<name>`` options, whose
    descriptions (:class:`bitextflow.config.CrawlConfig`) say what each does, with their defaults.
    """

    exploration: float = _smart_default("exploration")
    rerank_similar: int = _smart_default("rerank_similar")
    rerank_min_language: float = _smart_default("rerank_min_language")
    skip_parallel_below: float = _smart_default("skip_parallel_below")
    common_token: int = _smart_default("common_token")

    @classmethod
    def from_config(cls, config: CrawlConfig) -> SmartSettings:
        return cls(**{setting.name: getattr(config, f"smart_{setting.name}") for setting in fields(cls)})


class SmartScorer(LinkScorer):
    """priority(v) = P(lang(v) = other language) x P(parallel(u, v)) (García-Romero et al.), plus
    ``exploration`` x P(lang(v) in the pair) x (1 - P(parallel(u, v))); tuning in :class:`SmartSettings`.

    The product alone gives every link that is not a translation of its page about 0, including the
    same-language links through which the rest of a site's translations are reached; their order is
    then noise (on the local site, pure smart finds en-id pairs no earlier than bfs). The second term,
    small by default (``crawl.smart_exploration``; 0 is the seed's formula), ranks pair-language pages
    before third-language ones without ever outranking a likely translation.

    A URL is scored from the page it was first found on, which is seldom its translation (an English
    page is first reached from the English index). So each fetched page in a pair language re-scores,
    with itself as u, the waiting URLs it may be the translation of, and raises those whose priority
    grows: the waiting URLs it links to (a language switcher) and the ``rerank_similar`` waiting URLs
    sharing the most URL tokens with it (an inverted index of the waiting URLs' tokens; tokens carried by
    more than ``common_token`` waiting URLs, such as ``html``, are ignored), keeping only those likely in
    the other language (``rerank_min_language``, from the cached language model). So the cost per page is
    bounded by its links and ``rerank_similar``, never a rescan of the frontier. The URL-pair model is
    not run for links whose P(lang in the pair) is below ``skip_parallel_below`` (their priority is
    below that whatever it says).

    Where the site itself says which language a link leads to (``hreflang``, or an anchor that is a
    language name: a language switcher), that is taken as P(lang(v) = that language) = 1 in place of
    the URL language model's guess: the model has learnt the URL layouts of its training crawl only, and
    a site's declaration is better evidence than a guess from a layout it never saw.
    """

    name = "smart"

    def __init__(self, pair: PairContext, models: UrlModels, settings: SmartSettings = SmartSettings()):
        super().__init__(pair)
        self.models = models
        self.settings = settings
        self._waiting: dict[str, float] = {}  # waiting url -> its priority
        self._by_token: dict[str, set[str]] = {}  # URL token -> waiting urls
        self._declared: dict[str, str] = {}  # waiting url -> the language a link declared for it
        # the links of the last scored page that declared a language; those the crawler queues join _declared
        # (the others, refused by robots.txt, scope or limits, are dropped with the next page)
        self._just_declared: dict[str, str] = {}

    def _declare(self, links: Sequence[Link]) -> None:
        self._just_declared = {}
        for link in links:
            language = language_of_anchor(link)
            if language:
                self._just_declared.setdefault(link.url, language)

    def _declared_language(self, url: str) -> str | None:
        return self._declared.get(url) or self._just_declared.get(url)

    def _language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        """P(lang(url) = language): the declared language where a link declared one, else the model's."""
        guessed = self.models.language_probabilities(urls, language)
        return [
            p if (declared := self._declared_language(url)) is None else float(declared == language)
            for url, p in zip(urls, guessed, strict=True)
        ]

    def _priorities(self, page_url: str, page_language: str, urls: Sequence[str]) -> list[float]:
        per_language = [self._language_probabilities(urls, lang) for lang in self.pair.languages]
        p_pair = [min(1.0, sum(values)) for values in zip(*per_language, strict=True)] or [1.0] * len(urls)
        other = self.pair.other(page_language)
        # a page in neither language: any pair language will do
        p_language = self._language_probabilities(urls, other) if other is not None else p_pair
        # the priority of a URL unlikely in either pair language is about 0 whatever P(parallel): the
        # URL-pair model, the costly part, is not run for it (P(parallel) taken as 0)
        asked = [index for index, p in enumerate(p_pair) if p >= self.settings.skip_parallel_below]
        p_parallel = [0.0] * len(urls)
        for index, p in zip(asked, self.models.parallel_probabilities([(page_url, urls[i]) for i in asked]), strict=True):
            p_parallel[index] = p
        exploration = self.settings.exploration
        return [a * b + exploration * c * (1.0 - b) for a, b, c in zip(p_language, p_parallel, p_pair, strict=True)]

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        self._declare(links)
        return self._priorities(page.url, page.language, [link.url for link in links]) if links else []

    def seed_priority(self, url: str) -> float:
        return 1.0

    def queued(self, url: str, priority: float) -> None:
        self._waiting[url] = priority
        if (language := self._just_declared.get(url)) is not None:
            self._declared.setdefault(url, language)
        for token in url_tokens(url):
            self._by_token.setdefault(token, set()).add(url)

    def dequeued(self, url: str) -> None:
        self._declared.pop(url, None)
        if self._waiting.pop(url, None) is None:
            return
        for token in url_tokens(url):
            urls = self._by_token.get(token)
            if urls is not None:
                urls.discard(url)
                if not urls:
                    del self._by_token[token]

    def state(self) -> dict[str, Any]:
        return {"declared": {url: language for url, language in self._declared.items() if url in self._waiting}}

    def restore(self, state: dict[str, Any], waiting: Mapping[str, float]) -> None:
        self._declared = dict(state.get("declared", {}))
        super().restore(state, waiting)

    def _similar_waiting(self, url: str) -> list[str]:
        shared: Counter[str] = Counter()
        for token in url_tokens(url):
            urls = self._by_token.get(token, ())
            if len(urls) <= self.settings.common_token:
                shared.update(urls)
        return [candidate for candidate, _count in shared.most_common(self.settings.rerank_similar)]

    def fetched(self, page: PageView) -> dict[str, float]:
        links = [link for link in page.page.links if link.url in self._waiting]
        self._declare(links)
        other = self.pair.other(page.language)
        if other is None or not self._waiting:
            return {}
        linked = [link.url for link in links]
        candidates = list(dict.fromkeys([*linked, *self._similar_waiting(page.url)]))
        if not candidates:
            return {}
        p_other = self._language_probabilities(candidates, other)
        likely = [url for url, p in zip(candidates, p_other, strict=True) if p >= self.settings.rerank_min_language]
        if not likely:
            return {}
        raised = {
            url: priority
            for url, priority in zip(likely, self._priorities(page.url, page.language, likely), strict=True)
            if priority > self._waiting[url]
        }
        self._waiting.update(raised)
        return raised


def make_scorer(strategy: str, pair: PairContext, *, other_language_bonus: float = 10.0,
                url_models: str | None = None, smart: SmartSettings = SmartSettings()) -> LinkScorer:  # fmt: skip
    """The scorer of a strategy; ``smart`` without loadable models falls back to ``url-rules`` (logged)."""
    if strategy == "bfs":
        return BfsScorer(pair)
    if strategy == "terms":
        return TermsScorer(pair, other_language_bonus)
    if strategy == "url-rules":
        return UrlRulesScorer(pair)
    if strategy == "smart":
        models = load_url_models(url_models)
        if models is not None:
            return SmartScorer(pair, models, smart)
        log.warning(
            "strategy smart: no URL models%s; falling back to url-rules",
            f" at {url_models}" if url_models else " configured (crawl.url_models)",
        )
        return UrlRulesScorer(pair)
    raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
