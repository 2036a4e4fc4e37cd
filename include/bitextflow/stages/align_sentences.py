"""Stage ``align_sentences``: one shard of document pairs -> sentence pairs with an alignment score.

A task gets the document-pair shards of one site partition and reads the sentences of their documents from
that partition's sentences file only (five columns, a row group at a time): what each side gives the aligner is
:mod:`bitextflow.stages.document_sides`'s, the sentences the ``embed`` stage embedded.

Counted in beads: each bead becomes a pair or is dropped (unaligned sentence, low score); each sentence set aside as
untranslated counts as one item. The aligner's dictionary (``hunalign``, ``hybrid``, ``hybrid-e5``) and static vectors
(``hybrid``) load once per task, in :meth:`AlignSentences.setup`. Where the run embeds its sentences (``embed``), the
encoder aligners (``vecalign``, ``hybrid-e5``) take the shard's stored vectors, and each sentence pair carries its
sides' vectors (a side of several sentences: their normalised mean) to the scorer and the classifier; otherwise the
encoder loads once per task. The aligner gets each sentence's block (``align.sentence_blocks``; :mod:`bitextflow.align.blocks`),
and the encoder aligners the mean of each side's sentence vectors over the shard, the prior of their scores' unrelated
sentences where a document has few (:class:`bitextflow.align.embedding.Background`).

With the margin scorer (``score.pair_scorer: margin``) and the run's vectors, a pair with several sentences on a side is
dropped (``uncovered_sentence``) when one of them is not covered by the other side
(:mod:`bitextflow.score.margin_coverage`): the scorer's rule for what it cannot see once the sentences are joined.
Before that, a bead of one sentence against several whose one sentence alone is closer to the other side than all
of them are is cut to that sentence (:func:`~bitextflow.score.margin_coverage.trimmed`; counted as the repair
``extra_sentence_cut``): the others were a neighbour's, which the search joined rather than leave unaligned. So is
one whose whole side is too long for the other (``score.max_length_ratio``) where its closest sentence alone is not:
a sentence the translator added, which the length rule would drop with the pair.
"""

from __future__ import annotations

import functools

from bitextflow import records
from bitextflow.align import sentences as sent_align
from bitextflow.align.aligners import NEEDS_DICTIONARY, NEEDS_ENCODER, NEEDS_STATIC_EMBEDDINGS, sentence_aligner
from bitextflow.align.dictionary import load_dictionary
from bitextflow.align.embedding import Background
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.models.vectors import VectorTable, bead_vector, pack
from bitextflow.records import SentencePair
from bitextflow.score.margin_coverage import MIN_COVERAGE, coverage, trimmed
from bitextflow.stages.base import Resources, Stage, shard_name
from bitextflow.stages.document_sides import pair_sentences
from bitextflow.stages.embed import Embed, configured_encoder
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS, partition_of_key
from bitextflow.storage.tables import read_table, read_table_and_metadata, write_table
from bitextflow.text.comparison import pair_hash
from bitextflow.text.lengths import weighted_length


class AlignSentences(Stage):
    name = "align_sentences"
    after = "embed"
    outputs = SENTENCE_PAIR_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "align the sentences of each document pair (align.sentence_aligner)"

    @classmethod
    def reads(cls, config: PairConfig) -> str | None:
        """The embedded document pairs, or align_documents' own where the run embeds nothing (embed passes them on)."""
        return cls.after if Embed.enabled(config) else Embed.after

    def setup(self) -> None:
        config = self.ctx.config
        method = config.align.sentence_aligner
        self.dictionary = load_dictionary(config.source, config.target) if method in NEEDS_DICTIONARY else None
        self.embedded = Embed.enabled(config)
        self.encoder = None
        if method in NEEDS_ENCODER and not self.embedded:
            self.encoder = configured_encoder(config)
        if method in NEEDS_STATIC_EMBEDDINGS:
            from bitextflow.models.static import StaticEmbeddings

            self.encoder = StaticEmbeddings.from_path(config.align.static_model)

    def run(self, document_pairs_key: str) -> str:
        ctx = self.ctx
        method = ctx.config.align.sentence_aligner
        shard = shard_name(document_pairs_key).replace("docpairs", "sentpairs")
        doc_pairs = read_table(ctx.store, document_pairs_key)
        vectors, metadata = None, {}
        if self.embedded:
            vectors_key = Embed.embeddings_key(ctx, document_pairs_key)
            if not ctx.store.exists(vectors_key):
                raise StageError(
                    f"{ctx.store.uri(vectors_key)} missing: this pair embeds its sentences once before aligning them "
                    f"(embed.shared); run `bitextflow embed --pair {ctx.config.pair} --run-id {ctx.run_id}` first"
                )
            table, metadata = read_table_and_metadata(ctx.store, vectors_key)
            # Vecalign's overlaps of several sentences are the texts the table lacks: the encoder embeds those
            vectors = VectorTable.from_frame(table, functools.partial(configured_encoder, ctx.config))
        encoder = vectors if vectors is not None and method in NEEDS_ENCODER else self.encoder
        check_coverage = vectors is not None and ctx.config.score.pair_scorer == "margin"
        counts = StageCounts(self.name)
        aligned_pairs: list[SentencePair] = []
        all_sides = list(pair_sentences(ctx, doc_pairs, partition_of_key(document_pairs_key)))
        background = None
        if vectors is not None and method in NEEDS_ENCODER:
            background = Background.of(
                vectors.encode(list(dict.fromkeys(text for sides in all_sides for text in sides.src))),
                vectors.encode(list(dict.fromkeys(text for sides in all_sides for text in sides.tgt))),
            )
        align = sentence_aligner(method, self.dictionary, encoder, background)
        for sides in all_sides:
            for reason, set_aside in sides.set_aside.items():
                counts.seen(set_aside)
                counts.drop(reason, set_aside)
            beads = align(sides.src, sides.tgt, sides.blocks if ctx.config.align.sentence_blocks else None)
            counts.seen(len(beads))
            aligned, dropped = sent_align.sentence_pairs(beads, sides.src, sides.tgt, ctx.config.align.min_alignment_score)
            for reason, n in dropped.items():
                counts.drop(reason, n)
            pair = sides.pair
            for text_a, text_b, score, bead in aligned:
                vector_a = vector_b = None
                if vectors is not None:
                    sentences_a = vectors.encode([sides.src[i] for i in bead.src])
                    sentences_b = vectors.encode([sides.tgt[j] for j in bead.tgt])
                    if check_coverage and len(bead.src) + len(bead.tgt) > 2:
                        lengths = (
                            [weighted_length(sides.src[i].strip()) for i in bead.src],
                            [weighted_length(sides.tgt[j].strip()) for j in bead.tgt],
                        )
                        if (cut := trimmed(sentences_a, sentences_b, lengths, ctx.config.score.max_length_ratio)) is not None:
                            side, index = cut
                            if side == 0:
                                text_a, sentences_a = sides.src[bead.src[index]].strip(), sentences_a[index : index + 1]
                            else:
                                text_b, sentences_b = sides.tgt[bead.tgt[index]].strip(), sentences_b[index : index + 1]
                            counts.repair("extra_sentence_cut")
                        elif coverage(sentences_a, sentences_b) < MIN_COVERAGE:
                            counts.drop("uncovered_sentence")
                            continue
                    (vector_a,) = pack(bead_vector(sentences_a)[None])
                    (vector_b,) = pack(bead_vector(sentences_b)[None])
                aligned_pairs.append(
                    SentencePair(
                        pair.url_a,
                        pair.url_b,
                        ctx.config.source,
                        ctx.config.target,
                        text_a,
                        text_b,
                        score,
                        pair_hash=pair_hash(text_a, text_b),
                        vector_a=vector_a,
                        vector_b=vector_b,
                    )  # fmt: skip
                )
        counts.keep(len(aligned_pairs))
        frame = records.frame_of(aligned_pairs, records.SENTENCE_PAIRS)
        # the runtime that made the vectors travels with them (the margin scorer is calibrated per runtime)
        key = write_table(ctx.store, ctx.key(self.name, f"{shard}.parquet"), frame, records.SENTENCE_PAIRS, metadata)
        ctx.write_counts(self.name, shard, counts)
        return key
