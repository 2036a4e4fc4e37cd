"""What a site says about a page's counterpart, which content methods must not overrule: its URL pattern and its
declared language versions.

A budgeted crawl of a large site stops with many pages whose translation was never fetched. Content methods
(TF-IDF, structure, embeddings) then pair such a page with the most similar page left over, which on a templated
site is a look-alike of the same template: on a held-out documentation site crawled to 1,200 of its 5,120 pages
every content-made pair was wrong (30 of 488), every URL-made pair right. So before content pairs are linked:

- **The site's URL pattern.** A site that publishes its versions under URLs equal but for the language marker
  shows it by its own URL-token pairs (:func:`bitextflow.align.documents.url_matches`). On a site with at least
  ``MIN_PATTERN_PAIRS`` of them, a page whose language-neutral key (:func:`bitextflow.text.urls.url_key`) is the
  key of a URL the crawl knew but did not fetch (the crawl log's ``not_fetched_*`` lines: a budgeted crawl's
  leftover frontier) has its counterpart named by the site and simply not crawled: content methods may not pair it
  with another page. A page whose counterpart is under a translated path (no URL of its key known) may still be
  paired by content, as before.
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

from bitextflow.records import Document, DocumentPair
from bitextflow.text.urls import site_key, url_key

#: URL-token pairs a site needs before its URL pattern is trusted to name counterparts.
MIN_PATTERN_PAIRS = 2
#: Why a content candidate was refused (counted per candidate, and per document left unpaired).
PATTERN_REFUSED = "counterpart_not_crawled"
DECLARED_REFUSED = "declared_counterpart_elsewhere"


def uncrawled_counterparts(
    documents: Sequence[Document], url_pairs: Sequence[DocumentPair], unfetched: Collection[str]
) -> set[str]:
    """The doc_ids of the documents whose counterpart their site's URL pattern names among the URLs the crawl knew but
    did not fetch (``unfetched``), on sites with at least ``MIN_PATTERN_PAIRS`` URL-token pairs (module docstring)."""
    pattern_sites = Counter(site_key(pair.url_a) for pair in url_pairs)
    known = {(site_key(url), url_key(url)[0]) for url in unfetched if pattern_sites[site_key(url)] >= MIN_PATTERN_PAIRS}
    return {doc.doc_id for doc in documents if (site_key(doc.url), url_key(doc.url)[0]) in known}


def refusal(
    pair: DocumentPair, uncrawled: Collection[str], declared: Mapping[str, Mapping[str, str]], languages: Mapping[str, str]
) -> str:
    """Why the site contradicts a content pair ("" when it does not): a page's counterpart is named by the site's URL
    pattern and not crawled (``uncrawled``), or a page declares another counterpart in the other page's language
    (``languages``: doc_id -> language)."""
    if pair.doc_id_a in uncrawled or pair.doc_id_b in uncrawled:
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
