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
- ``sim``: the Hunalign dictionary overlap of :mod:`.lexical` (Varga et al. 2005), for the larger
  beads too; identical tokens only where the pair has no dictionary.
- ``P(delta | match)``: the Gale-Church length probability of :mod:`.sentences` (Gale and Church 1993).

Static embeddings alone align far worse than the transformer (strict F1 on Bleualign test0-3 about
0.74, against 0.895 for the e5 transformer), and dictionary + length alone reach 0.853; together
they reach 0.899 (the embeddings carry words the dictionary lacks, the dictionary and the length
carry what bag-of-tokens vectors blur). The weights were chosen on the Bleualign ``dev`` file and
test0-1, test2-3 held out; see docs/align.md for the grid and the scores.

The fine pass prices all bead shapes of a block of rows at once (dense products of overlap vectors
and sparse products of word types, over the strip of the band those rows cover) and takes each row's
minimum over the shapes in one array operation, so Python runs a handful of numpy calls per source
sentence, not one per shape and sentence as :func:`.sentences.banded_search` would: with twelve bead
shapes that per-call overhead was most of the time. The strip is as wide as the widest band row: the
``2 * WINDOW + 1`` cells around the first-pass path, plus the longest run of one-sided sentences the
path crosses, so time and memory are linear in the document length for a fixed longest run.

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
    bead_shapes,
    project_band,
    search_band,
    unit_rows,
    vecalign_normalisers,
)
from bitextflow.align.lexical import LexicalMatches, word_translations, words
from bitextflow.align.sentences import Bead, Bounds, beads_from_bounds, char_length, neg_log_match_probability

EMBEDDING_WEIGHT = 1.0
DICTIONARY_WEIGHT = 1.0
LENGTH_WEIGHT = 0.1
DELETION_COST = 1.2
#: Added to the cost of every bead that is neither 1-1 nor null.
MULTI_PENALTY = 0.1
#: DP rows whose bead costs are computed together (per shape: one sparse product for the dictionary
#: overlap, one dense product or row-wise products for the cosines); fewer, larger calls were faster.
BLOCK_ROWS = 512


class TokenEmbeddings(Protocol):
    """Anything that gives per-text token-vector sums and token counts (:class:`bitextflow.models.static.StaticEmbeddings`)."""

    def token_sums(self, texts: Sequence[str]) -> tuple[NDArray[np.float32], NDArray[np.int64]]: ...


def overlap_vectors(sums: NDArray[np.float32], counts: NDArray[np.int64], max_overlap: int) -> list[NDArray[np.float32]]:
    """Unit vectors of every run of ``k = 1..max_overlap`` consecutive sentences of one side.

    A run is the mean token vector of its sentences less the side's mean token vector (see the
    module docstring); ``result[k - 1][s]`` is the run of sentences ``s .. s + k - 1``.
    """
    total = max(int(counts.sum()), 1)
    centre = sums.sum(axis=0, dtype=np.float64) / total
    cum_sums = np.vstack([np.zeros((1, sums.shape[1])), np.cumsum(sums, axis=0, dtype=np.float64)])
    cum_counts = np.concatenate(([0.0], np.cumsum(counts, dtype=np.float64)))
    runs = []
    for k in range(1, max_overlap + 1):
        if k > len(sums):
            runs.append(np.zeros((0, sums.shape[1])))
            continue
        means = (cum_sums[k:] - cum_sums[:-k]) / np.maximum(cum_counts[k:] - cum_counts[:-k], 1.0)[:, None]
        runs.append(unit_rows(means - centre).astype(np.float32))
    return runs


class _StripCosts:
    """Costs of bead shapes over a band of the DP table, computed a block of rows at a time."""

    def __init__(
        self,
        src: Sequence[str],
        tgt: Sequence[str],
        src_vecs: list[NDArray[np.float32]],
        tgt_vecs: list[NDArray[np.float32]],
        dictionary: BilingualDictionary | None,
        shapes: Sequence[tuple[int, int]],
        weights: tuple[float, float, float],
        deletion_cost: float,
    ) -> None:
        self.n, self.m = len(src), len(tgt)
        self.deletion_cost = deletion_cost
        self.src_vecs, self.tgt_vecs = src_vecs, tgt_vecs
        self.src_norm = [vecalign_normalisers(v, tgt_vecs[0]) if len(v) else v[:, 0] for v in src_vecs]
        self.tgt_norm = [vecalign_normalisers(v, src_vecs[0]) if len(v) else v[:, 0] for v in tgt_vecs]
        translations = word_translations(dictionary)
        max_src, max_tgt = max(di for di, _ in shapes), max(dj for _, dj in shapes)
        self.lexical = LexicalMatches(
            [set(words(s, translations.stem_chars)) for s in src],
            [set(words(t, translations.stem_chars)) for t in tgt],
            translations,
            max_src,
            max_tgt,
        )
        self.src_cum = np.concatenate(([0.0], np.cumsum([char_length(s) for s in src], dtype=np.float64)))
        self.tgt_cum = np.concatenate(([0.0], np.cumsum([char_length(t) for t in tgt], dtype=np.float64)))
        self.embedding_weight, self.dictionary_weight, self.length_weight = weights

    def block(
        self,
        rows: NDArray[np.int64],
        lo: NDArray[np.int64],
        hi: NDArray[np.int64],
        width: int,
        shapes: Sequence[tuple[int, int]],
    ) -> NDArray[np.float64]:
        """Costs ``(shapes, len(rows), width)`` of the beads ending at row ``i`` and target ``lo[i] + c``; inf where impossible."""
        out = np.full((len(shapes), len(rows), width), np.inf)
        columns = lo[rows][:, None] + np.arange(width)[None, :]
        in_band = columns <= hi[rows][:, None]
        for code, (di, dj) in enumerate(shapes):
            starts_src = rows[:, None] - di
            starts_tgt = columns - dj
            valid = in_band & (starts_src >= 0) & (starts_tgt >= 0)
            if not valid.any():
                continue
            s = np.broadcast_to(starts_src, valid.shape)[valid]
            t = starts_tgt[valid]
            s0, s1, t0, t1 = int(s.min()), int(s.max()) + 1, int(t.min()), int(t.max()) + 1
            if dj == 0:
                out[code][valid] = self.deletion_cost
                continue
            length = neg_log_match_probability(self.src_cum[s + di] - self.src_cum[s], self.tgt_cum[t + dj] - self.tgt_cum[t])
            if 4 * len(s) >= (s1 - s0) * (t1 - t0):  # a wide band (the first pass): one dense product
                dots = (self.src_vecs[di - 1][s0:s1] @ self.tgt_vecs[dj - 1][t0:t1].T)[s - s0, t - t0]
            else:  # a narrow one: row-wise products of its cells (a BLAS call per shape cost more than it saved)
                dots = np.einsum("ij,ij->i", self.src_vecs[di - 1][s], self.tgt_vecs[dj - 1][t])
            # Sparse products over the rectangle: 30x faster here than gathering the band's cells' rows.
            sim = self.lexical.similarity(di, dj, s0, s1, t0, t1)[s - s0, t - t0]
            norm = self.src_norm[di - 1][s] + self.tgt_norm[dj - 1][t]
            factor = 2.0 * di * dj if di + dj > 2 else 2.0
            embedding = (1.0 - dots) * factor / norm
            out[code][valid] = (
                self.embedding_weight * embedding
                - self.dictionary_weight * sim * (di + dj) / 2.0
                + self.length_weight * length
                + (MULTI_PENALTY if di + dj > 2 else 0.0)
            )
        return out

    def scores(self, bounds: Sequence[Bounds]) -> NDArray[np.float64]:
        """Noisy-or of the embedding score and the dictionary similarity of each bead (0 for null beads)."""
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 4)
        di, dj = edges[:, 1] - edges[:, 0], edges[:, 3] - edges[:, 2]
        result = np.zeros(len(edges))
        for shape in {(int(a), int(b)) for a, b in zip(di, dj, strict=True) if a and b}:
            rows = np.flatnonzero((di == shape[0]) & (dj == shape[1]))
            s, t = edges[rows, 0], edges[rows, 2]
            x, y = self.src_vecs[shape[0] - 1][s], self.tgt_vecs[shape[1] - 1][t]
            norm = (self.src_norm[shape[0] - 1][s] + self.tgt_norm[shape[1] - 1][t]) / 2.0
            embedding = np.clip(1.0 - (1.0 - np.einsum("ij,ij->i", x, y)) / norm, 0.0, 1.0)
            sim = self.lexical.pair_similarity(shape[0], shape[1], s, t)
            result[rows] = 1.0 - (1.0 - embedding) * (1.0 - sim)
        return result


def strip_search(
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    costs: _StripCosts,
    shapes: Sequence[tuple[int, int]],
    deletion_cost: float,
) -> list[Bounds]:
    """Least-cost monotone path through the band ``lo..hi`` with bead ``shapes`` (``di >= 1``) plus 0-1 beads.

    The same recursion as :func:`.sentences.banded_search`, over a strip of fixed width where row
    ``i`` holds targets ``lo[i] .. lo[i] + width - 1``; every shape of a row is read with one fancy
    index and the 0-1 beads with the prefix-minimum trick.
    """
    n = len(lo) - 1
    width = int((hi - lo).max()) + 1
    di = np.array([d for d, _ in shapes], dtype=np.int64)
    dj = np.array([d for _, d in shapes], dtype=np.int64)
    keep = int(di.max()) + 1
    rows, cells, left = np.arange(n + 1), np.arange(width), len(shapes)
    # Row r of the DP lives in ring slot r % keep, between `width` cells of inf padding either side,
    # so a bead from a row whose band does not reach reads inf instead of needing a mask.
    ring = np.full((keep, 3 * width), np.inf)
    slots = (rows[:, None] - di[None, :]) % keep
    offsets = width + lo[:, None] - dj[None, :] - lo[np.maximum(rows[:, None] - di[None, :], 0)]
    beyond = np.where(lo[:, None] + cells[None, :] > hi[:, None], np.inf, 0.0)  # cells past the band or the document
    ramp = deletion_cost * cells
    pointers = np.full((n + 1, width), -1, dtype=np.int8)
    block: NDArray[np.float64] = np.empty((len(shapes), 0, width))
    block_start = 0
    for i in range(n + 1):
        if i == 0:
            best = np.full(width, np.inf)
            best[0] = 0.0
            pointer = np.full(width, -1, dtype=np.int64)
        else:
            if i - block_start >= block.shape[1]:
                block_start = i
                block = costs.block(np.arange(i, min(i + BLOCK_ROWS, n + 1)), lo, hi, width, shapes)
            columns = np.clip(cells[None, :] + offsets[i][:, None], 0, 3 * width - 1)
            # Rows before the document (i < di) read some other slot, but their bead costs are inf.
            candidates = ring[slots[i][:, None], columns] + block[:, i - block_start, :]
            pointer = np.argmin(candidates, axis=0)
            best = candidates[pointer, cells]
        # 0-1 beads: D[c] = min(best[c], D[c-1] + deletion); a prefix minimum after removing the ramp.
        shifted = best - ramp
        running = np.minimum.accumulate(shifted)
        pointer[running < shifted] = left
        ring[i % keep, width : 2 * width] = running + ramp + beyond[i]
        pointers[i] = pointer

    bounds: list[Bounds] = []
    i, j = n, int(hi[n])
    while i > 0 or j > 0:
        code = int(pointers[i][j - int(lo[i])])
        step_i, step_j = (0, 1) if code == left else shapes[code]
        bounds.append((i - step_i, i, j - step_j, j))
        i, j = i - step_i, j - step_j
    bounds.reverse()
    return bounds


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
    n, m = len(src), len(tgt)
    shapes = bead_shapes(overlap)
    costs = _StripCosts(src, tgt, src_vecs, tgt_vecs, dictionary, shapes, weights, deletion_cost)
    # First pass: 1-1 and null beads at full cost over the whole table (coarse to fine beyond
    # max_cells, on sentence vectors alone), then the fine pass within window of that path.
    lo, hi = search_band(src_vecs[0], tgt_vecs[0], max_cells, window)
    path = strip_search(lo, hi, costs, ((1, 1), (1, 0)), deletion_cost)
    lo, hi = project_band(path, n, m, window, factor=1)
    bounds = strip_search(lo, hi, costs, shapes, deletion_cost)
    return beads_from_bounds(bounds, costs.scores(bounds))
