"""The files of one corpus release, written into a local folder from the run's gated pairs and extras, streamed.

``<pair>.tsv`` (Bitextor's columns), ``<pair>.tmx`` (validated against the TMX 1.4 DTD), ``<pair>.jsonl``
(every column), ``stats.json``, ``gate.json`` and, when the run's other outputs are given
(:class:`ReleaseExtras`), ``document_pairs.jsonl``, ``documents.<lang>.jsonl.gz`` (the monolingual corpus as
annotated documents, :mod:`bitextflow.release.documents`), ``mono.<lang>.txt``, ``report.html`` and ``datasheet.md``. Publishing them as a numbered version is :mod:`bitextflow.catalog.releases`.

Pairs, document pairs and sentences come as chunks (one site partition after another), each written to the
files as it comes, so a release never holds the run: :class:`~bitextflow.release.profile.CorpusProfile`
keeps the figures, and a second pass over the pairs picks the samples the report shows.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd

from bitextflow.config import MonolingualConfig, PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.hashing import SeenHashes
from bitextflow.redaction import Screen
from bitextflow.release.datasheet import local_site_licences, render_datasheet
from bitextflow.release.documents import DocumentsCorpus
from bitextflow.release.formats import TmxWriter, validate_tmx, write_jsonl, write_lines, write_tsv
from bitextflow.release.guards import guard_counts
from bitextflow.release.profile import CorpusProfile, GateVerdict, identity
from bitextflow.text.comparison import normalise_for_comparison

#: A release's rows: one frame, or frames in order (a list, or an object that reads them again on each iteration).
Chunks = pd.DataFrame | Iterable[pd.DataFrame]
#: The columns of the sentences (``records.SENTENCES``) the monolingual corpus is made of.
MONOLINGUAL_COLUMNS = ["doc_id", "url", "language", "paragraph_index", "sentence_index", "text"]


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, allow_nan=False).encode("utf-8")


def chunks_of(rows: Chunks | None) -> Iterable[pd.DataFrame]:
    """``rows`` as an iterable of frames (a single frame is one chunk)."""
    if rows is None:
        return ()
    return [rows] if isinstance(rows, pd.DataFrame) else rows


@dataclass(frozen=True)
class ReleaseExtras:
    """The run's other outputs that a full release is made of (all optional).

    ``document_pairs``: align_documents' frames; ``sentences``: the extract sentences (``records.SENTENCES`` rows),
    whose sentences in the pair's languages make the monolingual corpus; ``crawl_log``: the crawl log records
    (iterable twice); ``config``: the pair config (for the datasheet); ``gates``: what the run's gates said;
    ``screen``: the publication guards the monolingual corpus and the document pairs pass (the gate screened the
    sentence pairs), counted as ``release_monolingual`` and ``release_document_pairs``;
    ``redaction``: what a redacted version was made from (``stats.json``'s ``redaction``); ``documents``: the
    ``monolingual`` stage's annotated documents (``records.ANNOTATED_DOCUMENTS`` rows), filtered by ``config.mono``;
    ``evaluation``: what people's labels measured of an earlier release (:mod:`bitextflow.release.evaluation`), which the
    report shows and the datasheet cites (``stats.json``'s ``manual_evaluation``).
    """

    document_pairs: Chunks | None = None
    sentences: Chunks | None = None
    crawl_log: Iterable[Mapping[str, Any]] = ()
    config: PairConfig | None = None
    gates: Sequence[GateVerdict] = ()
    screen: Screen | None = None
    redaction: Mapping[str, Any] | None = None
    documents: Chunks | None = None
    evaluation: Mapping[str, Any] | None = None


class MonolingualCorpus:
    """Sentences per language, each kept once (equal after case folding and dropping non-alphanumerics, as pairs
    are deduplicated), written to ``mono.<lang>.txt`` as they come; documents in order within each chunk; through
    ``screen`` when given."""

    def __init__(self, directory: Path, languages: Sequence[str], screen: Screen | None = None):
        self.paths = {language: directory / f"mono.{language}.txt" for language in languages}
        self.lines = dict.fromkeys(languages, 0)
        self.screen = screen
        self.counts = StageCounts("release_monolingual")
        self._seen = SeenHashes()
        self._files: dict[str, IO[bytes]] = {}

    def add(self, sentences: pd.DataFrame) -> None:
        self.counts.seen(len(sentences))
        ordered = sentences.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
        in_corpus = ordered[ordered["language"].isin(list(self.paths))]
        self.counts.drop("other_language", len(ordered) - len(in_corpus))
        if self.screen is not None:
            in_corpus = self.screen.sentences(in_corpus, self.counts)
        new = self._seen.add(
            identity(language, normalise_for_comparison(text))
            for language, text in zip(in_corpus["language"], in_corpus["text"], strict=True)
        )
        self.counts.drop("duplicate_sentence", int((~new).sum()))
        for language, text in zip(in_corpus["language"][new], in_corpus["text"][new], strict=True):
            if language not in self._files:
                self._files[language] = self.paths[language].open("wb")
            self.lines[language] += write_lines([text], self._files[language])
        self.counts.keep(int(new.sum()))

    def close(self) -> list[Path]:
        for language, path in self.paths.items():
            if language in self._files:
                self._files[language].close()
            else:
                path.write_bytes(b"")
        return list(self.paths.values())


def _write_document_pairs(
    document_pairs: Iterable[pd.DataFrame], profile: CorpusProfile, out: IO[bytes], screen: Screen | None, counts: StageCounts
) -> int:
    """Each document pair with its released sentence pairs, without internal columns, through ``screen`` when given
    (counted in ``counts``); returns how many."""
    written = 0
    for frame in document_pairs:
        counts.seen(len(frame))
        if screen is not None:
            frame = screen.document_pairs(frame, counts)
        counts.keep(len(frame))
        columns = [c for c in frame.columns if c != "partition"]  # where the run stored it, not what it is
        rows = frame[columns].sort_values(["url_a", "url_b"], kind="stable").reset_index(drop=True)
        rows["sentence_pairs"] = [profile.yield_of(a, b) for a, b in zip(rows["url_a"], rows["url_b"], strict=True)]
        written += write_jsonl(rows, out)
    return written


def build_release(
    directory: Path,
    pair: str,
    version: int,
    pairs: Chunks,
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

    def write(name: str, writer: Callable[[IO[bytes]], Any]) -> Any:
        path = directory / name
        with path.open("wb") as out:
            result = writer(out)
        paths.append(path)
        return result

    profile = CorpusProfile()
    chunks = chunks_of(pairs)
    tsv, tmx, jsonl = (directory / f"{pair}{suffix}" for suffix in (".tsv", ".tmx", ".jsonl"))
    with (
        tsv.open("wb") as tsv_out,
        tmx.open("wb") as tmx_out,
        jsonl.open("wb") as jsonl_out,
        TmxWriter(tmx_out, pair.split("-")[0]) as units,
    ):
        for chunk in chunks:
            write_tsv(chunk, tsv_out)
            units.write(chunk)
            write_jsonl(chunk, jsonl_out)
            profile.add(chunk)
    paths += [tsv, tmx]
    if validate_tmx(tmx) != profile.sentence_pairs:
        raise StageError(f"{tmx}: TMX holds a different number of tu than the {profile.sentence_pairs} sentence pairs")
    paths.append(jsonl)
    mono = None
    if extras.sentences is not None:
        mono = MonolingualCorpus(directory, pair.split("-", 1), extras.screen)
        for sentences in chunks_of(extras.sentences):
            mono.add(sentences)
    release_counts = [mono.counts] if mono else []
    corpus = None
    if extras.documents is not None:
        thresholds = extras.config.mono if extras.config else MonolingualConfig()
        corpus = DocumentsCorpus(directory, pair.split("-", 1), thresholds, extras.screen)
        for frame in chunks_of(extras.documents):
            corpus.add(frame.to_dict("records"))
        paths += corpus.close()
        release_counts.append(corpus.counts)
    if extras.document_pairs is not None:
        document_pair_counts = StageCounts("release_document_pairs")
        document_pairs = write(
            "document_pairs.jsonl",
            lambda out: _write_document_pairs(
                chunks_of(extras.document_pairs), profile, out, extras.screen, document_pair_counts
            ),
        )
        if extras.screen is not None:
            release_counts.append(document_pair_counts)
    stats = profile.stats([*stage_counts, *release_counts])
    stats["guards"] = guard_counts(stats["stage_counts"])
    if extras.redaction is not None:
        stats["redaction"] = dict(extras.redaction)
    if extras.document_pairs is not None:
        stats["aligned_document_pairs"] = document_pairs
    if mono is not None:
        paths += mono.close()
        stats["monolingual_sentences"] = dict(mono.lines)
    if corpus is not None:
        stats["documents"] = corpus.statistics()
    if extras.evaluation is not None:
        stats["manual_evaluation"] = dict(extras.evaluation)
    gate = gate_report if gate_report is not None else {"success": None, "note": "published without a quality gate"}
    write("stats.json", lambda out: out.write(json_bytes(stats)))
    write("gate.json", lambda out: out.write(json_bytes(gate)))
    if extras.document_pairs is not None or extras.crawl_log:
        from bitextflow.release.report import crawl_profile, render_report  # matplotlib: seconds to import, only needed here

        paired_urls = {url for frame in chunks_of(extras.document_pairs) for url in (*frame["url_a"], *frame["url_b"])}
        samples, crawl = profile.take_samples(chunks), crawl_profile(extras.crawl_log, paired_urls)
        documents = corpus.samples if corpus is not None else {}
        report = render_report(pair, version, profile, stats, samples, crawl, extras.gates, documents)
        write("report.html", lambda out: out.write(report))
    if extras.config is not None:
        datasheet = render_datasheet(extras.config, version, run_id, stats, local_site_licences(extras.config))
        write("datasheet.md", lambda out: out.write(datasheet.encode("utf-8")))
    return paths
