"""Redacted versions of a published release: the same corpus without what the takedown list names and with personal
data screened again, published as the pair's next version (``bitextflow releases redact``).

A published version is never changed (its users cite it, the DVC registry holds its digest); a takedown is honoured
by publishing a new version made from the old one's files, through the code that builds every release
(:func:`~bitextflow.catalog.releases.publish_release`), so it passes the same release gate and is recorded as any
release. From version N:

- sentence pairs: N's JSONL (every column), through the takedown list and the pair's ``personal_data`` settings,
  counted as stage ``redact_vN``;
- monolingual corpus: rebuilt from the run's sentences when they are still in the store (so that a page's
  sentences go with it), else from N's ``mono.<lang>.txt``, where a listed page's sentences are known only through
  the removed pairs: lines equal to a sentence of a listed page in a removed pair are removed with it;
- monolingual documents: the run's annotated documents when still in the store, else N's ``documents.<lang>.jsonl.gz``,
  through the takedown list (a listed page, prefix, host or text) and the personal-data guard;
- document pairs: N's ``document_pairs.jsonl`` without listed pages; report and datasheet written anew;
  ``stats.json`` keeps N's stage counts and adds ``redaction``: the source version, the pairs removed by the grounds
  of the requests (``why``), the list's size and digest. The removed text is never written anywhere.

The new version keeps the run's id; its manifest's ``redaction`` digest (source version, takedown list, personal data
settings) makes redacting again with the same list return the same version.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.catalog.checkpoints import CrawlLog
from bitextflow.catalog.releases import ReleaseInfo, list_releases, publish_release, read_release_records, release_prefix
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.quality import enforce, release_checks, validate
from bitextflow.redaction import PersonalDataDetector, Screen, TakedownList, screen_for
from bitextflow.release.build import MONOLINGUAL_COLUMNS, ReleaseExtras
from bitextflow.release.documents import annotated_row, documents_file
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import ANNOTATED_DOCUMENT_SHARDS, SENTENCE_SHARDS
from bitextflow.storage.tables import StoredTables, stage_outputs

#: Counts a release writes for what it rebuilds itself; a redacted version counts them anew.
_REBUILT_COUNTS = ("release_monolingual", "release_document_pairs", "release_documents")


def redact_release(store: ObjectStore, config: PairConfig, version: int, takedowns: TakedownList) -> ReleaseInfo:
    """Publish release ``version`` of ``config``'s pair again, without what ``takedowns`` names and with personal
    data screened per ``config``, as the pair's next version (or return the version this redaction already made)."""
    pair = config.pair
    source = {info.version: info for info in list_releases(store, pair)}.get(version)
    if source is None:
        raise StageError(f"{pair} has no release v{version}; see `bitextflow releases list --pair {pair}`")
    prefix = release_prefix(pair, version)
    stats = store.get_json(prefix + "stats.json")
    manifest_files = store.get_json(prefix + "release.json")["files"]
    screen = screen_for(config, takedowns)
    digest = hashlib.sha256(
        json.dumps([version, takedowns.sha256, config.personal_data.model_dump(mode="json")], sort_keys=True).encode()
    ).hexdigest()

    pairs = read_release_records(store, source)
    taken_down = [
        (row, entry)
        for row, (url_a, url_b, text_a, text_b) in enumerate(zip(pairs["url_a"], pairs["url_b"], pairs["text_a"], pairs["text_b"], strict=True))
        if (entry := takedowns.match((str(url_a), str(url_b)), (str(text_a), str(text_b)))) is not None
    ]  # fmt: skip
    counts = StageCounts(f"redact_v{version}")
    counts.seen(len(pairs))
    kept = screen.sentence_pairs(pairs, counts)
    counts.keep(len(kept))

    run_sentences = stage_outputs(store, pair, source.run_id, "partitions", SENTENCE_SHARDS)
    if run_sentences:
        sentences: Any = StoredTables(store, run_sentences, MONOLINGUAL_COLUMNS)
        monolingual_screen = screen
    else:
        sentences = [_monolingual_lines(store, prefix, language) for language in (config.source, config.target)]
        removed_with_page = [
            (str(pairs.at[row, f"text_{side}"]), entry)
            for row, entry in taken_down
            for side in ("a", "b")
            if takedowns.match_url(str(pairs.at[row, f"url_{side}"])) is not None
        ]
        monolingual_screen = Screen(takedowns.covering_texts(removed_with_page), screen.detector, screen.action)
    document_pairs = None
    if "document_pairs.jsonl" in manifest_files:
        document_pairs = pd.read_json(io.BytesIO(store.get_bytes(prefix + "document_pairs.jsonl")), lines=True, dtype=False)

    documents = None
    if run_documents := stage_outputs(store, pair, source.run_id, "monolingual", ANNOTATED_DOCUMENT_SHARDS):
        documents = StoredTables(store, run_documents)
    elif any(documents_file(language) in manifest_files for language in (config.source, config.target)):
        documents = [_released_documents(store, prefix, language) for language in (config.source, config.target)]

    redaction = {
        "source_version": version,
        "removed_sentence_pairs": len(pairs) - len(kept),
        "removed_by_why": dict(sorted(Counter(entry.why for _, entry in taken_down).items())),
        "takedown_entries": len(takedowns),
        "takedown_list_sha256": takedowns.sha256,
        "monolingual_traced": bool(run_sentences),
    }
    extras = ReleaseExtras(
        document_pairs, sentences, CrawlLog(store, pair, source.run_id), config, screen=monolingual_screen,
        redaction=redaction, documents=documents,
    )  # fmt: skip
    stage_counts = [StageCounts.from_dict(c) for c in stats["stage_counts"] if c["stage"] not in _REBUILT_COUNTS]
    gate_report = store.get_json(prefix + "gate.json")
    return publish_release(
        store, pair, kept, [*stage_counts, counts], source.run_id, gate_report, extras, verify=_release_gate(pair, screen.detector), redaction=digest
    )  # fmt: skip


def _released_documents(store: ObjectStore, prefix: str, language: str) -> pd.DataFrame:
    """A release's ``documents.<lang>.jsonl.gz`` as annotated-document rows, in file order."""
    key = prefix + documents_file(language)
    lines = gzip.decompress(store.get_bytes(key)).splitlines() if store.exists(key) else []
    return pd.DataFrame([annotated_row(json.loads(line)) for line in lines], columns=records.ANNOTATED_DOCUMENTS.names)


def _monolingual_lines(store: ObjectStore, prefix: str, language: str) -> pd.DataFrame:
    """A release's ``mono.<lang>.txt`` as sentence rows (in file order; their pages are not known)."""
    key = f"{prefix}mono.{language}.txt"
    lines = store.get_bytes(key).decode("utf-8").splitlines() if store.exists(key) else []
    return pd.DataFrame(
        {"doc_id": "", "url": "", "language": language, "paragraph_index": 0, "sentence_index": range(len(lines)), "text": lines},
        columns=MONOLINGUAL_COLUMNS,
    )


def _release_gate(pair: str, detector: PersonalDataDetector | None) -> Callable[[Path, int], None]:
    """The release gate every published version passes, on the built files (no Data Docs: no run folder keeps them);
    ``detector``: the personal data the redacted version screens for."""

    def verify(directory: Path, version: int) -> None:
        sentence_pairs = json.loads((directory / "stats.json").read_text(encoding="utf-8"))["sentence_pairs"]
        checks = release_checks(directory, pair, sentence_pairs, detector=detector)
        for report in validate(checks, run_name="release"):
            enforce(report)

    return verify
