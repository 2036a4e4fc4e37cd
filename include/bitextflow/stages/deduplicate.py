"""Stage ``deduplicate``: exact and near-duplicate documents across the whole run, over every site partition.

Extraction de-duplicates within a WARC file; the same page is often fetched into several files, and mirror
sites repeat each other across partitions. This one task reads the run's MinHash sketches (the ``partition``
stage wrote one file per partition) without their signatures, about 100 bytes a document, finds the URL,
content and near-duplicates (:func:`bitextflow.extract.dedup.find_run_duplicates`), fetching signatures only
for the documents that share an LSH band, and writes each partition's verdicts
(``deduplicate/part-NNNNN.duplicates.parquet``: the documents' ``order``, reason and kept twin), which
document alignment and the monolingual documents apply (:func:`run_duplicates_set_aside`), and how many copies of each
kept document the run set aside, here and in extraction (``deduplicate/copies.parquet``: the near-duplicate cluster
size the monolingual documents report). Its memory follows the number of documents at that rate, never their text.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from bitextflow.extract.dedup import (
    SEARCH_COLUMNS,
    SKETCHES,
    Duplicate,
    deduplication_counts,
    find_run_duplicates,
    set_aside,
)
from bitextflow.stages.base import RunContext, Stage
from bitextflow.storage.layout import (
    COPIES_NAME,
    PARTITION_DOCUMENTS,
    REJECTED_DOCUMENT_SHARDS,
    duplicates_name,
    partition_name,
    partition_of_key,
)
from bitextflow.storage.tables import read_rows, read_table, write_table

#: Each partition's verdicts: a document (by its ``order`` in the run) set aside, why, and the document kept.
DUPLICATES = pa.schema([("order", pa.int64()), ("drop_reason", pa.string()), ("duplicate_of", pa.string())])
#: The run's kept documents that others repeat: how many copies of each the run set aside (extraction and this stage).
COPIES = pa.schema([("doc_id", pa.string()), ("copies", pa.int64())])


class Deduplicate(Stage):
    name = "deduplicate"
    after = "gate_documents"
    outputs = PARTITION_DOCUMENTS
    output_folder = "partitions"
    partitioning = "run"
    help = "set aside documents that repeat another across the run (same URL, same text, MinHash LSH near-duplicates)"

    def run(self, documents_keys: Sequence[str]) -> list[str]:
        """Writes each partition's verdicts; passes the partitions' documents keys on."""
        ctx = self.ctx
        partitions = sorted(partition_of_key(key) for key in documents_keys)
        sketch_keys = {p: ctx.key("partitions", f"{partition_name(p)}.sketches.parquet") for p in partitions}
        parts = []
        for partition, key in sketch_keys.items():
            frame = read_table(ctx.store, key, columns=SEARCH_COLUMNS)
            frame["partition"] = partition
            parts.append(frame)
        sketches = pd.concat(parts, ignore_index=True) if parts else SKETCHES.empty_table().to_pandas()
        partition_of_document = dict(zip(sketches["doc_id"], sketches["partition"], strict=True))

        def signatures(doc_ids: set[str]) -> dict[str, np.ndarray]:
            wanted_keys = sorted({sketch_keys[partition_of_document[doc_id]] for doc_id in doc_ids})
            rows = read_rows(ctx.store, wanted_keys, SKETCHES, ["doc_id", "signature"], "doc_id", doc_ids)
            return {
                doc_id: np.frombuffer(raw, dtype="<u8") for doc_id, raw in zip(rows["doc_id"], rows["signature"], strict=True)
            }

        config = ctx.config.extract
        found = find_run_duplicates(pa.Table.from_pandas(sketches, preserve_index=False), signatures, config.lsh_threshold)
        partition_of_order = dict(zip(sketches["order"], sketches["partition"], strict=True))
        verdicts: dict[int, list[tuple[int, Duplicate]]] = defaultdict(list)
        for order, duplicate in sorted(found.items()):
            verdicts[partition_of_order[order]].append((order, duplicate))
        for partition in partitions:
            rows = verdicts.get(partition, [])
            frame = pd.DataFrame(
                {"order": [order for order, _ in rows], "drop_reason": [d.reason for _, d in rows],
                 "duplicate_of": [d.duplicate_of for _, d in rows]},
            )  # fmt: skip
            write_table(ctx.store, ctx.key("deduplicate", duplicates_name(partition)), frame, DUPLICATES)
        self._write_copies(found, dict(zip(sketches["order"], sketches["doc_id"], strict=True)))
        ctx.write_counts("deduplicate", "deduplicate", deduplication_counts(len(sketches), found.values()))
        return list(documents_keys)

    def _write_copies(self, found: Mapping[int, Duplicate], doc_id_of: Mapping[int, str]) -> None:
        """``copies.parquet``: per kept document, the copies set aside by extraction (its shards' rejected documents
        that name a twin) and by this stage; the copies of a document that lost here count for the one it lost to."""
        ctx = self.ctx
        copies: Counter[str] = Counter()
        for key in ctx.outputs("extract", REJECTED_DOCUMENT_SHARDS):
            copies.update(twin for twin in read_table(ctx.store, key, columns=["duplicate_of"])["duplicate_of"] if twin)
        for order, duplicate in found.items():
            copies[duplicate.duplicate_of] += 1 + copies.pop(doc_id_of[order], 0)
        frame = pd.DataFrame({"doc_id": sorted(copies), "copies": [copies[d] for d in sorted(copies)]})
        write_table(ctx.store, ctx.key("deduplicate", COPIES_NAME), frame, COPIES)


def run_duplicates_set_aside(ctx: RunContext, documents: pd.DataFrame, partition: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A partition's documents (its ``partitions/`` rows, in order) split into those the run keeps and those the
    ``deduplicate`` stage set aside, the latter with the reason and the kept twin."""
    name = partition_name(partition)
    verdicts = read_table(ctx.store, ctx.key("deduplicate", duplicates_name(partition)))
    found = {
        int(order): Duplicate(reason, twin)
        for order, reason, twin in zip(verdicts["order"], verdicts["drop_reason"], verdicts["duplicate_of"], strict=True)
    }
    orders = read_table(ctx.store, ctx.key("partitions", f"{name}.sketches.parquet"), columns=["order"])["order"]
    return set_aside(documents, orders, found)
