"""Margin-based scoring of sentence pairs over multilingual sentence embeddings, offline.

Artetxe and Schwenk (2019), "Margin-based Parallel Corpus Mining with Multilingual Sentence Embeddings", ACL:
the cosine of two sentences says little on its own, because some sentences are close to everything (hubs) and
a neighbourhood of same-topic sentences is close all round. The ratio margin, which LASER and stopes mine
with, divides the cosine by the mean cosine of each side's ``k`` nearest neighbours on the other side::

    margin(x, y) = cos(x, y) / ( sum_{z in NN_k(x)} cos(x, z) / 2k  +  sum_{z in NN_k(y)} cos(y, z) / 2k )

``NN_k(x)``: the ``k`` sentences of the other language nearest ``x`` in the candidate pool. The pool is the
scored shard: the distinct sentences of its pairs, on each side (a site partition's shard of at most
``align.document_pairs_per_shard`` document pairs), so a sentence aligned to its neighbour's translation meets
its own translation, or a closer sentence, in the pool and its margin falls below 1; a true pair whose two
sentences are each other's nearest is at 1 or above.

The margin is mapped to 0..1 by Platt scaling, ``p = 1 / (1 + exp(-(slope * margin + intercept)))``, fitted with
balanced classes: 0.5 is even odds. :data:`E5_SMALL_CALIBRATIONS` were fitted, and ``k`` and the threshold chosen,
by cross-validation (:mod:`bitextflow.score.margin_calibration`) for the default encoder, the converted
multilingual-e5-small, once per encoder runtime (the int8 runtime's vectors differ a little from torch's); another
encoder needs its own fit.

The vectors are the run's (the ``embed`` stage's, carried by the sentence pairs); a side of several sentences is the
normalised mean of its sentences' vectors (:func:`bitextflow.models.vectors.bead_vector`). Pairs without vectors are
embedded here, by the encoder the scorer is given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bitextflow.align.candidates import CHUNK_CELLS
from bitextflow.align.embedding import Encoder


@dataclass(frozen=True)
class MarginCalibration:
    """The ratio margin's neighbourhood size, its Platt scaling to 0..1 (see the module docstring) and the threshold on
    the scaled score chosen with them (Youden's J out of fold), which ``score.margin_threshold`` applies unless set."""

    neighbours: int
    slope: float
    intercept: float
    threshold: float = 0.5  # even odds, where no threshold was chosen (a fold's fit)
    #: the pair whose parallel text it was fitted on
    pair: str = "en-es"

    def probability(self, margins: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.slope * margins + self.intercept)))


#: Fitted by ``python -m bitextflow.score.margin_calibration --runtime R --tatoeba DIR`` (docs/score.md has the figures), one per
#: encoder runtime (torch on 2026-11-25, onnx-int8 on 2026-11-29, its export version 2): Tatoeba en-es, installation-guide pages and runs of 25
#: Bible verses, each translation against its neighbour's and a random sentence's translation, pools of 25 documents as
#: in a shard; never the Debian Reference, on which bench/release_precision.py measures.
E5_SMALL_CALIBRATIONS = {
    "torch": MarginCalibration(neighbours=2, slope=166.5535, intercept=-164.025, threshold=0.53),
    "onnx-int8": MarginCalibration(neighbours=2, slope=165.0215, intercept=-162.4765, threshold=0.62),
}


def mean_nearest(queries: np.ndarray, pool: np.ndarray, k: int) -> np.ndarray:
    """The mean cosine of each row of ``queries`` with its ``k`` nearest rows of ``pool`` (all of them when the pool is
    smaller); rows are unit length. Taken a block of rows at a time (:data:`CHUNK_CELLS`)."""
    k = min(k, len(pool))
    means = np.zeros(len(queries), dtype=np.float64)
    if k == 0:
        return means
    step = max(1, CHUNK_CELLS // len(pool))
    for start in range(0, len(queries), step):
        cosines = queries[start : start + step] @ pool.T
        means[start : start + step] = np.partition(cosines, -k, axis=1)[:, -k:].mean(axis=1)
    return means


def ratio_margins(vectors_a: np.ndarray, vectors_b: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray, k: int) -> np.ndarray:
    """The ratio margin of the pairs ``(vectors_a[rows_a[i]], vectors_b[rows_b[i]])``, each side's candidate pool being
    every row of the other side's vectors. A pool whose nearest cosines average zero or less (another encoder than
    E5, whose cosines are all positive) is floored at a small positive mean, so the margin stays finite."""
    near_a = mean_nearest(vectors_a, vectors_b, k)
    near_b = mean_nearest(vectors_b, vectors_a, k)
    cosines = np.einsum("ij,ij->i", vectors_a[rows_a], vectors_b[rows_b]).astype(np.float64)
    return cosines / np.maximum((near_a[rows_a] + near_b[rows_b]) / 2, 1e-6)


class MarginScorer:
    """Scores the sentence pairs of a shard 0..1 by their calibrated ratio margin (``calibrations``: by the runtime
    that made the vectors); ``encoder()`` gives the encoder that embeds pairs that come without vectors, made on
    first need."""

    def __init__(
        self, encoder: Callable[[], Encoder], calibrations: dict[str, MarginCalibration] = E5_SMALL_CALIBRATIONS
    ) -> None:
        self._encoder = encoder
        self.calibrations = calibrations

    def calibration(self, runtime: str) -> MarginCalibration:
        if runtime not in self.calibrations:
            raise ValueError(
                f"no margin calibration for the encoder runtime {runtime!r} (calibrated: {', '.join(self.calibrations)})"
            )
        return self.calibrations[runtime]

    def scores(
        self,
        texts_a: Sequence[str],
        texts_b: Sequence[str],
        vectors: tuple[np.ndarray, np.ndarray] | None = None,
        runtime: str | None = None,
    ) -> tuple[np.ndarray, MarginCalibration]:
        """Calibrated scores 0..1 of the pairs ``(texts_a[i], texts_b[i])`` (0.5: even odds that the two sides translate
        each other), each side's pool being the distinct texts of its side, and the calibration they were scaled with
        (its threshold is the runtime's). ``vectors``: each pair's sides' vectors, made by ``runtime``; without them the
        scorer's encoder embeds the distinct texts."""
        if len(texts_a) != len(texts_b):
            raise ValueError(f"{len(texts_a)} first sides for {len(texts_b)} second sides")
        if not texts_a:
            return np.zeros(0), self.calibration(runtime or "torch")
        distinct_a, first_a, rows_a = np.unique(np.asarray(texts_a, dtype=object), return_index=True, return_inverse=True)
        distinct_b, first_b, rows_b = np.unique(np.asarray(texts_b, dtype=object), return_index=True, return_inverse=True)
        if vectors is not None:
            if runtime is None:
                raise ValueError("vectors given without the runtime that made them (the calibration is per runtime)")
            pool_a, pool_b = vectors[0][first_a], vectors[1][first_b]
        else:
            encoder = self._encoder()
            pool_a, pool_b = encoder.encode(list(distinct_a)), encoder.encode(list(distinct_b))
            runtime = getattr(encoder, "runtime", "torch")  # an encoder that knows no runtimes computes as torch does
        calibration = self.calibration(runtime)
        return calibration.probability(ratio_margins(pool_a, pool_b, rows_a, rows_b, calibration.neighbours)), calibration
