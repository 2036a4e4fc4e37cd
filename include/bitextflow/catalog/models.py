"""Published model versions in the object store: ``models/<pair>/<kind>/v<N>/`` (domain classifiers,
the smart crawl's URL models, bicleaner-ai models).

As with releases, a version exists once its metadata file does (uploaded last), so readers never see
half a model, and a version never changes, so a downloaded copy in the cache
(``<cache>/models/<kind>/<bucket>/<prefix>``) is reused. A pair config names its domain classifier in
``domain.classifier``: a local folder, ``s3://bucket/prefix``, ``latest`` (the highest published
version of the pair) or ``offline`` (a probe trained on the offline labelled set of the pair's source
language, cached under ``<cache>/models/domain/offline/``: :mod:`bitextflow.classify.offline_model`).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bitextflow.catalog.registry import RegistryEntry, registry_for
from bitextflow.classify.model import METADATA_FILENAME, MODELS_PREFIX, train_command
from bitextflow.classify.offline_model import OFFLINE, offline_classifier
from bitextflow.config import PairConfig
from bitextflow.errors import StageError
from bitextflow.models import url_models
from bitextflow.score import bicleaner
from bitextflow.settings import cache_dir
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import local_path

LATEST = "latest"
_PUBLISHED_VERSION = re.compile(r"/v(\d+)/$")


# -- versions of any kind of model ---------------------------------------------------------------------
def _versions(store: ObjectStore, prefix: str, metadata: str) -> list[int]:
    """The complete versions under ``prefix`` (``v<N>/`` with its ``metadata`` file), ascending."""
    pattern = re.compile(re.escape(prefix) + r"v(\d+)/" + re.escape(metadata) + "$")
    return sorted(int(m.group(1)) for key in store.iter_keys(prefix) if (m := pattern.match(key)))


def _publish_next(
    store: ObjectStore, prefix: str, folder: Path, metadata: str, stamp: Callable[[int], dict[str, Any]] | None = None
) -> str:
    """Upload ``folder`` as the next version under ``prefix``, its ``metadata`` file last (with ``stamp(N)``'s
    fields added, if given), so a reader never sees half a version; returns its s3:// URI."""
    version = max(_versions(store, prefix, metadata), default=0) + 1
    target = f"{prefix}v{version}/"
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != metadata):
        store.put_file(target + path.relative_to(folder).as_posix(), path)
    if stamp is None:
        store.put_file(target + metadata, folder / metadata)
    else:
        store.put_json(target + metadata, {**json.loads((folder / metadata).read_text(encoding="utf-8")), **stamp(version)})
    return store.uri(target)


def _download_once(store: ObjectStore, prefix: str, root: Path, metadata: str, incomplete: Callable[[], Exception]) -> Path:
    """A local copy under ``root`` of the version at ``prefix``, downloaded once (a version never changes) and
    moved into place whole; ``incomplete()`` is raised when the version has no ``metadata`` file."""
    prefix = prefix.rstrip("/") + "/"
    target = local_path(root, f"{store.bucket}/{prefix.rstrip('/')}")
    if (target / metadata).is_file():
        return target
    keys = store.list_keys(prefix)
    if prefix + metadata not in keys:
        raise incomplete()
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".download-", dir=target.parent))
    try:
        for key in keys:
            local = local_path(staging, key.removeprefix(prefix))
            local.parent.mkdir(parents=True, exist_ok=True)
            store.download_file(key, local)
        shutil.rmtree(target, ignore_errors=True)  # a download that died before its metadata arrived
        staging.replace(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


# -- domain classifiers ----------------------------------------------------------------------------------
def domain_prefix(pair: str) -> str:
    return f"{MODELS_PREFIX}/{pair}/domain/"


def published_versions(store: ObjectStore, pair: str) -> list[int]:
    """Versions of the pair's domain models whose metadata exists, ascending."""
    return _versions(store, domain_prefix(pair), METADATA_FILENAME)


def publish_model(store: ObjectStore, pair: str, folder: Path) -> str:
    """Upload `folder` as the next version ``models/<pair>/domain/v<N>/`` (metadata last); returns its s3:// URI."""
    return _publish_next(store, domain_prefix(pair), folder, METADATA_FILENAME)


def record_in_registry(config: PairConfig, store: ObjectStore, folder: Path, uri: str) -> RegistryEntry:
    """Record the model published at ``uri`` in the pair's DVC registry: ``models/domain-<pair>/v<N>``, tag
    ``model-domain-<pair>-v<N>`` with the same N as in S3 (docs/classify.md)."""
    version = int(_PUBLISHED_VERSION.search(uri).group(1))  # type: ignore[union-attr] - publish_model's URIs end in /v<N>/
    return registry_for(config, store.settings).record_model(f"domain-{config.pair}", version, folder)


def model_cache_dir() -> Path:
    return cache_dir("models", "domain")


def resolve_classifier(location: str, pair: str, store: ObjectStore, runtime: str = "auto") -> Path:
    """A local folder for `location`: a path, ``s3://bucket/prefix`` or ``latest`` (downloaded and cached), or
    ``offline`` (trained on the offline set of the source language, the first part of `pair`, on the vectors of the
    encoder `runtime`, on first use)."""
    if location == OFFLINE:
        return offline_classifier(pair.partition("-")[0], runtime=runtime)
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
    def incomplete() -> StageError:
        return StageError(
            f"{store.uri(prefix)} holds no domain classifier (no {METADATA_FILENAME}); train one with "
            f"`{train_command(pair)}` or fix domain.classifier"
        )

    return _download_once(store, prefix, model_cache_dir(), METADATA_FILENAME, incomplete)


def publish_bicleaner_model(store: ObjectStore, pair: str, model: Path) -> str | None:
    """Upload the pair's bicleaner-ai model once under ``models/<pair>/bicleaner/v<N>/``; returns that prefix. A
    downloaded model (not built by bitextflow) has no version of ours to file it under, and its own folder finds it
    again: None, nothing uploaded."""
    if not bicleaner.built_by_bitextflow(model):
        return None
    version = bicleaner.model_metadata(model)["version"]
    prefix = f"{MODELS_PREFIX}/{pair}/bicleaner/v{version}/"
    if not store.exists(prefix + bicleaner.MODEL_METADATA):
        store.put_tree(prefix, model)
    return prefix


def record_bicleaner_model(config: PairConfig, settings: StorageSettings, model: Path | None = None) -> RegistryEntry:
    """Record the pair's bicleaner-ai model in its DVC registry (``release`` section): ``models/bicleaner-<pair>/v<N>``,
    tagged ``model-bicleaner-<pair>-v<N>``; a no-op when that tag exists."""
    model = model or bicleaner.require_available(config.pair, config.score.bicleaner_model)
    if not bicleaner.built_by_bitextflow(model):
        raise StageError(
            f"{model} is a downloaded bicleaner-ai model: only models bitextflow built have a version of ours to record; "
            "cite the downloaded one by its publisher's name and version"
        )
    version = bicleaner.model_metadata(model)["version"]
    return registry_for(config, settings).record_model(f"bicleaner-{config.pair}", version, model)


def url_versions_prefix(pair: str) -> str:
    return f"models/{pair}/url/"


def list_url_versions(store: ObjectStore, pair: str) -> list[int]:
    """Complete versions (metadata present) of a pair's URL models, oldest first."""
    return _versions(store, url_versions_prefix(pair), url_models.METADATA_FILENAME)


def publish_url_models(store: ObjectStore, pair: str, folder: Path) -> str:
    """Upload a trained folder as the pair's next version; returns its ``s3://`` URI. The metadata goes
    last, so a reader never sees a half-uploaded version."""
    store.ensure_bucket()
    return _publish_next(
        store, url_versions_prefix(pair), folder, url_models.METADATA_FILENAME, lambda n: {"version": f"v{n}", "pair": pair}
    )


def _fetch_url_version(store: ObjectStore, prefix: str) -> Path:
    def incomplete() -> StageError:
        return url_models.unloadable(Path(store.uri(prefix)), f"no {url_models.METADATA_FILENAME}: not a complete version")

    return _download_once(store, prefix, cache_dir("url-models"), url_models.METADATA_FILENAME, incomplete)


def resolve_url_models(location: str, store: ObjectStore | None = None, pair: str | None = None) -> tuple[Path, str] | None:
    """``crawl.url_models`` -> (local folder, version name), or None where no version exists yet.

    A location is a local folder, ``s3://bucket/models/<pair>/url/v<N>/``, ``s3://bucket/models/<pair>/url/latest``
    (the newest complete version), or ``latest`` (that, in ``store``'s bucket for ``pair``).
    """
    if location == "latest":
        if store is None or pair is None:
            raise StageError("crawl.url_models 'latest' needs the pair's bucket; use s3://<bucket>/models/<pair>/url/latest here")
        location = store.uri(url_versions_prefix(pair) + "latest")
    if not location.startswith("s3://"):
        folder = Path(location).expanduser()
        if not folder.is_dir():
            raise url_models.unloadable(folder, "no such folder")
        return folder, folder.name
    bucket, _, prefix = location.removeprefix("s3://").partition("/")
    if store is None or store.bucket != bucket:
        store = ObjectStore.from_env(bucket)
    if prefix.rstrip("/").endswith("/latest"):
        model_pair = prefix.rstrip("/").removesuffix("/latest")
        match = re.fullmatch(r"models/(.+)/url", model_pair)
        if match is None:
            raise StageError(f"{location}: expected s3://<bucket>/models/<pair>/url/latest")
        versions = list_url_versions(store, match.group(1))
        if not versions:
            return None
        prefix = f"{url_versions_prefix(match.group(1))}v{versions[-1]}/"
    folder = _fetch_url_version(store, prefix)
    version = _PUBLISHED_VERSION.search("/" + prefix.rstrip("/") + "/")
    return folder, f"v{version.group(1)}" if version else folder.name
