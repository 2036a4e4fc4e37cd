"""The monolingual corpus as documents: every page extraction kept in one of the pair's languages, annotated, then
filtered into the release's ``documents.<lang>.jsonl.gz``.

As HPLT, FineWeb-2 and MaCoCu release web text, a line is a document, not a sentence: its URL, crawl date and source
record, its text with the structure extraction found (paragraph types, boilerplate flags, paragraph languages), and
the annotations users filter on afterwards: the language with its score and the page's language set, text quality per
paragraph and per document in the MaCoCu scheme (:mod:`bitextflow.extract.text_quality`), domain relevance and terms,
the domain classifier's distribution, the near-duplicate cluster's size, the personal data replaced (by type), the
opt-outs the page passed and the document pairs it belongs to. The line's JSON schema ships beside this module
(``documents.schema.json``, published in docs/release.md).

:func:`annotate` makes a line (the ``monolingual`` stage, for every document); :func:`held_back_by` says which
``mono.*`` threshold keeps a document out of the release; :class:`DocumentsCorpus` writes the released lines.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from bitextflow.config import MonolingualConfig, PairConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.text_quality import document_quality, paragraph_quality
from bitextflow.records import Document
from bitextflow.redaction.personal_data import PersonalDataDetector, redact
from bitextflow.redaction.screen import Screen
from bitextflow.text.lengths import token_count

SCHEMA_FILE = Path(__file__).with_name("documents.schema.json")
#: Where a document's record came from: the run's crawl, WARC files it ingested, Common Crawl by its index.
SourceKind = Literal["crawl", "warc", "commoncrawl"]
#: The report shows this many documents per quality label and language, each cut at this many characters.
SAMPLES_PER_BAND = 3
SAMPLE_CHARS = 400


@functools.cache
def document_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


def documents_file(language: str) -> str:
    return f"documents.{language}.jsonl.gz"


def source_kind(config: PairConfig) -> SourceKind:
    if config.crawl.index is not None:
        return "commoncrawl"
    return "warc" if config.crawl.warcs else "crawl"


def optout_verdicts(config: PairConfig) -> dict[str, Any]:
    """The opt-outs every released page passed: a document exists only when each opt-out the pair honours let its page
    in (extraction and the crawl set the others aside, counted), so the verdicts follow from the pair's policy."""
    policy = config.policy
    return {
        "robots": "allowed",
        "tdmrep": "allowed" if policy.honour_tdmrep else "not_checked",
        "noai": "allowed" if policy.honour_noai else "not_checked",
        "robots_agents": sorted({config.crawl.user_agent, *policy.robots_agents}),
    }


@dataclass(frozen=True)
class DocumentContext:
    """What the run knows about a document beyond its row: the copies of it set aside, the document pairs it is in,
    its sentences' domain distributions (JSON objects) and where they come from (``classifier_from``: its sentences
    in classified sentence pairs, or a sample of its own text's), the document kept instead of it, and its record in
    Common Crawl (:func:`bitextflow.catalog.cc_locations.index_records`)."""

    copies: int = 0
    document_pairs: Sequence[tuple[str, str]] = ()
    domain_distributions: Sequence[str] = ()
    classifier_from: Literal["sentence_pairs", "text"] = "sentence_pairs"
    duplicate_of: str = ""
    index_record: Mapping[str, Any] | None = None


def mean_distribution(distributions: Sequence[str]) -> dict[str, float] | None:
    """The mean of ``{label: probability}`` JSON objects (rounded as the classify stage rounds); None for none."""
    parsed = [json.loads(value) for value in distributions if value]
    if not parsed:
        return None
    total: Counter[str] = Counter()
    for distribution in parsed:
        total.update(distribution)
    return {label: round(total[label] / len(parsed), 4) for label in sorted(total)}


def classifier_fields(context: DocumentContext) -> dict[str, Any]:
    """A line's ``domain.classifier`` (the mean distribution, or None), what it is the mean of
    (``classifier_sentences``) and where those sentences come from (``classifier_from``, None with no distribution)."""
    distribution = mean_distribution(context.domain_distributions)
    return {
        "classifier": distribution,
        "classifier_from": context.classifier_from if distribution else None,
        "classifier_sentences": sum(1 for value in context.domain_distributions if value),
    }


def annotate(
    document: Document,
    context: DocumentContext,
    *,
    source: SourceKind,
    optouts: Mapping[str, Any],
    detector: PersonalDataDetector | None,
    replace: bool = True,
) -> dict[str, Any]:
    """The release line of ``document``: its text and structure with every annotation, the personal data ``detector``
    finds counted by type in ``personal_data`` and, with ``replace``, replaced by typed placeholders (a pair whose
    guard drops such texts leaves them for the release's :class:`~bitextflow.redaction.Screen` to set aside)."""
    paragraphs = list(document.paragraphs)
    texts = [document.title, *(p.text for p in paragraphs)]
    found: Mapping[str, int] = {}
    if detector is not None:
        redacted, found = redact(texts, detector)
        texts = redacted if replace else texts
    title, paragraph_texts = texts[0], texts[1:]
    verdicts = [
        paragraph_quality(text, document.language, detected_language=p.language)
        for p, text in zip(paragraphs, paragraph_texts, strict=True)
    ]
    main = [i for i, p in enumerate(paragraphs) if not p.boilerplate and p.type != "title"]
    quality = document_quality([(paragraph_texts[i], verdicts[i]) for i in main])
    main_text = _main_text(paragraph_texts, main)
    shares = {entry["language"]: float(entry["share"]) for entry in document.language_set}
    return {
        "id": document.doc_id,
        "url": document.url,
        "title": title,
        "crawl_date": document.warc_date,
        "source": {
            "kind": source,
            "warc": document.warc_key,
            "offset": int(document.warc_offset),
            "record_id": document.warc_record_id,
        }
        | ({"commoncrawl": dict(context.index_record)} if context.index_record else {}),
        "language": document.language,
        "language_score": round(shares.get(document.language, 0.0), 4),
        "language_set": [{"language": lang, "share": round(share, 4)} for lang, share in shares.items()],
        "text": main_text,
        "paragraphs": [
            {
                "type": p.type,
                "text": text,
                "boilerplate": bool(p.boilerplate),
                "language": p.language,
                "quality": verdict.label,
                "quality_score": round(verdict.score, 4),
            }
            for p, text, verdict in zip(paragraphs, paragraph_texts, verdicts, strict=True)
        ],
        "words": token_count(main_text, document.language),
        "quality": {"label": quality.label, "score": round(quality.score, 4)},
        "domain": {
            "relevance": round(float(document.relevance), 4),
            "terms": sorted({term for i in main for term in paragraphs[i].terms}),
            **classifier_fields(context),
        },
        "duplicates": {"cluster_size": 1 + context.copies, "duplicate_of": context.duplicate_of or None},
        "personal_data": dict(sorted(found.items())),
        "optouts": dict(optouts),
        "document_pairs": [list(pair) for pair in sorted(context.document_pairs)],
    }


def _main_text(paragraph_texts: Sequence[str], main: Sequence[int]) -> str:
    """A document's ``text``: its main paragraphs (``main``: their indices), one a line."""
    return "\n".join(paragraph_texts[i] for i in main)


def screened_line(line: dict[str, Any], screen: Screen, counts: StageCounts) -> dict[str, Any] | None:
    """A release line through ``screen`` (:meth:`~bitextflow.redaction.Screen.item`, as every item of a release
    passes it): None when it is set aside; else the line, with personal data the screen replaces (a detector
    stricter than the run's) replaced in its title, paragraphs and text and counted in ``personal_data``."""
    paragraphs = line["paragraphs"]
    texts = [line["title"], *(p["text"] for p in paragraphs)]
    found: dict[str, int] = {}
    screened = screen.item((line["url"],), texts, counts, found)
    if screened is None or screened is texts:
        return None if screened is None else line
    main = [i for i, p in enumerate(paragraphs) if not p["boilerplate"] and p["type"] != "title"]
    return line | {
        "title": screened[0],
        "paragraphs": [p | {"text": text} for p, text in zip(paragraphs, screened[1:], strict=True)],
        "text": _main_text(screened[1:], main),
        "personal_data": dict(sorted((Counter(line["personal_data"]) + Counter(found)).items())),
    }


def annotated_row(line: Mapping[str, Any], partition: int = 0) -> dict[str, Any]:
    """The ``records.ANNOTATED_DOCUMENTS`` row of a release line: the fields the ``mono.*`` thresholds read, and the line."""
    return {
        "doc_id": line["id"],
        "language": line["language"],
        "quality_label": line["quality"]["label"],
        "quality_score": line["quality"]["score"],
        "language_score": line["language_score"],
        "relevance": line["domain"]["relevance"],
        "words": line["words"],
        "duplicate_of": line["duplicates"]["duplicate_of"] or "",
        "document": json.dumps(line, ensure_ascii=False, sort_keys=True),
        "partition": partition,
    }


def held_back_by(row: Mapping[str, Any], mono: MonolingualConfig) -> str | None:
    """The first ``mono.*`` threshold an annotated document (``records.ANNOTATED_DOCUMENTS`` row) misses, as the
    reason it is counted under; None when it is released."""
    # a copy of the same URL is the same document, under the same id: released once whatever mono.duplicates says
    if row["duplicate_of"] and (mono.duplicates == "drop" or row["duplicate_of"] == row["doc_id"]):
        return "duplicate"
    if not row["words"] or row["words"] < mono.min_words:
        return "too_few_words"
    if row["language_score"] < mono.min_language_score:
        return "below_language_score"
    if row["quality_label"] not in mono.quality_labels:
        return f"quality_{row['quality_label']}"
    if row["quality_score"] < mono.min_quality_score:
        return "below_quality_score"
    if row["relevance"] < mono.min_relevance:
        return "below_relevance"
    return None


@dataclass
class DocumentsCorpus:
    """The released documents of each of the pair's ``languages``, written as they come into ``directory``
    (gzip without a timestamp, so that the same documents give the same bytes), through the release's ``screen``
    (:func:`screened_line`: the takedown list of the day, and personal data, which the stage replaced already unless
    the pair's guard drops such texts), every document counted as ``release_documents``; :attr:`documents` and :attr:`words` per language and
    :attr:`labels` (document quality labels released, per language) feed the statistics and the report."""

    directory: Path
    languages: Sequence[str]
    mono: MonolingualConfig
    screen: Screen | None = None
    counts: StageCounts = field(default_factory=lambda: StageCounts("release_documents"))
    documents: Counter[str] = field(default_factory=Counter)
    words: Counter[str] = field(default_factory=Counter)
    labels: dict[str, Counter[str]] = field(default_factory=dict)
    #: Per language: released documents per tenth of the quality score (0..9), and per most probable domain label.
    quality_bins: dict[str, Counter[int]] = field(default_factory=dict)
    domains: dict[str, Counter[str]] = field(default_factory=dict)
    samples: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    _files: dict[str, IO[bytes]] = field(default_factory=dict)

    def add(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Annotated documents (``records.ANNOTATED_DOCUMENTS`` rows) in release order."""
        for row in rows:
            self.counts.seen()
            if row["language"] not in self.languages:
                self.counts.drop("other_language")
                continue
            if (reason := held_back_by(row, self.mono)) is not None:
                self.counts.drop(reason)
                continue
            stored = json.loads(row["document"])
            line = screened_line(stored, self.screen, self.counts) if self.screen is not None else stored
            if line is not None:
                self._write(row["language"], line, row["document"] if line is stored else None)

    def _write(self, language: str, line: dict[str, Any], text: str | None) -> None:
        """``line`` into its language's file (``text``: its JSON already, when the screen changed nothing)."""
        if language not in self._files:
            self._files[language] = gzip.GzipFile(self.directory / documents_file(language), "wb", mtime=0)
        text = text if text is not None else json.dumps(line, ensure_ascii=False, sort_keys=True)
        self._files[language].write(text.encode("utf-8") + b"\n")
        self.counts.keep()
        self.documents[language] += 1
        self.words[language] += line["words"]
        label = line["quality"]["label"]
        self.labels.setdefault(language, Counter())[label] += 1
        self.quality_bins.setdefault(language, Counter())[min(int(line["quality"]["score"] * 10), 9)] += 1
        if distribution := line["domain"]["classifier"]:
            self.domains.setdefault(language, Counter())[max(sorted(distribution), key=distribution.__getitem__)] += 1
        band = self.samples.setdefault(language, {}).setdefault(label, [])
        if len(band) < SAMPLES_PER_BAND:
            band.append({"url": line["url"], "title": line["title"], "text": line["text"][:SAMPLE_CHARS]})

    def close(self) -> list[Path]:
        """Every language's file, empty where none was released."""
        paths = []
        for language in self.languages:
            if language not in self._files:
                self._files[language] = gzip.GzipFile(self.directory / documents_file(language), "wb", mtime=0)
            self._files[language].close()
            paths.append(self.directory / documents_file(language))
        return paths

    def statistics(self) -> dict[str, Any]:
        """``stats.json``'s ``documents``: per language, documents and words released, their quality labels, how many
        fall in each tenth of the quality score, and how many have each domain label as their most probable."""
        return {
            language: {
                "documents": self.documents[language],
                "words": self.words[language],
                "quality_labels": dict(sorted(self.labels.get(language, Counter()).items())),
                "quality_scores": [self.quality_bins.get(language, Counter())[tenth] for tenth in range(10)],
                "domains": dict(sorted(self.domains.get(language, Counter()).items())),
            }
            for language in self.languages
        }
