"""What a site says about a page's counterpart, which content methods must not overrule: its URL pattern and its
declared language versions.

A budgeted crawl of a large site stops with many pages whose translation was never fetched. Content methods
(TF-IDF, structure, embeddings) then pair such a page with the most similar page left over, which on a templated
site is a look-alike of the same template: on a held-out documentation site crawled to 1,200 of its 5,120 pages
every content-made pair was wrong (30 of 488), every URL-made pair right. So before content pairs are linked:

- **The site's URL pattern.** A site that publishes its versions under URLs equal but for the language marker
  shows it by its own URL-token pairs (:func:`bitextflow.align.documents.url_matches`). On a site with at least
  ``MIN_PATTERN_PAIRS`` of them that the crawl left partial (URLs it knew but did not fetch: the crawl log's
  ``not_fetched_*`` lines, a budgeted crawl's leftover frontier), a page whose language-neutral key
  (:func:`bitextflow.text.urls.url_key`) is the key of such a URL has its counterpart named by the site and simply
  not crawled, and two pages that both carry a marker of their own language under different keys each have their
  counterpart named elsewhere: content methods may pair neither. A site crawled to its end (nothing left unfetched)
  keeps content pairs of marked pages with different keys: there they are translated paths (``/en/about-us`` and
  ``/es/sobre-nosotros``), as WMT16's sites have them.
- **Declared versions** (``<link rel="alternate" hreflang>``, sitemap ``xhtml:link``; the crawl's
  ``declared-versions.jsonl.gz``): a content pair is refused when either page declares another counterpart in
  the other's language.
- **A margin over the runner-up**: a content candidate is kept only when its score beats the next best candidate
  of each of its two pages by the method's margin (``align.document_margins``); a page whose counterpart is
  missing has no clear best, only several look-alikes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bitextflow.records import Document, DocumentPair
from bitextflow.text.languages import normalise_language
from bitextflow.text.urls import site_key, url_key

#: URL-token pairs a site needs before its URL pattern is trusted to name counterparts.
MIN_PATTERN_PAIRS = 1
#: Why a content candidate was refused (counted per candidate, and per document left unpaired).
PATTERN_REFUSED = "counterpart_not_crawled"
DECLARED_REFUSED = "declared_counterpart_elsewhere"


@dataclass(frozen=True)
class SiteNaming:
    """What the sites of a partition name, for :func:`refusal`: the documents whose counterpart their site's URL pattern
    names among the URLs the crawl left unfetched (``uncrawled``), and, on partially crawled pattern sites, each
    document's language-neutral key when its URL carries a marker of its own language (``named``)."""

    uncrawled: frozenset[str]
    named: Mapping[str, str]

    @classmethod
    def of(cls, documents: Sequence[Document], url_pairs: Sequence[DocumentPair], unfetched: Collection[str]) -> SiteNaming:
        """From a site's documents, its URL-token pairs and the URLs its crawl knew but did not fetch."""
        pattern_sites = Counter(site_key(pair.url_a) for pair in url_pairs)
        partial = {site for url in unfetched if pattern_sites[site := site_key(url)] >= MIN_PATTERN_PAIRS}
        known = {(site_key(url), url_key(url)[0]) for url in unfetched if site_key(url) in partial}
        uncrawled, named = set(), {}
        for doc in documents:
            site = site_key(doc.url)
            if site not in partial:
                continue
            key, markers = url_key(doc.url)
            if (site, key) in known:
                uncrawled.add(doc.doc_id)
            if normalise_language(doc.language) in markers:
                named[doc.doc_id] = key
        return cls(frozenset(uncrawled), named)


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
