"""Sentence-level truth on the local site: whether a released sentence pair's two sentences translate each other.

The site's Debian documentation is translated with po4a, which keeps the English page's visible text blocks (code and
tables included) in the same order: where an English page and its translation have as many blocks, block i of one
translates block i of the other. That gives every released pair a verdict from its text alone:

- each side is cut back into the sentences the aligner joined (a 2-1 bead's side is consecutive sentences of its
  document joined by a space: found in the run's own sentences) and each sentence is found in its page's blocks,
  compared on letters and digits only (:func:`bitextflow.text.comparison.normalise_for_comparison`) so punctuation
  normalisation does not hide it; a sentence the extractor ran across a block boundary covers both blocks;
- ``strict``: the sides cover the same blocks; ``shared_block``: every sentence of each side lies (at least partly) in
  a block the other side covers, but the sides do not cover the same blocks (a sentence the extractor ran across a
  boundary, against one that it did not); ``wrong``: a sentence of one side lies in blocks the other side does not
  cover at all (a bead joined across a block boundary with the other side holding only one block's translation, as in
  "... volume group. This is" against "Esto es"), or the sides share no block, or the pages are not translations.
  Until issue 40 a pair was right when its sides shared any block, which passed a bead joined across a boundary;
  ``unlocated``: a side is in no block;
  ``unjudged_page``: the two pages' block counts differ, so blocks do not pair by position.

**precision** is the share of right verdicts (strict or shared block) among the judged pairs; **yield** is the
released pairs per translated block (a block whose two texts differ) of the page pairs whose block counts match, so a
stricter setting shows what it costs; **block_yield** the share of those translated blocks that a right pair covers
(a page of long paragraphs gives several pairs per block, so pairs per block overstates what is covered);
**cross_block_share** the share of wrong pairs a side of which spans several blocks (a bead built across a paragraph
boundary). ``bench/release_precision.py`` measures settings with it and ``make demo`` prints the demo release's
figure.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow.extract.structure import page_blocks, parse
from bitextflow.stages.base import RunContext
from bitextflow.storage.tables import read_table
from bitextflow.text.comparison import normalise_for_comparison
from bitextflow_local.localsite.truth import Truth, site_path

#: The most ways to place one side in its page (sentences that occur several times multiply them).
MAX_PLACEMENTS = 64


class PageBlocks:
    """A page's visible text blocks, searched on their letters: which blocks a sentence lies in."""

    def __init__(self, path: Path) -> None:
        tree = parse(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else None
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
    #: ``(source page path, block)`` of the blocks right pairs cover
    covered: set[tuple[str, int]] = field(default_factory=set)
    #: wrong pairs a side of which spans several blocks
    wrong_across_blocks: int = 0

    def figures(self, translated_blocks: int, translated: set[tuple[str, int]] | None = None) -> dict[str, Any]:
        """The figures of the module docstring; ``block_yield`` counts the covered blocks among ``translated`` (all of
        them, when not given)."""
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
            "block_yield": round(
                len(self.covered & translated if translated is not None else self.covered) / translated_blocks, 4
            )
            if translated_blocks
            else 0.0,
            "cross_block_share": round(self.wrong_across_blocks / self.counts["wrong"], 4) if self.counts["wrong"] else 0.0,
            "wrong_across_blocks": self.wrong_across_blocks,
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

    def translated_blocks(self, lang_a: str, lang_b: str, pages: str | None = None, crawled: set[str] | None = None) -> int:
        """Blocks whose two texts differ, over the page pairs with as many blocks on both sides; only pairs whose two
        site paths match the regular expression ``pages`` (``^/`` anchored) and, with ``crawled``, whose two pages
        are among those site paths."""
        return len(self.translated_block_keys(lang_a, lang_b, pages, crawled))

    def translated_block_keys(
        self, lang_a: str, lang_b: str, pages: str | None = None, crawled: set[str] | None = None
    ) -> set[tuple[str, int]]:
        """:meth:`translated_blocks` as ``(first language's site path, block)``."""
        found: set[tuple[str, int]] = set()
        for path_a, path_b in self.truth.pairs(lang_a, lang_b):
            if pages is not None and not (re.match(pages, "/" + path_a) and re.match(pages, "/" + path_b)):
                continue
            if crawled is not None and not {path_a, path_b} <= crawled:
                continue
            page_a, page_b = self.page(path_a), self.page(path_b)
            if len(page_a.keys) == len(page_b.keys):
                pairs = zip(page_a.keys, page_b.keys, strict=True)
                found.update((path_a, k) for k, (a, b) in enumerate(pairs) if a != b and bool(a) and bool(b))
        return found

    def judge(self, pairs: pd.DataFrame) -> Verdicts:
        verdicts = Verdicts()
        for pair in pairs.itertuples():
            verdict, blocks_a, blocks_b = self.verdict_and_blocks(pair.url_a, pair.url_b, pair.text_a, pair.text_b)
            verdicts.counts[verdict] += 1
            if verdict == "wrong":
                verdicts.wrong_examples.append((pair.text_a, pair.text_b))
                verdicts.wrong_across_blocks += any(len(blocks) > 1 for blocks in (*blocks_a, *blocks_b))
            elif verdict in ("strict", "shared_block"):
                shared = next(a & b for a in blocks_a for b in blocks_b if a & b)
                verdicts.covered.update((site_path(pair.url_a), k) for k in shared)
        return verdicts

    @staticmethod
    def _covers(side: tuple[frozenset[int], ...], other: frozenset[int]) -> bool:
        return all(sentence & other for sentence in side)

    def verdict(self, url_a: str, url_b: str, text_a: str, text_b: str) -> str:
        """``strict``, ``shared_block``, ``wrong``, ``unlocated`` or ``unjudged_page`` (see the module docstring)."""
        return self.verdict_and_blocks(url_a, url_b, text_a, text_b)[0]

    def verdict_and_blocks(
        self, url_a: str, url_b: str, text_a: str, text_b: str
    ) -> tuple[str, set[frozenset[int]], set[frozenset[int]]]:
        """:meth:`verdict` and the sets of blocks each side may cover (empty where not looked for or not found)."""
        if not self.truth.are_translations(url_a, url_b):
            return "wrong", set(), set()
        page_a, page_b = self.page(url_a), self.page(url_b)
        if len(page_a.keys) != len(page_b.keys):
            return "unjudged_page", set(), set()
        places_a, places_b = self.sentence_placements(page_a, url_a, text_a), self.sentence_placements(page_b, url_b, text_b)
        blocks_a = {frozenset().union(*chosen) for chosen in places_a}
        blocks_b = {frozenset().union(*chosen) for chosen in places_b}
        if not blocks_a or not blocks_b:
            return "unlocated", blocks_a, blocks_b
        if any(a == b for a in blocks_a for b in blocks_b):
            return "strict", blocks_a, blocks_b
        right = any(
            self._covers(a, frozenset().union(*b)) and self._covers(b, frozenset().union(*a)) for a in places_a for b in places_b
        )
        return ("shared_block" if right else "wrong"), blocks_a, blocks_b

    def placements(self, page: PageBlocks, url: str, text: str) -> set[frozenset[int]]:
        """The sets of blocks ``text`` (a side, maybe several sentences joined) may cover; empty when not found."""
        return {frozenset().union(*chosen) for chosen in self.sentence_placements(page, url, text)}

    def sentence_placements(self, page: PageBlocks, url: str, text: str) -> set[tuple[frozenset[int], ...]]:
        """The ways to place ``text``'s sentences in the page: for each, the blocks of each sentence; empty when one is
        not found."""
        sentences = self.constituents(url, text) or [text]
        choices = [page.places(sentence) for sentence in sentences]
        if not all(choices):
            return set()
        return set(itertools.islice(itertools.product(*choices), MAX_PLACEMENTS))

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


def run_sentences(ctx: RunContext) -> dict[str, list[str]]:
    """Every document's sentences in order, by URL, as the sentence aligner reads them (the partitions' tables)."""
    keys = [key for key in ctx.store.list_keys(ctx.key("partitions", "")) if key.endswith(".sentences.parquet")]
    if not keys:
        return {}
    frame = pd.concat(
        [read_table(ctx.store, key, ["url", "paragraph_index", "sentence_index", "text"]) for key in keys], ignore_index=True
    )
    frame = frame.sort_values(["url", "paragraph_index", "sentence_index"], kind="stable")
    return {url: list(group["text"]) for url, group in frame.groupby("url", sort=False)}


def judge_release(ctx: RunContext, docroot: Path, truth: Truth, pairs: pd.DataFrame) -> dict[str, Any]:
    """:meth:`Verdicts.figures` of a run's released ``pairs``, its yield over every page pair the run extracted."""
    sentences = run_sentences(ctx)
    judge = Judge(docroot, truth, sentences)
    crawled = {site_path(url) for url in sentences}
    translated = judge.translated_block_keys(ctx.config.source, ctx.config.target, crawled=crawled)
    return judge.judge(pairs).figures(len(translated), translated)
