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
extra factor on top for every bead that is not 1-1 (0: the paper's cost).

``DELETION_COST``, ``MULTI_PENALTY`` and ``DEFAULT_MAX_OVERLAP`` are the setting selected on the
six gold files we have (Bleualign de-fr dev and test0-3, hunalign's en-hu ``dtm``) by
``bench/sentence_alignment.py``, over deletion costs 0.6-1.2, penalties 0 and 0.1 and overlaps of
2-4: strict F1 on Bleualign test0-3 0.895 with it, 0.893 when each file is aligned with the setting
selected on the five others (leave one file out; docs/benchmarks.md). Larger beads (``di + dj <= 6``
or 8) and rewarding the Hunalign dictionary overlap of a bead (cost times ``1 - a * sim``, a in
0.2-0.5) did not help on dev earlier; adding the dictionary and length as terms does
(:mod:`.hybrid`).

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
no closer than an average unrelated one; 0 for null beads. For the score, ``norm(x)`` is ``x``'s distance to the
mean of the other side's sentences *outside the bead* (:class:`Background`: and of what that language looks like
over many documents, counted as one more sentence): Vecalign's normaliser counts the bead's own translation among
the unrelated sentences, which a long document dilutes but which makes every bead of a one-sentence document pair
score 0 and those of a three-sentence one half what they should. The search's costs keep Vecalign's normaliser.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from bitextflow.align.blocks import BlockPlan
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


@dataclass(frozen=True)
class Background:
    """What a sentence of each side's language is like beyond one document pair: the mean of its unit sentence vectors
    over many documents (``align_sentences`` takes a shard's), a prior for the scores' unrelated sentences."""

    src: NDArray[np.float64]
    tgt: NDArray[np.float64]

    @classmethod
    def of(cls, src_vectors: NDArray[np.float64], tgt_vectors: NDArray[np.float64]) -> Background | None:
        """The background of two sides' sentence vectors (rows; normalised here), None when a side has none."""
        if not len(src_vectors) or not len(tgt_vectors):
            return None
        return cls(
            unit_rows(np.asarray(src_vectors, np.float64)).mean(axis=0),
            unit_rows(np.asarray(tgt_vectors, np.float64)).mean(axis=0),
        )


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


class EmbeddingCosts:
    """Vecalign's bead costs over overlap embeddings: ``src[k - 1][s]`` embeds source sentences ``s..s+k-1``.

    Groups of overlaps longer than the document are empty arrays; the search never asks for them.
    """

    def __init__(
        self,
        src: list[NDArray[np.float64]],
        tgt: list[NDArray[np.float64]],
        deletion: float,
        penalty: float,
        background: Background | None = None,
    ) -> None:
        self.src, self.tgt = src, tgt
        self.src_norm = [vecalign_normalisers(v, tgt[0]) if len(v) else v[:, 0] for v in src]
        self.tgt_norm = [vecalign_normalisers(v, src[0]) if len(v) else v[:, 0] for v in tgt]
        self.deletion, self.penalty = deletion, penalty
        self.background = background

    def cosine_cost(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """``(1 - cos) / mean norm * di * dj`` (x ``1 + penalty`` beyond 1-1) of beads with both sides non-empty."""
        x, y = self.src[di - 1], self.tgt[dj - 1]
        s0, s1, t0, t1 = int(s.min()), int(s.max()) + 1, int(t.min()), int(t.max()) + 1
        if 4 * len(s) >= (s1 - s0) * (t1 - t0):  # a wide band (a full table, a first pass): one dense product
            dots = (x[s0:s1] @ y[t0:t1].T)[s - s0, t - t0]
        else:  # a narrow one: row-wise products of its cells (a BLAS call per shape cost more than it saved)
            dots = np.einsum("ij,ij->i", x[s], y[t])
        factor = 2.0 * di * dj * (1.0 + self.penalty) if di + dj > 2 else 2.0
        result: NDArray[np.float64] = (1.0 - dots) * factor / (self.src_norm[di - 1][s] + self.tgt_norm[dj - 1][t])
        return result

    def bead_cost(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """The search's :data:`.sentences.BeadCost`: :meth:`cosine_cost`, or the deletion cost for null beads."""
        if di == 0 or dj == 0:
            return np.full(len(s), self.deletion)
        return self.cosine_cost(di, dj, s, t)

    def scores(self, bounds: Sequence[Bounds]) -> NDArray[np.float64]:
        """``clip(1 - (1 - cos) / mean norm, 0, 1)`` of each bead (0 for null beads), one product per bead shape, each
        side's norm its distance to the other side's sentences outside the bead (see the module docstring)."""
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 4)
        di, dj = edges[:, 1] - edges[:, 0], edges[:, 3] - edges[:, 2]
        result = np.zeros(len(edges))
        background = self.background
        src_sums, tgt_sums = _cumulative(self.src[0]), _cumulative(self.tgt[0])
        for a, b in {(int(x), int(y)) for x, y in zip(di, dj, strict=True) if x and y}:
            rows = np.flatnonzero((di == a) & (dj == b))
            s, t = edges[rows, 0], edges[rows, 2]
            x, y = self.src[a - 1][s], self.tgt[b - 1][t]
            cosine = np.einsum("ij,ij->i", x, y)
            norm_x = _unrelated_distance(x, tgt_sums, t, b, None if background is None else background.tgt)
            norm_y = _unrelated_distance(y, src_sums, s, a, None if background is None else background.src)
            result[rows] = np.clip(1.0 - (1.0 - cosine) / ((norm_x + norm_y) / 2.0), 0.0, 1.0)
        return result


def _cumulative(rows: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row ``k`` is the sum of ``rows[:k]``."""
    return np.vstack([np.zeros((1, rows.shape[1])), np.cumsum(rows, axis=0, dtype=np.float64)])


def _unrelated_distance(
    vectors: NDArray[np.float64],
    cumulative: NDArray[np.float64],
    starts: NDArray[np.int64],
    length: int,
    background: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    """``1 - cos`` of each row of ``vectors`` to the mean of the other side's rows (their :func:`_cumulative` sums)
    outside ``starts[i] .. + length`` (the bead's) and of ``background`` as one more row; where nothing is left, to the
    mean of all of the other side's rows."""
    sentences = len(cumulative) - 1
    outside = cumulative[-1] - (cumulative[starts + length] - cumulative[starts])
    count = np.full(len(starts), float(sentences - length))
    if background is not None:
        outside = outside + background
        count += 1.0
    empty = count == 0
    outside[empty] = cumulative[-1]
    count[empty] = float(sentences)
    return np.maximum(1.0 - np.einsum("ij,ij->i", vectors, outside) / count, MIN_NORM)


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
    costs = EmbeddingCosts([coarse_src], [coarse_tgt], COARSE_DELETION_COST, 0.0)
    bounds = banded_search(lo, hi, costs.bead_cost, shapes=((1, 1), (1, 0)))
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
    plan: BlockPlan | None = None,
    background: Background | None = None,
) -> list[Bead]:
    """Align two sentence lists by overlap embeddings (Vecalign); see the module docstring.

    ``encoder.encode(texts)`` must return one row per text (L2-normalised or not: rows are
    normalised here). Returns beads in document order covering every sentence exactly once; if
    either side is empty, every sentence of the other becomes a null bead scoring 0 and nothing is
    encoded. ``plan``: the page's blocks (:mod:`.blocks`); ``background``: the scores' prior of unrelated sentences.
    """
    if not src or not tgt:
        return [Bead((i,), (), 0.0) for i in range(len(src))] + [Bead((), (j,), 0.0) for j in range(len(tgt))]
    overlap = max(1, min(max_overlap, max(len(src), len(tgt))))
    src_groups, tgt_groups = _overlap_texts(src, overlap), _overlap_texts(tgt, overlap)
    embedded = _embed(src_groups + tgt_groups, encoder)
    costs = EmbeddingCosts(embedded[:overlap], embedded[overlap:], deletion_cost, multi_penalty, background)
    if plan is not None and plan.corresponding:
        lo, hi = plan.band()
    else:
        lo, hi = search_band(costs.src[0], costs.tgt[0], max_cells, window)
    cost = costs.bead_cost if plan is None else plan.cost(costs.bead_cost, deletion_cost)
    bounds = banded_search(lo, hi, cost, shapes=bead_shapes(overlap))
    return beads_from_bounds(bounds, costs.scores(bounds))
