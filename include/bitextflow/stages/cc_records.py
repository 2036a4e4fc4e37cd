"""Stage ``cc_records``: the captures of the selected sites, found in every file of a Common Crawl index run
(docs/commoncrawl.md).

Mapped over the run's index files (``cc_sites/index-files.json``) in at most ``crawl.index.max_tasks`` tasks, as
``cc_sites``. Each task loads the selected sites once; each file is scanned for their captures that pass the MIME
and status filters (a filter Arrow's scanner applies to the file's row groups, reading only the columns it needs)
and whose primary language is the source or target. They go to ``cc_records/index-NNNNN.records.parquet``, row
groups by site partition of the page's URL (as extract partitions it), index order within a partition. Memory
holds the selected sites' names and a batch of rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow.catalog.ccindex import RECORDS
from bitextflow.counts import StageCounts
from bitextflow.stages.cc_select import CcSelect
from bitextflow.stages.cc_sites import IndexFilesStage, run_index_positions
from bitextflow.storage.layout import CC_RECORDS, CC_SELECTED_SITES, index_file_name
from bitextflow.storage.tables import TableWriter, read_table


class CcRecords(IndexFilesStage):
    name = "cc_records"
    after = "cc_select"
    outputs = CC_RECORDS
    partitioning = "shard"
    help = "find the captures of the selected sites in every file of the Common Crawl index"

    def plan(self, selected: Sequence[str]) -> list[str]:
        """The run's index files, as cc_sites listed them."""
        return list(run_index_positions(self.ctx))

    def setup(self) -> None:
        super().setup()
        ctx = self.ctx
        self.sites = read_table(ctx.store, ctx.key(CcSelect.name, CC_SELECTED_SITES), ["domain"])["domain"].tolist()

    def run(self, index_file: str) -> str:
        """Returns the file's records key."""
        ctx = self.ctx
        name = index_file_name(self.positions[index_file])
        key = ctx.key(self.name, f"{name}.records.parquet")
        counts = StageCounts(self.name)
        with TableWriter(ctx.store, key, RECORDS) as records:
            for table, batch_counts in self.index.records(index_file, self.sites):
                records.write_by_partition(table)
                counts = StageCounts.merged(self.name, [counts, batch_counts])
        ctx.write_counts(self.name, name, counts)
        return key
