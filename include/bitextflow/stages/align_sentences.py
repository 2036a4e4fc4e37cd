"""Stage ``align_sentences``: one shard of document pairs -> sentence pairs with an alignment score.

A task gets the document-pair shards of one site partition and reads the sentences of their documents from
that partition's sentences file only (four columns, a row group at a time).

Counted in beads: each bead becomes a pair or is dropped (unaligned sentence, low score). The
aligner's dictionary (``hunalign``, ``hybrid``, ``hybrid-e5``) and encoder or static vectors (``vecalign``,
``hybrid-e5``; ``hybrid``) load once per task, in :meth:`AlignSentences.setup`.
"""

from __future__ import annotations

from bitextflow import records
from bitextflow.align import sentences as sent_align
from bitextflow.align.aligners import sentence_aligner
from bitextflow.align.dictionary import load_dictionary
from bitextflow.counts import StageCounts
from bitextflow.records import SentencePair
from bitextflow.stages.base import Resources, Stage, shard_name
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS, partition_name, partition_of_key
from bitextflow.storage.tables import read_rows, read_table, write_table
from bitextflow.text.comparison import pair_hash


class AlignSentences(Stage):
    name = "align_sentences"
    after = "align_documents"
    outputs = SENTENCE_PAIR_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "align the sentences of each document pair (align.sentence_aligner)"

    def setup(self) -> None:
        config = self.ctx.config
        method = config.align.sentence_aligner
        dictionary = load_dictionary(config.source, config.target) if method in ("hunalign", "hybrid", "hybrid-e5") else None
        encoder = None
        if method in ("vecalign", "hybrid-e5"):
            from bitextflow.models import SentenceEncoder  # torch: imported only by the aligners that need it

            encoder = SentenceEncoder.from_path(config.align.encoder_model)
        if method == "hybrid":
            from bitextflow.models.static import StaticEmbeddings

            encoder = StaticEmbeddings.from_path(config.align.static_model)
        # hybrid-e5 is the hybrid search over the encoder's sentence vectors instead of static ones
        self.align = sentence_aligner(method.removesuffix("-e5"), dictionary, encoder)

    def run(self, document_pairs_key: str) -> str:
        ctx = self.ctx
        shard = shard_name(document_pairs_key).replace("docpairs", "sentpairs")
        doc_pairs = read_table(ctx.store, document_pairs_key)
        sentences = self._document_sentences(
            partition_of_key(document_pairs_key), set(doc_pairs["doc_id_a"]) | set(doc_pairs["doc_id_b"])
        )
        counts = StageCounts("align_sentences")
        aligned_pairs: list[SentencePair] = []
        for pair in doc_pairs.itertuples():
            src, tgt = sentences.get(pair.doc_id_a, []), sentences.get(pair.doc_id_b, [])
            beads = self.align(src, tgt)
            counts.seen(len(beads))
            aligned, dropped = sent_align.sentence_pairs(beads, src, tgt, ctx.config.align.min_alignment_score)
            for reason, n in dropped.items():
                counts.drop(reason, n)
            aligned_pairs.extend(
                SentencePair(
                    pair.url_a,
                    pair.url_b,
                    ctx.config.source,
                    ctx.config.target,
                    text_a,
                    text_b,
                    score,
                    pair_hash=pair_hash(text_a, text_b),
                )  # fmt: skip
                for text_a, text_b, score in aligned
            )
        counts.keep(len(aligned_pairs))
        frame = records.frame_of(aligned_pairs, records.SENTENCE_PAIRS)
        key = write_table(ctx.store, ctx.key("align_sentences", f"{shard}.parquet"), frame, records.SENTENCE_PAIRS)
        ctx.write_counts("align_sentences", shard, counts)
        return key

    def _document_sentences(self, partition: int, doc_ids: set[str]) -> dict[str, list[str]]:
        """The sentences of ``doc_ids`` in order, read from their site partition's sentences (those rows and columns
        only, a row group at a time)."""
        columns = ["doc_id", "paragraph_index", "sentence_index", "text"]
        key = self.ctx.key("partitions", f"{partition_name(partition)}.sentences.parquet")
        frame = read_rows(self.ctx.store, [key], records.SENTENCES, columns, "doc_id", doc_ids)
        frame = frame.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
        return {doc_id: list(group["text"]) for doc_id, group in frame.groupby("doc_id", sort=False)}
