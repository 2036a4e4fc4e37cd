"""Incremental runs: re-use the previous release for page pairs whose content has not changed.

A pair is crawled again to find new and changed pages, but aligning, scoring and classifying a page
pair costs far more than fetching it. With ``incremental: true`` in the pair config, a document pair
whose two pages have the same content hash as in the run of the pair's latest release, and which that
run already paired, is not sent to sentence alignment again: its released sentence pairs are
carried over into this run's gate. Everything else (new pages, changed pages, new pairings) goes
through the stages as usual, and the gate judges carried and new pairs together, so the new release
is complete, not a delta.

What changed is reported per run (``align_documents/changes.json``): pages new, changed, unchanged
and gone since the previous release, document pairs carried or re-aligned, sentence pairs carried.

The reference is the previous release's run outputs in the store, one site partition at a time (its
partition's documents, document pairs and gated pairs); if they were deleted, or that run cut its sites
into another number of partitions, the run processes everything and says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from bitextflow import records
from bitextflow.catalog.releases import ReleaseInfo, list_releases
from bitextflow.catalog.run_outputs import RunOutputs
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import PARTITION_PLAN, RELEASED_DOCUMENT_PAIRS, partition_name, partition_of_key, stage_key
from bitextflow.storage.tables import read_table, read_tables, stage_outputs

log = logging.getLogger(__name__)

_SAMPLE = 20  # URLs listed per kind of change: enough to look into, short enough to read


@dataclass(frozen=True)
class PreviousRelease:
    """The latest release of a pair and what its run saw: page hashes and the released sentence pairs."""

    release: ReleaseInfo
    page_hashes: dict[str, str]
    page_pairs: set[tuple[str, str]]  # document pairs of that run, whether or not they yielded released pairs
    pairs: pd.DataFrame = field(repr=False)


def previous_release(store: ObjectStore, pair: str, run_id: str, partition: int, site_partitions: int) -> PreviousRelease | None:
    """The latest release of ``pair`` made by another run, with what its run saw of site ``partition``; None if there
    is none, or if its outputs are gone or were cut into another number of partitions (``extract.site_partitions``)."""
    earlier = [info for info in list_releases(store, pair) if info.run_id != run_id]
    if not earlier:
        return None
    release = earlier[-1]
    plan_key = stage_key(pair, release.run_id, "partitions", PARTITION_PLAN)
    if not store.exists(plan_key):
        log.warning(
            "incremental: the outputs of run %s (release v%d) are gone from the store; processing every page",
            release.run_id, release.version,
        )  # fmt: skip
        return None
    if (earlier_partitions := store.get_json(plan_key)["site_partitions"]) != site_partitions:
        log.warning(
            "incremental: run %s (release v%d) cut its sites into %d partitions, this run into %d; processing every page",
            release.run_id, release.version, earlier_partitions, site_partitions,
        )  # fmt: skip
        return None
    name = partition_name(partition)
    documents = _table_if_any(
        store,
        stage_key(pair, release.run_id, "partitions", f"{name}.documents.parquet"),
        records.DOCUMENTS,
        ["url", "content_hash"],
    )
    # what that run's latest attempt wrote, not files an earlier attempt of it left (other partitions, other shards)
    outputs = RunOutputs(store, pair, release.run_id)
    listed = stage_outputs(store, pair, release.run_id, "align_documents", RELEASED_DOCUMENT_PAIRS)
    document_pairs = read_tables(
        store, [key for key in outputs.document_pairs(listed) if partition_of_key(key) == partition], records.DOCUMENT_PAIRS
    )
    gated_key = stage_key(pair, release.run_id, "gate", f"{name}.sentence_pairs.parquet")
    gated_keys = outputs.gated()
    gated = _table_if_any(
        store, gated_key if gated_keys is None or gated_key in gated_keys else None, records.CLASSIFIED_SENTENCE_PAIRS
    )
    return PreviousRelease(
        release,
        dict(zip(documents["url"], documents["content_hash"], strict=True)),
        set(zip(document_pairs["url_a"], document_pairs["url_b"], strict=True)),
        gated,
    )


def _table_if_any(store: ObjectStore, key: str | None, schema: pa.Schema, columns: list[str] | None = None) -> pd.DataFrame:
    """``key``'s table, or an empty one when the run wrote none (None, or a partition it did not have, or without pairs)."""
    if key is not None and store.exists(key):
        return read_table(store, key, columns)
    empty = schema.empty_table()
    return (empty.select(columns) if columns else empty).to_pandas()


@dataclass(frozen=True)
class Split:
    """Document pairs to align, those carried over with their released sentence pairs, and what changed."""

    to_align: pd.DataFrame
    carried_document_pairs: pd.DataFrame
    carried_sentence_pairs: pd.DataFrame
    changes: dict[str, Any]


def split_unchanged(document_pairs: pd.DataFrame, page_hashes: dict[str, str], previous: PreviousRelease) -> Split:
    """Split this run's document pairs by whether the previous release can stand for them.

    ``page_hashes`` are this run's url -> content hash.
    """
    old = previous.page_hashes

    def unchanged(url_a: str, url_b: str) -> bool:
        return (
            (url_a, url_b) in previous.page_pairs
            and page_hashes.get(url_a) == old.get(url_a) is not None
            and page_hashes.get(url_b) == old.get(url_b) is not None
        )

    keep_old = pd.Series(
        [unchanged(a, b) for a, b in zip(document_pairs["url_a"], document_pairs["url_b"], strict=True)],
        index=document_pairs.index, dtype=bool,
    )  # fmt: skip
    carried_document_pairs = document_pairs[keep_old].reset_index(drop=True)
    carried_urls = set(zip(carried_document_pairs["url_a"], carried_document_pairs["url_b"], strict=True))
    in_carried = [pair in carried_urls for pair in zip(previous.pairs["url_a"], previous.pairs["url_b"], strict=True)]
    carried_sentence_pairs = previous.pairs[in_carried].reset_index(drop=True)
    to_align = document_pairs[~keep_old].reset_index(drop=True)
    changes = {
        "previous_release": previous.release.to_dict(),
        "pages": page_changes(page_hashes, old),
        "document_pairs": {"carried": len(carried_document_pairs), "aligned": len(to_align)},
        "sentence_pairs_carried": len(carried_sentence_pairs),
    }
    return Split(to_align, carried_document_pairs, carried_sentence_pairs, changes)


def page_changes(current: dict[str, str], previous: dict[str, str]) -> dict[str, Any]:
    """Counts and a sample of URLs per kind of change between two url -> content hash maps."""
    kinds = {
        "new": sorted(set(current) - set(previous)),
        "gone": sorted(set(previous) - set(current)),
        "changed": sorted(url for url in set(current) & set(previous) if current[url] != previous[url]),
    }
    summary: dict[str, Any] = {kind: {"count": len(urls), "sample": urls[:_SAMPLE]} for kind, urls in kinds.items()}
    summary["unchanged"] = {"count": len(set(current) & set(previous)) - len(kinds["changed"])}
    return summary
