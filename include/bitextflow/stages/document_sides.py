"""What the sentence aligner sees of a document pair: each side's sentences in its language, read from the partition.

Shared by ``embed`` (which embeds exactly these sentences, once) and ``align_sentences`` (which aligns them), so that
the two never disagree on what a side holds.

Only translated paragraphs are aligned: each side's sentences in that side's language. A partly translated target page
that extraction identified as the source language (document alignment pairs it, see :mod:`bitextflow.align.combined`)
has none stored, since extraction keeps a document's sentences in its own language only: its translated paragraphs are
split here as extraction splits them, from the partition's documents (read for those pages only). Its untranslated
paragraphs, and the source page's sentences that it repeats untranslated, are set aside, each sentence counted as one
item (``untranslated_tgt``, ``untranslated_src``).

A page also shows text its extraction did not keep as a sentence: a command in the same list item as its description,
identified as the other language and dropped (``sentence_other_language``), or a line too short to keep. The other
side's sentence that is a verbatim copy of such text ("localname @ localhost $ ssh -q -X loginname@remotehost.domain
Password:", kept on the English page, dropped on the Spanish one) has no counterpart and would be joined to its
neighbour's bead; it is set aside in the same way (:func:`copies`).

Each side also carries the block of each of its sentences (``paragraph_index`` and ``paragraph_type``), which the
sentence aligners respect (:mod:`bitextflow.align.blocks`), and the page's blocks that give it no sentence, which the
block alignment still matches (a caption kept on one page, dropped as too short on the other).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.align.blocks import BlockWithoutSentences, PageBlocks, SideBlocks
from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.extract.model import SENTENCE_SOURCE_TYPES, ExtractedPage, Paragraph
from bitextflow.extract.sentences import Sentence, sentences_of
from bitextflow.stages.base import RunContext
from bitextflow.storage.layout import partition_name
from bitextflow.storage.tables import read_rows
from bitextflow.text.comparison import normalise_for_comparison
from bitextflow.text.sentences import split_sentences as split_text


@dataclass(frozen=True)
class _Side:
    """A page as one side of a document pair: its sentences in the side's language, its sentences in the other
    side's language (untranslated text), and how many of its stored sentences are not in the side's language."""

    sentences: list[str]
    untranslated: frozenset[str]
    not_in_language: int
    #: ``(paragraph_index, paragraph_type)`` of each of ``sentences``
    blocks: list[tuple[int, str]]
    #: the page's text that is not one of ``sentences``, normalised for comparison (:func:`dropped_pieces`)
    dropped_pieces: frozenset[str] = frozenset()
    #: every block extraction takes sentences from (:func:`source_blocks`), those without sentences here included
    source_blocks: tuple[BlockWithoutSentences, ...] = ()


@dataclass(frozen=True)
class PairSentences:
    """A document pair (``pair``, a row of its shard) and the sentences of each side the aligner gets, in order;
    ``set_aside`` counts each side's sentences left out, by reason; ``blocks`` the block of each sentence."""

    pair: Any
    src: list[str]
    tgt: list[str]
    set_aside: dict[str, int]
    blocks: PageBlocks | None = None


def pair_sentences(ctx: RunContext, doc_pairs: pd.DataFrame, partition: int) -> list[PairSentences]:
    """The sentences each document pair of ``doc_pairs`` (one shard of site partition ``partition``) gives the aligner."""
    source, target = ctx.config.source, ctx.config.target
    doc_ids = set(doc_pairs["doc_id_a"]) | set(doc_pairs["doc_id_b"])
    stored = document_sentences(ctx, partition, doc_ids)
    # every page: the paragraphs it leaves in the other side's language (commands, code, names) are copies, not text
    documents = _documents(ctx, partition, doc_ids)
    result = []
    for pair in doc_pairs.itertuples():
        side_a = _side(ctx, stored.get(pair.doc_id_a, []), documents.get(pair.doc_id_a), source, target)
        side_b = _side(ctx, stored.get(pair.doc_id_b, []), documents.get(pair.doc_id_b), target, source)
        copied_a, copied_b = copies(side_a.sentences, side_b.dropped_pieces), copies(side_b.sentences, side_a.dropped_pieces)
        kept_a = [k for k, text in enumerate(side_a.sentences) if text not in side_b.untranslated and k not in copied_a]
        kept_b = [k for k, text in enumerate(side_b.sentences) if text not in side_a.untranslated and k not in copied_b]
        src, tgt = [side_a.sentences[k] for k in kept_a], [side_b.sentences[k] for k in kept_b]
        set_aside = {
            reason: side.not_in_language + len(side.sentences) - len(kept)
            for reason, side, kept in (("untranslated_src", side_a, src), ("untranslated_tgt", side_b, tgt))
        }
        blocks = PageBlocks(_side_blocks(side_a, kept_a), _side_blocks(side_b, kept_b))
        result.append(PairSentences(pair, src, tgt, set_aside, blocks))
    return result


#: A sentence of fewer words is never taken for a copy: a name or a one-word cell may be both a copy and translated.
MIN_COPY_WORDS = 2


def copies(sentences: list[str], other_dropped: frozenset[str]) -> set[int]:
    """The indices of ``sentences`` that are a piece of the other page that its extraction did not keep as a sentence
    (``other_dropped``, :func:`dropped_pieces`), whatever their case, spacing and punctuation (extraction normalises
    each language's quotes differently): copies with no counterpart to align with."""
    return {
        index
        for index, text in enumerate(sentences)
        if len(text.split()) >= MIN_COPY_WORDS and normalise_for_comparison(text) in other_dropped
    }


def dropped_pieces(document: records.Document, language: str, sentences: list[str]) -> frozenset[str]:
    """Each piece of ``document``'s paragraphs, split as ``language``'s sentences, that is not one of its ``sentences``,
    as :func:`~bitextflow.text.comparison.normalise_for_comparison` gives it."""
    kept = {normalise_for_comparison(text) for text in sentences}
    pieces = (
        normalise_for_comparison(piece) for paragraph in document.paragraphs for piece in split_text(language, paragraph.text)
    )
    return frozenset(pieces) - kept


def _side_blocks(side: _Side, kept: list[int]) -> SideBlocks:
    ids = [side.blocks[k][0] for k in kept]
    with_sentences = set(ids)
    without = [block for block in side.source_blocks if block.id not in with_sentences]
    return SideBlocks(ids, [side.blocks[k][1] for k in kept], without)


def source_blocks(document: records.Document) -> tuple[BlockWithoutSentences, ...]:
    """The blocks of ``document`` extraction takes sentences from (main content of a sentence type), whatever it kept."""
    return tuple(
        BlockWithoutSentences(index, paragraph.type, paragraph.text)
        for index, paragraph in enumerate(document.paragraphs)
        if not paragraph.boilerplate and paragraph.type in SENTENCE_SOURCE_TYPES
    )


def document_sentences(ctx: RunContext, partition: int, doc_ids: set[str]) -> dict[str, list[tuple[str, str, int, str]]]:
    """The ``(language, text, paragraph_index, paragraph_type)`` of the sentences of ``doc_ids`` in order, read from
    their site partition's sentences (those rows and columns only, a row group at a time)."""
    columns = ["doc_id", "language", "paragraph_index", "paragraph_type", "sentence_index", "text"]
    key = ctx.key("partitions", f"{partition_name(partition)}.sentences.parquet")
    frame = read_rows(ctx.store, [key], records.SENTENCES, columns, "doc_id", doc_ids)
    frame = frame.sort_values(["doc_id", "paragraph_index", "sentence_index"], kind="stable")
    return {
        doc_id: list(zip(group["language"], group["text"], group["paragraph_index"], group["paragraph_type"], strict=True))
        for doc_id, group in frame.groupby("doc_id", sort=False)
    }


def _documents(ctx: RunContext, partition: int, doc_ids: set[str]) -> dict[str, records.Document]:
    """The documents ``doc_ids`` (language and paragraphs), read from their site partition's documents when there are
    any to read."""
    if not doc_ids:
        return {}
    columns = ["doc_id", "url", "language", "language_set", "paragraphs"]
    key = ctx.key("partitions", f"{partition_name(partition)}.documents.parquet")
    frame = read_rows(ctx.store, [key], records.DOCUMENTS, columns, "doc_id", doc_ids)
    return {row.doc_id: records.Document.from_row(row) for row in frame.itertuples()}


def _side(
    ctx: RunContext,
    stored: list[tuple[str, str, int, str]],
    document: records.Document | None,
    language: str,
    other_language: str,
) -> _Side:
    """A page as the ``language`` side of a pair, from its ``stored`` sentences, or from its paragraphs when it is a
    partly translated page whose ``document`` extraction identified as another language. Its ``untranslated``
    sentences are those it holds in ``other_language``: a partly translated page's stored sentences in its own
    language, and the paragraphs any page leaves in the other side's language (a command, a code block, a table cell
    the translator copied), split as that side's sentences; the other side's copies of them are set aside, since a
    copy on one side only would be joined to its neighbour's bead."""
    not_in_language = sum(row[0] != language for row in stored)
    untranslated = frozenset(row[1] for row in stored if row[0] == other_language)
    if document is not None and document.language == language:
        untranslated |= frozenset(sentences_in(document, other_language, ctx.config.extract))
    if document is not None and document.language != language:
        found = split_sentences(document, language, ctx.config.extract)
        sentences = [sentence.text for sentence in found]
        blocks = [(sentence.paragraph_index, sentence.paragraph_type) for sentence in found]
    else:
        sentences = [row[1] for row in stored if row[0] == language]
        blocks = [(int(row[2]), str(row[3])) for row in stored if row[0] == language]
    if document is None:
        return _Side(sentences, untranslated, not_in_language, blocks)
    dropped = dropped_pieces(document, language, sentences)
    return _Side(sentences, untranslated, not_in_language, blocks, dropped, source_blocks(document))


def sentences_in(document: records.Document, language: str, config: ExtractConfig) -> list[str]:
    """The sentences of ``document``'s paragraphs in ``language``, split and filtered as extraction does for a
    document of that language (:func:`bitextflow.extract.sentences.sentences_of`)."""
    return [sentence.text for sentence in split_sentences(document, language, config)]


def split_sentences(document: records.Document, language: str, config: ExtractConfig) -> list[Sentence]:
    """:func:`sentences_in`'s sentences as extraction's records (text, paragraph index and type)."""
    paragraphs = [Paragraph(p.type, p.text, p.boilerplate, p.language, p.language != language) for p in document.paragraphs]
    language_set = [(entry["language"], entry["share"]) for entry in document.language_set]
    page = ExtractedPage(document.url, 0, "", language=language, language_set=language_set, paragraphs=paragraphs)
    # extraction counted these paragraphs already (paragraph_other_language): its counts here are not this stage's
    return list(sentences_of(page, config, StageCounts("extract_sentences")))
