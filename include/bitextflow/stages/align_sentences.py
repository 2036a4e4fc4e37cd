"""Stage ``align_sentences``: one shard of document pairs -> sentence pairs with an alignment score.

A task gets the document-pair shards of one site partition and reads the sentences of their documents from
that partition's sentences file only (five columns, a row group at a time).

Counted in beads: each bead becomes a pair or is dropped (unaligned sentence, low score). The
aligner's dictionary (``hunalign``, ``hybrid``, ``hybrid-e5``) and encoder or static vectors (``vecalign``,
``hybrid-e5``; ``hybrid``) load once per task, in :meth:`AlignSentences.setup`.

Only translated paragraphs are aligned: each side's sentences in that side's language. A partly translated
target page that extraction identified as the source language (document alignment pairs it, see
:mod:`bitextflow.align.combined`) has none stored, since extraction keeps a document's sentences in its own
language only: its translated paragraphs are split here as extraction splits them, from the partition's
documents (read for those pages only). Its untranslated paragraphs, and the source page's sentences that it
repeats untranslated, are set aside before aligning, each sentence counted as one item (``untranslated_tgt``,
``untranslated_src``).
"""

from __future__ import annotations

from dataclasses import dataclass

from bitextflow import records
from bitextflow.align import sentences as sent_align
from bitextflow.align.aligners import NEEDS_DICTIONARY, NEEDS_ENCODER, NEEDS_STATIC_EMBEDDINGS, sentence_aligner
from bitextflow.align.dictionary import load_dictionary
from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.model import ExtractedPage, Paragraph
from bitextflow.extract.sentences import sentences_of
from bitextflow.records import SentencePair
from bitextflow.stages.base import Resources, Stage, shard_name
from bitextflow.storage.layout import SENTENCE_PAIR_SHARDS, partition_name, partition_of_key
from bitextflow.storage.tables import read_rows, read_table, write_table
from bitextflow.text.comparison import pair_hash


@dataclass(frozen=True)
class _Side:
    """A page as one side of a document pair: its sentences in the side's language, its sentences in the other
    side's language (untranslated text), and how many of its stored sentences are not in the side's language."""

    sentences: list[str]
    untranslated: frozenset[str]
    not_in_language: int


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
        dictionary = load_dictionary(config.source, config.target) if method in NEEDS_DICTIONARY else None
        encoder = None
        if method in NEEDS_ENCODER:
            from bitextflow.models import SentenceEncoder  # torch: imported only by the aligners that need it

            encoder = SentenceEncoder.from_path(config.align.encoder_model)
        if method in NEEDS_STATIC_EMBEDDINGS:
            from bitextflow.models.static import StaticEmbeddings

            encoder = StaticEmbeddings.from_path(config.align.static_model)
        self.align = sentence_aligner(method, dictionary, encoder)

    def run(self, document_pairs_key: str) -> str:
        ctx = self.ctx
        source, target = ctx.config.source, ctx.config.target
        shard = shard_name(document_pairs_key).replace("docpairs", "sentpairs")
        doc_pairs = read_table(ctx.store, document_pairs_key)
        partition = partition_of_key(document_pairs_key)
        stored = self._document_sentences(partition, set(doc_pairs["doc_id_a"]) | set(doc_pairs["doc_id_b"]))
        sides = [*((doc_id, source) for doc_id in doc_pairs["doc_id_a"]), *((doc_id, target) for doc_id in doc_pairs["doc_id_b"])]
        # only a page with no stored sentence in its side's language can be a partly translated one
        documents = self._documents(
            partition, {doc_id for doc_id, language in sides if all(lang != language for lang, _ in stored.get(doc_id, []))}
        )
        counts = StageCounts("align_sentences")
        aligned_pairs: list[SentencePair] = []
        for pair in doc_pairs.itertuples():
            side_a = self._side(stored.get(pair.doc_id_a, []), documents.get(pair.doc_id_a), source, target)
            side_b = self._side(stored.get(pair.doc_id_b, []), documents.get(pair.doc_id_b), target, source)
            src = [text for text in side_a.sentences if text not in side_b.untranslated]
            tgt = [text for text in side_b.sentences if text not in side_a.untranslated]
            for reason, side, kept in (("untranslated_src", side_a, src), ("untranslated_tgt", side_b, tgt)):
                set_aside = side.not_in_language + len(side.sentences) - len(kept)
                counts.seen(set_aside)
                counts.drop(reason, set_aside)
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

    def _document_sentences(self, partition: int, doc_ids: set[str]) -> dict[str, list[tuple[str, str]]]:
        """The ``(language, text)`` of the sentences of ``doc_ids`` in order, read from their site partition's sentences
        (those rows and columns only, a row group at a time)."""
        columns = ["doc_id", "language", "paragraph_index", "sentence_index", "text"]
        key = self.ctx.key("partitions", f"{partition_name(partition)}.sentences.parquet")
        frame = read_rows(self.ctx.store, [key], records.SENTENCES, columns, "doc_id", doc_ids)
        frame = frame.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
        return {
            doc_id: list(zip(group["language"], group["text"], strict=True))
            for doc_id, group in frame.groupby("doc_id", sort=False)
        }

    def _documents(self, partition: int, doc_ids: set[str]) -> dict[str, records.Document]:
        """The documents ``doc_ids`` (language and paragraphs), read from their site partition's documents when there
        are any to read."""
        if not doc_ids:
            return {}
        columns = ["doc_id", "url", "language", "language_set", "paragraphs"]
        key = self.ctx.key("partitions", f"{partition_name(partition)}.documents.parquet")
        frame = read_rows(self.ctx.store, [key], records.DOCUMENTS, columns, "doc_id", doc_ids)
        return {row.doc_id: records.Document.from_row(row) for row in frame.itertuples()}

    def _side(
        self, stored: list[tuple[str, str]], document: records.Document | None, language: str, other_language: str
    ) -> _Side:
        """A page as the ``language`` side of a pair, from its ``stored`` sentences, or from its paragraphs when it is
        a partly translated page whose ``document`` extraction identified as another language."""
        not_in_language = sum(lang != language for lang, _text in stored)
        # a partly translated page's untranslated sentences are the ones extraction stored, in its own language
        untranslated = frozenset(text for lang, text in stored if lang == other_language)
        if document is not None and document.language != language:
            sentences = sentences_in(document, language, self.ctx.config.extract)
        else:
            sentences = [text for lang, text in stored if lang == language]
        return _Side(sentences, untranslated, not_in_language)


def sentences_in(document: records.Document, language: str, config: ExtractConfig) -> list[str]:
    """The sentences of ``document``'s paragraphs in ``language``, split and filtered as extraction does for a
    document of that language (:func:`bitextflow.extract.sentences.sentences_of`)."""
    paragraphs = [Paragraph(p.type, p.text, p.boilerplate, p.language, p.language != language) for p in document.paragraphs]
    language_set = [(entry["language"], entry["share"]) for entry in document.language_set]
    page = ExtractedPage(document.url, 0, "", language=language, language_set=language_set, paragraphs=paragraphs)
    # extraction counted these paragraphs already (paragraph_other_language): its counts here are not this stage's
    return [sentence.text for sentence in sentences_of(page, config, StageCounts("extract_sentences"))]
