"""The gates at the other stage boundaries: documents and sentences (after extract, per site partition and
for the run), document pairs (after document alignment, per partition). The sentence-pair gate is in
:mod:`bitextflow.quality.sentence_pairs`.

Each suite checks what the next stage relies on, so a broken stage stops the run where it broke
rather than as a puzzling shortfall in the release:

- documents, per partition: the schema's columns; ``doc_id`` present and unique (alignment keys on it; one
  URL's documents are always in one partition); ``url``, ``warc_key``, ``language`` and ``content_hash``
  present (provenance, pairing and de-duplication need them); ``relevance`` and ``sentences`` not negative;
- documents, the run (from the partitions' summaries): both of the pair's languages among the documents (a
  run with one side only cannot yield pairs); at least ``gate.min_documents`` documents;
- sentences, per partition: the schema's columns; ``doc_id``, ``text`` and ``language`` present; text not
  blank; every sentence in one of the pair's languages (sentences are made for those only);
- document pairs, per partition: the schema's columns; both ``doc_id`` sides present and each document in at
  most one pair (the assignment is 1-1); the two URLs differ; ``method`` present; ``score`` in [0, 1]. How
  many the run has is judged with the sentence pairs (``gate.min_document_pairs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.config import GateConfig
from bitextflow.quality.engine import Check

SAME_URL_COLUMN = "same_url"


def documents_check(frame: pd.DataFrame, gate: GateConfig, *, suite: str = "documents") -> Check:
    """The suite for the kept documents of one site partition (every extract shard's)."""

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=records.DOCUMENTS.names, exact_match=False),
            *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id", "url", "warc_key", "language", "content_hash")),
            gxe.ExpectColumnValuesToBeUnique(column="doc_id"),
            gxe.ExpectColumnValuesToBeBetween(column="relevance", min_value=0.0),
            gxe.ExpectColumnValuesToBeBetween(column="sentences", min_value=0),
        ]

    return Check(suite, frame, expectations)


def run_documents_check(summaries: Sequence[Mapping[str, Any]], gate: GateConfig, languages: tuple[str, str]) -> Check:
    """The suite for the run's documents as a whole, on the partitions' summaries (``partition`` stage): one row
    per partition and language with its ``documents`` and ``sentences``."""
    rows = [
        {"partition": summary["partition"], "language": language, "documents": documents,
         "sentences": summary.get("sentences", {}).get(language, 0)}
        for summary in summaries for language, documents in summary["documents"].items()
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["partition", "language", "documents", "sentences"])

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectColumnDistinctValuesToContainSet(column="language", value_set=list(languages)),
            gxe.ExpectColumnSumToBeBetween(column="documents", min_value=gate.min_documents),
        ]

    return Check("documents", frame, expectations)


def sentences_check(frame: pd.DataFrame, languages: tuple[str, str], *, suite: str = "sentences") -> Check:
    """The suite for the sentences of one site partition."""

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=records.SENTENCES.names, exact_match=False),
            *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id", "text", "language")),
            gxe.ExpectColumnValuesToMatchRegex(column="text", regex=r"\S"),
            gxe.ExpectColumnValuesToBeInSet(column="language", value_set=list(languages)),
        ]

    return Check(suite, frame, expectations)


def document_pairs_check(frame: pd.DataFrame, *, suite: str = "document_pairs") -> Check:
    """The suite for the document pairs of one site partition."""
    checked = frame.copy(deep=False)
    if {"url_a", "url_b"} <= set(frame.columns):
        checked[SAME_URL_COLUMN] = frame["url_a"].where(frame["url_a"] == frame["url_b"])
    else:
        checked[SAME_URL_COLUMN] = None

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=records.DOCUMENT_PAIRS.names, exact_match=False),
            *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id_a", "doc_id_b", "url_a", "url_b", "method")),
            *(gxe.ExpectColumnValuesToBeUnique(column=c) for c in ("doc_id_a", "doc_id_b")),
            gxe.ExpectColumnValuesToBeNull(column=SAME_URL_COLUMN),
            gxe.ExpectColumnValuesToBeBetween(column="score", min_value=0.0, max_value=1.0),
        ]

    return Check(suite, checked, expectations)
