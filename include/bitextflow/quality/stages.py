"""The gates at the other stage boundaries: documents and sentences (after extract), document pairs
(after document alignment). The sentence-pair gate is in :mod:`bitextflow.quality.sentence_pairs`.

Each suite checks what the next stage relies on, so a broken stage stops the run where it broke
rather than as a puzzling shortfall in the release:

- documents: the schema's columns; ``doc_id`` present and unique (alignment keys on it); ``url``,
  ``warc_key``, ``language`` and ``content_hash`` present (provenance, pairing and de-duplication
  need them); ``relevance`` and ``sentences`` not negative; both of the pair's languages among the
  documents (a run with one side only cannot yield pairs); at least ``gate.min_documents`` rows;
- sentences: the schema's columns; ``doc_id``, ``text`` and ``language`` present; text not blank;
  every sentence in one of the pair's languages (sentences are made for those only);
- document pairs: the schema's columns; both ``doc_id`` sides present and each document in at most
  one pair (the assignment is 1-1); the two URLs differ; ``method`` present; ``score`` in [0, 1];
  at least ``gate.min_document_pairs`` rows.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bitextflow import records
from bitextflow.config import GateConfig
from bitextflow.quality.engine import Check

SAME_URL_COLUMN = "same_url"


def documents_check(frame: pd.DataFrame, gate: GateConfig, languages: tuple[str, str]) -> Check:
    """The suite for the kept documents of a run (all extract shards together)."""

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=records.DOCUMENTS.names, exact_match=False),
            *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id", "url", "warc_key", "language", "content_hash")),
            gxe.ExpectColumnValuesToBeUnique(column="doc_id"),
            gxe.ExpectColumnValuesToBeBetween(column="relevance", min_value=0.0),
            gxe.ExpectColumnValuesToBeBetween(column="sentences", min_value=0),
            gxe.ExpectColumnDistinctValuesToContainSet(column="language", value_set=list(languages)),
            gxe.ExpectTableRowCountToBeBetween(min_value=gate.min_documents),
        ]

    return Check("documents", frame, expectations)


def sentences_check(frame: pd.DataFrame, languages: tuple[str, str]) -> Check:
    """The suite for the sentences of a run (all extract shards together)."""

    def expectations(gxe: Any) -> list[Any]:
        return [
            gxe.ExpectTableColumnsToMatchSet(column_set=records.SENTENCES.names, exact_match=False),
            *(gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id", "text", "language")),
            gxe.ExpectColumnValuesToMatchRegex(column="text", regex=r"\S"),
            gxe.ExpectColumnValuesToBeInSet(column="language", value_set=list(languages)),
        ]

    return Check("sentences", frame, expectations)


def document_pairs_check(frame: pd.DataFrame, gate: GateConfig) -> Check:
    """The suite for the document pairs of a run (all shards together)."""
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
            gxe.ExpectTableRowCountToBeBetween(min_value=gate.min_document_pairs),
        ]

    return Check("document_pairs", checked, expectations)
