"""Stage ``crawl``: the focused bilingual crawl from the seeds (or existing WARC files) into WARC shards.

Site partitions: with ``crawl.host_groups`` above 1, hosts are grouped by a hash of their registered
domain and the stage maps over the groups that hold a seed, one task each, each with its own frontier,
checkpoints (``crawl/<group>/``), crawl log and WARC files (``crawl-<group>-NNNNN.warc.gz``). With one
group the layout is the single crawl's (``crawl/checkpoint.json.gz``, ``crawl-NNNNN.warc.gz``).

Resumable: the crawl checkpoints under its folder and a rerun of the task with the same run id
continues from the last checkpoint (or, if the crawl had finished, returns its shards).
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import time
from pathlib import Path

from bitextflow.catalog.checkpoints import ObjectStoreCheckpoints
from bitextflow.catalog.models import resolve_url_models
from bitextflow.catalog.site_files import gather_captures
from bitextflow.catalog.warcs import resolve_warcs
from bitextflow.config import CrawlConfig, PairConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.crawl_state import CrawlLogEntry, canonical_seeds
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.scoring import PairContext
from bitextflow.crawl.urls import host_group, host_of
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import StageError
from bitextflow.models.url_models import TRAIN_COMMAND
from bitextflow.policy import OptOuts
from bitextflow.stages.base import Stage, shard_name
from bitextflow.storage.layout import CRAWL_LOG, DECLARED_VERSIONS, WARC_SHARDS

log = logging.getLogger(__name__)

INGEST = "warcs"
ALL_HOSTS = "hosts"


def _group_index(group: str) -> int | None:
    """``hosts-007`` -> 7; ``hosts`` (one group) -> None."""
    return None if group == ALL_HOSTS else int(group.rsplit("-", 1)[1])


class Crawl(Stage):
    name = "crawl"
    outputs = WARC_SHARDS
    partitioning = "shard"
    outputs_per_input = "many"
    help = "crawl from the seeds (or ingest crawl.warcs) into WARC shards"

    @classmethod
    def enabled(cls, config: PairConfig) -> bool:
        """A run from a Common Crawl index (``crawl.index``) fetches with the cc_* stages instead."""
        return config.crawl.index is None

    @classmethod
    def first_inputs(cls, config: PairConfig) -> list[str]:
        """The host groups that hold a seed (``hosts`` when there is one group), or ``warcs`` to ingest."""
        crawl = config.crawl
        if crawl.warcs:
            return [INGEST]
        if crawl.host_groups == 1:
            return [ALL_HOSTS]
        groups = {host_group(host_of(url), crawl.host_groups) for url in canonical_seeds(crawl)}
        return [f"{ALL_HOSTS}-{group:03d}" for group in sorted(groups)]

    def run(self, group: str) -> list[str]:
        """Returns the WARC shard keys of ``group`` (the shards of the extract stage)."""
        ctx = self.ctx
        ctx.store.ensure_bucket()
        if group == INGEST:
            return self._ingest()
        index = _group_index(group)
        config = _group_config(ctx.config.crawl, index)
        folder = "" if index is None else f"{group}/"
        shard_prefix = "crawl" if index is None else f"crawl-{group}"

        def upload(path: Path, name: str) -> str:
            return ctx.store.put_file(ctx.key("crawl", name), path, "application/warc")

        def download(name: str, path: Path) -> None:
            ctx.store.download_file(ctx.key("crawl", name), path)

        info = {
            "software": "bitextflow/0.1 (httpx, warcio)",
            "format": "WARC File Format 1.1",
            "http-header-user-agent": config.user_agent,
            "robots": "obey",
            "isPartOf": f"{ctx.config.pair}/{ctx.run_id}",
        }
        warc = RotatingWarcWriter(upload, config.warc_max_bytes, shard_prefix, download=download, info=info)
        checkpoints = ObjectStoreCheckpoints(ctx.store, lambda name: ctx.key("crawl", folder + name))
        pair = PairContext(ctx.config.source, ctx.config.target, ctx.config.domain.terms, ctx.config.domain.stem_terms)
        started = time.monotonic()

        def progress(entry: CrawlLogEntry) -> None:
            if crawler.fetched and crawler.fetched % 50 == 0 and entry.outcome == "fetched":
                log.info(
                    "crawl: %d pages fetched, %d waiting, %.0f s",
                    crawler.fetched,
                    len(crawler.frontier),
                    time.monotonic() - started,
                )

        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request would bury the task log
        if config.strategy == "smart" and config.url_models:  # fetched with the run's store: the crawler reads a folder
            resolved = resolve_url_models(config.url_models, ctx.store, ctx.config.pair)
            if resolved is None:
                log.warning("crawl: no URL model version at %s yet; train one with `%s`", config.url_models, TRAIN_COMMAND)
            config = config.model_copy(update={"url_models": str(resolved[0]) if resolved else None})
        optouts = OptOuts(ctx.config.policy, config.user_agent)
        crawler = Crawler(config, warc, pair, checkpoints=checkpoints, on_entry=progress, host_group=index, optouts=optouts)
        if crawler.strategy_used != config.strategy:
            log.warning("crawl: strategy %s is not available; ranking with %s", config.strategy, crawler.strategy_used)
        crawler.crawl()
        keys = crawler.keys
        # Shards of a killed attempt that the resumed crawl did not write again are not part of the crawl.
        own_shard = re.compile(re.escape(shard_prefix) + r"-\d{5}\.warc\.gz$")
        for key in ctx.store.list_keys(ctx.key("crawl", shard_prefix)):
            if own_shard.search(key) and key not in keys:
                ctx.store.delete_prefix(key)
        log_name = CRAWL_LOG if index is None else CRAWL_LOG.replace(".jsonl", f".{group}.jsonl")
        ctx.store.put_bytes(ctx.key("crawl", log_name), checkpoints.merged_log(crawler.log_parts), "application/gzip")
        declared = "".join(
            json.dumps({"url": url, "alternates": alternates}) + "\n" for url, alternates in crawler.declared.items()
        )
        declared_name = DECLARED_VERSIONS if index is None else DECLARED_VERSIONS.replace(".jsonl", f".{group}.jsonl")
        ctx.store.put_bytes(ctx.key("crawl", declared_name), gzip.compress(declared.encode(), mtime=0), "application/gzip")
        ctx.write_counts("crawl", "crawl" if index is None else group, crawler.counts)
        if not keys:
            seeds = ", ".join(str(s) for s in config.seeds)
            raise StageError(
                f"crawl fetched no page from the seeds ({seeds}); check they are reachable, allowed by robots.txt "
                "and, for private addresses such as 127.0.0.1, listed in crawl.allow_private_addresses"
            )
        return keys

    def _ingest(self) -> list[str]:
        """``crawl.warcs``: existing WARC files are the extract shards; nothing is fetched."""
        ctx = self.ctx
        keys = resolve_warcs(ctx.store, ctx.config.crawl.warcs, ctx.config.crawl.warc_buckets)
        by_shard: dict[str, str] = {}
        for key in keys:
            if (other := by_shard.setdefault(shard_name(key), key)) != key:
                raise StageError(
                    f"crawl.warcs: {other} and {key} would both be extract shard {shard_name(key)!r}; rename one of the files"
                )
        counts = StageCounts("crawl_ingest")  # WARC files, not pages: the pages are counted by extract
        counts.seen(len(keys))
        counts.keep(len(keys))
        ctx.write_counts("crawl", "crawl", counts)
        if ctx.config.policy.robots_warcs:  # the robots.txt the ingested crawl captured, for every extract task
            gather_captures(ctx.store, ctx.config, lambda name: ctx.key("crawl", name))
        return keys


def _group_config(config: CrawlConfig, index: int | None) -> CrawlConfig:
    """The crawl settings of one host group: its seeds, and its share of ``max_pages`` by its seeds."""
    if index is None:
        return config
    every = canonical_seeds(config)
    seeds = [url for url in every if host_group(host_of(url), config.host_groups) == index]
    share = max(1, config.max_pages * len(seeds) // max(1, len(every)))
    return config.model_copy(update={"seeds": seeds, "max_pages": share})
