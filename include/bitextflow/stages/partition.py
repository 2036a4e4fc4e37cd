"""Stage ``partition``: each site partition's documents and sentences, gathered from every extract shard.

Extraction groups the rows of each shard by site partition (:mod:`bitextflow.extract.shard`); this stage is
the exchange between the two ways a run is cut: by WARC file before it, by web site after it (document
alignment is 1-1 per site). :meth:`Partition.plan` reads the footer of every extract shard and writes, for
each partition that holds documents, ``partitions/part-NNNNN.inputs.json``: the shards holding it and the
row groups to read. One task per partition then reads those row groups only (ranged reads) and writes

- ``part-NNNNN.documents.parquet`` and ``part-NNNNN.sentences.parquet``: the partition's rows, shards in run
  order, each shard's rows in its order;
- ``part-NNNNN.sketches.parquet``: a MinHash sketch per document (:func:`bitextflow.extract.dedup.sketch_documents`),
  which the run-level near-duplicate search reads (:mod:`bitextflow.stages.deduplicate`);
- ``part-NNNNN.summary.json``: documents and sentences per language, which the documents gate judges the
  run by without reading the partitions again.

Memory holds one row group at a time and the partition's sketches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pyarrow.compute as pc

from bitextflow import records
from bitextflow.errors import StageError
from bitextflow.extract.dedup import SKETCHES, sketch_documents
from bitextflow.stages.base import Stage
from bitextflow.storage.layout import PARTITION_DOCUMENTS, PARTITION_PLAN, partition_name
from bitextflow.storage.tables import TableWriter, partition_holders, read_partition, row_groups_by_partition

# A document's order in the run: its shard's place, then its row in the shard (below 2**32 rows a shard).
_ROW_BITS = 32


def sentences_key_of(documents_key: str) -> str:
    """The extract shard of sentences written beside a documents shard."""
    return documents_key.removesuffix(".documents.parquet") + ".sentences.parquet"


class Partition(Stage):
    name = "partition"
    after = "extract"
    outputs = PARTITION_DOCUMENTS
    output_folder = "partitions"
    partitioning = "shard"
    help = "gather each site partition's documents and sentences from every extract shard"

    def plan(self, documents_keys: Sequence[str]) -> list[str]:
        """One task input per partition holding documents: its ``inputs.json`` key, written here."""
        ctx = self.ctx
        holders = {
            partition: [{"documents": key, "shard_index": position, "row_groups": groups} for position, key, groups in held]
            for partition, held in partition_holders(ctx.store, sorted(documents_keys)).items()
        }
        if not holders:
            raise StageError(
                f"none of the {len(documents_keys)} extract shards of run {ctx.run_id!r} holds a document; the crawl fetched "
                "nothing extraction kept (see the extract counts: languages, relevance, duplicates)"
            )
        partitions = ctx.config.extract.site_partitions
        ctx.store.put_json(ctx.key("partitions", PARTITION_PLAN), {"site_partitions": partitions, "holding": sorted(holders)})
        return [
            ctx.store.put_json(
                ctx.key("partitions", f"{partition_name(partition)}.inputs.json"),
                {"partition": partition, "site_partitions": partitions, "shards": shards},
            )
            for partition, shards in sorted(holders.items())
        ]

    def run(self, inputs_key: str) -> str:
        """Gather one partition; returns its documents key."""
        ctx = self.ctx
        plan = ctx.store.get_json(inputs_key)
        partition, name = plan["partition"], partition_name(plan["partition"])
        extract = ctx.config.extract
        summary: dict[str, Counter[str]] = {"documents": Counter(), "sentences": Counter()}
        documents_key = ctx.key("partitions", f"{name}.documents.parquet")
        with (
            TableWriter(ctx.store, documents_key, records.DOCUMENTS) as documents,
            TableWriter(ctx.store, ctx.key("partitions", f"{name}.sentences.parquet"), records.SENTENCES) as sentences,
            TableWriter(ctx.store, ctx.key("partitions", f"{name}.sketches.parquet"), SKETCHES) as sketches,
        ):
            for shard in plan["shards"]:
                rows = read_partition(ctx.store, shard["documents"], partition, shard["row_groups"])
                for table, positions in rows:
                    documents.write(table)
                    orders = pc.add(positions, shard["shard_index"] << _ROW_BITS).to_pylist()
                    sketches.write(sketch_documents(table, orders, extract.lsh_threshold, extract.lsh_num_perm))
                    summary["documents"].update(table["language"].to_pylist())
                key = sentences_key_of(shard["documents"])
                groups = row_groups_by_partition(ctx.store, key).get(partition, [])
                for table, _positions in read_partition(ctx.store, key, partition, groups):
                    sentences.write(table)
                    summary["sentences"].update(table["language"].to_pylist())
        ctx.store.put_json(
            ctx.key("partitions", f"{name}.summary.json"),
            {"partition": partition, **{kind: dict(sorted(counts.items())) for kind, counts in summary.items()}},
        )
        return documents_key
