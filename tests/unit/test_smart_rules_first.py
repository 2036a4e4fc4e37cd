"""The smart strategy ranks by the URL rules and lets the URL models promote only the links they are sure of; the
models go on learning, on a copy, from the pages and pairs the crawl confirms."""

from __future__ import annotations

import itertools

import pytest

from bitextflow.crawl.scoring import PageView, PairContext, UrlRulesScorer
from bitextflow.crawl.smart_scorer import SmartScorer, SmartSettings
from bitextflow.crawl.urls import COMPONENT_TRUST, Link, parse_html

PAIR = PairContext("en", "es")


def _view(url: str, language: str, html: bytes = b"<title>t</title><p>x</p>") -> PageView:
    return PageView(url, 0, language, parse_html(html, url))


class _SuffixModels:
    """Stand-in URL models that read a one-letter suffix (``_e``, ``_s``), which the URL rules cannot: the language is
    the suffix's, and two URLs are parallel when they differ by it only. Records what a crawl teaches it."""

    version = "test"

    def __init__(self) -> None:
        self.taught: list[dict] = []
        self.copies = 0

    def language_probabilities(self, urls, language):
        return [0.95 if url.endswith(f"_{language[1] if language == 'es' else language[0]}.html") else 0.05 for url in urls]

    def parallel_probabilities(self, pairs):
        return [0.9 if a[:-7] == b[:-7] and a != b else 0.1 for a, b in pairs]

    def learning_copy(self):
        self.copies += 1
        return self

    def learn(self, pages=(), pairs=(), not_pairs=()):
        self.taught.append({"pages": list(pages), "pairs": list(pairs), "not_pairs": list(not_pairs)})


def test_the_rules_order_stands_until_the_models_are_sure_of_the_version_a_page_names():
    switcher = b'<a href="/doc/ch01_s.html" hreflang="es">Espanol</a><a href="/es/a.html">a</a>'
    page = _view("http://h/doc/ch01_e.html", "en", switcher)
    links = [Link(url, "", "") for url in ("http://h/es/a.html", "http://h/fr/a.html", "http://h/b.html")]
    links.insert(2, page.page.links[0])
    rules = UrlRulesScorer(PAIR).score(page, links)
    never = SmartScorer(PAIR, _SuffixModels(), SmartSettings(promote_above=1.01))
    assert never.score(page, links) == rules
    smart = SmartScorer(PAIR, _SuffixModels(), SmartSettings(promote_above=0.8))
    # the switcher's one-letter translation (P(es) 1, declared, x P(parallel) 0.9) ranks after the pairs the rules
    # complete and before the rest; the others as the rules say
    assert smart.score(page, links) == pytest.approx([*rules[:2], SmartScorer.PROMOTED + SmartScorer.TIE_WEIGHT * 0.9, rules[3]])


def test_the_models_never_reorder_what_the_rules_tell_apart_nor_outrank_a_pair_the_rules_complete():
    languages = [*COMPONENT_TRUST.values(), UrlRulesScorer.UNKNOWN_LANGUAGE]
    languages += [(1 - trust) * UrlRulesScorer.UNKNOWN_LANGUAGE for trust in COMPONENT_TRUST.values()]
    parallel = [
        UrlRulesScorer.BASE_PARALLEL,
        UrlRulesScorer.SIBLING_PARALLEL,
        UrlRulesScorer.UNMARKED_OF_PAIR,
        UrlRulesScorer.COMPLETES_PAIR,
    ]
    priorities = sorted({round(a * b, 12) for a, b in itertools.product(languages, parallel)})
    assert min(b - a for a, b in itertools.pairwise(priorities)) > SmartScorer.TIE_WEIGHT
    # a promoted link comes after every pair the rules complete and before every link they do not
    completing = [p * UrlRulesScorer.COMPLETES_PAIR for p in COMPONENT_TRUST.values()]
    not_completing = [a * b for a, b in itertools.product(languages, parallel[:3]) if b != UrlRulesScorer.UNMARKED_OF_PAIR]
    not_completing.append(UrlRulesScorer.UNKNOWN_LANGUAGE * UrlRulesScorer.UNMARKED_OF_PAIR)
    assert max(not_completing) < SmartScorer.PROMOTED < SmartScorer.PROMOTED + SmartScorer.TIE_WEIGHT < min(completing)


def test_a_fetched_page_promotes_its_translation_and_teaches_a_copy_of_the_models_what_the_crawl_confirmed():
    models = _SuffixModels()
    smart = SmartScorer(PAIR, models, SmartSettings(promote_above=0.8))
    assert models.copies == 1
    home = _view("http://h/", "en")
    links = [Link(f"http://h/doc/ch0{k}_{lang}.html", "", "") for k in (1, 2) for lang in "es"]
    for link, priority in zip(links, smart.score(home, links), strict=True):
        smart.queued(link.url, priority)  # from the home page, nothing is a translation: the rules' 0.25 each
    switcher = b'<a href="/doc/ch01_s.html" hreflang="es">Espanol</a>'
    smart.dequeued("http://h/doc/ch01_e.html")  # the crawler takes a URL off the frontier, then fetches it
    raised = smart.fetched(_view("http://h/doc/ch01_e.html", "en", switcher))
    assert raised == {"http://h/doc/ch01_s.html": pytest.approx(SmartScorer.PROMOTED + SmartScorer.TIE_WEIGHT * 0.9)}
    assert models.taught == [{"pages": [("http://h/doc/ch01_e.html", "en")], "pairs": [], "not_pairs": []}]
    smart.dequeued("http://h/doc/ch01_s.html")
    smart.fetched(_view("http://h/doc/ch01_s.html", "es"))  # named by the English page's switcher: a confirmed pair
    assert models.taught[-1]["pairs"] == [("http://h/doc/ch01_e.html", "http://h/doc/ch01_s.html"),
                                          ("http://h/doc/ch01_s.html", "http://h/doc/ch01_e.html")]  # fmt: skip
    smart.dequeued("http://h/doc/ch02_e.html")
    smart.fetched(_view("http://h/doc/ch02_e.html", "en"))
    smart.fetched(_view("http://h/es/ch03.html", "es"))  # no partner: its language only
    smart.fetched(_view("http://h/en/ch03.html", "en"))  # the same key as a Spanish page: confirmed, against ch02_e
    assert models.taught[-1]["pairs"][0] == ("http://h/es/ch03.html", "http://h/en/ch03.html")
    assert models.taught[-1]["not_pairs"][0] == ("http://h/es/ch03.html", "http://h/doc/ch02_e.html")


class _SureOfEverything(_SuffixModels):
    """Stand-in URL models sure that every pair of URLs translates each other."""

    def parallel_probabilities(self, pairs):
        return [0.9 for _pair in pairs]


def test_only_the_one_version_a_page_names_is_promoted():
    """A page has one version per language: a home page listing the other language's pages names none, and a link the
    page does not declare is not promoted however sure the models are."""
    smart = SmartScorer(PAIR, _SureOfEverything(), SmartSettings(promote_above=0.8))
    listing = "".join(f'<a href="/doc/ch0{k}_s.html" hreflang="es">{k}</a>' for k in range(3)).encode()
    home = _view("http://h/home_e.html", "en", listing)
    assert smart.score(home, home.page.links) == UrlRulesScorer(PAIR).score(home, home.page.links)
    undeclared = _view("http://h/doc/ch05_e.html", "en", b'<a href="/doc/ch05_s.html">next</a>')
    assert smart.score(undeclared, undeclared.page.links) == UrlRulesScorer(PAIR).score(undeclared, undeclared.page.links)
    named = _view("http://h/doc/ch06_e.html", "en", b'<a href="/doc/ch06_s.html">Espanol</a>')  # an anchor naming it
    assert smart.score(named, named.page.links)[0] > SmartScorer.PROMOTED
