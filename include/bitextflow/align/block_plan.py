"""Deciding how a document pair's blocks constrain its sentence search (:class:`.blocks.BlockPlan`).

The blocks are aligned as units with the Hunalign-style aligner (:func:`.lexical.align_sentences_lexical`: the
Gale-Church length of a block's text and its word types shared through the dictionary and identical tokens; Varga et
al. 2005, Gale and Church 1993), which is what Gale and Church's program did with paragraphs before sentences. The
block beads decide whether the two pages' structures correspond (:data:`.blocks.MIN_CORRESPONDING_SHARE`) and, when
they do, the groups the sentence search stays inside; see :mod:`.blocks`. The blocks that give the aligner no sentence
(:class:`.blocks.BlockWithoutSentences`) are aligned too, and then leave the groups: a caption whose translation
extraction dropped as too short or another language is matched with that translation, not with the table's next cell.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from bitextflow.align.blocks import MIN_CORRESPONDING_SHARE, BlockPlan, PageBlocks, SideBlocks
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.lexical import align_sentences_lexical
from bitextflow.align.sentences import Bead


@dataclass(frozen=True)
class _SideUnits:
    """One side's blocks as the block aligner sees them, in page order: those with sentences and those without
    (:class:`.blocks.BlockWithoutSentences`)."""

    texts: list[str]
    types: list[str]
    #: how many of the side's sentences each block holds
    sizes: list[int]
    #: each block's ordinal among the blocks with sentences (:meth:`.blocks.SideBlocks.ordinals`), -1 for one without
    ordinals: list[int]


def _side_units(sentences: Sequence[str], side: SideBlocks) -> _SideUnits:
    ordinals = side.ordinals()
    count = int(ordinals.max(initial=-1)) + 1
    texts: list[list[str]] = [[] for _ in range(count)]
    for sentence, block in zip(sentences, ordinals.tolist(), strict=True):
        texts[block].append(sentence.strip())
    first_ids = [int(side.ids[k]) for k in np.flatnonzero(np.diff(ordinals, prepend=-1))]
    types = side.block_types()
    with_sentences = [(first_ids[k], k, " ".join(texts[k]), types[k], len(texts[k])) for k in range(count)]
    without = [(block.id, -1, block.text, block.type, 0) for block in side.without_sentences]
    units = sorted(with_sentences + without, key=lambda unit: unit[0])
    return _SideUnits([u[2] for u in units], [u[3] for u in units], [u[4] for u in units], [u[1] for u in units])


def block_groups(beads: Sequence[Bead]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Groups of blocks from block beads: each bead with both sides is a group, and each run of null beads between
    two of them one more (a block pair the block aligner left unmatched, or blocks one side lacks)."""
    groups: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    pending_src: list[int] = []
    pending_tgt: list[int] = []
    for bead in beads:
        if bead.src and bead.tgt:
            if pending_src or pending_tgt:
                groups.append((tuple(pending_src), tuple(pending_tgt)))
                pending_src, pending_tgt = [], []
            groups.append((bead.src, bead.tgt))
        else:
            pending_src += bead.src
            pending_tgt += bead.tgt
    if pending_src or pending_tgt:
        groups.append((tuple(pending_src), tuple(pending_tgt)))
    return groups


def _with_sentences(
    groups: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], src: _SideUnits, tgt: _SideUnits
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``groups`` of both sides' blocks as groups of their blocks with sentences (ordinals); a group left with none
    on either side is gone, one left with none on one side keeps the other side's sentences from any bead."""
    result = []
    for src_blocks, tgt_blocks in groups:
        src_kept = tuple(src.ordinals[u] for u in src_blocks if src.ordinals[u] >= 0)
        tgt_kept = tuple(tgt.ordinals[u] for u in tgt_blocks if tgt.ordinals[u] >= 0)
        if src_kept or tgt_kept:
            result.append((src_kept, tgt_kept))
    return result


def corresponding_share(beads: Sequence[Bead], src: _SideUnits, tgt: _SideUnits) -> float:
    """The smaller of the two sides' shares of sentences that lie in 1-1 block beads of one block type."""
    src_kept = tgt_kept = 0
    for bead in beads:
        if len(bead.src) == 1 and len(bead.tgt) == 1 and src.types[bead.src[0]] == tgt.types[bead.tgt[0]]:
            src_kept += src.sizes[bead.src[0]]
            tgt_kept += tgt.sizes[bead.tgt[0]]
    return min(src_kept / max(sum(src.sizes), 1), tgt_kept / max(sum(tgt.sizes), 1))


def plan_blocks(
    src: Sequence[str],
    tgt: Sequence[str],
    blocks: PageBlocks | None,
    dictionary: BilingualDictionary | None = None,
    min_share: float = MIN_CORRESPONDING_SHARE,
) -> BlockPlan | None:
    """The plan for a document pair's sentence search: None without block information (or a side without sentences),
    groups where the structures correspond, else the document-level search with a crossing cost."""
    if blocks is None or not src or not tgt:
        return None
    if len(blocks.src.ids) != len(src) or len(blocks.tgt.ids) != len(tgt):
        raise ValueError(f"blocks for {len(blocks.src.ids)} x {len(blocks.tgt.ids)} sentences, {len(src)} x {len(tgt)} given")
    src_units, tgt_units = _side_units(src, blocks.src), _side_units(tgt, blocks.tgt)
    beads = align_sentences_lexical(src_units.texts, tgt_units.texts, dictionary)
    if corresponding_share(beads, src_units, tgt_units) >= min_share:
        return BlockPlan(blocks, _with_sentences(block_groups(beads), src_units, tgt_units))
    return BlockPlan(blocks, None)
