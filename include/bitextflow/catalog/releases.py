"""Published corpus versions under ``releases/<pair>/v<N>/`` in the object store.

A version folder holds the files :func:`bitextflow.release.build.build_release` writes and, written
last, ``release.json``: the manifest (version, pair, run id, creation time in UTC, sentence pairs, and
each file's size and SHA-256). A release exists only once its manifest exists: readers
(:func:`list_releases`, the release stage, users) look at manifests only, so a crash half-way through
leaves no half release, just files that the next attempt overwrites.

Versions are numbered 1 + the highest version that has a manifest. Publishing is idempotent per run:
if a manifest with the same ``run_id`` exists, that release is returned and nothing is written, so a
retried Airflow task never creates an extra version. A redacted version of a release
(:mod:`bitextflow.catalog.redaction`) keeps its run's id and adds ``redaction``, the digest of what it was made
from, which makes it a version of its own, idempotent in turn.

Two runs of the same pair must not publish at the same moment (both would pick the same N); the pair
DAG serialises its publish task (``max_active_runs``/a pool of one), as S3 offers no portable
compare-and-swap to detect it here.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pandas as pd

from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.hashing import file_sha256
from bitextflow.release.build import Chunks, ReleaseExtras, build_release, json_bytes
from bitextflow.release.formats import TSV_COLUMNS
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import safe_key_part

RELEASES_PREFIX = "releases"
MANIFEST_NAME = "release.json"

_JSON_TYPE = "application/json"
_CONTENT_TYPES = {
    ".tsv": "text/tab-separated-values; charset=utf-8",
    ".tmx": "application/xml",
    ".jsonl": "application/jsonl; charset=utf-8",
    ".json": _JSON_TYPE,
    ".txt": "text/plain; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
}


@dataclass(frozen=True)
class ReleaseInfo:
    """What callers need to find and cite a release; the manifest in the store holds the rest."""

    version: int
    pair: str
    uri: str
    sentence_pairs: int
    created: str
    run_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def release_prefix(pair: str, version: int) -> str:
    """``releases/<pair>/v<N>/``; the trailing slash keeps v1 from matching v10 in listings."""
    return f"{RELEASES_PREFIX}/{pair}/v{version}/"


def _check_pair(pair: str) -> None:
    if not pair or safe_key_part(pair) != pair:
        raise StageError(f"pair name {pair!r} cannot be part of a storage key; use the config's pair, e.g. 'en-es'")


def _manifests(store: ObjectStore, pair: str) -> list[tuple[int, dict[str, Any]]]:
    """(version, manifest) for every published version of ``pair``, oldest first.

    The version is taken from the key, which is what decides the next N.
    """
    pattern = re.compile(rf"^{re.escape(RELEASES_PREFIX)}/{re.escape(pair)}/v(\d+)/{re.escape(MANIFEST_NAME)}$")
    found = []
    for key in store.list_keys(f"{RELEASES_PREFIX}/{pair}/"):
        match = pattern.match(key)
        if match:
            found.append((int(match.group(1)), store.get_json(key)))
    return sorted(found, key=lambda item: item[0])


def _info(store: ObjectStore, pair: str, version: int, manifest: dict[str, Any]) -> ReleaseInfo:
    return ReleaseInfo(
        version=version,
        pair=pair,
        uri=store.uri(release_prefix(pair, version)),
        sentence_pairs=int(manifest["sentence_pairs"]),
        created=str(manifest["created"]),
        run_id=str(manifest["run_id"]),
    )


def list_releases(store: ObjectStore, pair: str) -> list[ReleaseInfo]:
    """Every published version of ``pair``, by version; directories without a manifest are not releases."""
    _check_pair(pair)
    return [_info(store, pair, version, manifest) for version, manifest in _manifests(store, pair)]


def next_version(store: ObjectStore, pair: str, run_id: str, redaction: str | None = None) -> tuple[int, dict[str, Any] | None]:
    """The version ``run_id`` published (with its manifest), or the version it would publish (and None); with
    ``redaction``, the redacted version of that digest."""
    _check_pair(pair)
    existing = _manifests(store, pair)
    for version, manifest in existing:
        if manifest.get("run_id") == run_id and manifest.get("redaction") == redaction:
            return version, manifest
    return 1 + max((v for v, _ in existing), default=0), None


def publish_release(
    store: ObjectStore,
    pair: str,
    pairs: Chunks,
    stage_counts: Iterable[StageCounts],
    run_id: str,
    gate_report: dict[str, Any] | None,
    extras: ReleaseExtras | None = None,
    verify: Callable[[Path, int], None] | None = None,
    redaction: str | None = None,
) -> ReleaseInfo:
    """Publish ``pairs`` (a frame, or frames in order) as the next version of ``pair`` (or return the version
    ``run_id`` already published).

    ``gate_report`` is :meth:`bitextflow.quality.GateReport.to_dict` of the gate that let the data
    through; ``None`` (no gate ran) is recorded as such in ``gate.json`` and the manifest.
    ``verify(directory, version)`` sees the built files before anything is uploaded; when it raises,
    nothing of this version reaches the store. ``redaction``: the digest that makes a redacted version of the run's
    release a version of its own (recorded in the manifest).
    """
    version, published = next_version(store, pair, run_id, redaction)
    if published is not None:
        return _info(store, pair, version, published)
    prefix = release_prefix(pair, version)
    # Objects here without a manifest are from a crashed attempt: clear them so that the version
    # directory ends up holding exactly what its manifest lists.
    if store.list_keys(prefix):
        store.delete_prefix(prefix)

    files: dict[str, dict[str, Any]] = {}
    # Files can be large: written to local files and uploaded from there (multipart when big).
    with TemporaryDirectory(prefix="bitextflow-release-") as tmp:
        built = build_release(Path(tmp), pair, version, pairs, stage_counts, run_id, gate_report, extras)
        sentence_pairs = json.loads((Path(tmp) / "stats.json").read_text(encoding="utf-8"))["sentence_pairs"]
        if verify is not None:
            verify(Path(tmp), version)
        for path in built:
            store.put_file(prefix + path.name, path, _CONTENT_TYPES.get(path.suffix, "application/octet-stream"))
            files[path.name] = {"size": path.stat().st_size, "sha256": file_sha256(path)}

    gate_success = gate_report.get("success") if gate_report is not None else None
    manifest = {
        "version": version,
        "pair": pair,
        "run_id": run_id,
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "sentence_pairs": sentence_pairs,
        "gate_success": gate_success,
        "files": files,
    }
    if redaction is not None:
        manifest["redaction"] = redaction
    store.put_bytes(prefix + MANIFEST_NAME, json_bytes(manifest), _JSON_TYPE)
    return _info(store, pair, version, manifest)


def read_release_records(store: ObjectStore, release: ReleaseInfo) -> pd.DataFrame:
    """Every column of a published release's sentence pairs (scores, domain distributions), read back from its JSONL."""
    key = release_prefix(release.pair, release.version) + f"{release.pair}.jsonl"
    return pd.read_json(io.BytesIO(store.get_bytes(key)), lines=True, dtype=False)


def read_release_pairs(store: ObjectStore, release: ReleaseInfo) -> pd.DataFrame:
    """The sentence pairs of a published release, read back from its TSV (Bitextor's columns)."""
    key = release_prefix(release.pair, release.version) + f"{release.pair}.tsv"
    return pd.read_csv(
        io.BytesIO(store.get_bytes(key)), sep="\t", names=list(TSV_COLUMNS), header=None, quoting=csv.QUOTE_NONE,
        dtype={"url_a": str, "url_b": str, "text_a": str, "text_b": str}, keep_default_na=False,
    )  # fmt: skip
