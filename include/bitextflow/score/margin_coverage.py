"""Coverage: whether every sentence of a multi-sentence side has its counterpart on the other side.

A bead of several sentences on one side is the typical wrong pair a whole-side scorer passes (issue 40): "We can now
recycle it and integrate it to the volume group. This is" against the translation of the second sentence alone embeds
close, because the mean of two sentence vectors stays near each of them, and the margin of Artetxe and Schwenk (2019,
"Margin-based Parallel Corpus Mining with Multilingual Sentence Embeddings", ACL) compares whole sides only. Here each
sentence of a side of two or more is compared with the other side as a whole (the normalised mean of its sentences'
vectors, as Vecalign composes overlaps: Thompson and Koehn 2019, EMNLP), relative to the two whole sides::

    coverage(bead) = min over sentences x_i of the multi-sentence sides of  cos(x_i, y)

where ``y`` is the normalised mean of the vectors of ``x_i``'s other side. A sentence that belongs to the bead is
about as close to the other side as a translation is (a translator's split or merge); an extra sentence is only as
close as a neighbouring sentence of the same topic. A pair is dropped when its coverage is under
:data:`MIN_COVERAGE`; 1-1 beads are never touched. The form relative to the whole sides' cosine (``cos(x_i, y) /
cos(x, y)``) was offered too and not chosen.

The form and the threshold are chosen by cross-validation on the
gold alignments we have, leaving one file out (``bench/sentence_alignment.py --coverage``: Bleualign de-fr dev and
test0-3, hunalign's en-hu ``dtm``): the gold beads with several sentences on a side against the gold 1-1 beads given
the neighbouring bead's next or previous sentence on one side (the error a shifted bead boundary makes).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bitextflow.text.lengths import length_ratio

#: Pairs whose multi-sentence side has a sentence under this coverage are dropped: the choice of every fold but two of
#: the leave-one-file-out cross-validation (0.83 there) and of all six files (``bench/sentence_alignment.py
#: --coverage``, multilingual-e5-small on the int8 runtime; docs/score.md, "Coverage"). A cosine: another encoder needs
#: its own.
MIN_COVERAGE = 0.82


def _unit(vectors: NDArray[np.floating]) -> NDArray[np.float64]:
    mean = np.asarray(vectors, dtype=np.float64).sum(axis=0)
    result: NDArray[np.float64] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return result


def _rows(vectors: NDArray[np.floating]) -> NDArray[np.float64]:
    rows = np.asarray(vectors, dtype=np.float64)
    result: NDArray[np.float64] = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return result


def sentence_cosines(src: NDArray[np.floating], tgt: NDArray[np.floating]) -> tuple[float, list[float]]:
    """The cosine of the two whole sides, and each sentence's cosine with the other whole side (sentences of sides of
    two or more only); ``src`` and ``tgt`` hold one vector per sentence."""
    x, y = _unit(src), _unit(tgt)
    whole = float(x @ y)
    parts: list[float] = []
    if len(src) > 1:
        parts += (_rows(src) @ y).tolist()
    if len(tgt) > 1:
        parts += (_rows(tgt) @ x).tolist()
    return whole, parts


def coverage(src: NDArray[np.floating], tgt: NDArray[np.floating], relative: bool = False) -> float:
    """The module's coverage of a bead (1.0 for a 1-1 bead); ``relative``: over the whole sides' cosine."""
    whole, parts = sentence_cosines(src, tgt)
    if not parts:
        return 1.0
    lowest = min(parts)
    return lowest / max(whole, 1e-6) if relative else lowest


def trimmed(
    src: NDArray[np.floating],
    tgt: NDArray[np.floating],
    lengths: tuple[Sequence[float], Sequence[float]] | None = None,
    max_ratio: float | None = None,
) -> tuple[int, int] | None:
    """For a bead of one sentence against several (``src`` and ``tgt``: one vector per sentence), the sentence of the
    longer side to keep alone, as ``(side, index)`` with side 0 for ``src``, where that sentence alone is closer to the
    other side than the whole longer side is; None otherwise (a 1-1 bead, sides of several on both sides, or a longer
    side whose every sentence adds to the match).

    A sentence that belongs to the bead (a translator's merge) brings the whole side closer to the translation than
    any of its sentences is alone; an extra sentence (the next item's "See The Linux NIS HOWTO." after "Access NIS
    ... by the nis package.", against the translation of the first alone) takes it away, yet stays above the coverage
    threshold when it shares the topic's words.

    With the sentences' ``lengths`` (Latin-character equivalents, per side) and the score stage's ``max_ratio``, the
    closest sentence is also kept alone where the whole side is too long for the other side and that sentence is not:
    a sentence the translator added on the topic ("This parameter sets the lowest priority of messages to be
    displayed." against "El valor de este parámetro define la prioridad de los mensajes que se mostrarán durante la
    instalación. No se mostrará ningún mensaje de menor prioridad a la aquí definida.") stays close to the whole, and
    the length rule would drop the pair that its first sentence alone makes.
    """
    if (len(src) > 1) == (len(tgt) > 1):
        return None
    side, several, single = (0, src, tgt) if len(src) > 1 else (1, tgt, src)
    whole, parts = sentence_cosines(several, single)
    best = int(np.argmax(parts))
    if parts[best] > whole:
        return side, best
    if lengths is not None and max_ratio is not None:
        several_lengths, (single_length,) = (lengths[0], lengths[1]) if side == 0 else (lengths[1], lengths[0])
        joined = sum(several_lengths) + len(several_lengths) - 1  # as the pair's text holds them, a space apart
        if length_ratio(joined, single_length) > max_ratio >= length_ratio(several_lengths[best], single_length):
            return side, best
    return None


def uncovered(
    beads_vectors: Sequence[tuple[NDArray[np.floating], NDArray[np.floating]]], threshold: float = MIN_COVERAGE
) -> list[bool]:
    """For each bead (its two sides' sentence vectors), whether a sentence of a multi-sentence side is uncovered."""
    return [coverage(src, tgt) < threshold for src, tgt in beads_vectors]
