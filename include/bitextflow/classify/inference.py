"""Domain classification of sentence pairs at the classify stage: the full distribution of both sides.

As the DSI classifier releases its softmax, every pair keeps each side's distribution (JSON objects
``{label: probability}`` in ``domain_probs_a`` / ``domain_probs_b``) so users can pick other labels and
thresholds later; the stage itself keeps a pair when either side's probability of the configured label
reaches ``domain.classifier_threshold`` (default 0.5, the paper's).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from bitextflow.classify.model import DomainClassifier, load_model
from bitextflow.config import PairConfig
from bitextflow.errors import StageError

#: Probabilities are stored rounded: four decimals are plenty for thresholds and keep the column small.
DECIMALS = 4
_LOADED: dict[Path, DomainClassifier] = {}
T = TypeVar("T")


@dataclass(frozen=True)
class PairDistributions:
    probs_a: list[str]
    probs_b: list[str]
    label_probability: np.ndarray  # per pair, the larger of the two sides' probability of the label


def configured_classifier(config: PairConfig, folder: Path) -> tuple[DomainClassifier, str]:
    """The pair's classifier from its local ``folder`` (loaded once per process) and the label it thresholds."""
    if folder not in _LOADED:
        _LOADED[folder] = load_model(folder, config.pair, runtime=config.embed.runtime)[0]
    classifier = _LOADED[folder]
    label = config.domain.classifier_label or config.domain.name
    if label not in classifier.labels:
        raise StageError(
            f"domain classifier {folder} has no label {label!r} (labels: {', '.join(classifier.labels)}); "
            "set domain.classifier_label to one of them"
        )
    return classifier, label


def as_json(probabilities: np.ndarray, labels: Sequence[str]) -> list[str]:
    return [json.dumps({label: round(float(p), DECIMALS) for label, p in zip(labels, row, strict=True)}) for row in probabilities]


def sentence_distributions(classifier: DomainClassifier, texts: Sequence[str], vectors: np.ndarray | None = None) -> np.ndarray:
    """Each text's distribution over ``classifier.labels``, a row per text; a probe classifies the texts' ``vectors``
    where the run made them (its one embedding of each sentence) instead of embedding the texts again."""
    from bitextflow.classify.probe import ProbeClassifier  # the probe's module imports torch

    if vectors is not None and isinstance(classifier, ProbeClassifier):
        return classifier.predict_proba_vectors(vectors)
    return classifier.predict_proba(list(texts))


def spread(items: Sequence[T], limit: int) -> list[T]:
    """At most ``limit`` of ``items``, evenly spaced from the first to the last, in order: a sample of a document's
    sentences that sees its end as well as its start."""
    if len(items) <= limit:
        return list(items)
    # more items than places: the spaced positions are over one apart, so no two round to the same item (one place is
    # the first item's, none is no item)
    return [items[int(position)] for position in np.linspace(0, len(items) - 1, limit).round()]


def classify_pairs(
    classifier: DomainClassifier,
    label: str,
    texts_a: Sequence[str],
    texts_b: Sequence[str],
    vectors: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairDistributions:
    """Both sides' distributions (:func:`sentence_distributions`, on the sides' ``vectors`` where the pairs carry them)."""
    column = classifier.labels.index(label)
    vectors_a, vectors_b = vectors if vectors is not None else (None, None)
    side_a, side_b = (
        sentence_distributions(classifier, texts_a, vectors_a),
        sentence_distributions(classifier, texts_b, vectors_b),
    )
    best = np.maximum(side_a[:, column], side_b[:, column]) if len(texts_a) else np.zeros(0, dtype=np.float32)
    return PairDistributions(as_json(side_a, classifier.labels), as_json(side_b, classifier.labels), best)
