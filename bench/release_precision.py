"""Release precision: the share of released sentence pairs whose two sentences translate each other, per setting.

The local site's Debian Reference is translated with po4a, so an English page and its Spanish page have the same
visible text blocks in the same order (code and tables included): where both pages have as many blocks, block i of
one translates block i of the other. That gives every released pair a verdict from its text alone:

- each side is cut back into the sentences the aligner joined (a 2-1 bead's side is sentences of its document,
  consecutive, joined by a space: found in the run's own sentences table) and each sentence is found in its page's
  blocks (compared on letters and digits only, so punctuation normalisation does not hide it); a sentence the
  extractor ran across a block boundary covers both blocks;
- **precision**: the share of the judged pairs whose two sides share a block (``strict_precision``: cover the same
  blocks); pairs from two pages that are not translations count as wrong; pairs from page pairs whose block counts
  differ, and pairs a side of which is in no block (``unlocated``), are not judged;
- **yield**: released pairs from the page pairs whose block counts match, per translated block of those pages (blocks
  whose two texts differ), so a stricter setting can show what it costs; ``correct_yield`` counts the right pairs
  only.

The pipeline runs without Airflow against a SeaweedFS server (:class:`bitextflow_local.services.seaweed.SeaweedServer`)
and the site served on 127.0.0.1, from ``include/pairs/en-es.yaml`` with the crawl limited to the Debian Reference
in English and Spanish (``crawl.include_paths``, as tests/test_incremental.py does): one crawl, extraction and document
alignment, then for each aligner (``align.sentence_aligner``) the sentence alignment, and for each pair scorer
(``score.pair_scorer``) score, classify, gate and release, each under a run id of its own forked from the shared
stages' outputs. One encoder serves every setting (vecalign and the margin scorer), its embeddings memoised by text, so
settings that share sentences do not encode them twice. The top-level figures are the pair config's setting
(``hunalign``, no pair scorer: the demo's).

Usage, from the project root::

    .venv/bin/python bench/release_precision.py [--json] [--aligners gale-church,hunalign,hybrid,vecalign]
                                                [--scorers none,margin]
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import logging
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd

from bitextflow.catalog.releases import ReleaseInfo, read_release_pairs
from bitextflow.config import load_pair_config
from bitextflow.errors import BitextflowError
from bitextflow.extract.structure import page_blocks, parse
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline, stored_inputs
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import run_prefix
from bitextflow.storage.tables import read_table
from bitextflow.text.comparison import normalise_for_comparison
from bitextflow_local.localsite import Truth, build_site, serve
from bitextflow_local.localsite.truth import site_path

ROOT = Path(__file__).resolve().parents[1]
PAIR_CONFIG = ROOT / "include" / "pairs" / "en-es.yaml"
BUCKET = "bitextflow"
ALIGNERS = ("gale-church", "hunalign", "hybrid", "vecalign")
SCORERS = ("none", "margin")
#: The Debian Reference in English and Spanish, and the site's front page that links to it.
REFERENCE_PAGES = r"^/reference/.*\.(en|es)\.html$"
OVERRIDES = {
    "crawl.max_pages": 100, "crawl.include_paths": {"*": ["^/$", REFERENCE_PAGES]},
    "gate.min_sentence_pairs": 1, "gate.max_volume_drop": None, "release.record_in_registry": False,
}  # fmt: skip
#: The stages a setting runs again, from the sentence aligner on (the stages before it are shared).
FIRST_OWN_STAGE = "align_sentences"
#: The most ways to place one side in its page (sentences that occur several times multiply them).
MAX_PLACEMENTS = 64


class PageBlocks:
    """A page's visible text blocks, searched on their letters: which blocks a sentence lies in."""

    def __init__(self, path: Path) -> None:
        tree = parse(path.read_text(encoding="utf-8", errors="replace"))
        self.keys = [normalise_for_comparison(text) for _kind, text in (page_blocks(tree) if tree is not None else [])]
        self.text = "".join(self.keys)
        self.starts = list(itertools.accumulate((len(key) for key in self.keys[:-1]), initial=0))

    def places(self, sentence: str) -> list[frozenset[int]]:
        """The blocks each occurrence of ``sentence`` covers (one block, or several when it runs across a boundary)."""
        key = normalise_for_comparison(sentence)
        found: list[frozenset[int]] = []
        position = self.text.find(key) if key else -1
        while position >= 0:
            first = bisect.bisect_right(self.starts, position) - 1
            last = bisect.bisect_right(self.starts, position + len(key) - 1) - 1
            found.append(frozenset(range(first, last + 1)))
            position = self.text.find(key, position + 1)
        return found


@dataclass
class Verdicts:
    """What the judge found in one release."""

    counts: Counter[str] = field(default_factory=Counter)
    wrong_examples: list[tuple[str, str]] = field(default_factory=list)

    def figures(self, translated_blocks: int) -> dict[str, Any]:
        correct = self.counts["strict"] + self.counts["shared_block"]
        judged = correct + self.counts["wrong"]
        on_pages = judged + self.counts["unlocated"]
        return {
            "precision": round(correct / judged, 4) if judged else 0.0,
            "strict_precision": round(self.counts["strict"] / judged, 4) if judged else 0.0,
            "yield": round(on_pages / translated_blocks, 4) if translated_blocks else 0.0,
            "correct_yield": round(correct / translated_blocks, 4) if translated_blocks else 0.0,
            "sentence_pairs": on_pages + self.counts["unjudged_page"],
            "judged": judged,
            "wrong": self.counts["wrong"],
            "unlocated": self.counts["unlocated"],
            "unjudged_page": self.counts["unjudged_page"],
            "wrong_examples": self.wrong_examples[:5],
        }


class Judge:
    """Verdicts on released pairs from the served pages and the run's sentences (see the module docstring)."""

    def __init__(self, docroot: Path, truth: Truth, sentences: dict[str, list[str]]) -> None:
        self.docroot = docroot
        self.truth = truth
        self.sentences = sentences  # url -> the document's sentences in order, as the aligner got them
        self.pages: dict[str, PageBlocks] = {}

    def page(self, url_or_path: str) -> PageBlocks:
        path = site_path(url_or_path)
        if path not in self.pages:
            self.pages[path] = PageBlocks(self.docroot / path)
        return self.pages[path]

    def translated_blocks(self, lang_a: str, lang_b: str) -> int:
        """Blocks of the crawled page pairs with as many blocks on both sides whose two texts differ."""
        total = 0
        for path_a, path_b in self.truth.pairs(lang_a, lang_b):
            if re.match(REFERENCE_PAGES, "/" + path_a) and re.match(REFERENCE_PAGES, "/" + path_b):
                page_a, page_b = self.page(path_a), self.page(path_b)
                if len(page_a.keys) == len(page_b.keys):
                    total += sum(a != b and bool(a) and bool(b) for a, b in zip(page_a.keys, page_b.keys, strict=True))
        return total

    def judge(self, pairs: pd.DataFrame) -> Verdicts:
        verdicts = Verdicts()
        for pair in pairs.itertuples():
            verdict = self.verdict(pair.url_a, pair.url_b, pair.text_a, pair.text_b)
            verdicts.counts[verdict] += 1
            if verdict == "wrong":
                verdicts.wrong_examples.append((pair.text_a, pair.text_b))
        return verdicts

    def verdict(self, url_a: str, url_b: str, text_a: str, text_b: str) -> str:
        """``strict`` (the sides cover the same blocks), ``shared_block`` (they share one), ``wrong``, ``unlocated`` or
        ``unjudged_page``."""
        if not self.truth.are_translations(url_a, url_b):
            return "wrong"
        page_a, page_b = self.page(url_a), self.page(url_b)
        if len(page_a.keys) != len(page_b.keys):
            return "unjudged_page"
        blocks_a, blocks_b = self.placements(page_a, url_a, text_a), self.placements(page_b, url_b, text_b)
        if not blocks_a or not blocks_b:
            return "unlocated"
        if any(a == b for a in blocks_a for b in blocks_b):
            return "strict"
        return "shared_block" if any(a & b for a in blocks_a for b in blocks_b) else "wrong"

    def placements(self, page: PageBlocks, url: str, text: str) -> set[frozenset[int]]:
        """The sets of blocks ``text`` (a side, maybe several sentences joined) may cover; empty when not found."""
        sentences = self.constituents(url, text) or [text]
        choices = [page.places(sentence) for sentence in sentences]
        if not all(choices):
            return set()
        combinations = itertools.islice(itertools.product(*choices), MAX_PLACEMENTS)
        return {frozenset().union(*chosen) for chosen in combinations}

    def constituents(self, url: str, text: str) -> list[str] | None:
        """The consecutive sentences of the document at ``url`` that the aligner joined into ``text``, or None."""
        document = self.sentences.get(url, [])
        for start, sentence in enumerate(document):
            if not text.startswith(sentence.strip()):
                continue
            joined = sentence.strip()
            end = start + 1
            while len(joined) < len(text) and end < len(document):
                joined = f"{joined} {document[end].strip()}"
                end += 1
            if joined == text:
                return [s.strip() for s in document[start:end]]
        return None


class MemoEncoder:
    """The project's encoder with its embeddings remembered by (prefix, text) for the whole benchmark."""

    def __init__(self, encoder: Any) -> None:
        self.encoder = encoder
        self.path = encoder.path
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
    """Every ``SentenceEncoder.from_path`` of the default encoder in this process gives the same memoised encoder."""
    from bitextflow.models import SentenceEncoder

    shared = MemoEncoder(SentenceEncoder.from_path(None))
    original = SentenceEncoder.from_path

    def from_path(path: Any = None, device: Any = None) -> Any:
        return shared if path is None else original(path, device)

    with mock.patch.object(SentenceEncoder, "from_path", staticmethod(from_path)):
        yield shared


def fork(store: ObjectStore, ctx: RunContext, run_id: str, overrides: dict[str, Any]) -> RunContext:
    """A new run of ``ctx``'s config with ``overrides``, holding a copy of ``ctx``'s objects: the later stages of a
    setting read them as their own run's."""
    source = run_prefix(ctx.config.pair, ctx.run_id)
    forked = run_context(ctx.config.with_overrides(overrides), store, run_id)
    target = run_prefix(forked.config.pair, forked.run_id)
    for key in store.list_keys(source):
        store.put_bytes(target + key[len(source) :], store.get_bytes(key))
    return forked


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
            ctx, stage.name, outputs[stage.after] if stage.after in outputs else stored_inputs(ctx, stage)
        )
        outputs["seconds"][stage.name] = round(time.monotonic() - clock, 1)
        if stage.name == last:
            break
    return outputs


def run_sentences(store: ObjectStore, ctx: RunContext) -> dict[str, list[str]]:
    """Every document's sentences in order, by URL, as the sentence aligner reads them (the partitions' tables)."""
    keys = [key for key in store.list_keys(ctx.key("partitions", "")) if key.endswith(".sentences.parquet")]
    frame = pd.concat(
        [read_table(store, key, ["url", "paragraph_index", "sentence_index", "text"]) for key in keys], ignore_index=True
    )
    frame = frame.sort_values(["url", "paragraph_index", "sentence_index"], kind="stable")
    return {url: list(group["text"]) for url, group in frame.groupby("url", sort=False)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from bitextflow_local.services.seaweed import SeaweedServer

    site = build_site()
    truth = Truth.load(site.cache_dir)
    settings: dict[str, Any] = {}
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-release-precision-")))
        s3 = stack.enter_context(SeaweedServer(tmp / "s3", [BUCKET]))
        server = stack.enter_context(serve(site.docroot, port=0))
        encoder = stack.enter_context(one_encoder())
        store = ObjectStore(StorageSettings.from_env(s3.env()), BUCKET)
        config = load_pair_config(PAIR_CONFIG).with_overrides({**OVERRIDES, "crawl.seeds": [server.base_url]})
        default = f"{config.align.sentence_aligner}/{config.score.pair_scorer}"
        shared = run_context(config, store, "shared")
        clock = time.monotonic()
        run_pipeline(shared, until=FIRST_OWN_STAGE)
        shared_seconds = round(time.monotonic() - clock, 1)
        judge = Judge(site.docroot, truth, run_sentences(store, shared))
        translated_blocks = judge.translated_blocks(config.source, config.target)
        for aligner in args.aligners:
            aligned = fork(store, shared, aligner, {"align.sentence_aligner": aligner})
            clock = time.monotonic()
            run_from(aligned, FIRST_OWN_STAGE, FIRST_OWN_STAGE)
            align_seconds = round(time.monotonic() - clock, 1)
            for scorer in args.scorers:
                name = f"{aligner}/{scorer}"
                setting = fork(store, aligned, name.replace("/", "_"), {"score.pair_scorer": scorer})
                encoded = encoder.encoded
                outputs = run_from(setting, "score")
                pairs = read_release_pairs(store, ReleaseInfo(**outputs["release"]))
                figures = judge.judge(pairs).figures(translated_blocks)
                figures["seconds"] = {FIRST_OWN_STAGE: align_seconds, **outputs["seconds"]}
                figures["texts_encoded"] = encoder.encoded - encoded
                settings[name] = figures
                print(f"{name:22} precision {figures['precision']:.4f} (strict {figures['strict_precision']:.4f}) yield "
                      f"{figures['yield']:.4f} pairs {figures['sentence_pairs']:5d} wrong {figures['wrong']:4d} unlocated "
                      f"{figures['unlocated']:4d}  {sum(figures['seconds'].values()):.0f} s", file=sys.stderr, flush=True)  # fmt: skip
    top = settings.get(default, {})
    return {
        "precision": top.get("precision"),
        "yield": top.get("yield"),
        "sentence_pairs": top.get("sentence_pairs"),
        "default_setting": default,
        "settings": settings,
        "translated_blocks": translated_blocks,
        "pages": sorted(path for path, page in judge.pages.items() if page.keys),
        "shared_stages_seconds": shared_seconds,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    parser.add_argument("--aligners", type=lambda value: value.split(","), default=list(ALIGNERS), help="comma-separated")
    parser.add_argument("--scorers", type=lambda value: value.split(","), default=list(SCORERS), help="comma-separated")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.aligners) - set(ALIGNERS)) + sorted(set(args.scorers) - set(SCORERS))
    if unknown:
        print(f"release_precision: unknown setting {', '.join(unknown)}; aligners {ALIGNERS}, scorers {SCORERS}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    try:
        result = measure(args)
    except BitextflowError as error:
        print(f"release_precision: {error}", file=sys.stderr)
        return 2
    print(f"{'setting':22} {'precision':>9} {'strict':>7} {'yield':>7} {'pairs':>6}")
    for name, figures in result["settings"].items():
        marker = " (default)" if name == result["default_setting"] else ""
        print(f"{name:22} {figures['precision']:9.4f} {figures['strict_precision']:7.4f} {figures['yield']:7.4f} "
              f"{figures['sentence_pairs']:6d}{marker}")  # fmt: skip
    print(f"translated blocks: {result['translated_blocks']} on {len(result['pages'])} pages")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
