"""The ``smart`` crawl strategy: the URL rules first, and URL models that promote the version a page names when they are
sure of it.

García-Romero et al. ("Smart Bilingual Focused Crawling of Parallel Documents", 2024) rank a link from page u to URL
v by P(lang(v) = other language) x P(parallel(u, v)) from two URL models (:class:`ModelScorer`). With models trained
on other sites that order was worse than the URL rules on a held-out site (354 downloads for 80% of the pairs, the
rules 194): a model learns the URL layouts of its training sites, the rules read every layout that names its
languages. So :class:`SmartScorer` ranks by the URL rules (:class:`bitextflow.crawl.scoring.UrlRulesScorer`) and lets
the models change the order only where they are confident: the one link a fetched page names as its version in the
other language (its language switcher's) is raised above every link the rules do not see completing a pair when its
P(other language) x P(parallel) reaches ``crawl.smart_promote_above``. Elsewhere the order is the rules' own, so the
models only add the pairs the rules cannot see (layouts whose markers they cannot read). The models go on learning
during the crawl (:class:`LearningUrlModels`): the language CLD2 finds for each page, and the pairs the crawl confirms
(a page in the other language under the same key, declared by a ``hreflang`` alternate, or named by a language
switcher).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol, runtime_checkable

from bitextflow.config import CrawlConfig
from bitextflow.crawl.scoring import LinkScorer, PageView, PairContext, UrlRulesScorer
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


@runtime_checkable
class LearningUrlModels(UrlModels, Protocol):
    """URL models a crawl can go on training (:class:`bitextflow.models.url_ngrams.NgramUrlModels`)."""

    def learning_copy(self) -> LearningUrlModels:
        """A copy to train during one crawl, leaving the loaded models as they are for other crawls."""
        ...

    def learn(self, pages: Sequence[tuple[str, str]] = (), pairs: Sequence[tuple[str, str]] = (),
              not_pairs: Sequence[tuple[str, str]] = ()) -> None:  # fmt: skip
        """Train on (url, language) ``pages``, URL ``pairs`` of translations and ``not_pairs``."""
        ...


def _smart_default(name: str) -> Any:
    return CrawlConfig.model_fields[f"smart_{name}"].default


@dataclass(frozen=True)
class SmartSettings:
    """How :class:`SmartScorer` promotes and re-ranks: the pair config's ``crawl.smart_<name>`` options, whose
    descriptions (:class:`bitextflow.config.CrawlConfig`) say what each does, with their defaults.
    """

    promote_above: float = _smart_default("promote_above")
    rerank_similar: int = _smart_default("rerank_similar")
    rerank_min_language: float = _smart_default("rerank_min_language")
    skip_parallel_below: float = _smart_default("skip_parallel_below")
    common_token: int = _smart_default("common_token")

    @classmethod
    def from_config(cls, config: CrawlConfig) -> SmartSettings:
        return cls(**{setting.name: getattr(config, f"smart_{setting.name}") for setting in fields(cls)})


class ModelScorer(LinkScorer):
    """priority(v) = P(lang(v) = other language) x P(parallel(u, v)) (García-Romero et al.): how sure the URL models
    are that v is the translation of page u; :class:`SmartScorer` promotes the links it is sure of. Tuning in
    :class:`SmartSettings`.

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

    name = "url-models"

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
        return [a * b for a, b in zip(p_language, p_parallel, strict=True)]

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


class SmartScorer(LinkScorer):
    """The ``smart`` strategy: the URL rules' order, with the links the URL models are sure of promoted (module
    docstring).

    priority(v) = rules(v) where the models' confidence c(v) (:class:`ModelScorer`'s P(other language) x P(parallel),
    the best over the pages that name v as their version in the other language: :meth:`_believe`) is below
    ``promote_above``, else max(rules(v), ``PROMOTED``) + ``TIE_WEIGHT`` x c(v): a promoted link ranks after the pairs
    the rules complete and before everything else, and promoted links are ordered by confidence. ``TIE_WEIGHT`` is below the smallest gap between two priorities of the
    rules (0.0025), so the models never reorder what the rules tell apart.

    Each fetched page in a pair language teaches the models (when they learn, :class:`LearningUrlModels`, on a copy
    of their own) its language as CLD2 found it and, where the crawl confirms its counterpart in the other language
    (fetched under the same key, declared as its ``hreflang`` alternate, or named by a language switcher on a page
    of the other language), the pair both ways, against the pairs of each page with the page of the other's language
    fetched before.
    """

    name = "smart"
    follows_declared_versions = True
    #: Above every priority the rules give a link they do not see completing a pair (at most 0.95 x 0.6 = 0.57: a
    #: parameter marker, its key waiting in the other language), below every pair they complete (at least 0.7 x 1: a
    #: subdomain marker): the rules' sure pairs first, then the models', then the rest in the rules' order.
    PROMOTED = 0.6
    TIE_WEIGHT = 1e-4

    def __init__(self, pair: PairContext, models: UrlModels, settings: SmartSettings = SmartSettings()):
        super().__init__(pair)
        self.models = models.learning_copy() if isinstance(models, LearningUrlModels) else models
        self.settings = settings
        self.rules = UrlRulesScorer(pair)
        self.model = ModelScorer(pair, self.models, settings)
        self._confidence: dict[str, float] = {}  # waiting url -> the models' best confidence in it
        self._priority: dict[str, float] = {}  # waiting url -> its priority
        self._fetched_by_key: dict[tuple[str, str], str] = {}  # (rules key, language) -> the first page fetched
        self._last_fetched: dict[str, str] = {}  # language -> the page of that language fetched last
        self._fetched_language: dict[str, str] = {}  # fetched page in a pair language -> its language
        self._named_by: dict[str, tuple[str, str]] = {}  # url -> (fetched page, its language) whose switcher named it
        self._alternate_of: dict[str, str] = {}  # url -> the fetched page that declared it its hreflang alternate

    def _combined(self, url: str, rules: float) -> float:
        confidence = self._confidence.get(url, 0.0)
        if confidence < self.settings.promote_above:
            return rules
        return max(rules, self.PROMOTED) + self.TIE_WEIGHT * confidence

    def seed_priority(self, url: str) -> float:
        return 1.0  # seeds are fetched first whatever their priority

    def score(self, page: PageView, links: Sequence[Link]) -> list[float]:
        if not links:
            return []
        rules = self.rules.score(page, links)
        self._believe(page, dict(zip((link.url for link in links), self.model.score(page, links), strict=True)))
        return [self._combined(link.url, by_rules) for link, by_rules in zip(links, rules, strict=True)]

    def _believe(self, page: PageView, confidence: Mapping[str, float]) -> list[str]:
        """Keep the models' ``confidence`` in the link that ``page`` names as its version in the other language, where
        it reaches ``promote_above`` (and return it): the one link of the page that declares that language (a language
        switcher's ``hreflang``, or an anchor that is the language's name). A page has one version per language, so a
        page declaring several (a home page listing the other language's pages) names none; and a link the page does
        not declare is not promoted, however sure the models are (two pages of a site's template look alike to them)."""
        other = self.pair.other(page.language)
        named = {link.url for link in page.page.links if other is not None and language_of_anchor(link) == other}
        if len(named) != 1 or confidence.get(url := next(iter(named)), 0.0) < self.settings.promote_above:
            return []
        self._confidence[url] = max(confidence[url], self._confidence.get(url, 0.0))
        return [url]

    def queued(self, url: str, priority: float) -> None:
        self._priority[url] = priority
        self.rules.queued(url, priority)
        self.model.queued(url, self._confidence.get(url, 0.0))

    def dequeued(self, url: str) -> None:
        self._priority.pop(url, None)
        self._confidence.pop(url, None)
        self.rules.dequeued(url)
        self.model.dequeued(url)

    def fetched(self, page: PageView) -> dict[str, float]:
        self._learn(page)
        by_rules = self.rules.fetched(page)
        for url in self._believe(page, self.model.fetched(page)):
            by_rules.setdefault(url, self.rules.priority(url))
        changed = {}
        for url, rules in by_rules.items():
            priority = self._combined(url, rules)
            if url in self._priority and priority != self._priority[url]:
                changed[url] = self._priority[url] = priority
        return changed

    def _learn(self, page: PageView) -> None:
        """Teach learning models the page's language and the pairs the crawl confirms with it (class docstring)."""
        language, other = page.language, self.pair.other(page.language)
        named_by = self._named_by.pop(page.url, None)
        alternate_of = self._alternate_of.pop(page.url, None)
        if other is None:
            return
        for alternate in page.page.alternates.values():
            self._alternate_of.setdefault(alternate, page.url)
        for link in page.page.links:  # a language switcher names this page's versions
            if language_of_anchor(link) == other:
                self._named_by.setdefault(link.url, (page.url, language))
        key = self.rules.key(page.url)
        said = {
            self._fetched_by_key.get((key, other)),  # the same key in the other language
            named_by[0] if named_by is not None and named_by[1] == other else None,  # a switcher of a page in `other`
            alternate_of,  # a page that declared this one its alternate
            page.page.alternates.get(other),  # the alternate this page declares
        }
        partners = sorted(url for url in said if url is not None and self._fetched_language.get(url) == other)
        self._fetched_by_key.setdefault((key, language), page.url)
        self._fetched_language[page.url] = language
        before = self._last_fetched.get(language)
        self._last_fetched[language] = page.url
        if not isinstance(self.models, LearningUrlModels):
            return
        pairs = [(partner, page.url) for partner in partners]
        not_pairs = [(partner, before) for partner in partners if before is not None]
        self.models.learn(pages=[(page.url, language)], pairs=pairs + [(b, a) for a, b in pairs],
                          not_pairs=not_pairs + [(b, a) for a, b in not_pairs])  # fmt: skip

    def state(self) -> dict[str, Any]:
        return {"rules": self.rules.state(), "model": self.model.state(), "confidence": self._confidence}

    def restore(self, state: dict[str, Any], waiting: Mapping[str, float]) -> None:
        self.rules.restore(state.get("rules", {}), waiting)
        self.model.restore(state.get("model", {}), waiting)
        self._confidence = {url: c for url, c in state.get("confidence", {}).items() if url in waiting}
        self._priority = dict(waiting)
