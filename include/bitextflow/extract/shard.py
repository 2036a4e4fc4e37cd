"""One WARC shard to three Parquet files: kept documents, rejected documents, sentences.

Two passes, with memory that does not grow with the shard's text:

1. stream the WARC; build each document; drop exact duplicates and irrelevant documents at once;
   split the rest into sentences; spill documents and sentences to local Parquet in batches,
   keeping only hashes (for near-duplicates and sentence de-duplication) in memory;
2. decide the near-duplicates, then stream the spills into the final files: kept documents with
   their sentence counts, rejected documents with the reason (and what they duplicate), sentences
   of kept documents with repeats in the same language flagged (or dropped). Pass 2 works on Arrow
   batches column by column: only the ids, languages and sentence texts become Python objects.

Documents and sentences carry their site partition (:func:`bitextflow.text.urls.site_partition`), and
their files are grouped by it: partition after partition, no row group holding two, so that the stage
that gathers a partition from every shard reads only that partition's row groups.
"""

from __future__ import annotations

import gc
import logging
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bitextflow import records
from bitextflow.config import DomainConfig, ExtractConfig, PolicyConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.dedup import SentenceDeduplicator, ShardDeduplicator, comparison_language
from bitextflow.extract.documents import PAGE_TYPES, DocumentBuilder
from bitextflow.extract.model import ExtractedPage
from bitextflow.extract.sentences import sentences_of
from bitextflow.extract.warc import iter_responses
from bitextflow.policy import MACHINE_TRANSLATED, OptOuts, read_page
from bitextflow.policy.markup import NO_SIGNALS
from bitextflow.text.urls import site_partition

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
    """Rows to a Parquet file in row groups of ``batch`` rows; an empty file still has the schema.

    ``compression`` is zstd for the files the stage delivers; the spills of pass 1, read once on the same
    disk and deleted, are written without: zstd was a third of their writing and reading time (25 of 69 ms
    for the 165 benchmark pages).
    """

    def __init__(self, path: Path, schema: pa.Schema, batch: int, compression: str = "zstd"):
        self.path, self.schema, self.batch = path, schema, batch
        self._writer = pq.ParquetWriter(path, schema, compression=compression)
        self._rows: list[dict[str, Any]] = []

    def add(self, row: dict[str, Any]) -> None:
        self._rows.append(row)
        if len(self._rows) >= self.batch:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=self.schema))
            self._rows.clear()

    def add_table(self, table: pa.Table) -> None:
        """Rows already in Arrow form, after the pending ones (file order is the order of calls)."""
        if table.num_rows:
            self.flush()
            self._writer.write_table(table)

    def close(self) -> Path:
        self.flush()
        self._writer.close()
        return self.path


class _PartitionedWriter:
    """Rows of several site partitions to one Parquet file, grouped by partition: partitions in order, each one's
    rows in the order they came, no row group holding two (a reader of one partition skips the others' row groups
    by the ``partition`` column's statistics).

    Rows wait in one uncompressed spill per partition until :meth:`close`: Arrow IPC record batches appended to a file
    that is open only while a batch is appended. An open writer per partition held up to two files per site partition
    (documents and sentences) at once, and a Common Crawl WARC spans thousands of sites: with P = 1,024 the extract
    ran out of file descriptors (soft limit 1,024) on every retry. Now the stage holds a handful whatever P and the
    number of sites."""

    def __init__(self, path: Path, schema: pa.Schema, batch: int):
        self.path, self.schema, self.batch = path, schema, batch
        self._spills: dict[int, Path] = {}

    def add_table(self, table: pa.Table) -> None:
        partitions = table["partition"]
        for partition in sorted(pc.unique(partitions).to_pylist()):
            spill = self._spills.setdefault(partition, self.path.with_name(f"{self.path.stem}.spill-{partition}.arrow"))
            with spill.open("ab") as out:
                for batch in table.filter(pc.equal(partitions, partition)).to_batches():
                    out.write(batch.serialize())  # an encapsulated IPC message; the schema is this writer's

    def close(self) -> Path:
        final = _BatchWriter(self.path, self.schema, self.batch)
        for partition in sorted(self._spills):
            spill = self._spills[partition]
            with pa.memory_map(str(spill)) as source:
                messages = pa.ipc.MessageReader.open_stream(source)
                batches = (pa.ipc.read_record_batch(message, self.schema) for message in messages)
                for table in _in_tables_of(batches, self.schema, self.batch):
                    final.add_table(table)
            spill.unlink()
        return final.close()


def _in_tables_of(batches: Iterator[pa.RecordBatch], schema: pa.Schema, rows: int) -> Iterator[pa.Table]:
    """``batches`` regrouped into tables of ``rows`` rows (the last one smaller), in order."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(pending, schema)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending, schema)


def _read_tables(path: Path, batch_size: int):
    for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size):
        yield pa.Table.from_batches([batch])


def _with_column(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, values)


def document_row(document: ExtractedPage, warc_key: str, partition: int) -> dict[str, Any]:
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
            {
                "type": p.type,
                "text": p.text,
                "language": p.language,
                "boilerplate": p.boilerplate,
                "out_of_language": p.out_of_language,
                "terms": list(p.terms),
            }
            for p in document.paragraphs
        ],  # fmt: skip
        "sentences": 0,
        "relevance": document.relevance,
        "relevance_terms": document.relevance_terms,
        "images": list(document.images),
        "content_hash": document.content_hash,
        "duplicate_of": "",
        "drop_reason": "",
        "partition": partition,
        "machine_translation": document.machine_translation,
    }


@contextmanager
def rare_collections(threshold: int = 10_000) -> Iterator[None]:
    """Python's cyclic garbage collector run less often, for the length of the block.

    Extraction makes and drops hundreds of thousands of lxml element proxies and small containers. At the
    default threshold (700 allocations) the collector ran about 200 times on the 165 benchmark pages, and
    its full collections walked every object the process holds, loaded models included: 0.19 s of a 5.1 s
    run (measured with ``gc.callbacks``). Almost none of these objects are in reference cycles, so
    reference counting frees them as before; collecting after 10,000 allocations cost 0.035 s.
    """
    previous = gc.get_threshold()
    gc.set_threshold(threshold, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


@rare_collections()
def extract_shard(
    source: str | Path | IO[bytes],
    workdir: Path,
    *,
    warc_key: str,
    languages: set[str],
    config: ExtractConfig | None = None,
    domain: DomainConfig | None = None,
    policy: PolicyConfig | None = None,
    optouts: OptOuts | None = None,
) -> ShardResult:
    """Extract one WARC (path or seekable binary stream) into Parquet files under ``workdir``.

    Sentences are made for documents in ``languages`` (the pair's); documents in other languages
    are kept (they tell what the site holds) but have none. Both are grouped by site partition
    (``config.site_partitions``).

    A page whose markup says it was machine translated carries the signal (``machine_translation``) and, unless
    ``policy.align_machine_translated``, is rejected as ``machine_translated``. ``optouts``: the opt-outs every page
    is judged by, its site's robots.txt and TDMRep file learnt (ingested WARC files; a crawl judged its pages as it
    fetched them); a page set aside is counted under the verdict's reason and makes no document.
    """
    config = config or ExtractConfig()
    align_machine_translated = (policy or PolicyConfig()).align_machine_translated
    agents = optouts.agents if optouts is not None else ()
    builder = DocumentBuilder(config, domain, languages)
    doc_counts, sent_counts = StageCounts("extract_documents"), StageCounts("extract_sentences")
    dedup = ShardDeduplicator(config.near_duplicate_threshold)
    workdir.mkdir(parents=True, exist_ok=True)
    spill_docs = _BatchWriter(workdir / "spill-documents.parquet", records.DOCUMENTS, DOCUMENT_BATCH, "none")
    spill_sents = _BatchWriter(workdir / "spill-sentences.parquet", records.SENTENCES, SENTENCE_BATCH, "none")
    rejected = _BatchWriter(workdir / "rejected.parquet", records.DOCUMENTS, DOCUMENT_BATCH)
    doc_ids: list[str] = []  # index -> doc_id of the documents spilled in pass 1
    min_p = domain.min_document_relevance if domain else 0.0
    min_m = domain.min_document_terms if domain else 0

    # -- pass 1 ----------------------------------------------------------------------------------
    for response in iter_responses(source, doc_counts, config.max_page_bytes):
        if reason := dedup.check_url(response.url):
            doc_counts.drop(reason)
            continue
        is_page = response.status == 200 and response.mime in PAGE_TYPES  # the others make no document anyway
        signals = read_page(response.url, response.headers, response.body, agents) if is_page else NO_SIGNALS
        if optouts is not None and is_page and (reason := optouts.verdict(response.url, signals).reason):
            doc_counts.drop(reason)
            continue
        document = builder.build(response, doc_counts)
        if document is None:
            continue
        document.machine_translation = signals.machine_translation
        partition = site_partition(document.url, config.site_partitions)
        row = document_row(document, warc_key, partition)
        if document.machine_translation and not align_machine_translated:
            reason = MACHINE_TRANSLATED  # before de-duplication, so that no copy of a human page loses to it
        else:
            main = document.main_paragraphs
            language = comparison_language(document.language, ((p.text, p.language) for p in main))
            reason = dedup.add(len(doc_ids), language, [p.text for p in main])
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
                        "partition": partition,
                    }
                )
    spill_docs.close()
    spill_sents.close()

    # -- pass 2 ----------------------------------------------------------------------------------
    near = {doc_ids[loser]: doc_ids[winner] for loser, winner in dedup.near_duplicates().items()}
    sentences = _PartitionedWriter(workdir / "sentences.parquet", records.SENTENCES, SENTENCE_BATCH)
    per_document: Counter[str] = Counter()
    seen = SentenceDeduplicator()
    drop_repeats = config.duplicate_sentences == "drop"
    for table in _read_tables(spill_sents.path, SENTENCE_BATCH):
        keep, duplicate = [], []
        for doc_id, lang, text in zip(*(table[name].to_pylist() for name in ("doc_id", "language", "text")), strict=True):
            repeat = False
            if doc_id in near:
                sent_counts.drop("document_near_duplicate")
            elif (repeat := seen.seen_before(lang, text)) and drop_repeats:
                sent_counts.drop("duplicate_sentence")
            else:
                per_document[doc_id] += 1
                sent_counts.keep()
                keep.append(len(duplicate))
            duplicate.append(repeat)
        # typed indices: an empty Python list becomes a null-typed array, which take() refuses
        sentences.add_table(_with_column(table, "duplicate", pa.array(duplicate, pa.bool_())).take(pa.array(keep, pa.int64())))
    documents = _PartitionedWriter(workdir / "documents.parquet", records.DOCUMENTS, DOCUMENT_BATCH)
    for table in _read_tables(spill_docs.path, DOCUMENT_BATCH):
        doc_ids = table["doc_id"].to_pylist()
        is_near = pa.array([doc_id in near for doc_id in doc_ids], pa.bool_())
        losers = table.filter(is_near)
        doc_counts.drop("near_duplicate", losers.num_rows)
        losers = _with_column(losers, "drop_reason", pa.array(["near_duplicate"] * losers.num_rows, pa.string()))
        rejected.add_table(
            _with_column(losers, "duplicate_of", pa.array([near[d] for d in losers["doc_id"].to_pylist()], pa.string()))
        )
        kept = table.filter(pc.invert(is_near))
        doc_counts.keep(kept.num_rows)
        documents.add_table(
            _with_column(kept, "sentences", pa.array([per_document[d] for d in kept["doc_id"].to_pylist()], pa.int32()))
        )
    spill_docs.path.unlink()
    spill_sents.path.unlink()
    return ShardResult(documents.close(), rejected.close(), sentences.close(), doc_counts, sent_counts)
