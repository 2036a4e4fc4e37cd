"""Document-alignment precision and recall on the local multilingual site.

Builds (or reuses) the local site of Debian manuals (:mod:`bitextflow_local.localsite`), serves it on
127.0.0.1, crawls all of it with the project's crawler into WARC shards in a temporary folder (no S3),
extracts documents with their identified language from the WARCs, and pairs the documents of one
language pair with each document-alignment method. Pairs are judged against the site's truth (which
pages are translations of which, written by the site builder):

- precision: share of the pairs a method returns that are truth pairs (same document, the pair's two
  languages, in that order);
- recall: share of the truth pairs of the language pair that the method returns.

Methods (:func:`bitextflow.align.combined.align_documents`, each alone, then 1-1): ``url_tokens``,
``tfidf`` (with the pair's Debian dictionary), ``structure``, ``images``, ``embeddings`` (with
``--embeddings``: multilingual-e5-small on CPU takes about a minute per pair), and ``combined``: the
methods and priority of the default ``align.document_methods``, what the pipeline pairs with.

The site's URLs reveal every pair by construction. A second scenario (``hidden_urls`` in the JSON)
renames a share (``--hide``, default half) of the second language's pages (by the truth, whatever
language they were identified as) to opaque paths of the same depth (``/x/9c1e4f.html``), as sites
with translated paths look: URL matching cannot pair them, and the other methods have to.

Partly translated pages (the truth's ``partly_translated``: translations that keep part of the original's
text, identified as the original's language when most of it is untranslated) are counted apart:
``partly_translated_truth_pairs``, and per method ``partly_translated_found`` (truth pairs of them returned)
and ``partly_translated_pairs`` (pairs the second pass of :func:`bitextflow.align.combined.align_documents`
made).

Usage, from the project root::

    .venv/bin/python bench/document_alignment.py [--json] [--pair en-es|en-fr|en-de] [--cache-dir DIR]
        [--hide 0.5] [--embeddings]

With ``--json`` the last line of output is one JSON object (see ../shared/BENCH.md).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import logging
import math
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bitextflow.align.combined import MIN_TRANSLATED_SHARE, align_documents, language_share
from bitextflow.align.dictionary import BilingualDictionary, load_dictionary
from bitextflow.align.documents import url_matches
from bitextflow.config import AlignConfig, CrawlConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import BitextflowError
from bitextflow.extract import iter_documents
from bitextflow.extract.shard import document_row
from bitextflow.records import Document
from bitextflow_local.localsite import Truth, build_site, serve
from bitextflow_local.localsite.build import Site
from bitextflow_local.localsite.multisite import Web, build_web
from bitextflow_local.localsite.server import serve_sites
from bitextflow_local.localsite.truth import site_path

MAX_PAGES = 5000
WARC_MAX_BYTES = 20_000_000


SINGLE_METHODS = ["url_tokens", "tfidf", "structure", "images"]
COMBINED_OF = AlignConfig().document_methods
HIDE_SHARE = 0.5


def opaque_url(url: str, paths: set[str], share: float) -> str | None:
    """The opaque URL of the same depth that ``url`` is moved to when it names one of ``paths`` (site paths of one
    language's pages) and falls in the hidden ``share`` (chosen by a hash of the site path, so every run and every
    mention of a page hides the same pages), else None."""
    path = site_path(url)  # not the URL: the port changes from run to run
    if path not in paths or hashlib.sha1(path.encode("utf-8")).digest()[0] >= share * 256:
        return None
    parts = urlsplit(url)
    segments = [hashlib.sha1(f"{path}/{k}".encode()).hexdigest()[:8] for k, s in enumerate(parts.path.split("/")) if s]
    return f"{parts.scheme}://{parts.netloc}/" + "/".join(segments)


def hide_urls(documents: Sequence[Document], paths: set[str], share: float) -> tuple[list[Document], dict[str, str]]:
    """``documents`` with a share of the pages at ``paths`` moved to opaque URLs (:func:`opaque_url`); also returns
    opaque URL -> original URL."""
    renamed: dict[str, str] = {}
    result = []
    for document in documents:
        url = opaque_url(document.url, paths, share)
        if url is not None:
            renamed[url] = document.url
            document = replace(document, url=url)
        result.append(document)
    return result, renamed


def measure(
    documents: Sequence[Document],
    lang_a: str,
    lang_b: str,
    truth: Truth,
    renamed: dict[str, str],
    methods: dict[str, list[str]],
    **resources: Any,
) -> dict[str, dict[str, Any]]:
    """Precision and recall of each named method list against the truth (site paths of the original URLs)."""
    truth_pairs, partly_translated = truth.pairs(lang_a, lang_b), truth.partly_translated_pairs(lang_a, lang_b)
    results = {}
    for name, method_list in methods.items():
        started = time.perf_counter()
        pairs, report = align_documents(documents, lang_a, lang_b, method_list, **resources)
        seconds = time.perf_counter() - started
        found = [(site_path(renamed.get(p.url_a, p.url_a)), site_path(renamed.get(p.url_b, p.url_b))) for p in pairs]
        correct = sum(pair in truth_pairs for pair in found)
        results[name] = {
            "precision": round(correct / len(found), 4) if found else 0.0,
            "recall": round(len(set(found) & truth_pairs) / len(truth_pairs), 4) if truth_pairs else 0.0,
            "pairs": len(found),
            "correct": correct,
            "partly_translated_found": len(set(found) & partly_translated),
            "partly_translated_pairs": report.partly_translated,
            "kept_by_method": dict(report.kept),
            "unmatched": dict(sorted(report.unmatched.items())),
            "seconds": round(seconds, 3),
            "wrong_examples": [
                [*pair, p.method, round(p.score, 3)] for pair, p in zip(found, pairs, strict=True) if pair not in truth_pairs
            ][:5],
            "missed_examples": sorted(truth_pairs - set(found))[:10],
        }
        if report.structure_scorer:
            results[name]["structure_scorer"] = report.structure_scorer
    return results


def print_table(title: str, methods: dict[str, dict[str, Any]]) -> None:
    print(title)
    header = f"{'method':<12} {'pairs':>6} {'correct':>8} {'partly':>7} {'precision':>10} {'recall':>8} {'seconds':>8}  kept by"
    print(header)
    print("-" * len(header))
    for name, row in methods.items():
        kept = ", ".join(f"{m} {n}" for m, n in row["kept_by_method"].items())
        print(
            f"{name:<12} {row['pairs']:>6} {row['correct']:>8} {row['partly_translated_found']:>7} {row['precision']:>10.3f} "
            f"{row['recall']:>8.3f} {row['seconds']:>8.2f}  {kept}"
        )
    for name, row in methods.items():
        for a, b, method, score in row["wrong_examples"]:
            print(f"  {name} wrong: {a} <> {b} ({method} {score})")
    print()


def crawl_site(base_url: str, warc_dir: Path, max_pages: int) -> tuple[Crawler, list[str]]:
    """Crawl the whole site breadth-first with no delay; WARC shards are copied into ``warc_dir``."""

    def upload(path: Path, name: str) -> str:
        target = warc_dir / name
        shutil.copyfile(path, target)
        return str(target)

    config = CrawlConfig(
        seeds=[base_url],
        max_pages=max_pages,
        delay_seconds=0,
        strategy="bfs",
        per_host_concurrency=4,
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
                # as the pipeline's documents table holds it: paragraph languages and boilerplate flags included
                documents.append(Document.from_row(document_row(doc, shard, partition=0)))
    return documents, counts


# -- budgeted crawls (--budgets) ------------------------------------------------------------------------
# A web of small templated sites carved out of the local site (:func:`bitextflow_local.localsite.multisite.build_web`:
# Debian manual pages, one template per manual, so a page whose translation was not crawled has look-alikes). Each
# site is crawled on its own (bfs, one request at a time: a budgeted bfs crawl separates many pages from their
# translations) to a fraction of its pages; the documents are extracted from the crawl's WARC and aligned with the
# default methods, the crawl's unfetched URLs and declared versions, under a grid of rules (margins over the runner-up,
# agreement of the text methods on a partial crawl: :mod:`bitextflow.align.site_naming`), as crawled and with half of
# the second language's URLs made opaque (``hide_urls``: translated paths, where content methods must work; the
# crawl's unfetched URLs and declarations name the opaque URLs too). Precision of the pairs returned; recall of the
# truth pairs whose two pages were both crawled (and identified in their language).
# The rules are chosen by leave-one-site-out cross-validation: for each site, the rules that keep precision >= the
# target in every row (variant and budget) of the *other* sites, with the highest recall there (ties: the smallest
# margins); the site is then scored with them. The shipped defaults are the choice every fold made.

RULE_GRID: dict[str, tuple[Any, ...]] = {
    "tfidf": (0.0, 0.02, 0.05, 0.1),
    "structure": (0.0, 0.05, 0.1, 0.2),
    "partial_crawl_agreement": (False, True),
}


def _rules(values: Sequence[Any]) -> dict[str, Any]:
    """A point of :data:`RULE_GRID` as ``{"margins": {method: margin}, "partial_crawl_agreement": bool}``."""
    named = dict(zip(RULE_GRID, values, strict=True))
    agreement = named.pop("partial_crawl_agreement")
    return {"margins": named, "partial_crawl_agreement": agreement}


@dataclass
class Cell:
    """One budgeted crawl of one site: what alignment sees, and the truth pairs both of whose pages were crawled."""

    site: str
    budget: float
    documents: list[Document]
    unfetched: set[str]
    declared: dict[str, dict[str, str]]
    truth: set[tuple[str, str]]
    crawled_truth: set[tuple[str, str]]
    renamed: dict[str, str]  # opaque URL -> original, in the variant with hidden URLs (hide_urls)
    variant: str  # "crawled" (URLs as crawled) or "hidden" (half the second language's URLs opaque)

    url_token_pairs: int  # pairs URL matching finds in the crawl: 0 means the site showed no URL pattern of its own


def crawl_cells(
    source: Site, folder: Path, sites: int, budgets: Sequence[float], pair: tuple[str, str]
) -> tuple[Web, list[Cell]]:
    """Build a web of ``sites`` sites in ``folder`` and crawl each to every budget."""
    web = build_web(source, folder / "web", sites, languages=pair)
    cells = []
    with serve_sites({site.address: site.docroot for site in web.sites}, port=0) as servers:
        for site, budget in itertools.product(web.sites, budgets):
            warcs = folder / f"warc-{site.address}-{budget}"
            warcs.mkdir()
            config = CrawlConfig(
                seeds=[site.url(servers.port)], strategy="bfs", max_pages=max(2, math.ceil(budget * site.pages)),
                delay_seconds=0, concurrency=1, per_host_concurrency=1, scout_pages=0,
                allow_private_addresses=web.allowed_addresses(servers.port),
            )  # fmt: skip
            crawler = Crawler(config, RotatingWarcWriter(lambda path, name, w=warcs: str(shutil.copyfile(path, w / name)), 10**8),
                              PairContext(*pair))  # fmt: skip
            crawler.crawl()
            documents, _counts = extract(crawler.keys)
            truth = site.truth.pairs(*pair)
            have = {(site_path(doc.url), doc.language) for doc in documents}
            crawled = {(a, b) for a, b in truth if (a, pair[0]) in have and (b, pair[1]) in have}
            unfetched = {entry.url for entry in crawler.log if entry.outcome.startswith("not_fetched")}
            url_pairs = len(url_matches(documents, *pair)[0])
            cells.append(
                Cell(site.address, budget, documents, unfetched, crawler.declared, truth, crawled, {}, "crawled", url_pairs)
            )
            spanish = site.truth.documents(pair[1])
            hidden, renamed = hide_urls(documents, spanish, HIDE_SHARE)

            def hide(url: str, paths: set[str] = spanish) -> str:  # the site's links name the opaque URLs too
                return opaque_url(url, paths, HIDE_SHARE) or url

            declared = {hide(url): {lang: hide(alt) for lang, alt in alts.items()} for url, alts in crawler.declared.items()}
            cells.append(Cell(site.address, budget, hidden, {hide(url) for url in unfetched}, declared, truth, crawled, renamed,
                              "hidden", len(url_matches(hidden, *pair)[0])))  # fmt: skip
    return web, cells


def judge(cell: Cell, pair: tuple[str, str], rules: dict[str, Any], dictionary: BilingualDictionary | None,
          informed: bool = True) -> dict[str, Any]:  # fmt: skip
    """Pairs of one cell under ``rules`` (:func:`_rules`; ``informed``: with the crawl's unfetched URLs and declarations,
    as the stage aligns; else blind, as before this mode): returned, correct, and correct among the crawled truth pairs."""
    pairs, report = align_documents(
        cell.documents, *pair, AlignConfig().document_methods, dictionary=dictionary, margins=rules["margins"],
        partial_crawl_agreement=rules["partial_crawl_agreement"],
        unfetched=cell.unfetched if informed else (), declared=cell.declared if informed else None,
    )  # fmt: skip
    original = cell.renamed.get
    paths = [(site_path(original(p.url_a, p.url_a)), site_path(original(p.url_b, p.url_b)), p.method) for p in pairs]
    found = {(a, b) for a, b, _method in paths}
    wrong = sorted(path for path in paths if path[:2] not in cell.truth)
    content = [path for path in paths if path[2] != "url_tokens"]
    return {"pairs": len(found), "correct": len(found & cell.truth), "found_crawled": len(found & cell.crawled_truth),
            "crawled_truth": len(cell.crawled_truth), "wrong": wrong, "refused": dict(report.refused),
            "content_pairs": len(content), "content_wrong": sum(path[:2] not in cell.truth for path in content)}  # fmt: skip


def _totals(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    pairs, correct = sum(r["pairs"] for r in rows), sum(r["correct"] for r in rows)
    crawled, found = sum(r["crawled_truth"] for r in rows), sum(r["found_crawled"] for r in rows)
    return {"precision": round(correct / pairs, 4) if pairs else 1.0, "recall_of_crawled": round(found / crawled, 4) if crawled else 0.0,
            "pairs": pairs, "wrong": pairs - correct, "crawled_truth_pairs": crawled,
            "content_pairs": sum(r["content_pairs"] for r in rows), "content_wrong": sum(r["content_wrong"] for r in rows)}  # fmt: skip


def _id(cell: Cell) -> tuple[str, float, str]:
    return (cell.site, cell.budget, cell.variant)


def _group(cell: Cell) -> str:
    """The row a cell is reported in: its variant and budget (``crawled 0.7``)."""
    return f"{cell.variant} {cell.budget}"


def _groups(cells: Sequence[Cell]) -> list[str]:
    return sorted({_group(cell) for cell in cells})


def cross_validated(cells: Sequence[Cell], pair: tuple[str, str], dictionary: BilingualDictionary | None,
                    target: float) -> dict[str, Any]:  # fmt: skip
    """Leave-one-site-out choice of the rules (section comment above) and the figures they give, per row."""
    grid = [_rules(values) for values in itertools.product(*RULE_GRID.values())]
    scored = {_id(cell): [judge(cell, pair, rules, dictionary) for rules in grid] for cell in cells}
    sites = sorted({cell.site for cell in cells})
    held_out_rows: list[tuple[Cell, dict[str, Any]]] = []
    chosen: dict[str, dict[str, Any]] = {}
    for site in sites:
        train = [cell for cell in cells if cell.site != site]

        def merit(index: int, train: list[Cell] = train) -> tuple[bool, float, float, bool]:
            groups: dict[str, list[dict[str, Any]]] = {}
            for cell in train:
                groups.setdefault(_group(cell), []).append(scored[_id(cell)][index])
            totals = [_totals(rows) for rows in groups.values()]
            rules = grid[index]
            return (all(t["precision"] >= target for t in totals), sum(t["recall_of_crawled"] for t in totals),
                    -sum(rules["margins"].values()), not rules["partial_crawl_agreement"])  # fmt: skip

        best = max(range(len(grid)), key=merit)
        chosen[site] = grid[best]
        held_out_rows += [(cell, scored[_id(cell)][best]) for cell in cells if cell.site == site]
    no_pattern = [(cell, row) for cell, row in held_out_rows if cell.url_token_pairs == 0 and cell.unfetched]
    return {
        "target_precision": target,
        "chosen_rules": chosen,
        "per_budget": {name: _totals([row for cell, row in held_out_rows if _group(cell) == name]) for name in _groups(cells)},
        "all": _totals([row for _cell, row in held_out_rows]),
        "partial_crawls_without_url_token_pairs": {"cells": len(no_pattern), **_totals([row for _cell, row in no_pattern])},
        "wrong_examples": [[cell.site, cell.budget, cell.variant, *w] for cell, row in held_out_rows for w in row["wrong"]][:10],
    }


def budgeted_report(cells: Sequence[Cell], pair: tuple[str, str], dictionary: BilingualDictionary | None,
                    target: float) -> dict[str, Any]:  # fmt: skip
    """Per row: blind (before: no unfetched URLs, no declarations, no margins, no agreement), what the site names
    alone (unfetched URLs and declarations, no margins, no agreement), the shipped defaults, and the rules chosen by
    leave-one-site-out cross-validation; and the same on the partial crawls that found no URL-token pair."""
    budgets = sorted({cell.budget for cell in cells})
    defaults = {"margins": AlignConfig().document_margins, "partial_crawl_agreement": AlignConfig().partial_crawl_agreement}
    bare = _rules([values[0] for values in RULE_GRID.values()])
    settings = {"before": (bare, False), "site_naming_only": (bare, True), "shipped": (defaults, True)}
    groups = _groups(cells)
    report: dict[str, Any] = {"sites": len({c.site for c in cells}), "budgets": budgets, "shipped_rules": defaults}
    no_pattern = [cell for cell in cells if cell.url_token_pairs == 0 and cell.unfetched]
    for name, (rules, informed) in settings.items():
        rows = {_id(cell): judge(cell, pair, rules, dictionary, informed) for cell in cells}
        report[name] = {group: _totals([rows[_id(c)] for c in cells if _group(c) == group]) for group in groups}
        report[name]["partial_crawls_without_url_token_pairs"] = {
            "cells": len(no_pattern),
            **_totals([rows[_id(cell)] for cell in no_pattern]),
        }
    report["cross_validated"] = cross_validated(cells, pair, dictionary, target)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--pair", default="en-es", help="language pair, e.g. en-es (default), en-fr, en-de")
    parser.add_argument("--cache-dir", type=Path, default=None, help="local-site cache (default: $BITEXTFLOW_CACHE/localsite)")
    parser.add_argument("--max-pages", type=int, default=MAX_PAGES, help=f"crawl page limit (default {MAX_PAGES})")
    parser.add_argument(
        "--hide", type=float, default=HIDE_SHARE, help=f"share of second-language URLs made opaque (default {HIDE_SHARE})"
    )
    parser.add_argument(
        "--embeddings", action="store_true", help="also run the embeddings method (multilingual-e5-small, slow on CPU)"
    )
    parser.add_argument(
        "--budgets", default=None, help="budgeted-crawl mode: crawl fractions of a web's sites, e.g. 0.3,0.5,0.7 (see above)"
    )
    parser.add_argument("--sites", type=int, default=8, help="budgeted-crawl mode: sites of the web (default 8)")
    parser.add_argument("--target", type=float, default=0.99, help="budgeted-crawl mode: precision to keep (default 0.99)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    lang_a, _, lang_b = args.pair.partition("-")
    if args.budgets:
        return budgeted_main(args, (lang_a, lang_b))
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
    partly_translated = truth.partly_translated_pairs(lang_a, lang_b)

    with tempfile.TemporaryDirectory(prefix="bench-docalign-") as tmp, serve(site.docroot, port=0) as server:
        started = time.perf_counter()
        crawler, shards = crawl_site(server.base_url, Path(tmp), args.max_pages)
        crawl_seconds = time.perf_counter() - started
        started = time.perf_counter()
        documents, extract_counts = extract(shards)
        extract_seconds = time.perf_counter() - started

    languages = Counter(doc.language for doc in documents)
    # Truth pairs whose two pages were crawled and extracted in the right language, or the second page as a partly
    # translated one (identified as the first language, with enough of the second): what a URL-only or content
    # method could find at most from this crawl.
    extracted = {(site_path(doc.url), doc.language) for doc in documents}
    detected: dict[str, set[str]] = {}
    for path, language in extracted:
        detected.setdefault(path, set()).add(language)
    partly_paths = {
        site_path(doc.url) for doc in documents if doc.language == lang_a and language_share(doc, lang_b) >= MIN_TRANSLATED_SHARE
    }
    reachable = {(a, b) for a, b in truth_pairs if (a, lang_a) in extracted and ((b, lang_b) in extracted or b in partly_paths)}

    methods = {name: [name] for name in SINGLE_METHODS}
    resources: dict[str, Any] = {"dictionary": load_dictionary(lang_a, lang_b)}
    if args.embeddings:
        from bitextflow.models import SentenceEncoder

        methods["embeddings"] = ["embeddings"]
        resources["encoder"] = SentenceEncoder.from_path()
    methods["combined"] = list(COMBINED_OF)
    if args.embeddings:
        methods["combined+emb"] = [*COMBINED_OF[:1], "embeddings", *COMBINED_OF[1:]]
    hidden, renamed = hide_urls(documents, truth.documents(lang_b), args.hide)
    result: dict = {
        "pair": f"{lang_a}-{lang_b}",
        "truth_pairs": len(truth_pairs),
        "reachable_truth_pairs": len(reachable),
        "partly_translated_truth_pairs": len(partly_translated),
        "methods": measure(documents, lang_a, lang_b, truth, {}, methods, **resources),
        "combined_of": COMBINED_OF,
        "hidden_urls": {
            "share": args.hide,
            "renamed_pages": len(renamed),
            "methods": measure(hidden, lang_a, lang_b, truth, renamed, methods, **resources),
        },
        "dictionary_pairs": len(resources["dictionary"]) if resources["dictionary"] is not None else 0,
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
    for scenario in (result["methods"], result["hidden_urls"]["methods"]):
        for row in scenario.values():
            # Truth pairs not returned, with the language each page was identified as ("-": not extracted).
            row["missed_examples"] = [
                [a, b, "/".join(sorted(detected.get(a, {"-"}))), "/".join(sorted(detected.get(b, {"-"})))]
                for a, b in row["missed_examples"]
            ]
            row["recall_of_reachable"] = round(len(reachable) and row["recall"] * len(truth_pairs) / len(reachable), 4)

    # -- table ------------------------------------------------------------------------------------
    print(f"Local site: {site.docroot} | served at {server.base_url} | pair {lang_a}-{lang_b}")
    print(
        f"Crawl: {result['pages_crawled']} pages in {crawl_seconds:.1f} s ({crawler.counts.summary()}); "
        f"{len(shards)} WARC shard(s)"
    )
    print(f"Extract: {len(documents)} documents in {extract_seconds:.1f} s ({extract_counts.summary()})")
    print("Documents by language: " + ", ".join(f"{lang} {n}" for lang, n in languages.most_common()))
    print(
        f"Truth pairs {lang_a}-{lang_b}: {len(truth_pairs)} ({len(partly_translated)} partly translated); "
        f"both sides extracted in the right language: {len(reachable)}"
    )
    print(f"combined = {' > '.join(COMBINED_OF)} (align.document_methods default, in priority order)")
    print()
    print_table("URLs as crawled", result["methods"])
    print_table(
        f"{len(renamed)} {lang_b} URLs made opaque ({args.hide:.0%} of the {lang_b} pages)", result["hidden_urls"]["methods"]
    )
    for a, b, lang_of_a, lang_of_b in result["methods"]["combined"]["missed_examples"]:
        print(f"  combined missed: {a} (identified {lang_of_a}) <> {b} (identified {lang_of_b})")
    if args.json:
        print(json.dumps(result))
    return 0


def budgeted_main(args: argparse.Namespace, pair: tuple[str, str]) -> int:
    """``--budgets``: the web's sites crawled to each budget, aligned, judged (section above)."""
    budgets = [float(b) for b in args.budgets.split(",") if b.strip()]
    try:
        source = build_site(args.cache_dir)
    except BitextflowError as error:
        print(f"document_alignment: local site unavailable: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    dictionary = load_dictionary(*pair)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-budgeted-") as tmp:
        web, cells = crawl_cells(source, Path(tmp), args.sites, budgets, pair)
    crawl_seconds = time.perf_counter() - started
    report = budgeted_report(cells, pair, dictionary, args.target)
    print(f"Web of {len(web.sites)} sites ({web.pages} pages) carved from the local site; {pair[0]}-{pair[1]}; "
          f"crawled to {budgets} of each site's pages in {crawl_seconds:.0f} s")  # fmt: skip
    header = f"{'URLs, budget':>12} {'setting':<26} {'pairs':>6} {'wrong':>6} {'precision':>9} {'recall of crawled':>17}"
    print(header)
    print("-" * len(header))
    settings = (("before (blind)", report["before"]), ("site naming only", report["site_naming_only"]),
                ("shipped defaults", report["shipped"]), ("leave-one-site-out", report["cross_validated"]["per_budget"]))  # fmt: skip
    for budget in _groups(cells):
        for name, rows in settings:
            row = rows[budget]
            print(
                f"{budget:>12} {name:<26} {row['pairs']:>6} {row['wrong']:>6} {row['precision']:>9.3f} {row['recall_of_crawled']:>17.3f}"
            )
    print("Partial crawls that found no URL-token pair: content pairs made (wrong)")
    for name, rows in (*settings[:3], ("leave-one-site-out", report["cross_validated"])):
        row = rows["partial_crawls_without_url_token_pairs"]
        print(f"  {name:<26} {row['cells']} crawls: {row['content_pairs']} content pairs ({row['content_wrong']} wrong), "
              f"recall of crawled {row['recall_of_crawled']:.3f} of {row['crawled_truth_pairs']}")  # fmt: skip
    print("Rules chosen per held-out site:")
    for site, rules in report["cross_validated"]["chosen_rules"].items():
        print(f"  {site}: margins {rules['margins']}, partial-crawl agreement {rules['partial_crawl_agreement']}")
    for example in report["cross_validated"]["wrong_examples"]:
        print("  wrong (cross-validated):", *example)
    overall = report["cross_validated"]["all"]
    result = {
        "pair": "-".join(pair),
        "mode": "budgeted",
        "truth_pairs": sum(len(cell.truth) for cell in cells if cell.budget == budgets[0] and cell.variant == "crawled"),
        "methods": {"combined": {"precision": overall["precision"], "recall": overall["recall_of_crawled"]}},
        "budgeted": report,
        "crawl_seconds": round(crawl_seconds, 1),
    }
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
