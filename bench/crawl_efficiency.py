"""Crawl efficiency: how early each frontier strategy finds the translated page pairs of a pair.

The evaluation of the smart-crawling seed (García-Romero et al.): crawl the local multilingual site to
the end with each strategy, one request at a time (so the order is the strategy's, not the network's),
and after every download count the true parallel page pairs of the pair (the site's ``truth.json``)
whose two pages have both been downloaded. Printed per strategy: the share of the pairs found at 20%,
40% and 60% of the downloads, and the area under the curve (share of pairs found against share of
pages downloaded) relative to ``bfs``.

By default the crawled site is the full local site (:func:`bitextflow_local.localsite.build_site` with
``full=True``, its own cache folder; ``bitextflow-local site stats --full`` describes it):
four manuals in every language Debian packages them in (21 languages, behind language portals listed
in Debian's order, English 6th, Spanish 7th), the Linux man pages in English with the minority that
manpages-l10n translates, and paged changelog archives: about 4,000 pages, three documents in four
in one language only, so that a focused crawler has much to skip. ``--site default`` crawls the tests'
site (``--languages``) instead.

``--leave-one-site-out`` measures instead whether ``smart`` holds on sites it was not trained on: a web of small
sites carved from the default local site, each under another URL layout, each held out in turn from the URL models'
training (the section comment before :func:`leave_one_site_out` says how). It prints per held-out site the AUC of
bfs, url-rules and smart relative to bfs, and the promotion threshold chosen without the site.

``smart`` needs URL models. Unless a trained version is given (``--url-models``), they are trained (``--model-kind``:
``ngram``, the light models, by default; ``encoder``, the fine-tuned encoder) here on a part of the site that the
measured crawls never see: the Installation Guide's appendices
(``/install/<lang>/ap*``, every language), crawled first (breadth first) the way the platform does it:
URL -> CLD2 language from the crawl log, pairs of the pair by the URL rule of ``align_documents``.
The URL-pair model also learns from ``--wmt16-pairs`` gold pairs of the WMT16 document-alignment task
(en-fr, other web sites; ``--wmt16``), since the training part holds only a few dozen pairs. Every
strategy's measured crawl then excludes the training part (``crawl.exclude_paths``), so all
strategies are compared on the same rest of the site: the Reference, the New Maintainers' Guide, the
FAQ and the man pages (other URL layouts, never seen in training), the rest of the Installation Guide,
changelogs, news and downloads.
``--no-split`` crawls the whole site (smart then runs as its url-rules fallback unless
``--url-models`` is given).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bitextflow.align.documents import align_by_url
from bitextflow.config import CrawlConfig, load_pair_config
from bitextflow.crawl.crawl_state import log_records
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import BitextflowError
from bitextflow.models import url_ngrams, url_training, url_training_data
from bitextflow.records import Document
from bitextflow_local.localsite import Truth, build_site, serve
from bitextflow_local.localsite.composition import best_order_auc, pairs_auc
from bitextflow_local.localsite.layouts import ENDONYMS
from bitextflow_local.localsite.multisite import LAYOUTS, WebSite, build_web
from bitextflow_local.localsite.server import serve_sites
from bitextflow_local.localsite.truth import site_path

ROOT = Path(__file__).resolve().parents[1]
WMT16_GOLD = ROOT.parent / "shared" / "eval" / "wmt16_docalign_test_gold" / "test.pairs"
STRATEGIES = ("bfs", "terms", "url-rules", "smart")
MARKS = (20, 40, 60)
# The part of the site the URL models are trained on, and that the measured crawls exclude.
TRAIN_PART = r"^/install/[^/]+/ap"


def crawl_order(
    base_url: str,
    strategy: str,
    pair: PairContext,
    models: str | None,
    warc_dir: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    promote_above: float = CrawlConfig.model_fields["smart_promote_above"].default,
    allowed: Sequence[str] = ("127.0.0.1",),
) -> tuple[list[str], Crawler]:
    """URLs in the order the strategy downloaded them (every response written, any status)."""

    def upload(path: Path, name: str) -> str:
        return str(shutil.copyfile(path, warc_dir / f"{strategy}-{name}"))

    config = CrawlConfig(
        seeds=[base_url], strategy=strategy, url_models=models, max_pages=100_000, delay_seconds=0,
        concurrency=1, per_host_concurrency=1, allow_private_addresses=list(allowed), scout_pages=0,
        include_paths={"*": include or []}, exclude_paths={"*": exclude or []}, smart_promote_above=promote_above,
    )  # fmt: skip
    crawler = Crawler(config, RotatingWarcWriter(upload, 50_000_000), pair)
    crawler.crawl()
    return [entry.url for entry in crawler.log if entry.outcome == "fetched"], crawler


def wmt16_pairs(path: Path, count: int) -> list[tuple[str, str]]:
    """``count`` gold (English URL, French URL) pairs of the WMT16 task, a fixed random sample."""
    if count <= 0:
        return []
    if not path.is_file():
        raise BitextflowError(f"{path} not found: pass --wmt16 <test.pairs of the WMT16 gold> or --wmt16-pairs 0")
    pairs = url_training_data.read_gold_pairs(path)
    return random.Random(0).sample(pairs, min(count, len(pairs)))


def train_on_part(
    base_url: str,
    pair: PairContext,
    folder: Path,
    settings: url_training.TrainingSettings | None,
    extra_pairs: list[tuple[str, str]],
    models_dir: Path,
) -> dict:
    """Crawl the training part (breadth first), derive pages and pairs as the platform does, train the
    language model on them and the URL-pair model on them plus ``extra_pairs``: fine-tuned encoders with ``settings``,
    else the light models (:mod:`bitextflow.models.url_ngrams`)."""
    index_pages = r"^/(install/[^/]+/|[a-z]{2}(-[a-z]{2})?/)?(index\.html)?$"  # home, language portals, Guide indexes
    _urls, crawler = crawl_order(base_url, "bfs", pair, None, folder, include=[index_pages, TRAIN_PART])
    in_part = re.compile(TRAIN_PART)
    pages, _counts = url_training_data.pages_from_crawl_log(log_records(crawler.log))
    pages = [(url, lang) for url, lang in pages if in_part.search(urlsplit(url).path)]
    documents = [Document.of_text(url, url, lang) for url, lang in pages]
    pairs, _unmatched = align_by_url(documents, pair.source, pair.target)
    training_pairs = [(p.url_a, p.url_b) for p in pairs] + extra_pairs
    if settings is None:
        metadata = url_ngrams.train_ngram_models(pages, training_pairs, models_dir, required_languages=pair.languages).metadata
    else:
        metadata = url_training.train_url_models(pages, training_pairs, models_dir, settings, required_languages=pair.languages)
    metadata["training_data"]["site_pairs"] = len(pairs)
    metadata["training_data"]["wmt16_pairs"] = len(extra_pairs)
    return metadata


def pairs_curve(urls: Sequence[str], pairs: set[tuple[str, str]]) -> list[int]:
    """After each download, the number of pairs whose two pages are downloaded."""
    partner: dict[str, list[str]] = {}
    for a, b in pairs:
        partner.setdefault(a, []).append(b)
        partner.setdefault(b, []).append(a)
    have: set[str] = set()
    found, curve = 0, []
    for url in urls:
        path = site_path(url)
        if path not in have:
            have.add(path)
            found += sum(other in have for other in partner.get(path, ()))
        curve.append(found)
    return curve


def share_at(curve: Sequence[int], total: int, percent: int) -> float:
    k = max(1, math.ceil(len(curve) * percent / 100))
    return curve[k - 1] / total if total else 0.0


# -- leave one site out (--leave-one-site-out) --------------------------------------------------------------
# A web of small sites carved from the local site (:func:`bitextflow_local.localsite.multisite.build_web`), each under
# its own URL layout (:data:`bitextflow_local.localsite.multisite.LAYOUTS`: as built, the language as a first folder,
# a language name, a one-letter suffix, a number, translated paths; the last three are layouts the URL rules cannot
# read). For each held-out site, light URL models (:mod:`bitextflow.models.url_ngrams`) are trained on the other sites
# (URL -> CLD2 language from their breadth-first crawl logs, and their translated page pairs, standing for the pairs
# align_documents finds) plus ``--wmt16-pairs`` WMT16 gold pairs, and ``crawl.smart_promote_above`` is chosen by an
# inner leave-one-site-out over the other sites (models trained without the inner site either): the threshold whose
# smart crawls are nowhere below url-rules, with the most AUC over it on average (ties: the higher threshold). The
# held-out site is then crawled with each strategy; the models go on learning during its crawl.

PROMOTE_GRID = (0.3, 0.5, 0.7, 0.9, 1.01)  # 1.01: never promote, the URL rules alone


@dataclass
class HeldOutSite:
    """A site of the web, its pages as its breadth-first crawl identified them, its translated pairs (URLs), and the
    pair curve of each strategy's crawl of it."""

    site: WebSite
    url: str
    pages: list[tuple[str, str]]
    pairs: list[tuple[str, str]]
    curves: dict[str, list[int]]

    @property
    def pairs_total(self) -> int:
        return max(curve[-1] for curve in self.curves.values())

    def auc(self, strategy: str) -> float:
        return pairs_auc(self.curves[strategy], self.pairs_total)


def leave_one_site_out(args: argparse.Namespace, pair: PairContext, folder: Path) -> dict:
    """``--leave-one-site-out`` (section comment above): per held-out site, its figures and the threshold chosen."""
    source = build_site(args.cache_dir)
    web = build_web(source, folder / "web", args.sites, languages=pair.languages, layouts=LAYOUTS)
    gold = wmt16_pairs(args.wmt16, args.wmt16_pairs)
    trained: dict[frozenset[str], str] = {}
    train_seconds: list[float] = []

    def models_without(excluded: frozenset[str]) -> str:
        """The folder of the models trained on every site but ``excluded`` (and the WMT16 pairs)."""
        if excluded not in trained:
            sites = [held for held in held_out if held.site.address not in excluded]
            target = folder / "models" / "-".join(sorted(excluded))
            pages, pairs = [page for held in sites for page in held.pages], [p for held in sites for p in held.pairs] + gold
            if args.model_kind == "encoder":
                settings = url_training.TrainingSettings(epochs=args.epochs)
                metadata = url_training.train_url_models(pages, pairs, target, settings, required_languages=pair.languages)
            else:
                metadata = url_ngrams.train_ngram_models(pages, pairs, target, required_languages=pair.languages).metadata
            train_seconds.append(metadata["train_seconds"])
            trained[excluded] = str(target)
        return trained[excluded]

    def smart_auc(held: HeldOutSite, models: str, threshold: float, allowed: list[str]) -> tuple[float, list[int]]:
        urls, _crawler = crawl_order(held.url, "smart", pair, models, folder, promote_above=threshold, allowed=allowed)
        curve = pairs_curve(urls, set(held.site.truth.pairs(*pair.languages)))
        return pairs_auc(curve, held.pairs_total), curve

    with serve_sites({site.address: site.docroot for site in web.sites}, port=0) as servers:
        allowed = web.allowed_addresses(servers.port)
        held_out = []
        for site in web.sites:
            url, truth = site.url(servers.port), set(site.truth.pairs(*pair.languages))
            curves, logs = {}, {}
            for strategy in ("bfs", "url-rules"):
                urls, crawler = crawl_order(url, strategy, pair, None, folder, allowed=allowed)
                curves[strategy], logs[strategy] = pairs_curve(urls, truth), crawler.log
            pages, _counts = url_training_data.pages_from_crawl_log(log_records(logs["bfs"]))
            pairs = [(site.url(servers.port, a), site.url(servers.port, b)) for a, b in sorted(truth)]
            held_out.append(HeldOutSite(site, url, pages, pairs, curves))
        results = {}
        for held in held_out:
            if args.held_out and held.site.address not in args.held_out.split(","):
                continue
            others = [other for other in held_out if other is not held]
            gains: dict[float, list[float]] = {threshold: [] for threshold in PROMOTE_GRID}
            for inner in others if args.promote_above_fixed is None else ():
                models = models_without(frozenset({held.site.address, inner.site.address}))
                for threshold in PROMOTE_GRID:
                    gains[threshold].append(smart_auc(inner, models, threshold, allowed)[0] - inner.auc("url-rules"))
            chosen = args.promote_above_fixed or max(
                PROMOTE_GRID, key=lambda t: (min(gains[t]) >= 0, sum(gains[t]) / len(gains[t]), t)
            )
            models = models_without(frozenset({held.site.address}))
            by_threshold = {threshold: smart_auc(held, models, threshold, allowed) for threshold in PROMOTE_GRID}
            held.curves["smart"] = by_threshold[chosen][1]
            results[held.site.address] = {
                "layout": held.site.layout,
                "pages_total": len(held.curves["bfs"]),
                "pairs_total": held.pairs_total,
                "chosen_promote_above": chosen,
                "inner_gain_over_url_rules": {str(t): [round(gain, 4) for gain in g] for t, g in gains.items()},
                "smart_auc_vs_bfs_by_threshold": {
                    str(t): round(auc / held.auc("bfs"), 4) if held.auc("bfs") else 0.0 for t, (auc, _c) in by_threshold.items()
                },
                "strategies": {
                    strategy: _figures(curve, held.pairs_total, held.curves["bfs"]) for strategy, curve in held.curves.items()
                },
            }
    return {"sites": results, "train_seconds": train_seconds, "wmt16_pairs": len(gold)}


def _figures(curve: Sequence[int], total: int, bfs: Sequence[int]) -> dict:
    """found_at, AUC and AUC relative to bfs of one crawl's pair curve."""
    bfs_area = pairs_auc(bfs, total)
    return {
        "found_at": {str(p): round(share_at(curve, total, p), 4) for p in MARKS},
        "auc": round(pairs_auc(curve, total), 4),
        "auc_vs_bfs": round(pairs_auc(curve, total) / bfs_area, 4) if bfs_area else 0.0,
        "downloads_for_80pct": next((k + 1 for k, n in enumerate(curve) if n >= 0.8 * total), None),
    }


def loso_main(args: argparse.Namespace, pair: PairContext) -> int:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-crawl-loso-") as tmp:
        try:
            report = leave_one_site_out(args, pair, Path(tmp))
        except BitextflowError as error:
            print(f"crawl_efficiency: {' '.join(str(error).split())}", file=sys.stderr)
            return 2
    sites = report["sites"]
    strategies = {
        strategy: {
            "found_at": {str(p): round(sum(s["strategies"][strategy]["found_at"][str(p)] for s in sites.values()) / len(sites), 4)
                         for p in MARKS},
            "auc_vs_bfs": round(sum(s["strategies"][strategy]["auc_vs_bfs"] for s in sites.values()) / len(sites), 4),
        }
        for strategy in ("bfs", "url-rules", "smart")
    }  # fmt: skip
    print(f"Leave one site out: {len(sites)} sites carved from the local site, one URL layout each; {pair.source}-"
          f"{pair.target}; URL models ({args.model_kind}) trained on the other sites + {report['wmt16_pairs']} WMT16 pairs in "
          f"{min(report['train_seconds']):.1f}-{max(report['train_seconds']):.1f} s; {time.perf_counter() - started:.0f} s in all")  # fmt: skip
    header = f"{'site':<11} {'layout':<11} {'pages':>5} {'pairs':>5} {'threshold':>9} {'bfs':>5} {'rules':>6} {'smart':>6} {'80%: rules':>10} {'smart':>6}"
    print(header)
    print("-" * len(header))
    for address, row in sites.items():
        figures = row["strategies"]
        print(f"{address:<11} {row['layout']:<11} {row['pages_total']:>5} {row['pairs_total']:>5} {row['chosen_promote_above']:>9} "
              f"{figures['bfs']['auc_vs_bfs']:>5.2f} {figures['url-rules']['auc_vs_bfs']:>6.2f} {figures['smart']['auc_vs_bfs']:>6.2f} "
              f"{figures['url-rules']['downloads_for_80pct'] or '-':>10} {figures['smart']['downloads_for_80pct'] or '-':>6}")  # fmt: skip
    below = [address for address, row in sites.items()
             if row["strategies"]["smart"]["auc_vs_bfs"] < row["strategies"]["url-rules"]["auc_vs_bfs"]]  # fmt: skip
    print(f"smart below url-rules on: {', '.join(below) or 'no held-out site'}")
    result = {
        "pair": f"{pair.source}-{pair.target}",
        "mode": "leave-one-site-out",
        "pages_total": sum(row["pages_total"] for row in sites.values()),
        "pairs_total": sum(row["pairs_total"] for row in sites.values()),
        "strategies": strategies,
        "leave_one_site_out": report,
        "smart_below_url_rules": below,
    }
    if args.json:
        print(json.dumps(result))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--pair", default="en-es", help="language pair (default en-es; terms come from include/pairs/en-es.yaml)")
    parser.add_argument(
        "--site", choices=("full", "default"), default="full", help="full (default): the benchmark's site; default: the tests'"
    )
    parser.add_argument(
        "--languages", default=None, help=f"languages of the default site (default {','.join(ENDONYMS)}); the full one has all"
    )
    parser.add_argument("--cache-dir", type=Path, default=None, help="site cache (default: the site's own cache folder)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help=f"comma-separated (default {','.join(STRATEGIES)})")
    parser.add_argument("--url-models", default=None, help="URL models for smart (default: trained here on the training part)")
    parser.add_argument(
        "--keep-models", type=Path, default=None, help="write the models trained here to this folder (reuse: --url-models)"
    )
    parser.add_argument("--no-split", action="store_true", help="crawl the whole site; train nothing")
    parser.add_argument(
        "--model-kind", choices=("ngram", "encoder"), default="ngram", help="URL models trained here (crawl.url_model_kind)"
    )
    parser.add_argument(
        "--epochs", type=int, default=5, help="URL-model training epochs (default 5; 3 leaves the language model flat)"
    )
    parser.add_argument("--wmt16", type=Path, default=WMT16_GOLD, help=f"WMT16 gold URL pairs (default {WMT16_GOLD})")
    parser.add_argument(
        "--wmt16-pairs", type=int, default=300, help="WMT16 gold pairs added to the URL-pair model's training (default 300)"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the cores are shared)")
    parser.add_argument(
        "--smart-promote-above",
        type=float,
        default=CrawlConfig.model_fields["smart_promote_above"].default,
        help="crawl.smart_promote_above for smart (above 1: the URL rules alone)",
    )
    parser.add_argument(
        "--leave-one-site-out",
        action="store_true",
        help="crawl a web of sites of different URL layouts, each held out from the URL models' training (see above)",
    )
    parser.add_argument("--sites", type=int, default=len(LAYOUTS), help=f"--leave-one-site-out: sites (default {len(LAYOUTS)})")
    parser.add_argument("--held-out", default="", help="--leave-one-site-out: only these sites (addresses, comma-separated)")
    parser.add_argument(
        "--promote-above-fixed", type=float, default=None, help="--leave-one-site-out: this threshold, no inner selection"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    if args.leave_one_site_out:
        source, _, target = args.pair.partition("-")
        pair_file = ROOT / "include" / "pairs" / f"{args.pair}.yaml"
        terms = load_pair_config(pair_file).domain.terms if pair_file.exists() else {}
        return loso_main(args, PairContext(source, target, terms))
    import torch

    torch.set_num_threads(args.threads)

    source, _, target = args.pair.partition("-")
    languages = [lang.strip() for lang in (args.languages or ",".join(ENDONYMS)).split(",") if lang.strip()]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if "bfs" not in strategies:
        strategies.insert(0, "bfs")
    try:
        site = build_site(args.cache_dir, None, full=True) if args.site == "full" else build_site(args.cache_dir, languages)
        truth = Truth.load(site.cache_dir)
    except BitextflowError as error:
        print(f"crawl_efficiency: local site unavailable: {' '.join(str(error).split())}", file=sys.stderr)
        return 2
    if source not in site.languages or target not in site.languages:
        print(
            f"crawl_efficiency: the site has {', '.join(site.languages)}; --pair {args.pair} is not among them", file=sys.stderr
        )
        return 2
    pair_file = ROOT / "include" / "pairs" / f"{args.pair}.yaml"
    terms = load_pair_config(pair_file).domain.terms if pair_file.exists() else {}
    pair = PairContext(source, target, terms)
    truth_pairs = truth.pairs(source, target)
    try:
        extra = wmt16_pairs(args.wmt16, args.wmt16_pairs) if not args.no_split and not args.url_models else []
    except BitextflowError as error:
        print(f"crawl_efficiency: {error}", file=sys.stderr)
        return 2

    split = not args.no_split
    if split:
        excluded = re.compile(TRAIN_PART)
        truth_pairs = {(a, b) for a, b in truth_pairs if not excluded.search("/" + a) and not excluded.search("/" + b)}
    results: dict[str, dict] = {}
    curves: dict[str, list[int]] = {}
    pages_total = 0
    training: dict | None = None
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp, serve(site.docroot, port=0) as server:
        models = args.url_models
        if split and models is None and "smart" in strategies:
            settings = url_training.TrainingSettings(epochs=args.epochs) if args.model_kind == "encoder" else None
            models_dir = args.keep_models or Path(tmp) / "models"
            metadata = train_on_part(server.base_url, pair, Path(tmp), settings, extra, models_dir)
            models = str(models_dir)
            training = {"part": TRAIN_PART, "kind": args.model_kind,
                        **{k: metadata.get(k) for k in ("training_data", "metrics", "train_seconds", "settings")}}  # fmt: skip
            print(f"URL models ({args.model_kind}) trained on {TRAIN_PART} in {metadata['train_seconds']} s")
        for strategy in strategies:
            started = time.perf_counter()
            exclude = [TRAIN_PART] if split else None
            urls, crawler = crawl_order(
                server.base_url, strategy, pair, models, Path(tmp), exclude=exclude, promote_above=args.smart_promote_above
            )
            seconds = time.perf_counter() - started
            curves[strategy] = pairs_curve(urls, truth_pairs)
            pages_total = max(pages_total, len(urls))
            results[strategy] = {"pages": len(urls), "seconds": round(seconds, 1), "ranked_by": crawler.strategy_used}
    pairs_total = max(curve[-1] for curve in curves.values())
    bfs_area = pairs_auc(curves["bfs"], pairs_total)
    for strategy, curve in curves.items():
        row = results[strategy]
        row["found_at"] = {str(p): round(share_at(curve, pairs_total, p), 4) for p in MARKS}
        row["auc"] = round(pairs_auc(curve, pairs_total), 4)
        row["auc_vs_bfs"] = round(pairs_auc(curve, pairs_total) / bfs_area, 4) if bfs_area else 0.0
        row["downloads_for_80pct"] = next((k + 1 for k, n in enumerate(curve) if n >= 0.8 * pairs_total), None)
        row["curve_by_decile"] = [round(share_at(curve, pairs_total, p), 4) for p in range(10, 101, 10)]
        if strategy == "smart":
            row["models"] = (args.url_models or "trained here") if row["ranked_by"] == "smart" else None
            if row["ranked_by"] != "smart":
                row["fallback"] = row["ranked_by"]

    result = {
        "pair": args.pair,
        "site": args.site,
        "site_languages": list(site.languages),
        "pages_total": pages_total,
        "pair_language_pages": len(truth.documents(source) | truth.documents(target)),
        "pairs_total": pairs_total,
        "best_order_auc_vs_bfs": round(best_order_auc(pairs_total, pages_total) / bfs_area, 4) if bfs_area else None,
        "truth_pairs": len(truth_pairs),
        "excluded_from_crawls": TRAIN_PART if split else None,
        "url_model_training": training,
        "smart_promote_above": args.smart_promote_above,
        "strategies": results,
    }
    print(f"Local site ({', '.join(site.languages)}): {pages_total} URLs downloaded by a full crawl; "
          f"{pairs_total} of {len(truth_pairs)} true {args.pair} page pairs reachable; "
          f"the best possible order has {result['best_order_auc_vs_bfs']}x the bfs AUC")  # fmt: skip
    header = (
        f"{'strategy':<10} {'ranked by':<10} {'@20%':>6} {'@40%':>6} {'@60%':>6} {'AUC':>6} {'vs bfs':>7} {'80% at':>7} {'s':>6}"
    )
    print(header)
    print("-" * len(header))
    for strategy, row in results.items():
        at = row["found_at"]
        print(
            f"{strategy:<10} {row['ranked_by']:<10} {at['20']:>6.3f} {at['40']:>6.3f} {at['60']:>6.3f} {row['auc']:>6.3f} "
            f"{row['auc_vs_bfs']:>7.2f} {row['downloads_for_80pct'] or '-':>7} {row['seconds']:>6.1f}"
        )
    print("share of pairs found per decile of downloads:")
    for strategy, row in results.items():
        print(f"  {strategy:<10} " + " ".join(f"{v:.2f}" for v in row["curve_by_decile"]))
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
