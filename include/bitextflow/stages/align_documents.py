"""Stage ``align_documents``: one site partition's documents -> document pairs, in shards for sentence alignment.

One task per partition (a site is always whole in one). The run-level duplicates the ``deduplicate`` stage found
are set aside first (``align_documents/part-NNNNN.cross-shard-duplicates.parquet``, with the reason and the kept
twin); the pairs pass the document-pairs suite of the partition; an ``incremental`` run carries unchanged page
pairs over from the last release.
"""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import replace

import pandas as pd

from bitextflow import records
from bitextflow.align.combined import align_configured
from bitextflow.catalog import incremental
from bitextflow.catalog.run_outputs import PartitionOutputs, write_partition_outputs
from bitextflow.counts import StageCounts
from bitextflow.crawl.urls import host_group, host_of
from bitextflow.quality import document_pairs_check
from bitextflow.stages.base import Stage
from bitextflow.stages.deduplicate import run_duplicates_set_aside
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import (
    CRAWL_LOGS,
    DECLARED_VERSION_FILES,
    DOCUMENT_PAIR_SHARDS,
    carried_sentence_pairs_name,
    partition_name,
    partition_of_key,
)
from bitextflow.storage.tables import read_table, write_table
from bitextflow.text.urls import site_key

log = logging.getLogger(__name__)


class AlignDocuments(Stage):
    name = "align_documents"
    after = "deduplicate"
    outputs = DOCUMENT_PAIR_SHARDS
    partitioning = "shard"
    outputs_per_input = "many"
    asset = "document_pairs"
    help = "pair the documents that translate each other, one 1-1 assignment per site"

    def run(self, documents_key: str) -> list[str]:
        """Returns the partition's document-pair shards (none when it has no pair to align)."""
        ctx = self.ctx
        partition = partition_of_key(documents_key)
        name = partition_name(partition)
        frame = self._without_run_duplicates(read_table(ctx.store, documents_key), partition)
        src, tgt = ctx.config.source, ctx.config.target
        counts = StageCounts("align_documents")
        in_pair = frame[frame["language"].isin([src, tgt])]
        counts.seen(len(in_pair))
        declared, unfetched = self._what_the_crawl_knew(set(in_pair["url"]))
        pairs, report = align_configured(
            (records.Document.from_row(r) for r in in_pair.itertuples()), src, tgt, ctx.config.align, declared, unfetched
        )
        for reason, n in report.unmatched.items():
            counts.drop(reason, n)
        if report.refused or report.declared_disagreements:
            log.info(
                "%s: content pairs refused, the site naming a counterpart otherwise: %s; declared pairs content contradicts: %d",
                name, dict(report.refused), report.declared_disagreements,
            )  # fmt: skip
        counts.keep(2 * len(pairs))
        if report.partly_translated:
            log.info(
                "%s: %d of %d document pairs have a partly translated %s page", name, report.partly_translated, len(pairs), tgt
            )
        ctx.write_counts("align_documents", name, counts)
        located = sorted((replace(pair, partition=partition) for pair in pairs), key=lambda p: (p.url_a, p.url_b))
        document_pairs = records.frame_of(located, records.DOCUMENT_PAIRS)
        if len(document_pairs):
            judge(ctx, f"document_pairs.{name}", [document_pairs_check(document_pairs, suite=f"document_pairs.{name}")])
        outputs = PartitionOutputs(partition)
        if ctx.config.incremental:
            document_pairs, outputs = self._carry_over_unchanged(frame, document_pairs, partition)
        size = ctx.config.align.document_pairs_per_shard
        shards = [
            write_table(
                ctx.store,
                ctx.key("align_documents", f"docpairs-{name}-{i // size:05d}.parquet"),
                document_pairs.iloc[i : i + size],
                records.DOCUMENT_PAIRS,
            )
            for i in range(0, len(document_pairs), size)
        ]
        # last: the partition's manifest names what this attempt wrote (an earlier one's shards may still be there)
        write_partition_outputs(ctx.store, ctx.config.pair, ctx.run_id, replace(outputs, document_pair_shards=shards))
        return shards

    def _what_the_crawl_knew(self, urls: set[str]) -> tuple[dict[str, dict[str, str]], set[str]]:
        """The language versions the crawl saw declared for ``urls`` (``crawl/declared-versions*.jsonl.gz``) and the URLs
        of their sites it knew but did not fetch (the crawl logs' ``not_fetched_*`` lines); nothing for ingested WARCs.
        Only the files of the host groups that crawled these sites are read (a site's hosts share one group)."""
        ctx = self.ctx
        sites = {site_key(url) for url in urls}
        groups = ctx.config.crawl.host_groups
        wanted = {host_group(host_of(url), groups) for url in urls} if groups > 1 else {None}
        declared: dict[str, dict[str, str]] = {}
        unfetched: set[str] = set()
        for key in ctx.store.list_keys(ctx.key("crawl", "")):
            name = key.rsplit("/", 1)[-1]
            found = DECLARED_VERSION_FILES.match(name) or CRAWL_LOGS.match(name)
            # ``crawl-log.hosts-007.jsonl.gz``: host group 7; ``crawl-log.jsonl.gz``: the one group
            if found is None or (int(found.group(1).rsplit("-", 1)[1]) if found.group(1) else None) not in wanted:
                continue
            for line in gzip.decompress(ctx.store.get_bytes(key)).splitlines():
                entry = json.loads(line)
                if found.re is DECLARED_VERSION_FILES:
                    if entry["url"] in urls:
                        declared[entry["url"]] = entry["alternates"]
                elif entry["outcome"].startswith("not_fetched") and site_key(entry["url"]) in sites:
                    unfetched.add(entry["url"])
        return declared, unfetched

    def _without_run_duplicates(self, documents: pd.DataFrame, partition: int) -> pd.DataFrame:
        """The partition's documents less those the ``deduplicate`` stage set aside, which go to
        ``align_documents/part-NNNNN.cross-shard-duplicates.parquet`` with the reason and the kept twin."""
        ctx = self.ctx
        name = partition_name(partition)
        kept, removed = run_duplicates_set_aside(ctx, documents, partition)
        write_table(ctx.store, ctx.key("align_documents", f"{name}.cross-shard-duplicates.parquet"), removed, records.DOCUMENTS)
        return kept

    def _carry_over_unchanged(
        self, documents: pd.DataFrame, document_pairs: pd.DataFrame, partition: int
    ) -> tuple[pd.DataFrame, PartitionOutputs]:
        """``incremental``: set aside the previous release's pairs of unchanged page pairs for the gate, report
        what changed (``align_documents/part-NNNNN.changes.json``); returns the document pairs still to align and the
        carried files."""
        ctx = self.ctx
        name = partition_name(partition)
        previous = incremental.previous_release(
            ctx.store, ctx.config.pair, ctx.run_id, partition, ctx.config.extract.site_partitions
        )
        if previous is None:
            log.info("incremental: no usable earlier release of %s; aligning every document pair of %s", ctx.config.pair, name)
            return document_pairs, PartitionOutputs(partition)
        split = incremental.split_unchanged(
            document_pairs, dict(zip(documents["url"], documents["content_hash"], strict=True)), previous
        )
        # "docpairs-<partition>-carried" is listed with the run's document pairs (the release's document_pairs.jsonl)
        # but is not a shard for sentence alignment; the gate adds the carried sentence pairs to this run's.
        carried = PartitionOutputs(
            partition,
            carried_document_pairs=write_table(
                ctx.store,
                ctx.key("align_documents", f"docpairs-{name}-carried.parquet"),
                split.carried_document_pairs,
                records.DOCUMENT_PAIRS,
            ),
            carried_sentence_pairs=write_table(
                ctx.store,
                ctx.key("align_documents", carried_sentence_pairs_name(partition)),
                split.carried_sentence_pairs,
                records.CLASSIFIED_SENTENCE_PAIRS,
            ),
        )
        ctx.store.put_json(ctx.key("align_documents", f"{name}.changes.json"), split.changes)
        log.info(
            "incremental against release v%d, %s: pages %s; %d document pairs carried over with %d sentence pairs, %d to align",
            previous.release.version, name, {kind: c["count"] for kind, c in split.changes["pages"].items()},
            len(split.carried_document_pairs), len(split.carried_sentence_pairs), len(split.to_align),
        )  # fmt: skip
        return split.to_align, carried
