"""One WARC shard to three Parquet files: kept documents, rejected documents, sentences.

Two passes, with memory that does not grow with the shard's text:

1. stream the WARC; build each document; drop exact duplicates and irrelevant documents at once;
   split the rest into sentences; spill documents and sentences to local Parquet in batches,
   keeping only hashes (for near-duplicates and sentence de-duplication) in memory;
2. decide the near-duplicates, then stream the spills into the final files: kept documents with
   their sentence counts, rejected documents with the reason (and what they duplicate), sentences
   of kept documents with repeats in the same language flagged (or dropped).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from bitextflow import schemas
from bitextflow.config import DomainConfig, ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.dedup import SentenceDeduplicator, ShardDeduplicator
from bitextflow.extract.documents import DocumentBuilder
from bitextflow.extract.model import Document
from bitextflow.extract.sentences import sentences_of
from bitextflow.extract.warc import iter_responses

log = logging.getLogger(__name__)

# Rows per row group / read batch: documents carry all their paragraphs, so they travel in small batches.
DOCUMENT_BATCH = 64
SENTENCE_BATCH = 1024


@dataclass
class ShardResult:
    documents: Path
    rejected: Path
    sentences: Path
    document_counts: StageCounts
    sentence_counts: StageCounts


class _BatchWriter:
    """Rows to a Parquet file in row groups of ``batch`` rows; an empty file still has the schema."""

    def __init__(self, path: Path, schema: pa.Schema, batch: int):
        self.path, self.schema, self.batch = path, schema, batch
        self._writer = pq.ParquetWriter(path, schema, compression="zstd")
        self._rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
            self._rows.clear()

    def close(self) -> Path:
        self.flush()
        self._writer.close()
        return self.path


def _read_batches(path: Path, batch_size: int):
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        yield from batch.to_pylist()


def document_row(document: Document, warc_key: str, sentences_key: str) -> dict[str, Any]:
    return {
        "doc_id": document.doc_id,
        "url": document.url,
        "warc_key": warc_key,
        "warc_offset": document.warc_offset,
        "warc_record_id": document.warc_record_id,
        "warc_date": document.warc_date,
        "encoding": document.encoding,
        "encoding_source": document.encoding_source,
        "repairs": list(document.repairs),
        "language": document.language,
        "language_reliable": document.language_reliable,
        "language_set": [{"language": code, "share": share} for code, share in document.language_set],
        "title": document.metadata.title,
        "description": document.metadata.description,
        "keywords": document.metadata.keywords,
        "date": document.metadata.date,
        "paragraphs": [
            {"type": p.type, "text": p.text, "language": p.language, "boilerplate": p.boilerplate,
             "out_of_language": p.out_of_language, "terms": list(p.terms)}
            for p in document.paragraphs
        ],  # fmt: skip
        "sentences": 0,
        "relevance": document.relevance,
        "relevance_terms": document.relevance_terms,
        "images": list(document.images),
        "content_hash": document.content_hash,
        "duplicate_of": "",
        "drop_reason": "",
        "sentences_key": sentences_key,
    }


def extract_shard(
    source: str | Path | IO[bytes],
    workdir: Path,
    *,
    warc_key: str,
    sentences_key: str,
    languages: set[str],
    config: ExtractConfig | None = None,
    domain: DomainConfig | None = None,
) -> ShardResult:
    """Extract one WARC (path or seekable binary stream) into Parquet files under ``workdir``.

    Sentences are made for documents in ``languages`` (the pair's); documents in other languages
    are kept (they tell what the site holds) but have none.
    """
    config = config or ExtractConfig()
    builder = DocumentBuilder(config, domain)
    doc_counts, sent_counts = StageCounts("extract_documents"), StageCounts("extract_sentences")
    dedup = ShardDeduplicator(config.near_duplicate_threshold)
    workdir.mkdir(parents=True, exist_ok=True)
    spill_docs = _BatchWriter(workdir / "spill-documents.parquet", schemas.DOCUMENTS, DOCUMENT_BATCH)
    spill_sents = _BatchWriter(workdir / "spill-sentences.parquet", schemas.SENTENCES, SENTENCE_BATCH)
    rejected = _BatchWriter(workdir / "rejected.parquet", schemas.DOCUMENTS, DOCUMENT_BATCH)
    doc_ids: list[str] = []  # index -> doc_id of the documents spilled in pass 1
    min_p = domain.min_document_relevance if domain else 0.0
    min_m = domain.min_document_terms if domain else 0

    # -- pass 1 ----------------------------------------------------------------------------------
    for response in iter_responses(source, doc_counts, config.max_page_bytes):
        if reason := dedup.check_url(response.url):
            doc_counts.drop(reason)
            continue
        document = builder.build(response, doc_counts)
        if document is None:
            continue
        row = document_row(document, warc_key, sentences_key)
        reason = dedup.add(len(doc_ids), document.language, [p.text for p in document.main_paragraphs])
        if reason is None and document.relevance < min_p:
            reason = "below_document_relevance"
        if reason is None and document.relevance_terms < min_m:
            reason = "too_few_domain_terms"
        if reason is not None:
            doc_counts.drop(reason)
            rejected.add(row | {"drop_reason": reason})
            continue
        doc_ids.append(document.doc_id)
        spill_docs.add(row)
        if document.language in languages:
            for sentence in sentences_of(document, config, sent_counts):
                spill_sents.add(
                    {
                        "doc_id": document.doc_id,
                        "url": document.url,
                        "language": sentence.language,
                        "paragraph_index": sentence.paragraph_index,
                        "paragraph_type": sentence.paragraph_type,
                        "sentence_index": sentence.sentence_index,
                        "text": sentence.text,
                        "duplicate": False,
                    }
                )
    spill_docs.close()
    spill_sents.close()

    # -- pass 2 ----------------------------------------------------------------------------------
    near = {doc_ids[loser]: doc_ids[winner] for loser, winner in dedup.near_duplicates().items()}
    sentences = _BatchWriter(workdir / "sentences.parquet", schemas.SENTENCES, SENTENCE_BATCH)
    per_document: Counter[str] = Counter()
    seen = SentenceDeduplicator()
    drop_repeats = config.duplicate_sentences == "drop"
    for row in _read_batches(spill_sents.path, SENTENCE_BATCH):
        if row["doc_id"] in near:
            sent_counts.drop("document_near_duplicate")
            continue
        row["duplicate"] = seen.seen_before(row["language"], row["text"])
        if row["duplicate"] and drop_repeats:
            sent_counts.drop("duplicate_sentence")
            continue
        per_document[row["doc_id"]] += 1
        sent_counts.keep()
        sentences.add(row)
    documents = _BatchWriter(workdir / "documents.parquet", schemas.DOCUMENTS, DOCUMENT_BATCH)
    for row in _read_batches(spill_docs.path, DOCUMENT_BATCH):
        if row["doc_id"] in near:
            doc_counts.drop("near_duplicate")
            rejected.add(row | {"drop_reason": "near_duplicate", "duplicate_of": near[row["doc_id"]]})
            continue
        row["sentences"] = per_document[row["doc_id"]]
        doc_counts.keep()
        documents.add(row)
    spill_docs.path.unlink()
    spill_sents.path.unlink()
    return ShardResult(documents.close(), rejected.close(), sentences.close(), doc_counts, sent_counts)
