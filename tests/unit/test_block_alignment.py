"""Sentence alignment that respects the page's blocks (bitextflow.align.blocks, bitextflow.align.block_plan): where two
pages' blocks correspond no bead crosses a block on one side only, and a paragraph the translator merged still aligns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from bitextflow.align.aligners import SENTENCE_ALIGNERS, sentence_aligner
from bitextflow.align.block_plan import plan_blocks
from bitextflow.align.blocks import (
    CROSSING_COST,
    BlockPlan,
    BlockWithoutSentences,
    PageBlocks,
    SideBlocks,
    crosses_one_side,
)
from bitextflow.align.sentences import banded_search
from tests.support.alignment_fakes import covers, word_vector


class BagVectors:
    """Fake sentence encoder and static model at once: a sentence is the sum of one random vector per lower-cased word,
    so an upper-cased target sentence embeds as its source does."""

    dim = 48

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        sums, _counts = self.token_sums(texts)
        return sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)

    def token_sums(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        sums = np.zeros((len(texts), self.dim), dtype=np.float32)
        counts = np.zeros(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            for word in text.split():
                sums[row] += word_vector(word.lower(), self.dim)
                counts[row] += 1
        return sums, counts


def aligner(method: str):
    vectors = BagVectors()
    if method == "hybrid":
        return sentence_aligner(method, None, vectors)  # token sums: the static path
    if method in ("hybrid-e5", "vecalign"):

        class Encoder:
            def encode(self, texts: Sequence[str]) -> np.ndarray:
                return vectors.encode(texts)

        return sentence_aligner(method, None, Encoder())
    return sentence_aligner(method, None)


def words(k: int, n: int = 6) -> str:
    return " ".join(f"wordx{k}{chr(97 + p)}" for p in range(n))


def page_with_extra_sentences(blocks: int = 12) -> tuple[list[str], list[int], list[str], list[int]]:
    """Blocks of one or two sentences, translated one to one (upper case), where every third source block ends with a
    sentence the translation lacks, made of words of the next block's first sentence: the document-level search would
    join it to that sentence across the boundary."""
    src, src_ids, tgt, tgt_ids = [], [], [], []
    k = 0
    for block in range(blocks):
        size = 1 + block % 2
        for _ in range(size):
            src.append(words(k))
            src_ids.append(block)
            tgt.append(words(k).upper())
            tgt_ids.append(block)
            k += 1
        if block % 3 == 0 and block + 1 < blocks:
            src.append(" ".join(words(k).split()[:3]) + " extra words")  # the next sentence's words, untranslated
            src_ids.append(block)
    return src, src_ids, tgt, tgt_ids


def assert_aligned_inside_blocks(method: str, page: tuple[list[str], list[int], list[str], list[int]]) -> None:
    """The page's structures correspond, no bead crosses a block on one side only, and every translated sentence is in
    a bead with its translation."""
    src, src_ids, tgt, tgt_ids = page
    blocks = PageBlocks(SideBlocks(src_ids), SideBlocks(tgt_ids))
    plan = plan_blocks(src, tgt, blocks)
    assert plan is not None and plan.corresponding
    beads = aligner(method)(src, tgt, blocks)
    assert covers(beads, len(src), len(tgt))
    assert not [bead for bead in beads if crosses_one_side(blocks, bead.src, bead.tgt)], method
    links = {(bead.src, bead.tgt) for bead in beads}
    for j, text in enumerate(tgt):
        i = src.index(text.lower())
        assert any(i in s and j in t for s, t in links), (method, text)


@pytest.mark.parametrize("method", SENTENCE_ALIGNERS)
def test_blocks_that_align_one_to_one_never_give_a_bead_crossing_one_side(method: str) -> None:
    assert_aligned_inside_blocks(method, page_with_extra_sentences())


def test_without_blocks_the_search_joins_the_extra_sentence_across_the_boundary() -> None:
    """The case the blocks exist for: the shipped aligner, given no blocks, takes the extra sentence into the next
    block's bead (a two-sentence side embeds close to one of its sentences)."""
    src, src_ids, tgt, tgt_ids = page_with_extra_sentences()
    blocks = PageBlocks(SideBlocks(src_ids), SideBlocks(tgt_ids))
    beads = aligner("hybrid-e5")(src, tgt)
    assert [bead for bead in beads if crosses_one_side(blocks, bead.src, bead.tgt)]


def merged_paragraph_page(merge_sentences: bool) -> tuple[list[str], list[int], list[str], list[int]]:
    """Ten one-sentence blocks whose translation merges blocks 4 and 5 into one paragraph (of two sentences, or of
    one sentence translating both)."""
    src = [words(k) for k in range(10)]
    src_ids = list(range(10))
    tgt = [words(k).upper() for k in range(10)]
    tgt_ids = [k if k <= 4 else k - 1 for k in range(10)]
    if merge_sentences:
        tgt[4:6] = [f"{tgt[4]} {tgt[5]}"]
        del tgt_ids[5]
    return src, src_ids, tgt, tgt_ids


@pytest.mark.parametrize("merge_sentences", [False, True])
@pytest.mark.parametrize("method", SENTENCE_ALIGNERS)
def test_a_paragraph_the_translator_merged_still_aligns(method: str, merge_sentences: bool) -> None:
    src, src_ids, tgt, tgt_ids = merged_paragraph_page(merge_sentences)
    blocks = PageBlocks(SideBlocks(src_ids), SideBlocks(tgt_ids))
    plan = plan_blocks(src, tgt, blocks)
    assert plan is not None and plan.corresponding
    links = [(bead.src, bead.tgt) for bead in aligner(method)(src, tgt, blocks)]
    merged = [((4, 5), (4,))] if merge_sentences else [((4,), (4,)), ((5,), (5,))]
    after = [((k,), (k - 1 if merge_sentences else k,)) for k in range(6, 10)]
    assert links == [((k,), (k,)) for k in range(4)] + merged + after


def page_with_headings_the_translation_lacks(blocks: int = 24) -> tuple[list[str], list[int], list[str], list[int]]:
    """One-sentence blocks translated one to one, where every twelfth source block is preceded by a heading of its own
    that the translation lacks, of two words of its own and one of that block's sentence (a page title repeated as its
    first heading, which one language's extraction keeps and the other's drops): the block aligner joins it to its
    neighbour."""
    src, src_ids, tgt, tgt_ids = [], [], [], []
    block = 0
    for k in range(blocks):
        if k % 12 == 1:
            src.append(" ".join(words(100 + k).split()[:2] + words(k).split()[:1]))
            src_ids.append(block)
            block += 1
        src.append(words(k))
        src_ids.append(block)
        block += 1
        tgt.append(words(k).upper())
        tgt_ids.append(k)
    return src, src_ids, tgt, tgt_ids


# Gale-Church sees lengths only: nothing tells it that the heading is not part of its neighbour's translation.
@pytest.mark.parametrize("method", [method for method in SENTENCE_ALIGNERS if method != "gale-church"])
def test_a_block_the_translation_lacks_stays_out_of_its_neighbours_bead(method: str) -> None:
    assert_aligned_inside_blocks(method, page_with_headings_the_translation_lacks())


def table_whose_captions_one_side_dropped(known: bool) -> tuple[list[str], list[str], PageBlocks]:
    """A table of six rows under a caption and a header of two cells (blocks 0, 1, 2), where the source page kept its
    caption but dropped its first header cell (too short), and the target page the other way round (its caption
    identified as another language): each side's caption and cell lacks a counterpart among the other's sentences.
    ``known``: whether the sides carry the blocks they dropped."""
    caption = words(50, 7)
    header = " ".join(caption.split()[1:5])  # the header cell repeats the caption's words
    src = [caption, header, *(words(k) for k in range(6))]
    tgt = [words(60, 3).upper(), header.upper(), *(words(k).upper() for k in range(6))]
    src_dropped = [BlockWithoutSentences(1, "cell", words(60, 2))] if known else []
    tgt_dropped = [BlockWithoutSentences(0, "text", caption.upper())] if known else []
    ids = [3 + k for k in range(6)]
    return src, tgt, PageBlocks(SideBlocks([0, 2, *ids], None, src_dropped), SideBlocks([1, 2, *ids], None, tgt_dropped))


@pytest.mark.parametrize("method", SENTENCE_ALIGNERS)
def test_a_sentence_whose_block_the_other_side_dropped_stays_unaligned(method: str) -> None:
    src, tgt, blocks = table_whose_captions_one_side_dropped(known=True)
    links = [(bead.src, bead.tgt) for bead in aligner(method)(src, tgt, blocks) if bead.src and bead.tgt]
    assert links == [((k,), (k,)) for k in range(1, 8)]
    # the same page without the dropped blocks: the caption is paired with the other side's first header cell
    src, tgt, blocks = table_whose_captions_one_side_dropped(known=False)
    assert ((0,), (0,)) in [(bead.src, bead.tgt) for bead in aligner(method)(src, tgt, blocks)]


def test_a_reflowed_page_keeps_the_document_search_with_a_price_on_one_sided_crossings() -> None:
    """Blocks of two sentences against blocks of three: the structures do not correspond, the plan is the document-level
    search, and it pairs every sentence with its translation (Vecalign's cost merges pairs of fake vectors into 2-2
    beads, test_align_embedding's FAKE_DELETION_COST, which cross on both sides or neither)."""
    src = [words(k) for k in range(12)]
    tgt = [text.upper() for text in src]
    blocks = PageBlocks(SideBlocks([k // 2 for k in range(12)]), SideBlocks([k // 3 for k in range(12)]))
    plan = plan_blocks(src, tgt, blocks)
    assert plan is not None and not plan.corresponding
    for method in SENTENCE_ALIGNERS:
        beads = aligner(method)(src, tgt, blocks)
        assert covers(beads, 12, 12) and all(bead.src == bead.tgt for bead in beads), method


def test_the_crossing_cost_is_paid_by_one_sided_crossings_only() -> None:
    blocks = PageBlocks(SideBlocks([0, 0, 1, 1]), SideBlocks([0, 1, 1, 2]))
    plan = BlockPlan(blocks, None)
    cost = plan.cost(lambda di, dj, s, t: np.zeros(len(s)), null_cost=2.0)
    s, t = np.array([0, 1, 1]), np.array([0, 0, 1])
    # 2-1 beads: source 0-1 (one block) with target 0 (one block); source 1-2 (crosses) with target 0; with target 1
    crossing = CROSSING_COST * 2.0
    assert cost(2, 1, s, t).tolist() == [0.0, crossing, crossing]
    # 2-2: source 1-2 crosses, target 0-1 crosses too: both sides merge there
    assert cost(2, 2, np.array([1]), np.array([0])).tolist() == [0.0]


def test_the_groups_staircase_is_the_only_band_and_a_path_exists() -> None:
    blocks = PageBlocks(SideBlocks([0, 0, 1, 2, 2]), SideBlocks([0, 1, 1, 2]))
    # groups: source block 0 with target block 0; source block 1 with nothing; source block 2 with target blocks 1, 2
    plan = BlockPlan(blocks, [((0,), (0,)), ((1,), ()), ((2,), (1, 2))])
    lo, hi = plan.band()
    assert lo.tolist() == [0, 0, 0, 1, 1, 1]
    assert hi.tolist() == [1, 1, 1, 4, 4, 4]
    cost = plan.cost(lambda di, dj, s, t: np.ones(len(s)), null_cost=1.0)
    bounds = banded_search(lo, hi, cost)
    assert bounds[-1][1] == 5 and bounds[-1][3] == 4
    assert (2, 3, 1, 1) in bounds  # source sentence 2 (its block has no counterpart) is a null bead


def test_plans_need_blocks_for_every_sentence() -> None:
    assert plan_blocks(["a"], ["b"], None) is None
    assert plan_blocks([], ["b"], PageBlocks(SideBlocks([]), SideBlocks([0]))) is None
    with pytest.raises(ValueError, match="blocks for"):
        plan_blocks(["a", "b"], ["c"], PageBlocks(SideBlocks([0]), SideBlocks([0])))
