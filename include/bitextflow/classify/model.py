"""Versioned domain-classifier folders: metadata, loading with clear errors, and the S3 registry.

A model folder holds the classifier's files (``model.joblib`` for the SVM, a transformers folder for the
transformer), ``evaluation/`` (reports of :mod:`bitextflow.classify.evaluation`) and, written last,
``bitextflow-domain.json``: kind, labels, temperature, data counts, metrics, training settings.

Published versions live under ``models/<pair>/domain/v<N>/`` in the pair's bucket; as with releases, a
version exists once its metadata file does (uploaded last), so readers never see half a model. A pair
config names its classifier in ``domain.classifier``: a local folder, ``s3://bucket/prefix`` or
``latest`` (the highest published version of the pair). S3 models are downloaded once into
``$BITEXTFLOW_CACHE/models/domain/`` and reused.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from bitextflow.errors import BitextflowError, StageError
from bitextflow.storage import ObjectStore

if TYPE_CHECKING:
    from bitextflow.config import PairConfig
    from bitextflow.release.registry import RegistryEntry

METADATA_FILENAME = "bitextflow-domain.json"
FORMAT_VERSION = 1
MODELS_PREFIX = "models"
LATEST = "latest"
_VERSION = re.compile(r"/v(\d+)/" + re.escape(METADATA_FILENAME) + "$")
_PUBLISHED_VERSION = re.compile(r"/v(\d+)/$")


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


def load_model(folder: Path, pair: str, device: str | None = None) -> tuple[DomainClassifier, dict[str, Any]]:
    """The classifier in `folder` and its metadata; a missing or corrupt folder raises StageError naming it."""
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
    except BitextflowError:
        raise
    except Exception as exc:  # unpickling, safetensors, JSON and shape errors all mean "this folder is broken"
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise StageError(
            f"domain classifier {folder} cannot be loaded ({detail[:200]}); retrain with `{train_command(pair)}`"
        ) from None
    raise StageError(
        f"{folder / METADATA_FILENAME} names unknown kind {metadata['kind']!r}; retrain with `{train_command(pair)}`"
    )


def domain_prefix(pair: str) -> str:
    return f"{MODELS_PREFIX}/{pair}/domain/"


def published_versions(store: ObjectStore, pair: str) -> list[int]:
    """Versions of the pair's domain models whose metadata exists, ascending."""
    return sorted(int(m.group(1)) for key in store.iter_keys(domain_prefix(pair)) if (m := _VERSION.search(key)))


def publish_model(store: ObjectStore, pair: str, folder: Path) -> str:
    """Upload `folder` as the next version ``models/<pair>/domain/v<N>/`` (metadata last); returns its s3:// URI."""
    version = max(published_versions(store, pair), default=0) + 1
    prefix = f"{domain_prefix(pair)}v{version}/"
    files = sorted(path for path in folder.rglob("*") if path.is_file() and path.name != METADATA_FILENAME)
    for path in [*files, folder / METADATA_FILENAME]:
        store.put_file(prefix + path.relative_to(folder).as_posix(), path)
    return store.uri(prefix)


def record_in_registry(config: PairConfig, store: ObjectStore, folder: Path, uri: str) -> RegistryEntry:
    """Record the model published at ``uri`` in the pair's DVC registry: ``models/domain-<pair>/v<N>``, tag
    ``model-domain-<pair>-v<N>`` with the same N as in S3 (docs/classify.md)."""
    from bitextflow.release.registry import registry_for

    version = int(_PUBLISHED_VERSION.search(uri).group(1))  # type: ignore[union-attr] - publish_model's URIs end in /v<N>/
    return registry_for(config, store.settings).record_model(f"domain-{config.pair}", version, folder)


def model_cache_dir() -> Path:
    root = os.environ.get("BITEXTFLOW_CACHE") or Path.home() / ".cache" / "bitextflow"
    return Path(root) / "models" / "domain"


def resolve_classifier(location: str, pair: str, store: ObjectStore) -> Path:
    """A local folder for `location`: a path, ``s3://bucket/prefix`` or ``latest`` (downloaded and cached)."""
    if location == LATEST:
        versions = published_versions(store, pair)
        if not versions:
            raise StageError(
                f"domain.classifier is 'latest' but no model is published under {store.uri(domain_prefix(pair))}; train one with `{train_command(pair)}`"
            )
        return _download(store, f"{domain_prefix(pair)}v{versions[-1]}/", pair)
    if location.startswith("s3://"):
        bucket, _, prefix = location.removeprefix("s3://").partition("/")
        prefix = prefix.rstrip("/") + "/"
        other = store if bucket == store.bucket else ObjectStore(store.settings, bucket)
        return _download(other, prefix, pair)
    return Path(location).expanduser()


def _download(store: ObjectStore, prefix: str, pair: str) -> Path:
    """Copy a published model into the cache once (a version never changes); atomically, metadata included."""
    target = model_cache_dir() / store.bucket / prefix.rstrip("/")
    if (target / METADATA_FILENAME).is_file():
        return target
    keys = store.list_keys(prefix)
    if prefix + METADATA_FILENAME not in keys:
        raise StageError(
            f"{store.uri(prefix)} holds no domain classifier (no {METADATA_FILENAME}); train one with `{train_command(pair)}` or fix domain.classifier"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".download-", dir=target.parent))
    try:
        for key in keys:
            local = staging / key.removeprefix(prefix)
            local.parent.mkdir(parents=True, exist_ok=True)
            store.download_file(key, local)
        shutil.rmtree(target, ignore_errors=True)  # a download that died before its metadata arrived
        staging.replace(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
