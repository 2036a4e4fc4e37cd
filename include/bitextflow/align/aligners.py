"""The sentence aligner a pair config names (``align.sentence_aligner``), built from its parts."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol

from bitextflow.align.block_plan import plan_blocks
from bitextflow.align.blocks import BlockPlan, PageBlocks
from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.embedding import Background, Encoder, align_sentences_embedding
from bitextflow.align.hybrid import TokenEmbeddings, align_sentences_hybrid
from bitextflow.align.lexical import align_sentences_lexical
from bitextflow.align.sentences import Bead, align_sentences

SENTENCE_ALIGNERS = ("gale-church", "hunalign", "vecalign", "hybrid", "hybrid-e5")
#: What each aligner is built from, besides the sentences: the pair's dictionary, a sentence encoder
#: (``align.encoder_model``), static token embeddings (``align.static_model``).
NEEDS_DICTIONARY = frozenset({"hunalign", "hybrid", "hybrid-e5"})
NEEDS_ENCODER = frozenset({"vecalign", "hybrid-e5"})
NEEDS_STATIC_EMBEDDINGS = frozenset({"hybrid"})

_Aligner = Callable[..., list[Bead]]


class SentenceAligner(Protocol):
    """``align(src, tgt, blocks=None) -> beads``: ``blocks`` are the sentences' blocks (:class:`.blocks.PageBlocks`),
    which the search respects (:mod:`.blocks`); without them it aligns the two lists as they come."""

    def __call__(self, src: Sequence[str], tgt: Sequence[str], blocks: PageBlocks | None = None) -> list[Bead]: ...


def _with_blocks(align: _Aligner, dictionary: BilingualDictionary | None) -> SentenceAligner:
    """``align`` given the block plan of each document pair (:func:`.block_plan.plan_blocks`, with the pair's dictionary)."""

    def aligned(src: Sequence[str], tgt: Sequence[str], blocks: PageBlocks | None = None) -> list[Bead]:
        plan: BlockPlan | None = plan_blocks(src, tgt, blocks, dictionary)
        return align(src, tgt, plan=plan)

    return aligned


def sentence_aligner(
    method: str,
    dictionary: BilingualDictionary | None = None,
    encoder: Encoder | TokenEmbeddings | None = None,
    background: Background | None = None,
) -> SentenceAligner:
    """The aligner a pair config names (``align.sentence_aligner``), as ``f(src, tgt) -> beads``.

    ``vecalign`` needs ``encoder`` (anything with ``encode(texts) -> array``, e.g. a SentenceEncoder);
    ``hybrid`` needs static embeddings there (anything with ``token_sums``, e.g.
    :class:`bitextflow.models.static.StaticEmbeddings`), ``hybrid-e5`` a sentence encoder, whose sentence
    vectors align better (:mod:`.hybrid`); both use ``dictionary`` too. Every aligner takes the pages' blocks.
    ``background`` (:class:`.embedding.Background`, of the task's shard) is the prior of the unrelated sentences that
    the scores of ``vecalign`` and ``hybrid-e5`` compare a bead with (``hybrid`` centres its vectors and has none).
    """
    if method in ("hybrid", "hybrid-e5"):
        if encoder is None:
            needed = (
                "a sentence encoder" if method == "hybrid-e5" else "static embeddings (bitextflow.models.static.StaticEmbeddings)"
            )
            raise ValueError(f"the {method} sentence aligner needs {needed}")
        aligner = functools.partial(align_sentences_hybrid, embeddings=encoder, dictionary=dictionary, background=background)
        return _with_blocks(aligner, dictionary)
    if method == "gale-church":
        return _with_blocks(align_sentences, dictionary)
    if method == "hunalign":
        return _with_blocks(functools.partial(align_sentences_lexical, dictionary=dictionary), dictionary)
    if method == "vecalign":
        if encoder is None:
            raise ValueError("the vecalign sentence aligner needs an encoder")
        return _with_blocks(functools.partial(align_sentences_embedding, encoder=encoder, background=background), dictionary)
    raise ValueError(f"unknown sentence aligner {method!r}; choose one of {', '.join(SENTENCE_ALIGNERS)}")
