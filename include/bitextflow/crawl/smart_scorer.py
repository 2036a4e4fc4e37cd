"""The ``smart`` crawl strategy: priority(v) = P(lang(v) = other language) x P(parallel(u, v)) from two
URL models (the smart-crawling seed, García-Romero et al.), and the settings of its exploration and
re-ranking.

:class:`UrlModels` is what the scorer needs of the models; :class:`SmartScorer` says how a fetched page
re-ranks the waiting URLs it may be the translation of.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from bitextflow.config import CrawlConfig
from bitextflow.crawl.scoring import LinkScorer, PageView, PairContext
from bitextflow.crawl.urls import Link, language_of_anchor
from bitextflow.text.urls import url_tokens


@runtime_checkable
class UrlModels(Protocol):
    """The two URL classifiers of the smart strategy (the seed fine-tunes XLM-R; ours come from the
    multilingual encoder): :class:`bitextflow.models.url_models.UrlClassifiers`, or a stand-in in tests."""

    version: str

    def language_probabilities(self, urls: Sequence[str], language: str) -> list[float]:
        """P(the document at each URL is in ``language``)."""
        ...

    def parallel_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the documents at the two URLs of each pair are translations of each other)."""
        ...


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
    follows_declared_versions = True

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
