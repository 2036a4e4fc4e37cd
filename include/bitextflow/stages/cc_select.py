"""Stage ``cc_select``: the sites of a Common Crawl index run whose captures hold both languages (docs/commoncrawl.md).

One task for the run, partition by partition: it reads each site partition's row groups from every ``cc_sites``
file, sums each site's captures and applies ``crawl.index.min_captures`` and ``min_share``
(:class:`bitextflow.catalog.ccindex.SiteRule`). The selected sites go to ``cc_select/sites.parquet`` (row groups by
partition); every site seen is counted, kept or dropped by the rule it fails. Memory holds one partition's sites.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from bitextflow.catalog.ccindex import SITES, SiteRule, selected_sites
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.stages.cc_sites import IndexStage
from bitextflow.storage.layout import CC_SELECTED, CC_SELECTED_SITES
from bitextflow.storage.tables import TableWriter, partition_holders, read_partition


class CcSelect(IndexStage):
    name = "cc_select"
    after = "cc_sites"
    outputs = CC_SELECTED
    partitioning = "run"
    help = "select the sites of the Common Crawl index whose captures hold both languages"

    def run(self, site_counts: Sequence[str]) -> str:
        """Returns the selected sites' key."""
        ctx = self.ctx
        index = ctx.config.crawl.index
        rule = SiteRule(index.min_captures, index.min_share)
        counts = StageCounts(self.name)
        key = ctx.key(self.name, CC_SELECTED_SITES)
        with TableWriter(ctx.store, key, SITES) as selected:
            for partition, held in partition_holders(ctx.store, sorted(site_counts)).items():
                parts = [table for _, shard, groups in held for table, _ in read_partition(ctx.store, shard, partition, groups)]
                selected.write(selected_sites(pa.concat_tables(parts), rule, counts))
        ctx.write_counts(self.name, self.name, counts)
        if not counts.kept:
            raise StageError(
                f"crawl.index: none of the {counts.items_in} sites with captures in {ctx.config.source} or "
                f"{ctx.config.target} has {index.min_captures} in each (and a share of {index.min_share}); lower "
                "crawl.index.min_captures or min_share, or add crawls"
            )
        return key
