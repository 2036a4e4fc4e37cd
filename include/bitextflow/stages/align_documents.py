"""Stage ``align_documents``: the run's documents -> document pairs, in shards for sentence alignment.

Exact and MinHash LSH near-duplicates across extract shards are set aside first; the pairs pass the
document-pairs gate; an ``incremental`` run carries unchanged page pairs over from the last release.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from bitextflow import records
from bitextflow.align.combined import align_configured
from bitextflow.catalog import incremental
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.extract.dedup import deduplicate_run
from bitextflow.quality import document_pairs_check
from bitextflow.stages.base import Stage
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import CARRIED_SENTENCE_PAIRS, DOCUMENT_PAIR_SHARDS
from bitextflow.storage.tables import read_tables, write_table

log = logging.getLogger(__name__)


class AlignDocuments(Stage):
    name = "align_documents"
    after = "gate_documents"
    outputs = DOCUMENT_PAIR_SHARDS
    partitioning = "run"
    asset = "document_pairs"
    help = "pair the documents that translate each other, one 1-1 assignment per site"

    def run(self, documents_keys: Sequence[str]) -> list[str]:
        ctx = self.ctx
        frame = self._drop_cross_shard_duplicates(read_tables(ctx.store, list(documents_keys), records.DOCUMENTS))
        src, tgt = ctx.config.source, ctx.config.target
        counts = StageCounts("align_documents")
        in_pair = frame[frame["language"].isin([src, tgt])]
        counts.seen(len(in_pair))
        pairs, report = align_configured((records.Document.from_row(r) for r in in_pair.itertuples()), src, tgt, ctx.config.align)
        for reason, n in report.unmatched.items():
            counts.drop(reason, n)
        counts.keep(2 * len(pairs))
        sentences_key = dict(zip(frame["doc_id"], frame["sentences_key"], strict=True))
        located = [
            replace(pair, sentences_key_a=sentences_key[pair.doc_id_a], sentences_key_b=sentences_key[pair.doc_id_b])
            for pair in sorted(pairs, key=lambda p: (p.url_a, p.url_b))
        ]
        ctx.write_counts("align_documents", "align_documents", counts)
        if not located:
            raise StageError(
                f"no {src}-{tgt} document pairs among {len(in_pair)} documents in the pair's languages; "
                "the crawl found no translated pages (check seeds and crawl.max_pages)"
            )
        document_pairs = records.frame_of(located, records.DOCUMENT_PAIRS)
        judge(ctx, "document_pairs", [document_pairs_check(document_pairs, ctx.config.gate)])
        if ctx.config.incremental:
            document_pairs = self._carry_over_unchanged(frame, document_pairs)
        size = ctx.config.align.document_pairs_per_shard
        # At least one shard, empty when everything was carried over: an empty map would skip the tasks after it.
        return [
            write_table(
                ctx.store,
                ctx.key("align_documents", f"docpairs-{i // size:05d}.parquet"),
                document_pairs.iloc[i : i + size],
                records.DOCUMENT_PAIRS,
            )
            for i in range(0, max(len(document_pairs), 1), size)
        ]

    def _drop_cross_shard_duplicates(self, documents: pd.DataFrame) -> pd.DataFrame:
        """Exact and MinHash LSH near-duplicates across the extract shards (``extract.lsh_*``), set aside.

        Extraction de-duplicates within a shard; this pass sees the whole run. The dropped documents go
        to ``align_documents/documents.cross-shard-duplicates.parquet`` with the reason and the kept twin.
        """
        ctx = self.ctx
        config = ctx.config.extract
        result = deduplicate_run(documents, config.lsh_threshold, config.lsh_num_perm)
        write_table(
            ctx.store, ctx.key("align_documents", "documents.cross-shard-duplicates.parquet"), result.removed, records.DOCUMENTS
        )
        ctx.write_counts("align_documents", "documents.cross-shard-duplicates", result.counts)
        return result.kept

    def _carry_over_unchanged(self, documents: pd.DataFrame, document_pairs: pd.DataFrame) -> pd.DataFrame:
        """``incremental``: set aside the previous release's pairs of unchanged page pairs for the gate, report
        what changed (``align_documents/changes.json``); returns the document pairs still to align."""
        ctx = self.ctx
        previous = incremental.previous_release(ctx.store, ctx.config.pair, ctx.run_id)
        if previous is None:
            log.info("incremental: no earlier release of %s; aligning every document pair", ctx.config.pair)
            return document_pairs
        split = incremental.split_unchanged(
            document_pairs, dict(zip(documents["url"], documents["content_hash"], strict=True)), previous
        )
        # "docpairs-carried" is listed with the run's document pairs (the release's document_pairs.jsonl) but
        # is not a shard for sentence alignment; the gate adds the carried sentence pairs to this run's.
        write_table(
            ctx.store,
            ctx.key("align_documents", "docpairs-carried.parquet"),
            split.carried_document_pairs,
            records.DOCUMENT_PAIRS,
        )
        write_table(
            ctx.store,
            ctx.key("align_documents", CARRIED_SENTENCE_PAIRS),
            split.carried_sentence_pairs,
            records.CLASSIFIED_SENTENCE_PAIRS,
        )
        ctx.store.put_json(ctx.key("align_documents", "changes.json"), split.changes)
        log.info(
            "incremental against release v%d: pages %s; %d document pairs carried over with %d sentence pairs, %d to align",
            previous.release.version, {kind: c["count"] for kind, c in split.changes["pages"].items()},
            len(split.carried_document_pairs), len(split.carried_sentence_pairs), len(split.to_align),
        )  # fmt: skip
        return split.to_align
