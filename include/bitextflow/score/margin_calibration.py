"""How :data:`bitextflow.score.margin.E5_SMALL_CALIBRATIONS` and ``score.margin_threshold`` were chosen, reproducibly,
and how another pair gets calibrations of its own.

``python -m bitextflow.score.margin_calibration --tatoeba DIR [--runtime torch|onnx-int8] [--json]`` (about 20 minutes
of encoding on 2 busy cores with torch in float32, 5 with int8), once per encoder runtime, fits the shipped en-es ones.
``--pair en-X --save`` fits a pair's own from what it has of the data below (Tatoeba only where ``--tatoeba`` is given)
and keeps it in the cache (:mod:`bitextflow.score.pair_calibrations`), where the score stage finds it;
``bitextflow-local prepare`` does that for a pair config. A pair without :data:`MIN_DOCUMENTS` documents of parallel
text (Debian's installation guide has no Arabic) is scored with en-es's, and its runs say so.

1. **Data** other than the Debian Reference, on which bench/release_precision.py measures (the installation guide is
   its other site): the Tatoeba en-es test pairs (short everyday sentences; cut into documents of
   :data:`TATOEBA_DOCUMENT` consecutive lines), the installation guide's pages (the local site's kind of documentation:
   block pairs by position, :func:`training_data.installation_guide_pages`) and :data:`BIBLE_DOCUMENTS` runs of
   :data:`BIBLE_DOCUMENT` consecutive Bible verses.
2. **Negatives as an aligner makes them**: in every document, :data:`CORRUPTED_SHARE` of the pairs get a wrong
   second side, half the translation of a sentence next to theirs (``neighbour``: same topic, the error a shifted
   alignment makes) and half a random sentence of another document of the same source (``shuffled``). Pools are
   shards of :data:`SHARD_DOCUMENTS` documents (``align.document_pairs_per_shard``), holding the wrong pairs as a
   scored shard would; :data:`ROUNDS` corruptions of each document, its translations counted once.
3. **Cross-validation**, :data:`FOLDS` folds grouped by document: for each neighbourhood size ``k`` in
   :data:`NEIGHBOUR_CHOICES`, Platt scaling (logistic regression on the margin, balanced classes) fitted on the
   other folds scores each fold. The ``k`` with the best out-of-fold ROC AUC against neighbours (the hard
   negatives) is kept, and the threshold is the one that maximises Youden's J (translations kept minus
   non-translations kept) over the out-of-fold scores. The calibration itself is then fitted on all the data.
   The cosine alone goes through the same cross-validation (``cosine``), for comparison.
4. **Variants compared, not chosen** (``variants``): the same cross-validation of the chosen ``k`` with the pool
   being each pair's document instead of its shard (a score that no longer depends on what shares the shard), and
   of Platt scaling on the margin with the cosine, and with the cosine and the log word count, as further features
   (Chaudhary et al. 2019, "Low-Resource Corpus Filtering Using Multilingual Sentence Embeddings", WMT, score with
   both). Each is given its out-of-fold Youden's J at its own threshold and the 5th, 50th and 95th percentiles of its
   J minus the calibration's over :data:`BOOTSTRAP_ROUNDS` resamples of the documents: a variant earns a place in
   :mod:`bitextflow.score.margin` only where the whole interval is above zero.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bitextflow.errors import BitextflowError
from bitextflow.score.bicleaner import roc_auc
from bitextflow.score.margin import MarginCalibration, ratio_margins
from bitextflow.score.pair_calibrations import CALIBRATED_RUNTIMES, save
from bitextflow.text.languages import three_letter_code

TATOEBA_DOCUMENT = 20
BIBLE_DOCUMENTS = 120
BIBLE_DOCUMENT = 25
CORRUPTED_SHARE = 0.1
SHARD_DOCUMENTS = 25
ROUNDS = 5
FOLDS = 5
NEIGHBOUR_CHOICES = (2, 3, 4)
BOOTSTRAP_ROUNDS = 200
SEED = 1
KINDS = ("translation", "neighbour", "shuffled")

log = logging.getLogger(__name__)

Document = list[tuple[str, str]]


#: Fewest documents a pair's calibration is fitted on: five folds of several documents each.
MIN_DOCUMENTS = 25


class NoCalibrationData(BitextflowError):
    """The pair has too little parallel text that the project can get offline to be calibrated on."""


def calibration_documents(lang_a: str, lang_b: str, tatoeba: Path | None = None) -> dict[str, list[Document]]:
    """The documents of each source the pair has, in their order (see the module docstring): Tatoeba where ``tatoeba``
    is given, the installation guide where it has ``lang_b``, the Bible where both languages have one. A pair with
    fewer than :data:`MIN_DOCUMENTS` raises :class:`~bitextflow.errors.BitextflowError`."""
    from bitextflow.classify.offline import BIBLES
    from bitextflow.score.training_data import bible_verse_pairs, installation_guide_pages

    if lang_a != "en":
        raise BitextflowError(f"the calibration data pairs every language with English, not {lang_a}-{lang_b}")
    documents: dict[str, list[Document]] = {}
    if tatoeba is not None:
        documents["tatoeba"] = _tatoeba_documents(tatoeba, lang_b)
    documents["installation-guide"] = [page for page in installation_guide_pages(lang_a, lang_b) if len(page) > 1]
    if lang_a in BIBLES and lang_b in BIBLES:
        verses = bible_verse_pairs(lang_a, lang_b)
        starts = sorted(random.Random(SEED).sample(range(0, len(verses) - BIBLE_DOCUMENT, BIBLE_DOCUMENT), BIBLE_DOCUMENTS))
        documents["bible"] = [verses[start : start + BIBLE_DOCUMENT] for start in starts]
    documents = {source: docs for source, docs in documents.items() if docs}
    if sum(map(len, documents.values())) < MIN_DOCUMENTS:
        raise NoCalibrationData(
            f"too little {lang_a}-{lang_b} parallel text to calibrate the margin scorer on "
            f"({', '.join(f'{source}: {len(docs)} documents' for source, docs in documents.items()) or 'none'}; "
            f"{MIN_DOCUMENTS} needed): Debian's installation guide and Bibles have no {lang_b}"
        )
    return documents


def _tatoeba_documents(tatoeba: Path, language: str) -> list[Document]:
    code = three_letter_code(language) or language
    # LASER names Mandarin by its individual code, Arabic by its macrolanguage's
    code = {"zho": "cmn"}.get(code, code)
    try:
        english = (tatoeba / f"tatoeba.{code}-eng.eng").read_text(encoding="utf-8").splitlines()
        other = (tatoeba / f"tatoeba.{code}-eng.{code}").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as error:
        raise BitextflowError(
            f"{error.filename} is missing; pass --tatoeba with the folder of LASER's Tatoeba test files "
            f"(tatoeba.{code}-eng.eng and tatoeba.{code}-eng.{code})"
        ) from None
    pairs = list(zip(english, other, strict=True))
    return [pairs[i : i + TATOEBA_DOCUMENT] for i in range(0, len(pairs), TATOEBA_DOCUMENT)]


@dataclass
class Examples:
    """One row per scored pair: its source, document (the cross-validation group), kind, margin for each ``k`` and
    cosine (under the key 0) with the shard as the pool, the margins with its document as the pool, and its two
    texts."""

    source: list[str]
    document: list[str]
    kind: list[str]
    margins: dict[int, list[float]]
    document_margins: dict[int, list[float]]
    pairs: list[tuple[str, str]]

    @classmethod
    def empty(cls) -> Examples:
        keys = (COSINE, *NEIGHBOUR_CHOICES)
        return cls([], [], [], {k: [] for k in keys}, {k: [] for k in keys}, [])

    def extend(
        self,
        source: str,
        document: str,
        pairs: Document,
        kinds: Sequence[str],
        margins: dict[int, np.ndarray],
        document_margins: dict[int, np.ndarray],
    ) -> None:
        self.source += [source] * len(pairs)
        self.document += [document] * len(pairs)
        self.kind += list(kinds)
        self.pairs += pairs
        for k, values in margins.items():
            self.margins[k] += values.tolist()
        for k, values in document_margins.items():
            self.document_margins[k] += values.tolist()


#: The key of :attr:`Examples.margins` that holds the plain cosine.
COSINE = 0


def corrupted(document: Document, others: list[Document], rng: random.Random) -> tuple[Document, list[str]]:
    """The document with :data:`CORRUPTED_SHARE` of its pairs (at least one) given a wrong second side, and each
    pair's kind."""
    pairs, kinds = list(document), ["translation"] * len(document)
    for index in rng.sample(range(len(document)), max(1, round(CORRUPTED_SHARE * len(document)))):
        if rng.random() < 0.5:
            neighbour = index + 1 if index + 1 < len(document) and (index == 0 or rng.random() < 0.5) else index - 1
            wrong, kind = document[neighbour][1], "neighbour"
        else:
            wrong, kind = rng.choice(rng.choice(others))[1], "shuffled"
        if wrong != document[index][1]:
            pairs[index], kinds[index] = (document[index][0], wrong), kind
    return pairs, kinds


def examples(documents: dict[str, list[Document]], vectors: dict[str, np.ndarray]) -> Examples:
    """Every source's documents corrupted :data:`ROUNDS` times and scored shard by shard with each ``k``."""
    rng = random.Random(SEED)
    rows = Examples.empty()
    for source, docs in documents.items():
        for round_ in range(ROUNDS):
            for first in range(0, len(docs), SHARD_DOCUMENTS):
                shard = [(number, *corrupted(docs[number], docs[:number] + docs[number + 1 :], rng))
                         for number in range(first, min(first + SHARD_DOCUMENTS, len(docs)))]  # fmt: skip
                pairs = [pair for _, doc_pairs, _ in shard for pair in doc_pairs]
                margins = shard_margins(pairs, vectors)
                start = 0
                for number, doc_pairs, kinds in shard:
                    # translations once (the first round), wrong pairs every round
                    keep = [i for i, kind in enumerate(kinds) if kind != "translation" or round_ == 0]
                    chosen = {k: values[start : start + len(kinds)][keep] for k, values in margins.items()}
                    in_document = {k: values[keep] for k, values in shard_margins(doc_pairs, vectors).items()}
                    rows.extend(
                        source, f"{source}/{number}", [doc_pairs[i] for i in keep], [kinds[i] for i in keep], chosen, in_document
                    )
                    start += len(kinds)
    return rows


def shard_margins(pairs: Document, vectors: dict[str, np.ndarray]) -> dict[int, np.ndarray]:
    """The ratio margin of every pair with each ``k``, the pool being the shard's distinct texts, and its cosine."""
    texts_a, rows_a = np.unique(np.asarray([a for a, _ in pairs], dtype=object), return_inverse=True)
    texts_b, rows_b = np.unique(np.asarray([b for _, b in pairs], dtype=object), return_inverse=True)
    vectors_a = np.stack([vectors[text] for text in texts_a])
    vectors_b = np.stack([vectors[text] for text in texts_b])
    cosines = np.einsum("ij,ij->i", vectors_a[rows_a], vectors_b[rows_b]).astype(np.float64)
    return {COSINE: cosines} | {k: ratio_margins(vectors_a, vectors_b, rows_a, rows_b, k) for k in NEIGHBOUR_CHOICES}


def out_of_fold(features: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each row scored by a logistic regression fitted on the other folds (grouped by document) as :func:`platt` fits
    one: Platt scaling where ``features`` is the margin alone, one column per feature where there are more."""
    from sklearn.model_selection import GroupKFold

    features = features.reshape(len(features), -1)
    scores = np.zeros(len(features))
    for train, test in GroupKFold(FOLDS).split(features, labels, groups):
        scores[test] = logistic_regression().fit(features[train], labels[train]).predict_proba(features[test])[:, 1]
    return scores


def logistic_regression() -> Any:
    """Classes weighted to balance (0.5 = even odds); no penalty to speak of, since there are one to three features."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(class_weight="balanced", C=1e4, max_iter=1000)


def platt(margins: np.ndarray, labels: np.ndarray, neighbours: int = 0) -> MarginCalibration:
    """:func:`logistic_regression` of the label on the margin, as Platt scaling."""
    model = logistic_regression().fit(margins[:, None], labels)
    return MarginCalibration(neighbours, round(float(model.coef_[0, 0]), 4), round(float(model.intercept_[0]), 4))


def youden_j(scores: np.ndarray, labels: np.ndarray, cut: float) -> float:
    """Translations kept minus non-translations kept at ``cut``."""
    return float((scores[labels == 1] >= cut).mean() - (scores[labels == 0] >= cut).mean())


def youden_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The score cut that maximises :func:`youden_j`, rounded to two decimals."""
    candidates = np.round(np.arange(0.01, 1.0, 0.01), 2)
    return float(candidates[int(np.argmax([youden_j(scores, labels, cut) for cut in candidates]))])


def compared(
    variant: np.ndarray, chosen: np.ndarray, chosen_threshold: float, kinds: np.ndarray, groups: np.ndarray
) -> dict[str, Any]:
    """A variant's out-of-fold scores against the calibration's: its own Youden threshold, J and :func:`separation`
    there, and the 5th, 50th and 95th percentiles of its J minus the calibration's (each at its threshold) over
    documents resampled with replacement."""
    labels = (kinds == "translation").astype(int)
    threshold = youden_threshold(variant, labels)
    rows_of = [np.flatnonzero(groups == group) for group in np.unique(groups)]
    rng = np.random.default_rng(SEED)
    differences = []
    for _ in range(BOOTSTRAP_ROUNDS):
        rows = np.concatenate([rows_of[i] for i in rng.integers(0, len(rows_of), len(rows_of))])
        differences.append(
            youden_j(variant[rows], labels[rows], threshold) - youden_j(chosen[rows], labels[rows], chosen_threshold)
        )
    return {
        "threshold": threshold,
        "youden_j": round(youden_j(variant, labels, threshold), 4),
        "j_difference_5_50_95": [round(float(value), 4) for value in np.percentile(differences, [5, 50, 95])],
        "out_of_fold": separation(variant, kinds, threshold),
    }


def separation(scores: np.ndarray, kinds: np.ndarray, threshold: float) -> dict[str, float]:
    """ROC AUC against each kind of non-translation and the share of each kind kept at ``threshold``."""
    good = scores[kinds == "translation"]
    figures = {f"auc_{kind}": roc_auc(good, scores[kinds == kind]) for kind in KINDS[1:]}
    figures |= {f"kept_{kind}": float((scores[kinds == kind] >= threshold).mean()) for kind in KINDS}
    return {name: round(value, 4) for name, value in figures.items()}


def calibrate(rows: Examples) -> dict:
    """The cross-validated choice of ``k`` and threshold, the calibration fitted on all rows, and their figures."""
    kinds = np.asarray(rows.kind)
    labels = (kinds == "translation").astype(int)
    groups = np.asarray(rows.document)
    sources = np.asarray(rows.source)
    by_k = {}
    for k in NEIGHBOUR_CHOICES:
        scores = out_of_fold(np.asarray(rows.margins[k]), labels, groups)
        by_k[k] = {"scores": scores, "figures": separation(scores, kinds, 0.5)}
    best = max(NEIGHBOUR_CHOICES, key=lambda k: by_k[k]["figures"]["auc_neighbour"])
    scores = by_k[best]["scores"]
    threshold = youden_threshold(scores, labels)
    calibration = platt(np.asarray(rows.margins[best]), labels, best)
    cosine = out_of_fold(np.asarray(rows.margins[COSINE]), labels, groups)
    cosine_threshold = youden_threshold(cosine, labels)
    margins, cosines = np.asarray(rows.margins[best]), np.asarray(rows.margins[COSINE])
    variants = {
        "document_pool": np.asarray(rows.document_margins[best]),
        "margin_and_cosine": np.column_stack([margins, cosines]),
        "margin_cosine_and_length": np.column_stack(
            [margins, cosines, np.log1p([min(len(a.split()), len(b.split())) for a, b in rows.pairs])]
        ),
    }
    return {
        "calibration": {"neighbours": best, "slope": calibration.slope, "intercept": calibration.intercept},
        "threshold": threshold,
        "youden_j": round(youden_j(scores, labels, threshold), 4),
        "variants": {
            name: compared(out_of_fold(features, labels, groups), scores, threshold, kinds, groups)
            for name, features in variants.items()
        },
        "out_of_fold": separation(scores, kinds, threshold),
        "out_of_fold_by_source": {
            source: separation(scores[sources == source], kinds[sources == source], threshold) for source in np.unique(sources)
        },
        "neighbour_choices": {str(k): by_k[k]["figures"] for k in NEIGHBOUR_CHOICES},
        "cosine": {"threshold": cosine_threshold, "out_of_fold": separation(cosine, kinds, cosine_threshold)},
        "examples": {kind: int((kinds == kind).sum()) for kind in KINDS},
    }


def fit(lang_a: str, lang_b: str, runtime: str, tatoeba: Path | None = None, encoder: str | None = None) -> dict[str, Any]:
    """:func:`calibrate` on the pair's :func:`calibration_documents`, embedded by ``encoder`` (default: the converted
    multilingual-e5-small) with ``runtime``; the result names its sources and how many documents each gave."""
    from bitextflow.models import SentenceEncoder

    started = time.monotonic()
    documents = calibration_documents(lang_a, lang_b, tatoeba)
    model = SentenceEncoder.from_path(encoder, runtime=runtime)
    texts = sorted({text for docs in documents.values() for doc in docs for pair in doc for text in pair})
    log.info(
        "margin calibration %s-%s: encoding %d texts of %d documents",
        lang_a,
        lang_b,
        len(texts),
        sum(map(len, documents.values())),
    )
    # float32 for the torch calibration: the vectors the scorer saw when it was fitted (bfloat16 agrees to 0.99998)
    vectors = dict(zip(texts, model.encode(texts, reduced_precision=False), strict=True))
    result = calibrate(examples(documents, vectors))
    result["sources"] = {source: len(docs) for source, docs in documents.items()}
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bitextflow.score.margin_calibration", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pair", default="en-es", help="the pair to calibrate, English first (default en-es)")
    parser.add_argument(
        "--tatoeba",
        type=Path,
        default=None,
        help="folder of LASER's Tatoeba test files (tatoeba.spa-eng.eng, tatoeba.spa-eng.spa: data/tatoeba/v1 of LASER); "
        "the shipped en-es calibrations use them",
    )
    parser.add_argument(
        "--encoder", default=None, help="transformers encoder folder (default: the converted multilingual-e5-small)"
    )
    parser.add_argument(
        "--runtime", default="torch", choices=CALIBRATED_RUNTIMES, help="the encoder runtime whose vectors to calibrate"
    )
    parser.add_argument("--save", action="store_true", help="keep it as the pair's calibration, which its runs then use")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    lang_a, _, lang_b = args.pair.partition("-")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        result = fit(lang_a, lang_b, args.runtime, args.tatoeba, args.encoder)
    except BitextflowError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"MarginCalibration(**{ {**result['calibration'], 'threshold': result['threshold']} })")
    for name, figures in [("all", result["out_of_fold"]), *result["out_of_fold_by_source"].items()]:
        print(f"{name:>24}: " + ", ".join(f"{key} {value:.4f}" for key, value in figures.items()))
    print(f"{'Youden J':>24}: {result['youden_j']:.4f} at {result['threshold']}")
    for name, figures in result["variants"].items():
        low, middle, high = figures["j_difference_5_50_95"]
        print(f"{name:>24}: Youden J {figures['youden_j']:.4f} at {figures['threshold']}, "
              f"difference {middle:+.4f} (5-95%: {low:+.4f} to {high:+.4f})")  # fmt: skip
    if args.save:
        print(f"saved as {save(args.pair, args.runtime, result)}")
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
