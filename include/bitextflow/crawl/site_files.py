"""Site-wide files of origins the crawl did not visit (ingested WARC files): robots.txt and, when the policy honours
TDMRep, ``/.well-known/tdmrep.json``, fetched once per origin through the crawler's fetcher (its user agent,
timeouts, body cap and private-address guard) with ``crawl.concurrency`` origins at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from bitextflow.config import CrawlConfig
from bitextflow.crawl.crawler import run_sync
from bitextflow.crawl.fetcher import NO_ANSWER, Fetcher
from bitextflow.crawl.guard import AddressGuard
from bitextflow.policy import SiteFiles
from bitextflow.policy.robots import ROBOTS_PATH
from bitextflow.policy.tdmrep import TDMREP_FETCH_BYTES, TDMREP_PATH


async def _fetch_all(origins: list[str], config: CrawlConfig, tdmrep: bool) -> list[SiteFiles]:
    guard = AddressGuard(config.allow_private_addresses, config.connect_timeout_seconds)
    fetcher = Fetcher(config, guard)
    slots = asyncio.Semaphore(config.concurrency)

    async def one(origin: str) -> SiteFiles:
        async with slots:  # every connection goes through the guard: a refused address is no answer
            robots = await fetcher.fetch_site_file(origin, ROBOTS_PATH)
            if robots == NO_ANSWER:  # unreachable: a full disallow, whatever its tdmrep.json would say
                return SiteFiles(origin, None, None, "fetch")
            files = await fetcher.fetch_site_file(origin, TDMREP_PATH, TDMREP_FETCH_BYTES) if tdmrep else None
            return SiteFiles(origin, robots, files, "fetch")

    try:
        return list(await asyncio.gather(*(one(origin) for origin in origins)))
    finally:
        await fetcher.close()


def fetch_site_files(origins: Iterable[str], config: CrawlConfig, tdmrep: bool) -> list[SiteFiles]:
    """The site files of ``origins`` (``tdmrep``: ask for tdmrep.json too), in the order given; an origin that did not
    answer has None for its robots.txt, which the policy reads as RFC 9309's full disallow."""
    return run_sync(_fetch_all(list(origins), config, tdmrep))
