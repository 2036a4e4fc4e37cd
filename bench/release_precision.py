"""Release precision: the share of released sentence pairs whose two sentences translate each other, per setting.

The local site's Debian Reference is translated with po4a, so an English page and its Spanish page have the same
visible text blocks in the same order: block i of one translates block i of the other, which gives every released
pair a verdict (:mod:`bitextflow_local.localsite.block_truth`: **precision**, the share of judged pairs whose two
sides share a block, ``strict_precision`` the same blocks; **yield**, released pairs per translated block;
``correct_yield`` the right ones only).

The pipeline runs without Airflow against a SeaweedFS server (:class:`bitextflow_local.services.seaweed.SeaweedServer`)
and the site served on 127.0.0.1, from the pair's config (``include/pairs/en-es.yaml`` by default) with the crawl
limited to the Debian Reference in the pair's two languages (``crawl.include_paths``, as
tests/integration/test_incremental.py does): one crawl, extraction and document alignment, then for each aligner (``align.sentence_aligner``) the sentence alignment, and for each pair scorer
(``score.pair_scorer``) score, classify, gate and release, each under a run id of its own forked from the shared
stages' outputs (the ``embed`` stage among them: every setting reads the same vectors). One encoder serves every
setting (Vecalign's overlaps), its embeddings memoised by text, so settings that share texts do not encode them twice.
The top-level figures are the pair config's setting (the demo's).

``--site install`` measures the Installation Guide instead (``/install/en/``, ``/install/es/``: DocBook chapters of
long multi-sentence paragraphs, where a bead joined across a paragraph boundary is the typical error, issue 40), seeded
with its two index pages as a new user would. ``--blocks on,off`` measures each aligner with the pages' blocks
(``align.sentence_blocks``, the default) and blind to them (settings named ``<aligner>-blind/<scorer>``). Each setting
also reports ``block_yield`` (translated blocks a right pair covers), ``cross_block_share`` (wrong pairs a side of
which spans several blocks) and ``dropped`` (what each stage dropped, by reason: where a pair's yield goes).

``--site maint`` and ``--site faq`` measure two more po4a-translated manuals of the full local site, built in the
pair's languages only: Debian's New Maintainers' Guide (en, es, ja, ru, zh-cn among its 11 languages; commands and
mid-length paragraphs) and the Debian FAQ (no Spanish; de, fr, ja, ru, zh-cn among its 10; questions with long
answers), each seeded with its two index pages.

``--site help`` measures GNOME's desktop help instead (:mod:`bitextflow_local.localsite.gnome_help`: Mallard pages
translated with itstool into about 40 languages, Persian among them, rendered at ``/help/<lang>/``; short task pages,
steps and key names), seeded with its two front pages. Most of its translations are unfinished: a translation of which
under half the text is translated is an English page with a translated title (the truth's partly translated pages),
so the figures also say ``block_yield_of_translated_pages`` (the other pages' translated blocks a right pair covers)
and the document pairs' ``recall_of_translated``.

``--pair P`` measures another pair config (``include/pairs/P.yaml``, else the worked example
``include/pairs/examples/P.yaml``) on a local site built in its two languages (in a cache folder of its own,
``localsite-<a>-<b>``, where they are not the default site's): ``--pair en-ja`` measures the Japanese Reference and
Installation Guide. The pages are judged the same way, by their blocks' positions. ``--also zh_Hant`` builds the site
in further languages and lets the crawl fetch them (``--pair en-zh --also zh_Hant``: the Reference in Simplified and
Traditional Chinese); a released pair from such a page is counted as ``pairs_from_also``, since the judge, pairing
blocks by position, may call it right.

Usage, from the project root::

    .venv/bin/python bench/release_precision.py [--json] [--pair en-es|en-ja|...] [--site reference|install|maint|faq|help]
                                                [--aligners gale-church,hunalign,hybrid,vecalign]
                                                [--scorers none,margin] [--blocks on,off]
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from bitextflow.catalog.releases import ReleaseInfo, read_release_pairs
from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.catalog.status import collect_counts
from bitextflow.config import load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline, stored_inputs
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import RELEASED_DOCUMENT_PAIRS, run_prefix
from bitextflow.storage.tables import read_table
from bitextflow_local.localsite import Truth, build_site, serve
from bitextflow_local.localsite.block_truth import Judge, run_sentences
from bitextflow_local.localsite.build import DEFAULT_LANGUAGES
from bitextflow_local.localsite.gnome_help import build_help_site
from bitextflow_local.localsite.layouts import INSTALL, site_language
from bitextflow_local.localsite.paths import default_cache_dir
from bitextflow_local.localsite.truth import site_path

ROOT = Path(__file__).resolve().parents[1]
BUCKET = "bitextflow"
ALIGNERS = ("gale-church", "hunalign", "hybrid", "hybrid-e5", "vecalign")
SCORERS = ("none", "margin")
#: The pair measured by default: the demo's.
DEFAULT_PAIR = "en-es"
#: Where a pair config is looked for: the shipped pairs, then the worked examples.
PAIR_FOLDERS = (ROOT / "include" / "pairs", ROOT / "include" / "pairs" / "examples")
#: Per site: the pages of some languages (a path pattern, given their codes on the site), what else the crawl may
#: fetch, its seeds (paths on the served site, given the pair's codes) and page budget. The Debian Reference is measured
#: with the site's front page that links to it; the Installation Guide is seeded with its two index pages, as a new user
#: would.
SITES = {
    "reference": (lambda codes: rf"^/reference/.*\.({'|'.join(codes)})\.html$", ["^/$"], lambda codes: ["/"], 100),
    "install": (
        lambda codes: rf"^/install/({'|'.join(map(INSTALL.code, codes))})/[^/]*\.html$", [],
        lambda codes: [f"/install/{INSTALL.code(code)}/index.html" for code in codes], 400,
    ),
    "maint": (
        lambda codes: rf"^/maint-guide/[^/]*\.({'|'.join(codes)})\.html$", [],
        lambda codes: [f"/maint-guide/index.{code}.html" for code in codes], 100,
    ),
    "faq": (
        lambda codes: rf"^/faq/[^/]*\.({'|'.join(codes)})\.html$", [],
        lambda codes: [f"/faq/index.{code}.html" for code in codes], 100,
    ),
    "help": (
        lambda codes: rf"^/help/({'|'.join(codes)})/[^/]*\.html$", [],
        lambda codes: [f"/help/{code}/index.html" for code in codes], 700,
    ),
}  # fmt: skip
#: The sites of the full layout's manuals, built in the measured languages only (no other manual is crawled).
FULL_LAYOUT_SITES = ("maint", "faq")
OVERRIDES = {
    "gate.min_sentence_pairs": 1, "gate.max_volume_drop": None, "release.record_in_registry": False,
    # every figure from vectors made in this run, not from what the machine embedded before
    "embed.cache": False,
}  # fmt: skip
#: The stages a setting runs again, from the sentence aligner on (the stages before it are shared).
FIRST_OWN_STAGE = "align_sentences"


class MemoEncoder:
    """The project's encoder with its embeddings remembered by (prefix, text) for the whole benchmark."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.path, self.device, self.runtime = encoder.path, encoder.device, encoder.runtime
        self.memo: dict[tuple[str, str], np.ndarray] = {}
        self.encoded = 0

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts: Sequence[str], *args: Any, prefix: str | None = None, **kwargs: Any) -> np.ndarray:
        settings = {} if prefix is None else {"prefix": prefix}
        new = list(dict.fromkeys(text for text in texts if (prefix, text) not in self.memo))
        if new:
            for text, vector in zip(new, self.encoder.encode(new, *args, **settings, **kwargs), strict=True):
                self.memo[(prefix, text)] = vector
            self.encoded += len(new)
        return np.stack([self.memo[(prefix, text)] for text in texts]) if texts else self.encoder.encode([])


@contextmanager
def one_encoder() -> Iterator[MemoEncoder]:
    """Every ``SentenceEncoder.from_path`` of the default encoder on the default runtime in this process gives the same
    memoised encoder."""
    from bitextflow.models import SentenceEncoder
    from bitextflow.models.encoder import shared_encoder

    shared = MemoEncoder(SentenceEncoder.from_path(None))
    original = SentenceEncoder.from_path

    def from_path(path: Any = None, device: Any = None, runtime: str = "auto") -> Any:
        return shared if path is None and runtime in ("auto", shared.runtime) else original(path, device, runtime)

    shared_encoder.cache_clear()
    with mock.patch.object(SentenceEncoder, "from_path", staticmethod(from_path)):
        yield shared
    shared_encoder.cache_clear()


def fork(store: ObjectStore, ctx: RunContext, run_id: str, overrides: dict[str, Any]) -> RunContext:
    """A new run of ``ctx``'s config with ``overrides``, holding a copy of ``ctx``'s objects: the later stages of a
    setting read them as their own run's."""
    source = run_prefix(ctx.config.pair, ctx.run_id)
    forked = run_context(ctx.config.with_overrides(overrides), store, run_id)
    target = run_prefix(forked.config.pair, forked.run_id)
    for key in store.list_keys(source):
        store.put_bytes(target + key[len(source) :], store.get_bytes(key))
    return forked


def rejected_pairs(store: ObjectStore, ctx: RunContext) -> pd.DataFrame:
    """The sentence pairs the ``score`` stage rejected (its rules and the scorer's threshold, ``rule_tags``), of the run's
    latest attempt (:class:`RunOutputs`), as the release reads its kept ones."""
    listed = RunOutputs(store, ctx.config.pair, ctx.run_id).current(store.list_keys(ctx.key("score", "")))
    keys = [key for key in listed if key.endswith(".rejected.parquet")]
    frames = [read_table(store, key) for key in keys]
    return (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=["url_a", "url_b", "text_a", "text_b", "rule_tags"])
    )


def dropped_by_stage(store: ObjectStore, ctx: RunContext) -> dict[str, dict[str, int]]:
    """What each stage of the run (the shared stages' counts among them: the fork copied them) dropped, by reason: where
    a pair's yield goes."""
    stages = [stage.name for stage in REGISTRY.run_stages(ctx.config)]
    return {
        counts.stage: dict(counts.dropped.most_common())
        for counts in collect_counts(store, ctx.config.pair, ctx.run_id, stages)
        if counts.dropped
    }


def run_from(ctx: RunContext, first: str, last: str | None = None) -> dict[str, Any]:
    """The run's stages from ``first`` (on the stored outputs of the stage it reads) to ``last``, in order; each
    stage's seconds under ``seconds``."""
    outputs: dict[str, Any] = {"seconds": {}}
    started = False
    for stage in REGISTRY.run_stages(ctx.config):
        started = started or stage.name == first
        if not started:
            continue
        clock = time.monotonic()
        outputs[stage.name] = REGISTRY.run(
            ctx, stage.name, outputs[stage.reads(ctx.config)] if stage.reads(ctx.config) in outputs else stored_inputs(ctx, stage)
        )
        outputs["seconds"][stage.name] = round(time.monotonic() - clock, 1)
        if stage.name == last:
            break
    return outputs


def site_crawl(site: str, base_url: str, pair: tuple[str, str], languages: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The measured pages of ``site`` in the ``pair``'s site languages (a path pattern) and the crawl overrides that
    fetch them from the site served at ``base_url``: its seeds, page budget, and paths of ``languages``."""
    pages_of, fetched, seeds_of, max_pages = SITES[site]
    seeds = [base_url.rstrip("/") + seed for seed in seeds_of(pair)]
    include = [*fetched, pages_of(languages)]
    return pages_of(pair), {"crawl.max_pages": max_pages, "crawl.include_paths": {"*": include}, "crawl.seeds": seeds}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bitextflow_local.services.seaweed import SeaweedServer

    config_path = pair_config_path(args.pair)
    source, target = (site_language(lang) for lang in args.pair.split("-", 1))
    languages = (source, target, *args.also)
    if args.site == "help":
        site = build_help_site(languages)
    elif args.site in FULL_LAYOUT_SITES:
        site = build_site(default_cache_dir().with_name(f"localsite-full-{'-'.join(languages)}"), languages, full=True)
    else:  # a pair outside the default site's languages gets a site of its own, so the demo's stays as it is
        own_site = not set(languages) <= set(DEFAULT_LANGUAGES)
        site = build_site(default_cache_dir().with_name(f"localsite-{'-'.join(languages)}") if own_site else None,
                          languages if own_site else None)  # fmt: skip
    truth = Truth.load(site.cache_dir)
    settings: dict[str, Any] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-release-precision-")))
        s3 = stack.enter_context(SeaweedServer(tmp / "s3", [BUCKET]))
        server = stack.enter_context(serve(site.docroot, port=0))
        encoder = stack.enter_context(one_encoder())
        store = ObjectStore(StorageSettings.from_env(s3.env()), BUCKET)
        pages, crawl = site_crawl(args.site, server.base_url, (source, target), languages)
        config = load_pair_config(config_path).with_overrides({**OVERRIDES, **crawl})
        default = f"{config.align.sentence_aligner}/{config.score.pair_scorer}"
        if not config.align.sentence_blocks:
            default = f"{config.align.sentence_aligner}-blind/{config.score.pair_scorer}"
        shared = run_context(config, store, "shared")
        clock = time.monotonic()
        run_pipeline(shared, until=FIRST_OWN_STAGE)
        shared_seconds = round(time.monotonic() - clock, 1)
        sentences = run_sentences(shared)
        judge = Judge(site.docroot, truth, sentences)
        documents = document_figures(shared, truth, (source, target), pages, {site_path(url) for url in sentences})
        translated = judge.translated_block_keys(source, target, pages)
        translated_blocks = len(translated)
        # GNOME's help: the blocks of the translations the truth does not call English pages with a translated title
        english_pages = {path_a for path_a, _ in truth.partly_translated_pairs(source, target)}
        of_translated_pages = {key for key in translated if key[0] not in english_pages}
        dump = args.dump.open("w", encoding="utf-8") if args.dump else None
        for aligner, blocks, scorer in ((a, b, s) for a in args.aligners for b in args.blocks for s in args.scorers):
            # the scorer's coverage rule runs in align_sentences (docs/score.md), so each setting aligns on its own
            variant = aligner if blocks == "on" else f"{aligner}-blind"
            name = f"{variant}/{scorer}"
            overrides = {"align.sentence_aligner": aligner, "align.sentence_blocks": blocks == "on", "score.pair_scorer": scorer}
            setting = fork(store, shared, name.replace("/", "_"), overrides)
            encoded = encoder.encoded
            outputs = run_from(setting, FIRST_OWN_STAGE)
            pairs = read_release_pairs(store, ReleaseInfo(**outputs["release"]))
            verdicts = judge.judge(pairs)
            figures = verdicts.figures(translated_blocks, translated)
            if english_pages:
                figures["block_yield_of_translated_pages"] = verdicts.figures(len(of_translated_pages), of_translated_pages)[
                    "block_yield"
                ]
            if args.also:  # the judge pairs blocks by position, so a pair from the other script's page may pass
                also = re.compile(SITES[args.site][0](args.also))
                figures["pairs_from_also"] = int(sum(bool(also.match(urlsplit(url).path)) for url in pairs["url_b"]))
            if dump is not None:
                for pair in pairs.itertuples():
                    verdict = judge.verdict(pair.url_a, pair.url_b, pair.text_a, pair.text_b)
                    row = {
                        "setting": name,
                        "url_a": pair.url_a,
                        "text_a": pair.text_a,
                        "text_b": pair.text_b,
                        "verdict": verdict,
                    }
                    dump.write(json.dumps(row, ensure_ascii=False) + "\n")
                for pair in rejected_pairs(store, setting).itertuples():
                    verdict = judge.verdict(pair.url_a, pair.url_b, pair.text_a, pair.text_b)
                    row = {"setting": name, "url_a": pair.url_a, "text_a": pair.text_a, "text_b": pair.text_b,
                           "verdict": verdict, "rejected_by": pair.rule_tags}  # fmt: skip
                    dump.write(json.dumps(row, ensure_ascii=False) + "\n")
            figures["seconds"] = outputs["seconds"]
            figures["texts_encoded"] = encoder.encoded - encoded
            figures["dropped"] = dropped_by_stage(store, setting)
            settings[name] = figures
            print(f"{name:22} precision {figures['precision']:.4f} (strict {figures['strict_precision']:.4f}) yield "
                  f"{figures['yield']:.4f} block yield {figures['block_yield']:.4f} pairs {figures['sentence_pairs']:5d} "
                  f"wrong {figures['wrong']:4d} (across blocks {figures['cross_block_share']:.2f}) unlocated "
                  f"{figures['unlocated']:4d}  {sum(figures['seconds'].values()):.0f} s"
                  + (f" from {','.join(args.also)} {figures['pairs_from_also']}" if args.also else ""),
                  file=sys.stderr, flush=True)  # fmt: skip
        if dump is not None:
            dump.close()
    top = settings.get(default, {})
    return {
        "pair": args.pair,
        "site": args.site,
        "also": args.also,
        "precision": top.get("precision"),
        "yield": top.get("yield"),
        "block_yield": top.get("block_yield"),
        "block_yield_of_translated_pages": top.get("block_yield_of_translated_pages"),
        "cross_block_share": top.get("cross_block_share"),
        "sentence_pairs": top.get("sentence_pairs"),
        "default_setting": default,
        "settings": settings,
        "translated_blocks": translated_blocks,
        "translated_blocks_of_translated_pages": len(of_translated_pages),
        "documents": documents,
        "pages": sorted(path for path, page in judge.pages.items() if page.keys),
        "shared_stages_seconds": shared_seconds,
    }


def document_figures(
    ctx: RunContext, truth: Truth, languages: tuple[str, str], pages: str, extracted: set[str]
) -> dict[str, Any]:
    """The run's document pairs (align_documents, as its manifests name them) against the site's translations among
    the measured pages whose both sides the run ``extracted`` (site paths): precision (the pairs found that are the
    site's translations, whether or not both sides kept sentences: a partly translated page keeps none in its own
    language), recall (also of the translations the truth does not list as partly translated), the counts, the
    translations missed and the pairs that are none."""
    outputs = RunOutputs(ctx.store, ctx.config.pair, ctx.run_id)
    found = set()
    for key in outputs.document_pairs(ctx.outputs("align_documents", RELEASED_DOCUMENT_PAIRS)):
        frame = read_table(ctx.store, key, ["url_a", "url_b"])
        found |= {(site_path(a), site_path(b)) for a, b in zip(frame["url_a"], frame["url_b"], strict=True)}
    wanted = {(a, b) for a, b in truth.pairs(*languages) if re.match(pages, "/" + a) and {a, b} <= extracted}
    found = {pair for pair in found if re.match(pages, "/" + pair[0])}
    right = len(found & wanted)
    translated = wanted - truth.partly_translated_pairs(*languages)
    wrong = found - truth.pairs(*languages)
    return {
        "precision": round(1 - len(wrong) / len(found), 4) if found else None,
        "recall": round(right / len(wanted), 4) if wanted else None,
        "recall_of_translated": round(len(found & translated) / len(translated), 4) if translated else None,
        "pairs": len(found),
        "translations_fetched": len(wanted),
        "missed": sorted(wanted - found),
        "wrong": sorted(wrong),
    }


def pair_config_path(pair: str) -> Path:
    """The pair config of ``pair``: ``include/pairs/<pair>.yaml``, else the worked example of that name."""
    for folder in PAIR_FOLDERS:
        if (folder / f"{pair}.yaml").is_file():
            return folder / f"{pair}.yaml"
    shipped = sorted(path.stem for folder in PAIR_FOLDERS for path in folder.glob("*-*.yaml"))
    raise BitextflowError(
        f"--pair {pair}: no {pair}.yaml in include/pairs/ or include/pairs/examples/; one of {', '.join(shipped)}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--aligners", type=lambda value: value.split(","), default=list(ALIGNERS), help="comma-separated")
    parser.add_argument("--scorers", type=lambda value: value.split(","), default=list(SCORERS), help="comma-separated")
    parser.add_argument(
        "--site",
        choices=sorted(SITES),
        default="reference",
        help="the Debian Reference, the Installation Guide, the New Maintainers' Guide, the Debian FAQ or GNOME's help",
    )
    parser.add_argument(
        "--blocks", type=lambda value: value.split(","), default=["on"], help="on (the pages' blocks, the default), off (blind)"
    )
    parser.add_argument(
        "--pair",
        default=DEFAULT_PAIR,
        help=f"the pair config measured (default {DEFAULT_PAIR}); the local site is built in its languages",
    )
    parser.add_argument(
        "--also",
        type=lambda value: [site_language(lang) for lang in value.split(",") if lang],
        default=[],
        help="further languages the site is built in and the crawl may fetch, not the pair's (e.g. zh_Hant beside "
        "en-zh): released pairs from their pages are counted as pairs_from_also",
    )
    parser.add_argument(
        "--dump",
        type=Path,
        help="write every released pair, and every pair the score stage rejected (``rejected_by``), with its verdict to "
        "this JSON-lines file",
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.aligners) - set(ALIGNERS)) + sorted(set(args.scorers) - set(SCORERS))
    unknown += sorted(set(args.blocks) - {"on", "off"})
    if unknown:
        print(f"release_precision: unknown setting {', '.join(unknown)}; aligners {ALIGNERS}, scorers {SCORERS}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    try:
        result = measure(args)
    except BitextflowError as error:
        print(f"release_precision: {error}", file=sys.stderr)
        return 2
    print(f"{'setting':26} {'precision':>9} {'strict':>7} {'yield':>7} {'blocks':>7} {'pairs':>6} {'wrong':>6} {'across':>6}")
    for name, figures in result["settings"].items():
        marker = " (default)" if name == result["default_setting"] else ""
        print(f"{name:26} {figures['precision']:9.4f} {figures['strict_precision']:7.4f} {figures['yield']:7.4f} "
              f"{figures['block_yield']:7.4f} {figures['sentence_pairs']:6d} {figures['wrong']:6d} "
              f"{figures['cross_block_share']:6.2f}{marker}")  # fmt: skip
    print(f"translated blocks: {result['translated_blocks']} on {len(result['pages'])} pages"
          + (f" ({result['translated_blocks_of_translated_pages']} on pages not partly translated: block yield "
             f"{result['block_yield_of_translated_pages']})" if result["block_yield_of_translated_pages"] is not None else ""))  # fmt: skip
    documents = result["documents"]
    print(f"document pairs: precision {documents['precision']} recall {documents['recall']} ({documents['pairs']} pairs, "
          f"{documents['translations_fetched']} translations fetched; recall {documents['recall_of_translated']} of those "
          "not partly translated)")  # fmt: skip
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
