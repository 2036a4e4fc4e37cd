"""Document-alignment precision and recall on the local multilingual site.

Builds (or reuses) the local site of Debian manuals (:mod:`bitextflow.localsite`), serves it on
127.0.0.1, crawls all of it with the project's crawler into WARC shards in a temporary folder (no S3),
extracts documents with their identified language from the WARCs, and pairs the documents of one
language pair with each document-alignment method. Pairs are judged against the site's truth (which
pages are translations of which, written by the site builder):

- precision: share of the pairs a method returns that are truth pairs (same document, the pair's two
  languages, in that order);
- recall: share of the truth pairs of the language pair that the method returns.

Methods: ``url_tokens`` (:func:`bitextflow.align.documents.align_by_url`) and ``combined``, the
pairing the pipeline uses, which today is ``url_tokens`` alone.

Usage, from the project root::

    .venv/bin/python bench/document_alignment.py [--json] [--pair en-es|en-fr|en-de] [--cache-dir DIR]

With ``--json`` the last line of output is one JSON object (see ../shared/BENCH.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from bitextflow.align.documents import Document, DocumentPair, align_by_url
from bitextflow.config import CrawlConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import BitextflowError
from bitextflow.extract import iter_documents
from bitextflow.localsite import Truth, build_site, serve
from bitextflow.localsite.truth import site_path

MAX_PAGES = 5000
WARC_MAX_BYTES = 20_000_000


def _url_tokens(documents: Sequence[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], Counter[str]]:
    return align_by_url(documents, lang_a, lang_b)


def _combined(documents: Sequence[Document], lang_a: str, lang_b: str) -> tuple[list[DocumentPair], Counter[str]]:
    """What the pipeline's align_documents stage pairs with; today the URL method alone."""
    return align_by_url(documents, lang_a, lang_b)


METHODS: dict[str, Callable[[Sequence[Document], str, str], tuple[list[DocumentPair], Counter[str]]]] = {
    "url_tokens": _url_tokens,
    "combined": _combined,
}
COMBINED_OF = ["url_tokens"]


def crawl_site(base_url: str, warc_dir: Path, max_pages: int) -> tuple[Crawler, list[str]]:
    """Crawl the whole site breadth-first with no delay; WARC shards are copied into ``warc_dir``."""

    def upload(path: Path, name: str) -> str:
        target = warc_dir / name
        shutil.copyfile(path, target)
        return str(target)

    config = CrawlConfig(
        seeds=[base_url], max_pages=max_pages, delay_seconds=0, strategy="bfs", per_host_concurrency=4,
        allow_private_addresses=["127.0.0.1"],  # the local site; other private addresses stay refused
    )
    crawler = Crawler(config, RotatingWarcWriter(upload, WARC_MAX_BYTES))
    crawler.crawl()
    return crawler, crawler.keys


def extract(shards: Sequence[str]) -> tuple[list[Document], StageCounts]:
    counts = StageCounts("extract")
    documents: list[Document] = []
    for shard in shards:
        with open(shard, "rb") as stream:
            for doc in iter_documents(stream, counts):
                documents.append(Document(doc.doc_id, doc.url, doc.language))
    return documents, counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--pair", default="en-es", help="language pair, e.g. en-es (default), en-fr, en-de")
    parser.add_argument("--cache-dir", type=Path, default=None, help="local-site cache (default: $BITEXTFLOW_CACHE/localsite)")
    parser.add_argument("--max-pages", type=int, default=MAX_PAGES, help=f"crawl page limit (default {MAX_PAGES})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    lang_a, _, lang_b = args.pair.partition("-")
    if not lang_a or not lang_b or lang_a == lang_b:
        print(f"document_alignment: --pair must be two different languages like en-es, got {args.pair!r}", file=sys.stderr)
        return 2
    try:
        started = time.perf_counter()
        site = build_site(args.cache_dir)
        build_seconds = time.perf_counter() - started
        truth = Truth.load(site.cache_dir)
    except BitextflowError as error:
        message = " ".join(str(error).split())
        print(f"document_alignment: local site unavailable: {message}", file=sys.stderr)
        return 2
    if lang_a not in site.languages or lang_b not in site.languages:
        print(
            f"document_alignment: the local site has languages {', '.join(site.languages)}; --pair {args.pair} is not among them",
            file=sys.stderr,
        )
        return 2
    truth_pairs = truth.pairs(lang_a, lang_b)

    with tempfile.TemporaryDirectory(prefix="bench-docalign-") as tmp, serve(site.docroot, port=0) as server:
        started = time.perf_counter()
        crawler, shards = crawl_site(server.base_url, Path(tmp), args.max_pages)
        crawl_seconds = time.perf_counter() - started
        started = time.perf_counter()
        documents, extract_counts = extract(shards)
        extract_seconds = time.perf_counter() - started

    languages = Counter(doc.language for doc in documents)
    # Truth pairs whose two pages were crawled and extracted in the right language: what a URL-only
    # or content method could find at most from this crawl.
    extracted = {(site_path(doc.url), doc.language) for doc in documents}
    detected: dict[str, set[str]] = {}
    for path, language in extracted:
        detected.setdefault(path, set()).add(language)
    reachable = {(a, b) for a, b in truth_pairs if (a, lang_a) in extracted and (b, lang_b) in extracted}

    result: dict = {
        "pair": f"{lang_a}-{lang_b}",
        "truth_pairs": len(truth_pairs),
        "reachable_truth_pairs": len(reachable),
        "methods": {},
        "combined_of": COMBINED_OF,
        "pages_crawled": crawler.counts.kept,
        "crawl_counts": crawler.counts.to_dict(),
        "warc_shards": len(shards),
        "documents": len(documents),
        "documents_by_language": dict(languages.most_common()),
        "extract_counts": extract_counts.to_dict(),
        "crawl_seconds": round(crawl_seconds, 2),
        "extract_seconds": round(extract_seconds, 2),
        "site_build_seconds": round(build_seconds, 2),
    }
    for name, method in METHODS.items():
        started = time.perf_counter()
        pairs, unmatched = method(documents, lang_a, lang_b)
        seconds = time.perf_counter() - started
        found = [(site_path(p.url_a), site_path(p.url_b)) for p in pairs]
        correct = sum(pair in truth_pairs for pair in found)
        recalled = len(set(found) & truth_pairs)
        result["methods"][name] = {
            "precision": round(correct / len(found), 4) if found else 0.0,
            "recall": round(recalled / len(truth_pairs), 4) if truth_pairs else 0.0,
            "pairs": len(found),
            "correct": correct,
            "recall_of_reachable": round(recalled / len(reachable), 4) if reachable else 0.0,
            "unmatched": dict(sorted(unmatched.items())),
            "seconds": round(seconds, 4),
            "wrong_examples": [list(pair) for pair in found if pair not in truth_pairs][:5],
            # Truth pairs not returned, with the language each page was identified as ("-": not extracted).
            "missed_examples": [
                [a, b, "/".join(sorted(detected.get(a, {"-"}))), "/".join(sorted(detected.get(b, {"-"})))]
                for a, b in sorted(truth_pairs - set(found))
            ][:10],
        }

    # -- table ------------------------------------------------------------------------------------
    print(f"Local site: {site.docroot} | served at {server.base_url} | pair {lang_a}-{lang_b}")
    print(
        f"Crawl: {result['pages_crawled']} pages in {crawl_seconds:.1f} s ({crawler.counts.summary()}); "
        f"{len(shards)} WARC shard(s)"
    )
    print(f"Extract: {len(documents)} documents in {extract_seconds:.1f} s ({extract_counts.summary()})")
    print("Documents by language: " + ", ".join(f"{lang} {n}" for lang, n in languages.most_common()))
    print(f"Truth pairs {lang_a}-{lang_b}: {len(truth_pairs)}; both sides extracted in the right language: {len(reachable)}")
    print()
    header = f"{'method':<12} {'pairs':>6} {'correct':>8} {'precision':>10} {'recall':>8} {'recall/reachable':>17}"
    print(header)
    print("-" * len(header))
    for name, row in result["methods"].items():
        print(
            f"{name:<12} {row['pairs']:>6} {row['correct']:>8} {row['precision']:>10.3f} {row['recall']:>8.3f} "
            f"{row['recall_of_reachable']:>17.3f}"
        )
    for name, row in result["methods"].items():
        print(f"  {name} unmatched: " + (", ".join(f"{k}={v}" for k, v in row["unmatched"].items()) or "none"))
        for a, b, lang_of_a, lang_of_b in row["missed_examples"]:
            print(f"  {name} missed: {a} (identified {lang_of_a}) <> {b} (identified {lang_of_b})")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
