"""Stage ``deduplicate``: exact and near-duplicate documents across the whole run, over every site partition.

Extraction de-duplicates within a WARC file; the same page is often fetched into several files, and mirror
sites repeat each other across partitions. This one task reads the run's MinHash sketches (the ``partition``
stage wrote one file per partition) without their signatures, about 100 bytes a document, finds the URL,
content and near-duplicates (:func:`bitextflow.extract.dedup.find_run_duplicates`), fetching signatures only
for the documents that share an LSH band, and writes each partition's verdicts
(``deduplicate/part-NNNNN.duplicates.parquet``: the documents' ``order``, reason and kept twin), which
document alignment applies. Its memory follows the number of documents at that rate, never their text.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

from bitextflow.extract.dedup import SEARCH_COLUMNS, SKETCHES, Duplicate, deduplication_counts, find_run_duplicates
from bitextflow.stages.base import Stage
from bitextflow.storage.layout import PARTITION_DOCUMENTS, duplicates_name, partition_name, partition_of_key
from bitextflow.storage.tables import read_rows, read_table, write_table

#: Each partition's verdicts: a document (by its ``order`` in the run) set aside, why, and the document kept.
DUPLICATES = pa.schema([("order", pa.int64()), ("drop_reason", pa.string()), ("duplicate_of", pa.string())])


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
        ctx.write_counts("deduplicate", "deduplicate", deduplication_counts(len(sketches), found.values()))
        return list(documents_keys)
