"""The page's blocks in the sentence search: align blocks first where two pages' structures correspond.

Extraction gives every sentence the block it comes from (``Sentence.paragraph_index``: a paragraph, list item, table
cell or heading, of a ``paragraph_type``). A translated page keeps its original's blocks (po4a, DocBook, most CMSs),
and a bead whose two sides come from non-corresponding blocks is wrong however close its embeddings are: a two-sentence
side that runs across a block boundary still embeds close to one of its sentences, so a scorer of whole sides passes it.

Two levels, after Gale, W. A. and Church, K. W. (1993), "A Program for Aligning Sentences in Bilingual Corpora",
Computational Linguistics 19(1): paragraphs are aligned first, then sentences inside aligned paragraphs; Hunalign
(Varga et al. 2005, RANLP) keeps paragraph markers as units that align only with each other; ILSP-FC (Papavassiliou
et al. 2013) reads a page's structure (block types and lengths) as evidence of translation. Here:

- **Block plan** (:func:`bitextflow.align.block_plan.plan_blocks`): the two pages' blocks are aligned as units with the
  dictionary-and-length aligner (:mod:`.lexical`) over the blocks' texts. Where that alignment is mostly 1-1 (at least
  :data:`MIN_CORRESPONDING_SHARE` of each side's sentences lie in 1-1 block beads of the same block type), the pages'
  structures correspond: the block beads become *groups* (a 2-1 block bead may be a paragraph the translator merged,
  or a heading, list item or cell the other side lacks next to its neighbour; runs of 1-0 and 0-1 block beads between
  two groups become one group, a block pair the block aligner could not match, whose sentences may still be aligned or
  left null), and the sentence search runs inside the groups only (:meth:`BlockPlan.band`, :meth:`BlockPlan.cost`).
- Everywhere, a bead pays :data:`CROSSING_COST` times the aligner's own null-bead cost for each block boundary one of
  its sides spans beyond those the other side spans (a 2-2 bead spanning one boundary on each side merges both there
  and pays nothing; a 3-1 bead joining three blocks of one side pays twice): a crossing is believed only where it
  saves more than leaving its sentences out would cost. Inside a 2-1 group, that is what tells a merged paragraph (its
  sentences still pair one to one, or one translates two) from a block the other side lacks (its sentence stays null
  rather than riding on its neighbour's bead: "Organization of This Document This document is meant ..." against the
  paragraph's first sentence alone, on a page whose translation has no heading there). Where the structures do not
  correspond (a page re-flowed by its translator), the document-level search stays, with the same price.

Every aligner (:mod:`.sentences`, :mod:`.lexical`, :mod:`.embedding`, :mod:`.hybrid`) takes a plan; without one (no
block information: gold files, plain text) the search is what it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: :data:`bitextflow.align.sentences.BeadCost` (not imported: that module takes a plan, so it would import this back).
BeadCost = Callable[[int, int, NDArray[np.int64], NDArray[np.int64]], NDArray[np.float64]]

#: Share of each side's sentences that must lie in 1-1 block beads of one type for the structures to correspond.
MIN_CORRESPONDING_SHARE = 0.8
#: Cost of each block boundary a bead crosses on one side only, in units of the aligner's null-bead cost. At 1 a crossing
#: is kept where it saves more than leaving its extra sentence out; at 2 (measured: docs/align.md) one sentence that
#: translates two across a merged paragraph's boundary is no longer aligned.
CROSSING_COST = 1.0


@dataclass(frozen=True)
class BlockWithoutSentences:
    """A block of the page that gives the aligner no sentence (each too short, in another language, a copy of the
    other side's text): its ``id`` (``paragraph_index``), type and text. It stays in the block alignment, so that the
    other side's counterpart, when that one has sentences, is matched with it rather than with a neighbour."""

    id: int
    type: str
    text: str


@dataclass(frozen=True)
class SideBlocks:
    """The block of each sentence of one side (its ``paragraph_index``; equal values are one block), the blocks' types,
    and the side's blocks that give the aligner no sentence (ids in the same order as ``ids``)."""

    ids: Sequence[int]
    types: Sequence[str] | None = None
    without_sentences: Sequence[BlockWithoutSentences] = ()

    def ordinals(self) -> NDArray[np.int64]:
        """The block of each sentence as 0, 1, 2, ...: a new block wherever the id changes."""
        ids = np.asarray(self.ids, dtype=np.int64)
        if not len(ids):
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(([0], np.cumsum(ids[1:] != ids[:-1]))).astype(np.int64)

    def block_types(self) -> list[str]:
        """The type of each block (its first sentence's), "" where types are not known."""
        ordinals = self.ordinals()
        if self.types is None:
            return [""] * (int(ordinals[-1]) + 1 if len(ordinals) else 0)
        firsts = np.flatnonzero(np.concatenate(([True], ordinals[1:] != ordinals[:-1]))) if len(ordinals) else []
        return [str(self.types[int(k)]) for k in firsts]


@dataclass(frozen=True)
class PageBlocks:
    """The blocks of a document pair's two sides (``src`` and ``tgt``, one entry per sentence given to the aligner)."""

    src: SideBlocks
    tgt: SideBlocks


def _crossings(ordinals: NDArray[np.int64], d: int, starts: NDArray[np.int64]) -> NDArray[np.int64]:
    """How many block boundaries the runs of ``d`` sentences starting at ``starts`` span (0 for empty runs)."""
    if d <= 1:
        return np.zeros(len(starts), dtype=np.int64)
    result: NDArray[np.int64] = ordinals[starts + d - 1] - ordinals[starts]
    return result


class BlockPlan:
    """How the sentence search treats the blocks of one document pair (see the module docstring).

    ``groups`` (source block ordinals, target block ordinals) per group, in order, when the structures correspond;
    None for the document-level search with a crossing cost.
    """

    def __init__(self, blocks: PageBlocks, groups: Sequence[tuple[Sequence[int], Sequence[int]]] | None) -> None:
        self.src_blocks = blocks.src.ordinals()
        self.tgt_blocks = blocks.tgt.ordinals()
        self.corresponding = groups is not None
        self.n, self.m = len(self.src_blocks), len(self.tgt_blocks)
        if groups is None:
            return
        src_group = np.full(int(self.src_blocks.max(initial=-1)) + 1, -1, dtype=np.int64)
        tgt_group = np.full(int(self.tgt_blocks.max(initial=-1)) + 1, -1, dtype=np.int64)
        for g, (src, tgt) in enumerate(groups):
            src_group[list(src)] = g
            tgt_group[list(tgt)] = g
        if (src_group < 0).any() or (tgt_group < 0).any() or (np.diff(src_group) < 0).any() or (np.diff(tgt_group) < 0).any():
            raise ValueError("block groups must cover every block once, in order on both sides")
        #: the group of each source and target sentence
        self.src_group, self.tgt_group = src_group[self.src_blocks], tgt_group[self.tgt_blocks]
        count = len(groups)
        # the first sentence of each group on each side, and one past the last (groups may be empty on one side)
        self.src_starts = np.searchsorted(self.src_group, np.arange(count + 1))
        self.tgt_starts = np.searchsorted(self.tgt_group, np.arange(count + 1))

    def band(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The staircase of the groups' rectangles: row ``i`` (source prefix) covers the target prefixes of every group
        whose source range holds ``i``, so a path moves from group to group through their corners only."""
        rows = np.arange(self.n + 1)
        first = np.searchsorted(self.src_starts[1:], rows, side="left")  # the first group ending at or after row i
        last = np.searchsorted(self.src_starts[:-1], rows, side="right") - 1  # the last group starting at or before it
        lo = self.tgt_starts[first].astype(np.int64)
        hi = self.tgt_starts[last + 1].astype(np.int64)
        lo[0], hi[-1] = 0, self.m
        return lo, hi

    def cost(self, bead_cost: BeadCost, null_cost: float) -> BeadCost:
        """``bead_cost`` plus :data:`CROSSING_COST` x ``null_cost`` for each boundary crossed on one side only, and where
        the structures correspond, inside one group only."""
        crossing = CROSSING_COST * null_cost

        def cost(di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
            result = bead_cost(di, dj, s, t)
            if di == 0 or dj == 0:
                return result  # the band places null beads (see band())
            one_sided = np.abs(_crossings(self.src_blocks, di, s) - _crossings(self.tgt_blocks, dj, t))
            if self.corresponding:
                group = self.src_group[s]
                inside = (
                    (self.src_group[s + di - 1] == group) & (self.tgt_group[t] == group) & (self.tgt_group[t + dj - 1] == group)
                )
                return np.where(inside, result + crossing * one_sided, np.inf)
            return result + crossing * one_sided

        return cost


def crosses_one_side(plan_blocks: PageBlocks, src: Sequence[int], tgt: Sequence[int]) -> bool:
    """Whether a bead (its source and target sentence indices) spans a block boundary on one side only."""
    src_blocks, tgt_blocks = plan_blocks.src.ordinals(), plan_blocks.tgt.ordinals()
    src_crosses = len(src) > 1 and src_blocks[src[0]] != src_blocks[src[-1]]
    tgt_crosses = len(tgt) > 1 and tgt_blocks[tgt[0]] != tgt_blocks[tgt[-1]]
    return bool(src_crosses != tgt_crosses)
