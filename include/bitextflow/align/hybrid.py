"""Sentence alignment by static embeddings, a bilingual dictionary and length in Vecalign's search.

The search and bead shapes are Vecalign's (Thompson, B. and Koehn, P. (2019), "Vecalign: Improved
Sentence Alignment in Linear Time and Space", EMNLP-IJCNLP 2019; :mod:`.embedding`): overlaps of up
to ``max_overlap`` consecutive sentences, a cosine cost normalised by each side's distance to the other
document, beads with ``di + dj <= max_overlap + 1``, a first pass that fixes a band around a 1-1 path
and a fine pass inside it, linear in the document length. What changes is where the vectors come
from and what else a bead is charged::

    cost(bead) = EMBEDDING_WEIGHT * vecalign_cost(x, y)
               - DICTIONARY_WEIGHT * sim(bead) * (di + dj) / 2
               + LENGTH_WEIGHT * -ln P(delta | match)
               + MULTI_PENALTY (beads other than 1-1)
    cost(1-0)  = cost(0-1) = DELETION_COST

- ``x``, ``y``: static embeddings (:mod:`bitextflow.models.static`, Model2Vec-style; Tulkens and van
  Dongen 2024) distilled from multilingual-e5-small: an overlap is the mean of its tokens' vectors,
  so encoding is a table look-up and overlaps are differences of cumulative sums, not new texts.
  Each side's mean token vector is subtracted before the cosine: static vectors of one language share
  a large common component that a transformer's context would have removed (in development, the
  embeddings alone reached strict F1 0.57 on the Bleualign ``dev`` file uncentred, 0.66 centred).
  Then the side's first principal axis is projected out of every overlap vector: the second step of
  Arora, Liang and Ma (2017), "A Simple but Tough-to-Beat Baseline for Sentence Embeddings", ICLR
  (common component removal), fitted per document side on its centred sentence vectors, so it has
  no constant to tune. Neutral on the tuning files (dev 0.833 -> 0.833, test0-1 0.893 -> 0.892),
  it lifted the held-out test2-3 from 0.912 to 0.920 strict F1 (docs/align.md).
- ``sim``: the Hunalign dictionary overlap of :mod:`.lexical` (Varga et al. 2005), for the larger
  beads too; identical tokens only where the pair has no dictionary.
- ``P(delta | match)``: the Gale-Church length probability of :mod:`.sentences` (Gale and Church 1993).

Static embeddings alone align far worse than the transformer (strict F1 on Bleualign test0-3 about
0.74, against 0.895 for the e5 transformer), and dictionary + length alone reach 0.853; together
they reach 0.901 (the embeddings carry words the dictionary lacks, the dictionary and the length
carry what bag-of-tokens vectors blur). The weights were chosen on the Bleualign ``dev`` file and
test0-1, test2-3 held out; see docs/align.md for the grid and the scores.

The search is :func:`.sentences.banded_search`, the one dynamic programme of every aligner here: it
asks for the costs of every bead shape over a block of rows of the band at once, and each cost is
computed for the whole block (dense products of overlap vectors or row-wise ones, sparse products
of word types over the rectangle the block spans), so Python runs a handful of numpy calls per
source sentence, not one per shape and sentence. The band is the ``2 * WINDOW + 1`` cells around the
first-pass path, plus the longest run of one-sided sentences the path crosses, so time and memory
are linear in the document length for a fixed longest run.

Bead score, in [0, 1]: the noisy-or ``1 - (1 - e) * (1 - sim)`` of the embedding score ``e`` of
:mod:`.embedding` and the dictionary similarity; 0 for null beads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from bitextflow.align.dictionary import BilingualDictionary
from bitextflow.align.embedding import (
    DEFAULT_MAX_CELLS,
    DEFAULT_MAX_OVERLAP,
    WINDOW,
    EmbeddingCosts,
    bead_shapes,
    project_band,
    search_band,
    unit_rows,
)
from bitextflow.align.lexical import LexicalMatches, word_translations, words
from bitextflow.align.sentences import Bead, Bounds, LengthModel, banded_search, beads_from_bounds, char_length

EMBEDDING_WEIGHT = 1.0
DICTIONARY_WEIGHT = 1.0
LENGTH_WEIGHT = 0.1
DELETION_COST = 1.2
#: Added to the cost of every bead that is neither 1-1 nor null.
MULTI_PENALTY = 0.1
#: Most power-iteration steps for a side's common component (:func:`common_direction`).
POWER_ITERATIONS = 200


class TokenEmbeddings(Protocol):
    """Anything that gives per-text token-vector sums and token counts (:class:`bitextflow.models.static.StaticEmbeddings`)."""

    def token_sums(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], NDArray[np.int64]]: ...


def common_direction(vectors: NDArray[np.float64], iterations: int = POWER_ITERATIONS) -> NDArray[np.float64]:
    """Unit first principal axis of ``vectors`` (rows, already centred): the common component of Arora et al. 2017.

    By power iteration from the longest row, with matrix-vector products only: LAPACK's
    eigendecomposition, and even the covariance product, took 0.2-0.8 s per side in multithreaded
    OpenBLAS on the loaded 2-core machine, where these take milliseconds. Where the two leading axes
    are nearly tied any vector of their plane is as common as the other.
    """
    axis = vectors[int(np.argmax(np.einsum("ij,ij->i", vectors, vectors)))]
    axis = axis / max(float(np.linalg.norm(axis)), 1e-12)  # all rows zero (one sentence): a zero axis removes nothing
    for _ in range(iterations):
        image = vectors.T @ (vectors @ axis)
        length = float(np.linalg.norm(image))
        if length == 0.0:
            break
        image /= length
        converged = abs(float(image @ axis)) > 1.0 - 1e-12
        axis = image
        if converged:
            break
    result: NDArray[np.float64] = axis
    return result


def overlap_vectors(sums: NDArray[np.float32], counts: NDArray[np.int64], max_overlap: int) -> list[NDArray[np.float32]]:
    """Unit vectors of every run of ``k = 1..max_overlap`` consecutive sentences of one side.

    A run is the mean token vector of its sentences less the side's mean token vector, with the
    side's common component removed (see the module docstring); ``result[k - 1][s]`` is the run of
    sentences ``s .. s + k - 1``.
    """
    total = max(int(counts.sum()), 1)
    centre = sums.sum(axis=0, dtype=np.float64) / total
    cum_sums = np.vstack([np.zeros((1, sums.shape[1])), np.cumsum(sums, axis=0, dtype=np.float64)])
    cum_counts = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    common = common_direction(sums / np.maximum(counts, 1)[:, None] - centre)
    runs = []
    for k in range(1, max_overlap + 1):
        if k > len(sums):
            runs.append(np.zeros((0, sums.shape[1])))
            continue
        means = (cum_sums[k:] - cum_sums[:-k]) / np.maximum(cum_counts[k:] - cum_counts[:-k], 1.0)[:, None] - centre
        runs.append(unit_rows(means - np.outer(means @ common, common)).astype(np.float32))
    return runs


class HybridCosts:
    """Bead costs and scores of the hybrid aligner over one document pair (see the module docstring)."""

    def __init__(
        self,
        src: Sequence[str],
        tgt: Sequence[str],
        embedding: EmbeddingCosts,
        dictionary: BilingualDictionary | None,
        max_overlap: int,
        weights: tuple[float, float, float],
    ) -> None:
        self.embedding = embedding
        translations = word_translations(dictionary)
        self.lexical = LexicalMatches(
            [set(words(s, translations.stem_chars)) for s in src],
            [set(words(t, translations.stem_chars)) for t in tgt],
            translations,
            max_overlap,
            max_overlap,
        )
        self.length = LengthModel([char_length(s) for s in src], [char_length(t) for t in tgt])
        self.embedding_weight, self.dictionary_weight, self.length_weight = weights

    def bead_cost(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """The search's :data:`.sentences.BeadCost`."""
        if di == 0 or dj == 0:
            return np.full(len(s), self.embedding.deletion)
        return (
            self.embedding_weight * self.embedding.cosine_cost(di, dj, s, t)
            - self.dictionary_weight * self.lexical.band_similarity(di, dj, s, t) * (di + dj) / 2.0
            + self.length_weight * self.length.mismatch(di, dj, s, t)
            + (MULTI_PENALTY if di + dj > 2 else 0.0)
        )

    def scores(self, bounds: Sequence[Bounds]) -> NDArray[np.float64]:
        """Noisy-or of the embedding score and the dictionary similarity of each bead (0 for null beads)."""
        result: NDArray[np.float64] = 1.0 - (1.0 - self.embedding.scores(bounds)) * (1.0 - self.lexical.bead_similarity(bounds))
        return result


def align_sentences_hybrid(
    src: Sequence[str],
    tgt: Sequence[str],
    embeddings: TokenEmbeddings,
    dictionary: BilingualDictionary | None = None,
    max_overlap: int = DEFAULT_MAX_OVERLAP,
    max_cells: int = DEFAULT_MAX_CELLS,
    window: int = WINDOW,
    weights: tuple[float, float, float] = (EMBEDDING_WEIGHT, DICTIONARY_WEIGHT, LENGTH_WEIGHT),
    deletion_cost: float = DELETION_COST,
) -> list[Bead]:
    """Align two sentence lists by static embeddings + dictionary + length (see the module docstring).

    ``dictionary`` translates ``src``'s language into ``tgt``'s (None: identical tokens only).
    ``weights`` are the embedding, dictionary and length weights. Returns beads in document order
    covering every sentence exactly once; with an empty side every sentence is a null bead scoring 0.
    """
    if not src or not tgt:
        return [Bead((i,), (), 0.0) for i in range(len(src))] + [Bead((), (j,), 0.0) for j in range(len(tgt))]
    overlap = max(1, min(max_overlap, max(len(src), len(tgt))))
    src_vecs = overlap_vectors(*embeddings.token_sums(src), overlap)
    tgt_vecs = overlap_vectors(*embeddings.token_sums(tgt), overlap)
    embedding = EmbeddingCosts(src_vecs, tgt_vecs, deletion_cost, 0.0)
    costs = HybridCosts(src, tgt, embedding, dictionary, overlap, weights)
    # First pass: 1-1 and null beads at full cost over the whole table (coarse to fine beyond
    # max_cells, on sentence vectors alone), then the fine pass within window of that path.
    lo, hi = search_band(src_vecs[0], tgt_vecs[0], max_cells, window)
    path = banded_search(lo, hi, costs.bead_cost, ((1, 1), (1, 0)))
    lo, hi = project_band(path, len(src), len(tgt), window, factor=1)
    bounds = banded_search(lo, hi, costs.bead_cost, bead_shapes(overlap))
    return beads_from_bounds(bounds, costs.scores(bounds))
