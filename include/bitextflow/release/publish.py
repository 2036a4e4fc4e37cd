"""Publishing a corpus version under ``releases/<pair>/v<N>/`` in the object store.

A version directory holds ``<pair>.tsv``, ``<pair>.tmx`` (validated against the TMX 1.4 DTD before
upload), ``<pair>.jsonl`` (every column), ``stats.json``, ``gate.json`` and, when the run's other
outputs are given (:class:`ReleaseExtras`), ``document_pairs.jsonl``, ``mono.<lang>.txt``,
``report.html`` and ``datasheet.md``; written last, ``release.json``: the manifest (version, pair, run id, creation time in UTC, sentence pairs,
and each file's size and SHA-256). A release exists only once its manifest exists: readers
(:func:`list_releases`, the release DAG, users) look at manifests only, so a crash half-way through
leaves no half release, just files that the next attempt overwrites.

Versions are numbered 1 + the highest version that has a manifest. Publishing is idempotent per run:
if a manifest with the same ``run_id`` exists, that release is returned and nothing is written, so a
retried Airflow task never creates an extra version.

Two runs of the same pair must not publish at the same moment (both would pick the same N); the pair
DAG serialises its publish task (``max_active_runs``/a pool of one), as S3 offers no portable
compare-and-swap to detect it here.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import pandas as pd

from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.hashing import file_sha256
from bitextflow.release.datasheet import local_site_licences, render_datasheet
from bitextflow.release.formats import TSV_COLUMNS, corpus_stats, validate_tmx, write_jsonl, write_lines, write_tmx, write_tsv
from bitextflow.storage import ObjectStore, safe_key_part

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


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False).encode("utf-8")


@dataclass(frozen=True)
class ReleaseExtras:
    """The run's other outputs that a full release is made of (all optional).

    ``document_pairs``: align_documents' frame; ``monolingual``: deduplicated sentences per language
    with the counts of that deduplication (:func:`monolingual_corpus`); ``crawl_log``: the crawl log
    records; ``config``: the pair config (for the datasheet).
    """

    document_pairs: pd.DataFrame | None = None
    monolingual: Mapping[str, Sequence[str]] = field(default_factory=dict)
    monolingual_counts: StageCounts | None = None
    crawl_log: Sequence[Mapping[str, Any]] = ()
    config: PairConfig | None = None


def monolingual_corpus(sentences: pd.DataFrame, languages: Sequence[str]) -> tuple[dict[str, list[str]], StageCounts]:
    """Sentences per language in document order, each kept once (equal after case folding and dropping
    non-alphanumerics, as pairs are deduplicated); returns them and the counts of what was dropped."""
    from bitextflow.score import normalise_for_comparison

    counts = StageCounts("release_monolingual")
    counts.seen(len(sentences))
    corpus: dict[str, list[str]] = {lang: [] for lang in languages}
    seen: set[tuple[str, str]] = set()
    ordered = sentences.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
    for language, text in zip(ordered["language"], ordered["text"], strict=True):
        if language not in corpus:
            counts.drop("other_language")
            continue
        key = (language, normalise_for_comparison(text))
        if key in seen:
            counts.drop("duplicate_sentence")
            continue
        seen.add(key)
        corpus[language].append(text)
    counts.keep(sum(len(texts) for texts in corpus.values()))
    return corpus, counts


def _document_pairs_with_yield(document_pairs: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    released = df.groupby(["url_a", "url_b"]).size().rename("sentence_pairs")
    columns = [c for c in document_pairs.columns if not c.startswith("sentences_key")]  # internal storage keys
    frame = document_pairs[columns].merge(released, how="left", left_on=["url_a", "url_b"], right_index=True)
    frame["sentence_pairs"] = frame["sentence_pairs"].fillna(0).astype(int)
    return frame.sort_values(["url_a", "url_b"], kind="stable").reset_index(drop=True)


def build_release(
    directory: Path,
    pair: str,
    version: int,
    df: pd.DataFrame,
    stage_counts: Iterable[StageCounts],
    run_id: str,
    gate_report: dict[str, Any] | None,
    extras: ReleaseExtras | None = None,
) -> list[Path]:
    """Write the files of release ``version`` of ``pair`` into ``directory`` (all but the manifest).

    The same inputs give the same bytes, so a release rebuilt from a run's stage outputs
    (``bitextflow releases build``, ``dvc repro``) can be compared with the published one file by file.
    """
    extras = extras or ReleaseExtras()
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []

    def write(name: str, writer: Any) -> None:
        path = directory / name
        with path.open("wb") as out:
            writer(out)
        paths.append(path)

    write(f"{pair}.tsv", lambda out: write_tsv(df, out))
    write(f"{pair}.tmx", lambda out: write_tmx(df, out, srclang=pair.split("-")[0]))
    if validate_tmx(paths[-1]) != len(df):
        raise StageError(f"{paths[-1]}: TMX holds a different number of tu than the {len(df)} sentence pairs")
    write(f"{pair}.jsonl", lambda out: write_jsonl(df, out))
    counts = [*stage_counts, *([extras.monolingual_counts] if extras.monolingual_counts else [])]
    stats = corpus_stats(df, counts)
    if extras.document_pairs is not None:
        document_pairs = _document_pairs_with_yield(extras.document_pairs, df)
        stats["aligned_document_pairs"] = len(document_pairs)
        write("document_pairs.jsonl", lambda out: write_jsonl(document_pairs, out))
    for language, texts in extras.monolingual.items():
        write(f"mono.{language}.txt", lambda out, texts=texts: write_lines(texts, out))
    if extras.monolingual:
        stats["monolingual_sentences"] = {language: len(texts) for language, texts in extras.monolingual.items()}
    gate = gate_report if gate_report is not None else {"success": None, "note": "published without a quality gate"}
    write("stats.json", lambda out: out.write(_json_bytes(stats)))
    write("gate.json", lambda out: out.write(_json_bytes(gate)))
    if extras.document_pairs is not None or extras.crawl_log:
        paired_urls = (
            set() if extras.document_pairs is None else {*extras.document_pairs["url_a"], *extras.document_pairs["url_b"]}
        )
        from bitextflow.release.report import render_report  # matplotlib: seconds to import, only needed here

        report = render_report(pair, version, df, stats, list(extras.crawl_log), paired_urls)
        write("report.html", lambda out: out.write(report))
    if extras.config is not None:
        datasheet = render_datasheet(extras.config, version, run_id, stats, local_site_licences(extras.config))
        write("datasheet.md", lambda out: out.write(datasheet.encode("utf-8")))
    return paths


def next_version(store: ObjectStore, pair: str, run_id: str) -> tuple[int, dict[str, Any] | None]:
    """The version ``run_id`` published (with its manifest), or the version it would publish (and None)."""
    _check_pair(pair)
    existing = _manifests(store, pair)
    for version, manifest in existing:
        if manifest.get("run_id") == run_id:
            return version, manifest
    return 1 + max((v for v, _ in existing), default=0), None


def publish_release(
    store: ObjectStore,
    pair: str,
    df: pd.DataFrame,
    stage_counts: Iterable[StageCounts],
    run_id: str,
    gate_report: dict[str, Any] | None,
    extras: ReleaseExtras | None = None,
    verify: Callable[[Path, int], None] | None = None,
) -> ReleaseInfo:
    """Publish ``df`` as the next version of ``pair`` (or return the version ``run_id`` already published).

    ``gate_report`` is :meth:`bitextflow.quality.GateReport.to_dict` of the gate that let the data
    through; ``None`` (no gate ran) is recorded as such in ``gate.json`` and the manifest.
    ``verify(directory, version)`` sees the built files before anything is uploaded; when it raises,
    nothing of this version reaches the store.
    """
    version, published = next_version(store, pair, run_id)
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
        built = build_release(Path(tmp), pair, version, df, stage_counts, run_id, gate_report, extras)
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
        "sentence_pairs": len(df),
        "gate_success": gate_success,
        "files": files,
    }
    store.put_bytes(prefix + MANIFEST_NAME, _json_bytes(manifest), _JSON_TYPE)
    return _info(store, pair, version, manifest)


def read_release_pairs(store: ObjectStore, release: ReleaseInfo) -> pd.DataFrame:
    """The sentence pairs of a published release, read back from its TSV (Bitextor's columns)."""
    key = release_prefix(release.pair, release.version) + f"{release.pair}.tsv"
    return pd.read_csv(
        io.BytesIO(store.get_bytes(key)), sep="\t", names=list(TSV_COLUMNS), header=None, quoting=csv.QUOTE_NONE,
        dtype={"url_a": str, "url_b": str, "text_a": str, "text_b": str}, keep_default_na=False,
    )  # fmt: skip
