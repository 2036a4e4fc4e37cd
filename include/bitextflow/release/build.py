"""The files of one corpus release, written into a local folder from the run's gated pairs and extras.

``<pair>.tsv`` (Bitextor's columns), ``<pair>.tmx`` (validated against the TMX 1.4 DTD), ``<pair>.jsonl``
(every column), ``stats.json``, ``gate.json`` and, when the run's other outputs are given
(:class:`ReleaseExtras`), ``document_pairs.jsonl``, ``mono.<lang>.txt``, ``report.html`` and
``datasheet.md``. Publishing them as a numbered version is :mod:`bitextflow.catalog.releases`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.release.datasheet import local_site_licences, render_datasheet
from bitextflow.release.formats import corpus_stats, validate_tmx, write_jsonl, write_lines, write_tmx, write_tsv
from bitextflow.text.comparison import normalise_for_comparison


def json_bytes(value: Any) -> bytes:
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
    write("stats.json", lambda out: out.write(json_bytes(stats)))
    write("gate.json", lambda out: out.write(json_bytes(gate)))
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
