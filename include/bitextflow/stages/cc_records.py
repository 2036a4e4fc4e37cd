"""Stage ``cc_records``: the captures of the selected sites, found in every file of a Common Crawl index run
(docs/commoncrawl.md).

Mapped over the run's index files (``cc_sites/index-files.json``: the pages subset's, then the robotstxt subset's)
in at most ``crawl.index.max_tasks`` tasks, as ``cc_sites``. Each task loads the selected sites once; each file of
pages is scanned for their captures that pass the MIME and status filters (a filter Arrow's scanner applies to the
file's row groups, reading only the columns it needs) and whose primary language is the source or target. They go
to ``cc_records/index-NNNNN.records.parquet``, row groups by site partition of the page's URL (as extract
partitions it), index order within a partition. Each file of the robotstxt subset gives, the same way, the
robots.txt captures of the selected sites' hosts, whatever their status (``cc_records/robots-NNNNN.records.parquet``,
counted as ``cc_records_robots``), which ``cc_fetch`` judges their pages by. Memory holds the selected sites' names
and a batch of rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow.catalog.ccindex import RECORDS, ROBOTS, ROBOTS_COUNTS
from bitextflow.counts import StageCounts
from bitextflow.stages.cc_select import CcSelect
from bitextflow.stages.cc_sites import IndexFilesStage, run_index_names
from bitextflow.storage.layout import CC_RECORDS, CC_ROBOTS_RECORDS, CC_SELECTED_SITES
from bitextflow.storage.tables import TableWriter, read_table


class CcRecords(IndexFilesStage):
    name = "cc_records"
    after = "cc_select"
    outputs = CC_RECORDS
    partitioning = "shard"
    help = "find the captures of the selected sites, and their hosts' robots.txt, in every file of the Common Crawl index"

    def plan(self, selected: Sequence[str]) -> list[str]:
        """The run's index files, as cc_sites listed them (pages, then robots.txt captures)."""
        return list(run_index_names(self.ctx))

    def setup(self) -> None:
        super().setup()
        ctx = self.ctx
        self.sites = read_table(ctx.store, ctx.key(CcSelect.name, CC_SELECTED_SITES), ["domain"])["domain"].tolist()

    def run(self, index_file: str) -> str:
        """Returns the file's records key."""
        ctx = self.ctx
        name = self.names[index_file]
        key = ctx.key(self.name, f"{name}.records.parquet")
        if CC_ROBOTS_RECORDS.match(f"{name}.records.parquet"):
            schema, found, counts = ROBOTS, self.index.robots_captures(index_file, self.sites), StageCounts(ROBOTS_COUNTS)
        else:
            schema, found, counts = RECORDS, self.index.records(index_file, self.sites), StageCounts(self.name)
        with TableWriter(ctx.store, key, schema) as records:
            for table, batch_counts in found:
                records.write_by_partition(table)
                counts = StageCounts.merged(counts.stage, [counts, batch_counts])
        ctx.write_counts(self.name, name, counts)
        return key
