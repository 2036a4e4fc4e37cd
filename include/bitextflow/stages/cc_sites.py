"""Stage ``cc_sites``: the first stage of a run from a Common Crawl index (``crawl.index``): each index file's sites
with their captures per language (docs/commoncrawl.md).

The plan lists the index files of the configured crawls (``cc_sites/index-files.json``, the run's file list, read
again by ``cc_records``: the pages subset's files, and the robotstxt subset's) and groups the pages subset's into at most ``crawl.index.max_tasks`` tasks. Each file gives
``cc_sites/index-NNNNN.sites.parquet``: per registered domain with a capture in the source or target language, its
captures (any language), and those in each of the two, sorted and cut into row groups by site partition so that
``cc_select`` reads one partition at a time. A task holds one file's sites at a time.
"""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow.catalog.ccindex import ROBOTS_SUBSET, SITE_COUNTS, CrawlIndex
from bitextflow.config import PairConfig
from bitextflow.stages.base import RunContext, Stage
from bitextflow.storage.layout import CC_INDEX_FILES, CC_SITE_COUNTS, index_file_name, robots_file_name
from bitextflow.storage.tables import TableWriter


class IndexStage(Stage):
    """A stage of a run from a Common Crawl index: in the pair's runs when its config names one (``crawl.index``)."""

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        return config.crawl.index is not None


class IndexFilesStage(IndexStage):
    """A pass over the run's index files (``cc_sites/index-files.json``), batched into ``crawl.index.max_tasks``."""

    @classmethod
    def max_tasks(cls, config: PairConfig) -> int | None:
        return config.crawl.index.max_tasks if config.crawl.index else None

    def setup(self) -> None:
        self.index = CrawlIndex(self.ctx.store, self.ctx.config)
        self.names = run_index_names(self.ctx)


class CcSites(IndexFilesStage):
    name = "cc_sites"
    outputs = CC_SITE_COUNTS
    partitioning = "shard"
    help = "count each site's captures per language in every file of the Common Crawl index (crawl.index)"

    @classmethod
    def first_inputs(cls, config: PairConfig) -> list[str]:
        """The crawls to read; the plan lists their index files."""
        return list(config.crawl.index.crawls) if config.crawl.index else []

    def plan(self, crawls: Sequence[str]) -> list[str]:
        """The index files of the crawls, written as the run's file list (with the robotstxt subset's files)."""
        index = CrawlIndex(self.ctx.store, self.ctx.config)
        files = index.files()
        listed = {"crawls": list(crawls), "files": files, "robots_files": index.files(ROBOTS_SUBSET)}
        self.ctx.store.put_json(self.ctx.key(self.name, CC_INDEX_FILES), listed)
        return files

    def run(self, index_file: str) -> str:
        """Returns the file's site counts key."""
        sites, counts = self.index.site_counts(index_file)
        name = self.names[index_file]
        key = self.ctx.key(self.name, f"{name}.sites.parquet")
        with TableWriter(self.ctx.store, key, SITE_COUNTS) as writer:
            writer.write_by_partition(sites)
        self.ctx.write_counts(self.name, name, counts)
        return key


def run_index_names(ctx: RunContext) -> dict[str, str]:
    """Each index file of the run (``cc_sites/index-files.json``) -> its name in keys, by its place in the run's list:
    ``index-NNNNN`` (pages), ``robots-NNNNN`` (robotstxt subset); in list order, pages first."""
    listed = ctx.store.get_json(ctx.key("cc_sites", CC_INDEX_FILES))
    names = {uri: index_file_name(position) for position, uri in enumerate(listed["files"])}
    return names | {uri: robots_file_name(position) for position, uri in enumerate(listed["robots_files"])}
