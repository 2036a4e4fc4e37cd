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

import numpy as np

from bitextflow.classify.model import DomainClassifier, load_model
from bitextflow.config import PairConfig
from bitextflow.errors import StageError

#: Probabilities are stored rounded: four decimals are plenty for thresholds and keep the column small.
DECIMALS = 4
_LOADED: dict[Path, DomainClassifier] = {}


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


def classify_pairs(
    classifier: DomainClassifier,
    label: str,
    texts_a: Sequence[str],
    texts_b: Sequence[str],
    vectors: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairDistributions:
    """Both sides' distributions; a probe classifies the sides' ``vectors`` where the pairs carry them (the run's one
    embedding of each sentence) instead of embedding the texts again."""
    from bitextflow.classify.probe import ProbeClassifier  # the probe's module imports torch

    column = classifier.labels.index(label)
    if vectors is not None and isinstance(classifier, ProbeClassifier):
        side_a, side_b = classifier.predict_proba_vectors(vectors[0]), classifier.predict_proba_vectors(vectors[1])
    else:
        side_a, side_b = classifier.predict_proba(list(texts_a)), classifier.predict_proba(list(texts_b))
    best = np.maximum(side_a[:, column], side_b[:, column]) if len(texts_a) else np.zeros(0, dtype=np.float32)
    return PairDistributions(as_json(side_a, classifier.labels), as_json(side_b, classifier.labels), best)
