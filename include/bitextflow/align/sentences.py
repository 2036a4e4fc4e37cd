"""Length-based sentence alignment within an aligned document pair.

Implements Gale, W. A. and Church, K. W. (1993), "A Program for Aligning Sentences in Bilingual
Corpora", Computational Linguistics 19(1), 75-102. Sentences are aligned by character length
alone: translations have lengths in a roughly constant ratio ``c`` and the difference
``l2 - c*l1`` is normally distributed with variance ``s2 * l1``. It needs no dictionary and no model,
so it is the baseline that works for every language pair, and its per-bead length probability is a
cheap confidence signal for the filters downstream.

Parameters are the paper's: ``c = 1``, ``s2 = 6.8`` and the bead priors of its Table 5 as the
original ``align`` program used them (each of 1-0 and 0-1 has 0.0099, each of 2-1 and 1-2 has 0.089).
The length difference is standardised with the symmetric mean ``(l1 + l2/c) / 2`` as in the program,
so that a 1-0 bead (``l2 = 0``) still has a finite cost, and the two-tailed normal tail is computed
with the program's Abramowitz-Stegun form, in log space so long sentences never underflow to an
infinite cost.

Instead of the paper's paragraph-by-paragraph pass (our documents arrive as flat sentence lists),
the dynamic programme runs over the whole document inside a band around the expected path; see
:func:`align_sentences` for how wide the band is and why.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from bitextflow.text.lengths import weighted_length

if TYPE_CHECKING:
    from bitextflow.align.blocks import BlockPlan

#: Expected target characters per source character (the paper's c).
MEAN_RATIO = 1.0
#: Variance of the length difference per source character (the paper's s^2).
VARIANCE = 6.8

#: Bead shapes (source sentences, target sentences) and their prior probabilities (Table 5).
BEAD_PRIORS: dict[tuple[int, int], float] = {
    (1, 1): 0.89,
    (1, 0): 0.0099,
    (0, 1): 0.0099,
    (2, 1): 0.089,
    (1, 2): 0.089,
    (2, 2): 0.011,
}

#: Default budget of dynamic-programming cells: a 2,000 x 2,000 document still gets the exact,
#: unbanded search; larger ones are banded (see :func:`align_sentences`).
DEFAULT_MAX_CELLS = 5_000_000
#: The band never gets narrower than this many target sentences either side of the expected path.
MIN_HALF_WIDTH = 100

# Bead shapes that the vectorised row step takes from earlier rows; (0, 1) is the in-row scan.
_FROM_ABOVE: tuple[tuple[int, int], ...] = ((1, 1), (1, 0), (2, 1), (1, 2), (2, 2))
_PRIOR_COST = {shape: -math.log(p) for shape, p in BEAD_PRIORS.items()}
# Abramowitz and Stegun 26.2.17, the normal tail used by the original program.
_AS_P = 0.2316419
_AS_B = (0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
_LOG_2_OVER_SQRT_2PI = math.log(2.0) - 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Bead:
    """One alignment unit: source sentence indices ``src`` translate target indices ``tgt``.

    ``score`` is the two-tailed probability ``2 * (1 - Phi(|delta|))`` of a length mismatch at least
    this large between true translations (the paper's ``P(delta | match)``): 1.0 when the lengths are
    exactly in ratio ``c``, near 0 when they are implausible. It leaves out the bead-shape prior so
    that a well-fitting 2-1 bead scores as high as a well-fitting 1-1 bead; for a 1-0 or 0-1 bead it
    is the probability of the sentence having an empty translation, near 0 unless it is very short.
    """

    src: tuple[int, ...]
    tgt: tuple[int, ...]
    score: float


#: The least and most a document pair's length ratio may scale its target lengths (:class:`LengthModel`): a page pair
#: whose text is mostly on one side (an unfinished translation) does not stretch the other side's sentences beyond it.
DOCUMENT_RATIO_RANGE = (0.25, 4.0)


def char_length(sentence: str) -> float:
    """Length in characters, the paper's unit, not counting whitespace, in Latin-character equivalents.

    Spacing conventions differ between languages and tokenisers (French spaces before ``:;?!``),
    so whitespace adds noise, not signal; the original program also skipped spaces. On the
    Bleualign de-fr dev set this lifts strict F1 from 0.53 (whitespace counted) to 0.62.

    The paper's mean ratio of 1 holds between alphabets, not for a Chinese sentence, which has about a third as
    many characters as its English translation: counted in characters, a 1-1 bead of a sentence and its translation
    looked three standard deviations too short, and the search preferred to join two Chinese sentences against one
    English sentence (:func:`bitextflow.text.lengths.weighted_length` weighs Han, kana and Hangul characters; every
    other character still counts one, so alphabetic pairs keep the paper's unit).
    """
    return weighted_length("".join(sentence.split()))


def neg_log_match_probability(len_src: float | NDArray[np.float64], len_tgt: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """``-ln P(delta | match)`` for summed source and target lengths (arrays or scalars)."""
    mean = (len_src + np.asarray(len_tgt) / MEAN_RATIO) / 2.0
    # Both lengths 0 gives 0 / tiny = 0: two empty sides match perfectly.
    delta = np.abs(MEAN_RATIO * len_src - len_tgt) / np.maximum(np.sqrt(VARIANCE * mean), 1e-12)
    t = 1.0 / (1.0 + _AS_P * delta)
    poly = t * (_AS_B[0] + t * (_AS_B[1] + t * (_AS_B[2] + t * (_AS_B[3] + t * _AS_B[4]))))
    # 2 * (1 - Phi(z)) = 2 * phi(z) * poly(t). The approximation is off by up to 1e-7 near z = 0:
    # clip so no probability exceeds 1, and make a perfect length match exactly 1.
    log_p = _LOG_2_OVER_SQRT_2PI - 0.5 * delta * delta + np.log(poly)
    result: NDArray[np.float64] = np.where(delta > 0, -np.minimum(log_p, 0.0), 0.0)
    return result


def _band(
    src_cum: NDArray[np.float64], tgt_cum: NDArray[np.float64], half_width: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Lowest and highest target index of each DP row (rows are source prefixes 0..n).

    The centre of row ``i`` is the target prefix whose character length matches the first ``i``
    source sentences scaled by the document's overall length ratio: length-based alignment follows
    that line, and only insertions, deletions and local length noise pull it away. Rows are widened
    so that each starts no later than the previous one ends, which keeps a monotone path from
    (0, 0) to (n, m) inside the band whatever the centres do.
    """
    n, m = len(src_cum) - 1, len(tgt_cum) - 1
    if src_cum[-1] > 0 and tgt_cum[-1] > 0:
        expected = src_cum * (tgt_cum[-1] / src_cum[-1])
        centre = np.searchsorted(tgt_cum, expected, side="left").astype(np.int64)
    else:
        centre = (np.arange(n + 1, dtype=np.int64) * m) // max(n, 1)
    centre[0], centre[-1] = 0, m
    lo = np.clip(centre - half_width, 0, m)
    hi = np.clip(centre + half_width, 0, m)
    hi = np.maximum.accumulate(hi)
    lo[1:] = np.minimum(lo[1:], hi[:-1])
    return lo, hi


def unaligned_beads(src_len: Sequence[int], tgt_len: Sequence[int]) -> list[Bead]:
    """All 1-0 then all 0-1 beads: the only alignment when one side is empty."""
    src_scores = np.exp(-neg_log_match_probability(np.asarray(src_len, dtype=np.float64), 0.0))
    tgt_scores = np.exp(-neg_log_match_probability(0.0, np.asarray(tgt_len, dtype=np.float64)))
    beads = [Bead((i,), (), float(score)) for i, score in enumerate(src_scores)]
    beads += [Bead((), (j,), float(score)) for j, score in enumerate(tgt_scores)]
    return beads


#: Cost of beads of one shape: ``bead_cost(di, dj, s, t)`` -> one cost per bead whose source side starts
#: at sentence ``s[k]`` and its target side at ``t[k]`` (``di`` and ``dj`` sentences; index arrays of
#: equal length). The search asks only for beads inside its band, and for the 0-1 beads once per target
#: sentence with ``s`` all 0: their cost may depend on the target sentence only.
BeadCost = Callable[[int, int, NDArray[np.int64], NDArray[np.int64]], NDArray[np.float64]]
#: Bead bounds ``(first source, end source, first target, end target)``, ends exclusive.
Bounds = tuple[int, int, int, int]
#: Cells per shape priced in one ``bead_cost`` call at most (fewer, larger calls are faster: with twelve
#: shapes, one call per shape and row was most of the hybrid aligner's time); bounds a block's memory.
BLOCK_CELLS = 1 << 18
#: DP rows priced in one ``bead_cost`` call at most.
BLOCK_ROWS = 512


class LengthModel:
    """The Gale-Church cost and probability of beads over one document pair's sentence lengths.

    The target lengths are scaled by the document's own length ratio (source over target, within
    :data:`DOCUMENT_RATIO_RANGE`), so the paper's expected ratio of 1 holds for every pair and translator: Gale and
    Church took ``c = 1`` from English, French and German, and a Chinese translation is shorter even in
    Latin-character equivalents, a Japanese one or a terse translator's by a few tenths. Each document pair estimates
    its ratio from its whole text (the paper fixed it per pair of languages); measured in docs/benchmarks.md ("Release precision by language pair": wrong released pairs 38 -> 28 over five
    runs, en-es's Reference 13 -> 8).

    Shared by every aligner that adds a length term: the Gale-Church aligner uses it alone, the
    dictionary aligner (:mod:`.lexical`) adds a lexical term to it, the hybrid one (:mod:`.hybrid`) more.
    """

    def __init__(self, src_len: Sequence[float], tgt_len: Sequence[float]) -> None:
        self.n, self.m = len(src_len), len(tgt_len)
        self.src_cum = np.concatenate(([0.0], np.cumsum(src_len, dtype=np.float64)))
        self.tgt_cum = np.concatenate(([0.0], np.cumsum(tgt_len, dtype=np.float64)))
        if self.src_cum[-1] > 0 and self.tgt_cum[-1] > 0:
            self.tgt_cum *= np.clip(self.src_cum[-1] / self.tgt_cum[-1], *DOCUMENT_RATIO_RANGE)

    def mismatch(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """``-ln P(delta | match)`` of the beads starting at ``(s[k], t[k])`` (see :data:`BeadCost`)."""
        return neg_log_match_probability(self.src_cum[s + di] - self.src_cum[s], self.tgt_cum[t + dj] - self.tgt_cum[t])

    def bead_cost(self, di: int, dj: int, s: NDArray[np.int64], t: NDArray[np.int64]) -> NDArray[np.float64]:
        """``-ln P(delta | match) - ln P(shape)``: the Gale-Church cost, a :data:`BeadCost`."""
        return self.mismatch(di, dj, s, t) + _PRIOR_COST[(di, dj)]

    def band(self, max_cells: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The search band for a cell budget; see :func:`align_sentences` for the width."""
        if (self.n + 1) * (self.m + 1) <= max_cells:
            half_width = self.m
        else:
            half_width = max(MIN_HALF_WIDTH, max_cells // (2 * (self.n + 1)))
        return _band(self.src_cum, self.tgt_cum, half_width)

    def probabilities(self, bounds: Sequence[Bounds]) -> NDArray[np.float64]:
        """``P(delta | match)`` of each bead: the Gale-Church bead score."""
        edges = np.array(bounds, dtype=np.int64).reshape(-1, 4)
        len_s = self.src_cum[edges[:, 1]] - self.src_cum[edges[:, 0]]
        len_t = self.tgt_cum[edges[:, 3]] - self.tgt_cum[edges[:, 2]]
        result: NDArray[np.float64] = np.exp(-neg_log_match_probability(len_s, len_t))
        return result


def _block_costs(
    bead_cost: BeadCost,
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
        if valid.any():
            out[code][valid] = bead_cost(di, dj, np.broadcast_to(starts_src, valid.shape)[valid], starts_tgt[valid])
    return out


def banded_search(
    lo: NDArray[np.int64],
    hi: NDArray[np.int64],
    bead_cost: BeadCost,
    shapes: Sequence[tuple[int, int]] = _FROM_ABOVE,
) -> list[Bounds]:
    """Least-cost monotone path of beads of ``shapes`` plus 0-1 beads inside a band; its bead bounds.

    The one dynamic programme of every sentence aligner here: an aligner only prices beads
    (:data:`BeadCost`). Rows are source prefixes ``0..n``; row ``i`` covers target prefixes
    ``lo[i]..hi[i]``, held in a strip of fixed width (the widest row) where cell ``c`` is target
    ``lo[i] + c``. ``shapes`` are the beads taken from earlier rows (each ``di >= 1``; default the
    five Gale-Church shapes 1-1, 1-0, 2-1, 1-2, 2-2); the 0-1 bead is always searched. Bead costs
    are asked for a block of rows at a time, every shape of a row is read from the earlier rows with
    one fancy index, and the in-row 0-1 recursion ``D[c] = min(A[c], D[c-1] + insert[c])`` is a prefix
    minimum of ``A - cumsum(insert)``, so Python runs a handful of numpy calls per row, none per cell
    or per shape. Time and memory are O(cells in the strip): linear in the document length for a
    band of fixed width.
    """
    n, m = len(lo) - 1, int(hi[-1])
    width = int((hi - lo).max()) + 1
    di = np.array([d for d, _ in shapes], dtype=np.int64)
    dj = np.array([d for _, d in shapes], dtype=np.int64)
    keep = int(di.max()) + 1
    rows, cells, left = np.arange(n + 1), np.arange(width), len(shapes)
    # insert[j]: the 0-1 bead ending at target prefix j; 0 past the document, where cells are inf anyway.
    insert = np.concatenate(([0.0], bead_cost(0, 1, np.zeros(m, dtype=np.int64), np.arange(m)), [0.0]))
    # Row r of the DP lives in ring slot r % keep, between `width` cells of inf padding either side,
    # so a bead from a row whose band does not reach reads inf instead of needing a mask.
    ring = np.full((keep, 3 * width), np.inf)
    slots = (rows[:, None] - di[None, :]) % keep
    offsets = width + lo[:, None] - dj[None, :] - lo[np.maximum(rows[:, None] - di[None, :], 0)]
    block_rows = max(1, min(BLOCK_ROWS, BLOCK_CELLS // width))
    pointers = np.full((n + 1, width), -1, dtype=np.int8)
    block: NDArray[np.float64] = np.empty((len(shapes), 0, width))
    block_start = 0
    for i in range(n + 1):
        if i == 0:
            best = np.full(width, np.inf)
            best[0] = 0.0  # lo[0] == 0: the empty prefix pair costs nothing
            pointer = np.full(width, -1, dtype=np.int64)
        else:
            if i - block_start >= block.shape[1]:
                block_start = i
                block = _block_costs(bead_cost, np.arange(i, min(i + block_rows, n + 1)), lo, hi, width, shapes)
            columns = np.clip(cells[None, :] + offsets[i][:, None], 0, 3 * width - 1)
            # Rows before the document (i < di) read some other slot, but their bead costs are inf.
            candidates = ring[slots[i][:, None], columns] + block[:, i - block_start, :]
            pointer = np.argmin(candidates, axis=0)
            best = candidates[pointer, cells]
        # No 0-1 bead enters the row's first cell; cells past the band are set to inf below.
        step = insert[np.minimum(lo[i] + cells, m + 1)]
        step[0] = 0.0
        ramp = np.cumsum(step)
        shifted = best - ramp
        running = np.minimum.accumulate(shifted)
        pointer[running < shifted] = left
        ring[i % keep, width : 2 * width] = np.where(lo[i] + cells > hi[i], np.inf, running + ramp)
        pointers[i] = pointer

    bounds: list[Bounds] = []
    i, j = n, m
    while i > 0 or j > 0:
        code = int(pointers[i][j - int(lo[i])])
        step_i, step_j = (0, 1) if code == left else shapes[code]
        bounds.append((i - step_i, i, j - step_j, j))
        i, j = i - step_i, j - step_j
    bounds.reverse()
    return bounds


def beads_from_bounds(bounds: Sequence[Bounds], scores: Sequence[float] | NDArray[np.float64]) -> list[Bead]:
    """:class:`Bead` objects from bead bounds and one score each."""
    return [
        Bead(tuple(range(s0, s1)), tuple(range(t0, t1)), float(score))
        for (s0, s1, t0, t1), score in zip(bounds, scores, strict=True)
    ]


def align_sentences(
    src: Sequence[str], tgt: Sequence[str], max_cells: int = DEFAULT_MAX_CELLS, plan: BlockPlan | None = None
) -> list[Bead]:
    """Align two sentence lists with Gale-Church beads 1-1, 1-0, 0-1, 2-1, 1-2, 2-2.

    Returns beads in document order covering every sentence exactly once. If either side is empty,
    every sentence of the other becomes a 1-0 or 0-1 bead.

    Band width: the search runs row by row (one row per source prefix) over the target indices
    within ``half_width`` of the expected path (see :func:`_band`). When the whole
    ``(n+1) x (m+1)`` table fits in ``max_cells`` the band covers it and the result is the exact
    optimum. Otherwise ``half_width = max(MIN_HALF_WIDTH, max_cells // (2 * (n + 1)))``: the budget
    is spread over the rows, but never below 100 sentences either side. The centre line spreads
    the untranslated text of the document evenly along it, so the true path strays from it by at
    most the number of sentences untranslated on one side, plus length noise that grows only with
    the square root of the text length: 100 is ample for web documents, while a document over
    budget with more than ``half_width`` untranslated sentences in one place would be forced
    through the band edge. Time and memory are
    O(n * half_width): a fixed budget up to ``max_cells`` and linear in the document length beyond
    (see :func:`banded_search`). ``plan``: the page's blocks (:mod:`.blocks`), which replace the band
    by the groups of corresponding blocks or price a bead crossing a block on one side only.
    """
    src_len = [char_length(s) for s in src]
    tgt_len = [char_length(s) for s in tgt]
    if not src_len or not tgt_len:
        return unaligned_beads(src_len, tgt_len)
    model = LengthModel(src_len, tgt_len)
    band, cost = model.band(max_cells), model.bead_cost
    if plan is not None:
        band = plan.band() if plan.corresponding else band
        cost = plan.cost(cost, _PRIOR_COST[(1, 0)])
    bounds = banded_search(*band, cost)
    return beads_from_bounds(bounds, model.probabilities(bounds))


def sentence_pairs(
    beads: Sequence[Bead], src: Sequence[str], tgt: Sequence[str], min_score: float = 0.0
) -> tuple[list[tuple[str, str, float, Bead]], Counter[str]]:
    """Turn beads into ``(source text, target text, score, bead)`` pairs for the bitext.

    Multi-sentence sides are joined with a space (the sentences were split from one paragraph
    stream, so a space restores them). Beads are dropped, and counted once each, as
    ``unaligned_src`` (1-0), ``unaligned_tgt`` (0-1) or ``low_score`` (score below ``min_score``),
    so the stage can report what it lost and why.
    """
    pairs: list[tuple[str, str, float, Bead]] = []
    dropped: Counter[str] = Counter()
    for bead in beads:
        if not bead.tgt:
            dropped["unaligned_src"] += 1
        elif not bead.src:
            dropped["unaligned_tgt"] += 1
        elif bead.score < min_score:
            dropped["low_score"] += 1
        else:
            text_src = " ".join(src[i].strip() for i in bead.src)
            text_tgt = " ".join(tgt[j].strip() for j in bead.tgt)
            pairs.append((text_src, text_tgt, bead.score, bead))
    return pairs, dropped
