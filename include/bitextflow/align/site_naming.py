"""What a site says about a page's counterpart, which content methods must not overrule, and how much content has to
agree before it pairs pages of a partial crawl.

A budgeted crawl of a large site stops with many pages whose translation was never fetched. Content methods
(TF-IDF, structure, embeddings) then pair such a page with the most similar page left over, which on a templated
site is a look-alike of the same template: on a held-out documentation site crawled to 1,200 of its 5,120 pages
every content-made pair was wrong (30 of 488), every URL-made pair right. So before content pairs are linked:

- **The site's URL pattern.** A site that publishes its versions under URLs equal but for the language marker shows
  it by its URL-token pairs (:func:`bitextflow.align.documents.url_matches`) and by the links the crawl saw but did
  not fetch (the crawl log's ``not_fetched_*`` lines, a budgeted crawl's leftover frontier): a crawled page whose
  language-neutral key (:func:`bitextflow.text.urls.url_key`) is the key of an unfetched URL marked with the pair's
  other language (or of an unmarked URL, when the page itself is marked) has its counterpart named by the site and
  simply not crawled. On a partially crawled site with at least ``MIN_PATTERN_PAIRS`` such namings or URL-token
  pairs, two pages that both carry a marker of their own language under different keys each have their counterpart
  named elsewhere too. Content methods may pair none of these pages. A site crawled to its end (nothing left
  unfetched) keeps content pairs of marked pages with different keys: there they are translated paths
  (``/en/about-us`` and ``/es/sobre-nosotros``), as WMT16's sites have them.
- **Declared versions** (``<link rel="alternate" hreflang>``, sitemap ``xhtml:link``; the crawl's
  ``declared-versions.jsonl.gz``): a content pair is refused when either page declares another counterpart in
  the other's language.
- **Agreement on a partial crawl** (``align.partial_crawl_agreement``): on a site the crawl left partial, a content
  pair must be the mutual best match (each page's best candidate is the other, no tie) of every text method that
  ran: TF-IDF, embeddings and structure. A page whose counterpart is missing has look-alikes, and each method picks
  another one; a translation is the best match by its words and by its layout alike.
- **A margin over the runner-up**: a content candidate is kept only when its score beats the next best candidate
  of each of its two pages by the method's margin (``align.document_margins``).

The rules and margins were chosen by leave-one-site-out cross-validation over budgeted crawls of a web of small
templated sites (``bench/document_alignment.py --budgets``; docs/align.md, "Partial crawls").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import language_of_tag
from bitextflow.text.urls import site_key, url_key

#: URL-token pairs (or namings by unfetched URLs) a site needs before two pages under different keys are taken as
#: each other's look-alikes, not translations.
MIN_PATTERN_PAIRS = 1
#: Why a content candidate was refused (counted per candidate, and per document left unpaired).
PATTERN_REFUSED = "counterpart_not_crawled"
DECLARED_REFUSED = "declared_counterpart_elsewhere"
DISAGREEMENT_REFUSED = "content_methods_disagree"


@dataclass(frozen=True)
class SiteNaming:
    """What the sites of a partition name, for :func:`refusal`: the documents whose counterpart their site's URL pattern
    names among the URLs the crawl left unfetched (``uncrawled``); on partially crawled pattern sites, each document's
    language-neutral key when its URL carries a marker of its own language (``named``); and the sites the crawl left
    partial (``partial_sites``)."""

    uncrawled: frozenset[str]
    named: Mapping[str, str]
    partial_sites: frozenset[str]

    @classmethod
    def of(
        cls,
        documents: Sequence[Document],
        url_pairs: Sequence[DocumentPair],
        unfetched: Collection[str],
        languages: tuple[str, str],
    ) -> SiteNaming:
        """From a site's documents, its URL-token pairs, the URLs its crawl knew but did not fetch, and the pair's two
        languages."""
        unfetched_markers: defaultdict[tuple[str, str], set[str]] = defaultdict(set)
        for url in unfetched:
            key, markers = url_key(url)
            unfetched_markers[site_key(url), key].update(markers or [""])
        partial_sites = frozenset(site for site, _key in unfetched_markers)
        other = {languages[0]: languages[1], languages[1]: languages[0]}
        evidence = Counter(site_key(pair.url_a) for pair in url_pairs)
        uncrawled, marked = set(), {}
        for doc in documents:
            site = site_key(doc.url)
            if site not in partial_sites:
                continue
            key, markers = url_key(doc.url)
            language = language_of_tag(doc.language)
            waiting = unfetched_markers.get((site, key), set())
            if other.get(language) in waiting or (markers and "" in waiting):
                uncrawled.add(doc.doc_id)
                evidence[site] += 1
            if language in markers:
                marked[doc.doc_id] = (site, key)
        named = {doc_id: key for doc_id, (site, key) in marked.items() if evidence[site] >= MIN_PATTERN_PAIRS}
        return cls(frozenset(uncrawled), named, partial_sites)

    def partial(self, url: str) -> bool:
        """Whether the crawl left the site of ``url`` partial."""
        return site_key(url) in self.partial_sites


def refusal(
    pair: DocumentPair, naming: SiteNaming, declared: Mapping[str, Mapping[str, str]], languages: Mapping[str, str]
) -> str:
    """Why the site contradicts a content pair ("" when it does not): a page's counterpart is named by the site's URL
    pattern and was not crawled, or both pages are named by the pattern of a partially crawled site under different
    keys (each one's counterpart is another page, not crawled or not published), or a page declares another
    counterpart in the other page's language (``languages``: doc_id -> language)."""
    if pair.doc_id_a in naming.uncrawled or pair.doc_id_b in naming.uncrawled:
        return PATTERN_REFUSED
    key_a, key_b = naming.named.get(pair.doc_id_a), naming.named.get(pair.doc_id_b)
    if key_a is not None and key_b is not None and key_a != key_b:
        return PATTERN_REFUSED
    for url, other_url, other_id in ((pair.url_a, pair.url_b, pair.doc_id_b), (pair.url_b, pair.url_a, pair.doc_id_a)):
        counterpart = declared.get(url, {}).get(languages.get(other_id, ""))
        if counterpart is not None and counterpart != other_url:
            return DECLARED_REFUSED
    return ""


def mutual_best(candidates: Sequence[DocumentPair]) -> set[tuple[str, str]]:
    """The ``(doc_id_a, doc_id_b)`` of the candidates that are the single best of both their documents (a document
    whose two best candidates tie has none)."""
    best: dict[str, tuple[float, str]] = {}
    tied: set[str] = set()
    for pair in candidates:
        for doc_id, other in ((pair.doc_id_a, pair.doc_id_b), (pair.doc_id_b, pair.doc_id_a)):
            held = best.get(doc_id)
            if held is None or pair.score > held[0]:
                best[doc_id] = (pair.score, other)
                tied.discard(doc_id)
            elif pair.score == held[0] and other != held[1]:
                tied.add(doc_id)
    return {
        (pair.doc_id_a, pair.doc_id_b)
        for pair in candidates
        if {pair.doc_id_a, pair.doc_id_b}.isdisjoint(tied)
        and best[pair.doc_id_a][1] == pair.doc_id_b
        and best[pair.doc_id_b][1] == pair.doc_id_a
    }


def with_margin(candidates: Sequence[DocumentPair], margin: float) -> list[DocumentPair]:
    """The candidates whose score beats every other candidate of each of their two documents by ``margin``
    (a document with one candidate has nothing to beat)."""
    if margin <= 0:
        return list(candidates)
    scores: defaultdict[str, list[float]] = defaultdict(list)
    for pair in candidates:
        scores[pair.doc_id_a].append(pair.score)
        scores[pair.doc_id_b].append(pair.score)

    def runner_up(doc_id: str, score: float) -> float:
        others = sorted(scores[doc_id], reverse=True)
        others.remove(score)
        return others[0] if others else float("-inf")

    return [
        pair
        for pair in candidates
        if pair.score - runner_up(pair.doc_id_a, pair.score) >= margin
        and pair.score - runner_up(pair.doc_id_b, pair.score) >= margin
    ]
