"""Deciding how a document pair's blocks constrain its sentence search (:class:`.blocks.BlockPlan`).

The blocks are aligned as units with the Hunalign-style aligner (:func:`.lexical.align_sentences_lexical`: the
Gale-Church length of a block's text and its word types shared through the dictionary and identical tokens; Varga et
al. 2005, Gale and Church 1993), which is what Gale and Church's program did with paragraphs before sentences. The
block beads decide whether the two pages' structures correspond (:data:`.blocks.MIN_CORRESPONDING_SHARE`) and, when
they do, the groups the sentence search stays inside; see :mod:`.blocks`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bitextflow.align.blocks import MIN_CORRESPONDING_SHARE, BlockPlan, PageBlocks
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.lexical import align_sentences_lexical
from bitextflow.align.sentences import Bead


def _block_texts(sentences: Sequence[str], ordinals: np.ndarray) -> list[str]:
    texts: list[list[str]] = [[] for _ in range(int(ordinals.max(initial=-1)) + 1)]
    for sentence, block in zip(sentences, ordinals.tolist(), strict=True):
        texts[block].append(sentence.strip())
    return [" ".join(parts) for parts in texts]


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


def corresponding_share(beads: Sequence[Bead], blocks: PageBlocks) -> float:
    """The smaller of the two sides' shares of sentences that lie in 1-1 block beads of one block type."""
    src_ordinals, tgt_ordinals = blocks.src.ordinals(), blocks.tgt.ordinals()
    src_sizes = np.bincount(src_ordinals, minlength=int(src_ordinals.max(initial=-1)) + 1)
    tgt_sizes = np.bincount(tgt_ordinals, minlength=int(tgt_ordinals.max(initial=-1)) + 1)
    src_types, tgt_types = blocks.src.block_types(), blocks.tgt.block_types()
    src_kept = tgt_kept = 0
    for bead in beads:
        if len(bead.src) == 1 and len(bead.tgt) == 1 and src_types[bead.src[0]] == tgt_types[bead.tgt[0]]:
            src_kept += int(src_sizes[bead.src[0]])
            tgt_kept += int(tgt_sizes[bead.tgt[0]])
    return min(src_kept / max(len(src_ordinals), 1), tgt_kept / max(len(tgt_ordinals), 1))


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
    src_texts = _block_texts(src, blocks.src.ordinals())
    tgt_texts = _block_texts(tgt, blocks.tgt.ordinals())
    beads = align_sentences_lexical(src_texts, tgt_texts, dictionary)
    if corresponding_share(beads, blocks) >= min_share:
        return BlockPlan(blocks, block_groups(beads))
    return BlockPlan(blocks, None)
