"""The records stages exchange, one type per entity, and the Arrow schemas derived from them.

A document (a crawled page after extraction), a sentence of a document, a document pair (two documents
believed to translate each other) and a sentence pair. Each record type is a frozen dataclass whose fields
declare their Arrow type; the schemas that :func:`bitextflow.storage.tables.write_table` writes with are
derived from them (:func:`schema_of`), so a column exists in one place. Field order is column order.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

import pandas as pd
import pyarrow as pa

#: Field metadata key: ``write_table`` fills a column so marked with nulls when a frame lacks it.
OPTIONAL = b"optional"
_ARROW = "arrow"


def column(arrow_type: pa.DataType, *, optional: bool = False, default: Any = MISSING, kw_only: bool = False) -> Any:
    """A record field stored as ``arrow_type``; ``optional``: writers may omit the column (written as nulls)."""
    return field(default=default, metadata={_ARROW: arrow_type, "optional": optional}, kw_only=kw_only)


def schema_of(record_type: type, exclude: Sequence[str] = ()) -> pa.Schema:
    """The Arrow schema of a record type (its fields in order, less ``exclude``)."""
    arrow_fields = []
    for item in fields(record_type):
        if item.name in exclude:
            continue
        metadata = {OPTIONAL: b"true"} if item.metadata["optional"] else None
        arrow_fields.append(pa.field(item.name, item.metadata[_ARROW], metadata=metadata))
    return pa.schema(arrow_fields)


def frame_of(records: Iterable[Any], schema: pa.Schema) -> pd.DataFrame:
    """Records as a frame with ``schema``'s columns (and only those), typed even when there is no record."""
    return pd.DataFrame([asdict(record) for record in records], columns=schema.names)


@dataclass(frozen=True, slots=True)
class Paragraph:
    """A paragraph of a document: its type (``title``, ``heading``, ``listitem``, ``text``, ``cell``, ``quote``,
    ``code``), text and language, whether it lies outside the main content, and the domain terms in it."""

    type: str = column(pa.string())
    text: str = column(pa.string())
    language: str = column(pa.string())
    boilerplate: bool = column(pa.bool_())  # outside the main content (ILSP-FC crawlinfo)
    out_of_language: bool = column(pa.bool_())  # identified as another language than the document's
    terms: tuple[str, ...] = column(pa.list_(pa.string()), default=())


PARAGRAPH = pa.struct(list(schema_of(Paragraph)))
_LANGUAGE_SHARE = pa.struct([("language", pa.string()), ("share", pa.float64())])


@dataclass(frozen=True, eq=False)
class Document:
    """A crawled page after extraction, with its provenance (WARC record), language, paragraphs and relevance.

    Built with keywords after ``doc_id`` and ``url``; ``partition`` is the site partition of its URL (pages of one
    web site share one; :func:`bitextflow.text.urls.site_partition`). :meth:`from_row` reads a row of the documents
    table. Two documents are the same document when their ``doc_id`` (a digest of the URL) is.
    """

    doc_id: str = column(pa.string())
    url: str = column(pa.string())
    warc_key: str = column(pa.string(), default="", kw_only=True)
    warc_offset: int = column(pa.int64(), default=0, kw_only=True)
    warc_record_id: str = column(pa.string(), default="", kw_only=True)
    warc_date: str = column(pa.string(), default="", kw_only=True)
    encoding: str = column(pa.string(), default="", kw_only=True)
    encoding_source: str = column(pa.string(), default="", kw_only=True)  # bom | http | meta | detected | fallback
    repairs: tuple[str, ...] = column(pa.list_(pa.string()), default=(), kw_only=True)  # e.g. mojibake_repaired
    language: str = column(pa.string(), default="un", kw_only=True)
    language_reliable: bool = column(pa.bool_(), default=False, kw_only=True)
    language_set: tuple[Mapping[str, Any], ...] = column(pa.list_(_LANGUAGE_SHARE), default=(), kw_only=True)
    title: str = column(pa.string(), default="", kw_only=True)
    description: str = column(pa.string(), default="", kw_only=True)
    keywords: str = column(pa.string(), default="", kw_only=True)
    date: str = column(pa.string(), default="", kw_only=True)
    paragraphs: tuple[Paragraph, ...] = column(pa.list_(PARAGRAPH), default=(), kw_only=True)
    sentences: int = column(pa.int32(), default=0, kw_only=True)
    relevance: float = column(pa.float64(), default=0.0, kw_only=True)  # ILSP-FC p
    relevance_terms: int = column(pa.int32(), default=0, kw_only=True)  # ILSP-FC m
    images: tuple[str, ...] = column(pa.list_(pa.string()), default=(), kw_only=True)  # <img> file names in page order
    content_hash: str = column(pa.string(), default="", kw_only=True)
    duplicate_of: str = column(pa.string(), default="", kw_only=True)  # the document kept instead (rejected rows)
    drop_reason: str = column(pa.string(), default="", kw_only=True)  # empty for kept documents
    partition: int = column(pa.int32(), default=0, kw_only=True)
    # the signal of its markup that says the page was machine translated (bitextflow.policy.markup), "" when none
    machine_translation: str = column(pa.string(), default="", kw_only=True, optional=True)

    @classmethod
    def from_row(cls, row: Any) -> Document:
        """A document from a row of the documents table (a pandas ``itertuples`` row or a mapping)."""
        get = row.get if isinstance(row, Mapping) else functools.partial(getattr, row)
        values: dict[str, Any] = {}
        for item in fields(cls):
            value = get(item.name, None)
            if value is None:
                continue
            if item.name == "paragraphs":
                value = tuple(Paragraph(**{**{k: p[k] for k in _PARAGRAPH_FIELDS}, "terms": tuple(p["terms"])}) for p in value)
            elif item.name in _SEQUENCE_FIELDS:
                value = tuple(value)
            values[item.name] = value
        return cls(**values)

    @classmethod
    def of_text(
        cls, doc_id: str, url: str, language: str, paragraphs: Sequence[tuple[str, str]] = (), images: Sequence[str] = ()
    ) -> Document:
        """A document known only by its ``(type, text)`` main-content paragraphs and images, all in ``language``
        (what document alignment reads; benchmarks and tests align pages from elsewhere with it)."""
        return cls(
            doc_id, url, language=language, images=tuple(images),
            paragraphs=tuple(Paragraph(kind, text, language, False, False) for kind, text in paragraphs),
        )  # fmt: skip

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Document) and other.doc_id == self.doc_id

    def __hash__(self) -> int:
        return hash(self.doc_id)

    @functools.cached_property
    def content_paragraphs(self) -> tuple[tuple[str, str], ...]:
        """``(type, text)`` of the title and the main-content paragraphs in page order (boilerplate left out):
        what document alignment compares."""
        return tuple((p.type, p.text) for p in self.paragraphs if not p.boilerplate)


_PARAGRAPH_FIELDS = tuple(item.name for item in fields(Paragraph))
_SEQUENCE_FIELDS = frozenset({"repairs", "language_set", "images"})


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence of a document, in its paragraph; ``duplicate``: seen before in the shard, same language;
    ``partition``: its document's site partition."""

    doc_id: str = column(pa.string())
    url: str = column(pa.string())
    language: str = column(pa.string())
    paragraph_index: int = column(pa.int32())
    paragraph_type: str = column(pa.string())
    sentence_index: int = column(pa.int32())
    text: str = column(pa.string())
    duplicate: bool = column(pa.bool_())
    partition: int = column(pa.int32(), default=0, kw_only=True)


@dataclass(frozen=True, slots=True)
class DocumentPair:
    """Two documents believed to be translations of each other, how that was decided and how sure it is, and the
    site partition both belong to (pairs are made within a site)."""

    doc_id_a: str = column(pa.string())
    doc_id_b: str = column(pa.string())
    url_a: str = column(pa.string())
    url_b: str = column(pa.string())
    method: str = column(pa.string(), default="")
    score: float = column(pa.float64(), default=0.0)
    partition: int = column(pa.int32(), default=0, kw_only=True)


@dataclass(frozen=True, slots=True)
class SentencePair:
    """Two sentences aligned as translations, with every score the stages give them.

    ``rule_tags``: the rules it breaks (``;``-separated, empty when it passes); ``bicleaner_score``: None where
    bicleaner-ai did not run; ``margin_score``: None where the margin scorer did not (``score.pair_scorer``);
    ``domain_probs_a``/``_b``: each side's domain distribution as a JSON object
    (``""`` without a classifier), added by the classify stage. ``vector_a``/``_b``: each side's sentence vector
    (float16, L2-normalised: :mod:`bitextflow.models.vectors`) from the run's one embedding of each sentence, for
    the scorer and the classifier; None where the run embeds nothing; not released.
    """

    url_a: str = column(pa.string())
    url_b: str = column(pa.string())
    lang_a: str = column(pa.string())
    lang_b: str = column(pa.string())
    text_a: str = column(pa.string())
    text_b: str = column(pa.string())
    alignment_score: float = column(pa.float64())
    rule_tags: str = column(pa.string(), default="")
    bicleaner_score: float | None = column(pa.float64(), optional=True, default=None)
    margin_score: float | None = column(pa.float64(), optional=True, default=None)
    domain_relevance: float = column(pa.float64(), default=0.0)
    domain_terms: str = column(pa.string(), default="")
    pair_hash: str = column(pa.string(), default="")
    domain_probs_a: str = column(pa.string(), default="")
    domain_probs_b: str = column(pa.string(), default="")
    vector_a: bytes | None = column(pa.binary(), optional=True, default=None)
    vector_b: bytes | None = column(pa.binary(), optional=True, default=None)


@dataclass(frozen=True, slots=True)
class AnnotatedDocument:
    """A document of one of the pair's languages as the monolingual corpus holds it (the ``monolingual`` stage): the
    fields a release filters on (``mono.*``), and ``document``, the release's JSON line with every annotation
    (docs/release.md, "Monolingual documents"). ``duplicate_of``: the document the run kept instead ("" when kept)."""

    doc_id: str = column(pa.string())
    language: str = column(pa.string())
    quality_label: str = column(pa.string())
    quality_score: float = column(pa.float64())
    language_score: float = column(pa.float64())
    relevance: float = column(pa.float64())
    words: int = column(pa.int64())
    duplicate_of: str = column(pa.string())
    document: str = column(pa.string())
    partition: int = column(pa.int32(), default=0, kw_only=True)


@dataclass(frozen=True, slots=True)
class SentenceEmbedding:
    """A sentence's vector, computed once per run (the ``embed`` stage): ``text_hash`` identifies the sentence's text
    (:func:`bitextflow.models.vectors.text_hash`), ``vector`` is float16, L2-normalised."""

    text_hash: bytes = column(pa.binary(8))
    vector: bytes = column(pa.binary())


DOCUMENTS = schema_of(Document)
SENTENCES = schema_of(Sentence)
DOCUMENT_PAIRS = schema_of(DocumentPair)
#: Sentence pairs up to scoring, with their sides' vectors; classify adds each side's domain distribution and drops the
#: vectors, which nothing after it reads.
SENTENCE_PAIRS = schema_of(SentencePair, exclude=("domain_probs_a", "domain_probs_b"))
CLASSIFIED_SENTENCE_PAIRS = schema_of(SentencePair, exclude=("vector_a", "vector_b"))
SENTENCE_EMBEDDINGS = schema_of(SentenceEmbedding)
ANNOTATED_DOCUMENTS = schema_of(AnnotatedDocument)
