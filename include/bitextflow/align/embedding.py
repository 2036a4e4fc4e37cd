"""Embedding-based sentence alignment in the manner of Vecalign.

Thompson, B. and Koehn, P. (2019), "Vecalign: Improved Sentence Alignment in Linear Time and Space",
Proceedings of EMNLP-IJCNLP 2019, 1342-1348. Every sentence, and every concatenation of up to
``max_overlap`` consecutive sentences (an *overlap*), is embedded with a multilingual sentence
encoder; a bead costs the cosine distance between its two sides' overlap embeddings, normalised by
how far each side is from unrelated sentences of the other document::

    cost(x, y)   = (1 - cos(x, y)) / ((norm(x) + norm(y)) / 2) * di * dj * (1 + MULTI_PENALTY if di + dj > 2 else 1)
    norm(x)      = mean over the other side's sentences y' of (1 - cos(x, y'))
    cost(1-0)    = cost(0-1) = DELETION_COST

The normalisation is the paper's: without it, sentences that embed close to everything (short
ones, names, numbers) would be cheap to pair with anything. The paper samples random pairs; the mean
of ``1 - x.y'`` over all of the other side is ``1 - x.mean(y')``, so we take it exactly, with no
sampling and no randomness. The factor ``di * dj`` is the paper's (its ``nSents(x) nSents(y)``):
a concatenation of two good pairs embeds closer than either pair alone, and without the factor the
search merges everything into 2-2 beads (strict F1 0.23 on the dev file). ``MULTI_PENALTY`` is an
extra factor on top for every bead that is not 1-1; on the dev file 0 was best (over -0.2..0.25).

Parameters were chosen on the Bleualign ``dev`` file only (test files held out). With overlaps of
up to 3: ``DELETION_COST`` over 0.3-1.0 and ``MULTI_PENALTY`` over -0.2-0.25, strict F1 0.72-0.78
on dev, best 0.779 at (0.6, 0.0). Overlaps of up to 4 (beads with ``di + dj <= 5``) raised dev to
0.808 at 0.6; over deletion costs 0.6-1.0 the best was 0.8105 at 0.8 (test0-3: 0.879 -> 0.895
strict, 0.978 -> 0.990 lax). Larger beads (``di + dj <= 6`` or 8) and rewarding the Hunalign
dictionary overlap of a bead (cost times ``1 - a * sim``, a in 0.2-0.5) did not help on dev.

Beads: 1-1, 1-0, 0-1, 2-1, 1-2, 2-2, 3-1, 1-3, and with ``max_overlap = 4`` (default) also 4-1,
1-4, 3-2 and 2-3: shapes with ``di + dj <= max_overlap + 1``. The search is :func:`.sentences.banded_search`, the same
vectorised dynamic programme as Gale-Church and Hunalign, with the bead shapes as a parameter.

Coarse to fine, as in the paper: when the full table has more than ``max_cells`` cells, sentence
vectors are averaged in pairs (recursively, until the table fits), the coarse documents are aligned
with 1-1, 1-0 and 0-1 beads, and the coarse path, projected to the finer level and widened by
:data:`WINDOW` sentences either side, is the band searched at that level. Each level costs
O(n * (2 + 2 * WINDOW)) cells, and the levels halve in size, so time and memory are linear in the
document length.

Identical overlap strings (on either side) are embedded once per call. Bead score, in [0, 1]:
``1 - (1 - cos) / ((norm(x) + norm(y)) / 2)`` clipped, 1 for identical embeddings and 0 for a pair
no closer than an average unrelated one; 0 for null beads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from bitextflow.align.sentences import Bead, Bounds, banded_search, beads_from_bounds

#: Most sentences on one side of a bead; bead shapes have di + dj <= max_overlap + 1 (3: the paper's di + dj <= 4).
DEFAULT_MAX_OVERLAP = 4
#: Cost of a 1-0 or 0-1 bead, in units of the cost of an average unrelated pair (which is 1).
DELETION_COST = 0.8
#: Extra cost factor, on top of ``di * dj``, of every bead that is not 1-1 (0: the paper's cost).
MULTI_PENALTY = 0.0
#: Full-table search up to this many cells; larger documents are aligned coarse to fine.
DEFAULT_MAX_CELLS = 1_000_000
#: Sentences either side of the projected coarse path searched at the finer level.
WINDOW = 10
#: Cost of a null bead at the coarse levels: as much as an average unrelated pair, so the coarse path
#: leaves the diagonal only for runs of untranslated text, not to dodge half-block offsets; the
#: deletions themselves are placed at the finest level, inside the window.
COARSE_DELETION_COST = 1.0
#: Floor of the normalisation, so a one-sentence other side cannot make every cost explode.
MIN_NORM = 1e-2


class Encoder(Protocol):
    """Anything that embeds texts as L2-normalised rows (e.g. :class:`bitextflow.models.encoder.SentenceEncoder`)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def bead_shapes(max_overlap: int) -> tuple[tuple[int, int], ...]:
    """Shapes taken from earlier rows (``di >= 1``), 1-1 first; 0-1 is implicit in the search."""
    shapes = [(1, 1), (1, 0)]
    shapes += [
        (di, dj)
        for di in range(1, max_overlap + 1)
        for dj in range(1, max_overlap + 1)
        if di + dj <= max_overlap + 1 and (di, dj) != (1, 1)
    ]
    return tuple(shapes)


def unit_rows(vectors: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each row scaled to length 1 (a zero row stays zero)."""
    lengths = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: NDArray[np.float64] = vectors / np.maximum(lengths, 1e-12)
    return result


def vecalign_normalisers(vectors: NDArray[np.float64], other: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean cosine distance of each row of ``vectors`` to the rows of ``other`` (the normaliser)."""
    result: NDArray[np.float64] = np.maximum(1.0 - vectors @ other.mean(axis=0), MIN_NORM)
    return result


class _Costs:
    """Bead costs over overlap embeddings: ``src[k - 1][s]`` embeds source sentences ``s..s+k-1``."""

    def __init__(self, src: list[NDArray[np.float64]], tgt: list[NDArray[np.float64]], deletion: float, penalty: float) -> None:
        self.src, self.tgt = src, tgt
        self.src_norm = [vecalign_normalisers(v, tgt[0]) for v in src]
        self.tgt_norm = [vecalign_normalisers(v, src[0]) for v in tgt]
        self.deletion, self.penalty = deletion, penalty
        self.insert_cost = np.full(len(tgt[0]) + 1, deletion)

    def distance(self, s0: int, di: int, t0: int, dj: int) -> float:
        """Normalised cosine distance of one bead (both sides non-empty), without the shape penalty."""
        x, y = self.src[di - 1][s0], self.tgt[dj - 1][t0]
        norm = (self.src_norm[di - 1][s0] + self.tgt_norm[dj - 1][t0]) / 2.0
        return float((1.0 - x @ y) / norm)

    def bead_cost(self, i: int, di: int, dj: int, lo: int, hi: int) -> NDArray[np.float64]:
        if dj == 0:
            return np.full(hi - lo + 1, self.deletion)
        out = np.full(hi - lo + 1, np.inf)
        start = max(lo, dj)
        if start > hi or dj > len(self.tgt) or di > len(self.src):
            return out
        x, nx = self.src[di - 1][i - di], self.src_norm[di - 1][i - di]
        ys = self.tgt[dj - 1][start - dj : hi - dj + 1]
        ny = self.tgt_norm[dj - 1][start - dj : hi - dj + 1]
        factor = 2.0 * di * dj * (1.0 + self.penalty) if di + dj > 2 else 2.0
        out[start - lo :] = (1.0 - ys @ x) * factor / (nx + ny)
        return out


def _downsample(vectors: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mean of consecutive pairs of rows (the last row alone if the count is odd), re-normalised."""
    n = len(vectors)
    pairs = vectors[: n - n % 2].reshape(n // 2, 2, -1).sum(axis=1)
    if n % 2:
        pairs = np.vstack([pairs, vectors[-1:]])
    return unit_rows(pairs)


def _full_band(n: int, m: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    return np.zeros(n + 1, dtype=np.int64), np.full(n + 1, m, dtype=np.int64)


def project_band(
    bounds: Sequence[Bounds], n: int, m: int, window: int, factor: int = 2
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Band at the finer level (``n`` x ``m``, ``factor`` times the path's) around a path, ``window`` either side."""
    lo = np.full(n + 1, m, dtype=np.int64)
    hi = np.zeros(n + 1, dtype=np.int64)
    for s0, s1, t0, t1 in bounds:
        r0, r1 = min(factor * s0, n), min(factor * s1, n)
        c0, c1 = min(factor * t0, m), min(factor * t1, m)
        lo[r0 : r1 + 1] = np.minimum(lo[r0 : r1 + 1], c0)
        hi[r0 : r1 + 1] = np.maximum(hi[r0 : r1 + 1], c1)
    lo = np.clip(lo - window, 0, m)
    hi = np.maximum.accumulate(np.clip(hi + window, 0, m))
    lo[1:] = np.minimum(lo[1:], hi[:-1])
    lo[0], hi[-1] = 0, m
    return lo, hi


def search_band(
    src: NDArray[np.float64], tgt: NDArray[np.float64], max_cells: int, window: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Search band for sentence vectors ``src`` x ``tgt``: the full table, or around a coarse path."""
    n, m = len(src), len(tgt)
    if (n + 1) * (m + 1) <= max_cells or min(n, m) < 2:
        return _full_band(n, m)
    coarse_src, coarse_tgt = _downsample(src), _downsample(tgt)
    lo, hi = search_band(coarse_src, coarse_tgt, max_cells, window)
    costs = _Costs([coarse_src], [coarse_tgt], COARSE_DELETION_COST, 0.0)
    bounds = banded_search(lo, hi, costs.bead_cost, costs.insert_cost, shapes=((1, 1), (1, 0)))
    return project_band(bounds, n, m, window)


def _overlap_texts(sentences: Sequence[str], max_overlap: int) -> list[list[str]]:
    return [
        [" ".join(s.strip() for s in sentences[i : i + k]) for i in range(len(sentences) - k + 1)]
        for k in range(1, max_overlap + 1)
    ]


def _embed(groups: list[list[str]], encoder: Encoder) -> list[NDArray[np.float64]]:
    """Embed every string of every group, each distinct string once; one array per group."""
    index: dict[str, int] = {}
    for group in groups:
        for text in group:
            index.setdefault(text, len(index))
    vectors = np.asarray(encoder.encode(list(index)), dtype=np.float64).reshape(len(index), -1)
    vectors = unit_rows(vectors)
    return [vectors[[index[text] for text in group]] if group else np.zeros((0, vectors.shape[1])) for group in groups]


def align_sentences_embedding(
    src: Sequence[str],
    tgt: Sequence[str],
    encoder: Encoder,
    max_overlap: int = DEFAULT_MAX_OVERLAP,
    deletion_cost: float = DELETION_COST,
    multi_penalty: float = MULTI_PENALTY,
    max_cells: int = DEFAULT_MAX_CELLS,
    window: int = WINDOW,
) -> list[Bead]:
    """Align two sentence lists by overlap embeddings (Vecalign); see the module docstring.

    ``encoder.encode(texts)`` must return one row per text (L2-normalised or not: rows are
    normalised here). Returns beads in document order covering every sentence exactly once; if
    either side is empty, every sentence of the other becomes a null bead scoring 0 and nothing is
    encoded.
    """
    if not src or not tgt:
        return [Bead((i,), (), 0.0) for i in range(len(src))] + [Bead((), (j,), 0.0) for j in range(len(tgt))]
    overlap = max(1, min(max_overlap, max(len(src), len(tgt))))
    src_groups, tgt_groups = _overlap_texts(src, overlap), _overlap_texts(tgt, overlap)
    embedded = _embed(src_groups + tgt_groups, encoder)
    src_vecs = [v for v in embedded[:overlap] if len(v)]
    tgt_vecs = [v for v in embedded[overlap:] if len(v)]
    costs = _Costs(src_vecs, tgt_vecs, deletion_cost, multi_penalty)
    lo, hi = search_band(src_vecs[0], tgt_vecs[0], max_cells, window)
    bounds = banded_search(lo, hi, costs.bead_cost, costs.insert_cost, shapes=bead_shapes(overlap))
    scores = [
        0.0 if s0 == s1 or t0 == t1 else min(1.0, max(0.0, 1.0 - costs.distance(s0, s1 - s0, t0, t1 - t0)))
        for s0, s1, t0, t1 in bounds
    ]
    return beads_from_bounds(bounds, scores)
