"""Domain-classifier folders: metadata, saving, and loading with clear errors.

A model folder holds the classifier's files (``model.joblib`` for the SVM, a transformers folder for the
transformer, ``head.npz`` for the probe, whose encoder the metadata names), ``evaluation/`` (reports of :mod:`bitextflow.classify.evaluation`) and, written last,
``bitextflow-domain.json``: kind, labels, temperature, data counts, metrics, training settings.

Publishing versions in the object store and finding the one a pair config names is
:mod:`bitextflow.catalog.models`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from bitextflow.errors import BitextflowError, StageError

METADATA_FILENAME = "bitextflow-domain.json"
FORMAT_VERSION = 1
MODELS_PREFIX = "models"


def train_command(pair: str) -> str:
    return f"bitextflow train-domain --pair {pair}"


class DomainClassifier(Protocol):
    kind: str
    labels: list[str]

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray: ...

    def save(self, folder: Path) -> None: ...


def save_model(classifier: DomainClassifier, folder: Path, metadata: dict[str, Any]) -> dict[str, Any]:
    """Write the classifier and, last, its metadata (kind, labels and temperature filled in here); returns the metadata."""
    folder.mkdir(parents=True, exist_ok=True)
    classifier.save(folder)
    record = {
        **metadata,
        "format_version": FORMAT_VERSION,
        "kind": classifier.kind,
        "labels": classifier.labels,
        "temperature": getattr(classifier, "temperature", None),
        "max_length": getattr(classifier, "max_length", None),
        **getattr(classifier, "metadata_fields", {}),  # kind-specific: the probe's encoder and calibration
    }
    (folder / METADATA_FILENAME).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return record


def read_metadata(folder: Path, pair: str) -> dict[str, Any]:
    path = folder / METADATA_FILENAME
    if not folder.is_dir():
        raise StageError(
            f"domain classifier {folder} does not exist; train one with `{train_command(pair)}` or fix domain.classifier"
        )
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
        metadata["kind"], metadata["labels"]  # noqa: B018 (checked for presence)
    except FileNotFoundError:
        raise StageError(
            f"{folder} is not a domain classifier (no {METADATA_FILENAME}); train one with `{train_command(pair)}`"
        ) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise StageError(f"{path} is corrupt ({type(exc).__name__}: {exc}); retrain with `{train_command(pair)}`") from None
    return metadata


def load_model(
    folder: Path, pair: str, device: str | None = None, runtime: str = "auto"
) -> tuple[DomainClassifier, dict[str, Any]]:
    """The classifier in `folder` and its metadata; a missing or corrupt folder raises StageError naming it. A probe
    embeds on the encoder `runtime` the texts that come without the run's vectors."""
    metadata = read_metadata(folder, pair)
    try:
        if metadata["kind"] == "svm":
            from bitextflow.classify.baseline import SvmClassifier

            return SvmClassifier.load(folder, metadata["labels"]), metadata
        if metadata["kind"] == "transformer":
            from bitextflow.classify.transformer import TransformerClassifier

            return TransformerClassifier.load(
                folder, metadata["labels"], float(metadata["temperature"]), int(metadata["max_length"]), device
            ), metadata
        if metadata["kind"] == "probe":
            from bitextflow.classify.probe import ProbeClassifier

            return ProbeClassifier.load(folder, metadata, device, runtime), metadata
    except BitextflowError:
        raise
    except Exception as exc:  # unpickling, safetensors, .npz, JSON and shape errors all mean "this folder is broken"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StageError(
            f"domain classifier {folder} cannot be loaded ({detail[:200]}); retrain with `{train_command(pair)}`"
        ) from None
    raise StageError(
        f"{folder / METADATA_FILENAME} names unknown kind {metadata['kind']!r}; retrain with `{train_command(pair)}`"
    )
