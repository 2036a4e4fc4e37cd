"""Fine-tuning the two URL classifiers of the ``smart`` crawl strategy (:mod:`bitextflow.models.url_models`)
from a crawl's pages and document pairs (:mod:`bitextflow.models.url_training_data`) into a version folder.

To train in minutes on two CPU cores, a model keeps only the bottom ``layers`` encoder layers and
fine-tunes the top ``trained_layers`` of them and the head; the embeddings and the layers below stay as
in the base model. So a saved model holds only what training changed (``trained.safetensors``, a few
MB) beside its ``config.json``; loading rebuilds it on the base model named in the metadata.
"""

from __future__ import annotations

import json
import logging
import random
import time
import zlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bitextflow.config import CrawlConfig
from bitextflow.errors import StageError
from bitextflow.models.url_models import (
    FORMAT_VERSION,
    LANGUAGE_MODEL,
    METADATA_FILENAME,
    PARALLEL_MODEL,
    TRAINED_FILENAME,
    base_model_path,
    class_probabilities,
    default_device,
    load_tokenizer,
    pair_probabilities,
    quiet_loading,
    tokenized_batches,
)
from bitextflow.models.url_training_data import check_training_data, parallel_examples, read_gold_pairs
from bitextflow.text.urls import url_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingSettings:
    """How the two classifiers are fine-tuned (``crawl.url_model_*`` in a pair config)."""

    base_model: str | None = None  # a transformers encoder folder; None: the converted multilingual-e5-small
    layers: int = 4  # bottom encoder layers kept (0: all)
    trained_layers: int = 2  # top kept layers fine-tuned with the head
    max_length: int = 64  # tokens of a URL, or of a URL pair
    epochs: int = 2
    batch_size: int = 16
    learning_rate: float = 2e-4
    max_steps: int | None = None  # cap on optimiser steps per model (tests)
    held_out_share: float = 0.2
    seed: int = 13


def _held_out(key: str, share: float) -> bool:
    return zlib.crc32(key.encode("utf-8")) % 1000 < share * 1000


# -- fine-tuning -------------------------------------------------------------------------------------------
def _new_classifier(base: Path, labels: Sequence[str], settings: TrainingSettings) -> Any:
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from bitextflow.models.fine_tuning import freeze_lower_layers  # torch: only when training

    config = AutoConfig.from_pretrained(base, local_files_only=True)
    if settings.layers and settings.layers < config.num_hidden_layers:
        config.num_hidden_layers = settings.layers
    config.num_labels = len(labels)
    config.id2label = dict(enumerate(labels))
    config.label2id = {label: index for index, label in enumerate(labels)}
    with quiet_loading():
        model = AutoModelForSequenceClassification.from_pretrained(base, config=config, local_files_only=True)
    freeze_lower_layers(model, settings.trained_layers)
    return model


def _fine_tune(model: Any, tokenizer: Any, first: list[str], second: list[str] | None, labels: list[int],
               settings: TrainingSettings, device: Any) -> int:  # fmt: skip
    """AdamW fine-tuning over the examples, shuffled again every epoch, classes weighed; returns the steps taken."""
    import torch

    from bitextflow.models.fine_tuning import fine_tune  # torch: only when training

    model.to(device).train()
    # inverse class frequencies: four synthetic negatives per positive must not teach "always negative"
    frequency = torch.bincount(torch.tensor(labels), minlength=model.config.num_labels).float()
    weight = (frequency.sum() / (frequency.clamp(min=1) * len(frequency))).to(device)
    rng = random.Random(settings.seed)

    def batches() -> Iterator[tuple[Any, Any]]:
        for _epoch in range(settings.epochs):
            order = list(range(len(first)))
            rng.shuffle(order)
            shuffled_first = [first[i] for i in order]
            shuffled_second = [second[i] for i in order] if second is not None else None
            target = torch.tensor([labels[i] for i in order], device=device)
            for start, batch in tokenized_batches(
                tokenizer, shuffled_first, shuffled_second, settings.batch_size, settings.max_length, device
            ):
                yield batch, target[start : start + settings.batch_size]

    return fine_tune(model, batches(), settings.learning_rate, steps=settings.max_steps, class_weight=weight)


def _metrics(probabilities: Any, labels: Sequence[int], binary: bool) -> dict[str, float | int] | None:
    if not len(labels):
        return None
    predicted = probabilities.argmax(axis=1)
    metrics: dict[str, float | int] = {
        "examples": len(labels),
        "accuracy": round(float(sum(int(p == y) for p, y in zip(predicted, labels, strict=True)) / len(labels)), 4),
    }
    if binary:
        true_positive = sum(1 for p, y in zip(predicted, labels, strict=True) if p == y == 1)
        predicted_positive, positive = int(sum(predicted)), sum(labels)
        precision = true_positive / predicted_positive if predicted_positive else 0.0
        recall = true_positive / positive if positive else 0.0
        metrics |= {
            "precision": round(precision, 4),
            "recall": round(recall, 4),
            "f1": round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0,
        }
    return metrics


def _save(model: Any, folder: Path) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    trained = {name: p.detach().cpu().contiguous() for name, p in model.named_parameters() if p.requires_grad}
    save_file(trained, folder / TRAINED_FILENAME)


@dataclass
class TrainedParallelModel:
    model: Any
    tokenizer: Any
    steps: int
    metrics: dict[str, float | int] | None  # on the held-out groups
    kinds: dict[str, int]  # examples by kind
    train_examples: int
    held_out_examples: int

    def probabilities(self, pairs: Sequence[tuple[str, str]], max_length: int) -> list[float]:
        return pair_probabilities(self.model, self.tokenizer, pairs, max_length)


def train_parallel_model(
    pairs: Sequence[tuple[str, str]], pages: Sequence[tuple[str, str]], settings: TrainingSettings
) -> TrainedParallelModel:
    """The URL-pair classifier alone: positives, the seed's negatives, a held-out split by pair."""
    import torch

    torch.manual_seed(settings.seed)
    base = base_model_path(settings.base_model)
    tokenizer = load_tokenizer(base)
    examples = parallel_examples(pairs, pages, random.Random(settings.seed))
    train = [e for e in examples if not _held_out(str(e.group), settings.held_out_share)]
    held = [e for e in examples if _held_out(str(e.group), settings.held_out_share)]
    model = _new_classifier(base, ["not_parallel", "parallel"], settings)
    steps = _fine_tune(model, tokenizer, [e.text_a for e in train], [e.text_b for e in train], [e.label for e in train],
                       settings, default_device())  # fmt: skip
    probabilities = class_probabilities(model, tokenizer, [e.text_a for e in held], [e.text_b for e in held], settings.max_length)
    kinds: dict[str, int] = defaultdict(int)
    for example in examples:
        kinds[example.kind] += 1
    metrics = _metrics(probabilities, [e.label for e in held], True)
    return TrainedParallelModel(model, tokenizer, steps, metrics, dict(kinds), len(train), len(held))


def train_url_models(
    pages: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[str, str]],
    out_dir: Path,
    settings: TrainingSettings | None = None,
    required_languages: Sequence[str] = (),
    crawl_log_counts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fine-tune both classifiers from (url, language) pages and (url_a, url_b) parallel pairs into
    ``out_dir`` (``language/``, ``parallel/``, ``url-models.json``); returns the metadata.
    ``crawl_log_counts`` (the log lines kept and left out,
    :func:`bitextflow.models.url_training_data.pages_from_crawl_log`) go in it too."""
    import torch

    settings = settings or TrainingSettings()
    languages = sorted({lang for _url, lang in pages})
    check_training_data(languages, required_languages, pairs)
    torch.manual_seed(settings.seed)
    base = base_model_path(settings.base_model)
    tokenizer = load_tokenizer(base)
    device = default_device()
    started = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)

    label_of = {lang: index for index, lang in enumerate(languages)}
    language_split: dict[bool, tuple[list[str], list[int]]] = {True: ([], []), False: ([], [])}
    for url, lang in pages:
        text = url_text(url)  # hashed without the port: the same split wherever a site is served
        texts, labels = language_split[_held_out(text, settings.held_out_share)]
        texts.append(text)
        labels.append(label_of[lang])
    language_model = _new_classifier(base, languages, settings)
    train_texts, train_labels = language_split[False]
    language_steps = _fine_tune(language_model, tokenizer, train_texts, None, train_labels, settings, device)
    held_texts, held_labels = language_split[True]
    language_metrics = _metrics(
        class_probabilities(language_model, tokenizer, held_texts, None, settings.max_length), held_labels, False
    )
    _save(language_model, out_dir / LANGUAGE_MODEL)
    del language_model

    parallel = train_parallel_model(pairs, pages, settings)
    _save(parallel.model, out_dir / PARALLEL_MODEL)

    metadata = {
        "format": FORMAT_VERSION,
        "base_model": settings.base_model,
        "base_model_resolved": str(base),
        "settings": asdict(settings),
        "languages": languages,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": device.type,
        "train_seconds": round(time.monotonic() - started, 1),
        "training_data": {
            "crawl_log": crawl_log_counts,
            "pages": len(pages),
            "pages_by_language": {lang: sum(1 for _u, x in pages if x == lang) for lang in languages},
            "pairs": len(pairs),
            "parallel_examples": parallel.kinds,
            "language_train": len(train_texts),
            "language_held_out": len(held_texts),
            "parallel_train": parallel.train_examples,
            "parallel_held_out": parallel.held_out_examples,
        },
        "steps": {LANGUAGE_MODEL: language_steps, PARALLEL_MODEL: parallel.steps},
        "metrics": {LANGUAGE_MODEL: language_metrics, PARALLEL_MODEL: parallel.metrics},
    }
    (out_dir / METADATA_FILENAME).write_text(json.dumps(metadata, indent=1) + "\n", encoding="utf-8")
    log.info("URL models trained in %.0f s on %s: held-out %s", metadata["train_seconds"], device.type, metadata["metrics"])
    return metadata


def train_configured(
    pages: Sequence[tuple[str, str]],
    pairs: Sequence[tuple[str, str]],
    out_dir: Path,
    crawl: CrawlConfig,
    required_languages: Sequence[str] = (),
    crawl_log_counts: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The URL models ``crawl.url_model_kind`` names, trained on ``pages`` and ``pairs`` (plus the gold pairs of
    ``crawl.url_model_gold_pairs``) into ``out_dir``; returns the metadata."""
    if crawl.url_model_gold_pairs:
        gold = Path(crawl.url_model_gold_pairs).expanduser()
        if not gold.is_file():
            raise StageError(f"crawl.url_model_gold_pairs: {gold} is not a file; give a WMT16 test.pairs file or null")
        pairs = [*pairs, *read_gold_pairs(gold)]
    if crawl.url_model_kind == "ngram":
        from bitextflow.models.url_ngrams import train_ngram_models  # scikit-learn: only for this kind

        models = train_ngram_models(pages, pairs, None, required_languages=required_languages)
        models.metadata["training_data"]["crawl_log"] = crawl_log_counts
        models.save(out_dir)
        return models.metadata
    return train_url_models(pages, pairs, out_dir, settings_from_config(crawl), required_languages, crawl_log_counts)


def settings_from_config(crawl: CrawlConfig) -> TrainingSettings:
    """The training settings of a pair's ``crawl.url_model_*`` options."""
    return TrainingSettings(
        base_model=crawl.url_model_base,
        layers=crawl.url_model_layers,
        trained_layers=crawl.url_model_trained_layers,
        max_length=crawl.url_model_max_length,
        epochs=crawl.url_model_epochs,
    )
