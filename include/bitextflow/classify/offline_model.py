"""``domain.classifier: offline``: a probe trained on the offline labelled set, cached, with no object store.

The folder is ``$BITEXTFLOW_CACHE/models/domain/offline/probe-<language>-set-v<N>-v<M>-<runtime>`` (beside the
downloaded published versions, :func:`bitextflow.catalog.models.model_cache_dir`), trained on the source language's
offline set (:mod:`bitextflow.classify.offline`) with the default ``domain.training`` settings and kind
``probe``, on the vectors of the encoder runtime the run embeds with (``embed.runtime``, :mod:`bitextflow.models.encoder`:
the head is fitted to that runtime's vectors), on first use (1.5-3 minutes on 2 cores, logged with its progress) or by ``bitextflow-local
prepare``. It is written into a staging folder beside it and renamed into place
(:func:`bitextflow.models.folders.built_in_place`), so two processes training at once leave one whole model.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path

from bitextflow.classify.data import read_labelled
from bitextflow.classify.model import METADATA_FILENAME, save_model
from bitextflow.classify.offline import LABELS, LANGUAGES, OFFLINE_SET_VERSION, offline_set
from bitextflow.classify.training import evaluate_into, prepare_split, train_classifier
from bitextflow.config import DomainTrainingConfig
from bitextflow.errors import StageError
from bitextflow.models.folders import built_in_place
from bitextflow.settings import cache_dir

log = logging.getLogger(__name__)
OFFLINE = "offline"
#: Bump when the offline model's training changes, so cached folders are trained again.
OFFLINE_MODEL_VERSION = 2


def offline_model_dir(language: str, runtime: str) -> Path:
    """The folder of the offline probe of ``language`` fitted on vectors of the encoder ``runtime`` (torch, onnx-int8)."""
    name = f"probe-{language}-set-v{OFFLINE_SET_VERSION}-v{OFFLINE_MODEL_VERSION}-{runtime}"
    return cache_dir("models", "domain", OFFLINE, name)


def offline_training(**updates) -> DomainTrainingConfig:
    """The settings of the offline model: the defaults, kind ``probe``, the offline set's labels."""
    return DomainTrainingConfig(kind="probe", labels=list(LABELS), **updates)


def offline_classifier(
    language: str, folder: Path | None = None, training: DomainTrainingConfig | None = None, runtime: str = "auto"
) -> Path:
    """The folder of the offline probe of `language` on the vectors of `runtime` (default :func:`offline_model_dir`),
    trained when absent."""
    from bitextflow.models.encoder import resolve_runtime  # torch: only where a probe is resolved
    from bitextflow.models.inference import default_device

    runtime = resolve_runtime(runtime, default_device())
    folder = folder or offline_model_dir(language, runtime)
    if (folder / METADATA_FILENAME).is_file():
        return folder
    if language not in LANGUAGES:
        raise StageError(
            f"domain.classifier 'offline' trains on the offline set of the pair's source language, which exists for "
            f"{' and '.join(LANGUAGES)} only, not {language!r}; train a classifier with `bitextflow train-domain --data ...` "
            "and name its folder or `latest` in domain.classifier"
        )
    training = training or offline_training()
    log.info(
        "domain.classifier offline: training a probe on the offline %s set into %s (1-3 minutes on 2 cores; once)",
        language,
        folder,
    )
    started = time.perf_counter()
    split = prepare_split(read_labelled(offline_set(language)), training, f"offline Debian set ({language})")
    log.info("domain.classifier offline: %s", split.counts())
    classifier = train_classifier(split, training, runtime=runtime)
    seconds = time.perf_counter() - started
    with built_in_place(folder, lambda built: (built / METADATA_FILENAME).is_file()) as staging:
        test = evaluate_into(classifier, split.test, staging / "evaluation" / "test", f"probe on {language} test")
        metadata = {
            "pair": None,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "data": f"offline Debian set ({language}), domain.classifier offline",
            "train_languages": [language],
            "data_counts": split.counts(),
            "metrics": {"test": {k: v for k, v in test.items() if k != "confusion_matrix"}},
            "training": training.model_dump(mode="json"),
            "training_seconds": round(seconds, 1),
        }
        save_model(classifier, staging, metadata)
    log.info(
        "domain.classifier offline: trained in %.0f s; test accuracy %.3f, macro F1 %.3f: %s",
        time.perf_counter() - started,
        test["accuracy"],
        test["macro_f1"],
        folder,
    )
    return folder
