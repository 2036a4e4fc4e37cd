"""The site-wide files (robots.txt, ``/.well-known/tdmrep.json``) of the sites whose pages a run did not crawl: WARC
files it ingests (``crawl.warcs``) or records it fetches from a Common Crawl index (``crawl.index``).

Each origin of an extract shard's pages gets its files from the first of:

1. a capture in the shard itself (robots.txt responses written beside the pages, as Heritrix does);
2. a capture in ``policy.robots_warcs`` (Common Crawl's ``robotstxt`` files of the same crawl), gathered once per run
   by the crawl stage's ingest task into ``crawl/site-files.jsonl.gz`` (one line per origin; every extract task reads
   it whole, so it suits the robots.txt of the crawls one ingests, not all of Common Crawl's: the Common Crawl index
   source looks captures up by its index instead, and its ``cc_fetch`` tasks learn them as 1 and 2);
3. a fetch made earlier in this run (``<stage>/site-files/<origin>.json``, one object per origin, in the folder of
   the stage that fetched it: ``crawl`` on ingest, ``cc_fetch`` from an index);
4. as ``policy.unknown_robots_on_ingest`` says: ``fetch`` it now through the crawler's fetcher and cache it as 3;
   ``allow``: take the site as having no robots.txt (RFC 9309's answer to a 404); ``disallow``: as unreachable.

Two tasks that meet a new origin at the same moment may both fetch it (and write the same object): "once per origin"
holds within a task and across tasks that run after one another.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter
from collections.abc import Callable
from typing import IO

from bitextflow.catalog.warcs import resolve_warcs, warc_object
from bitextflow.config import PairConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.site_files import fetch_site_files
from bitextflow.extract.documents import PAGE_TYPES
from bitextflow.extract.warc import WARC_READ_BUFFER, iter_responses
from bitextflow.policy import OptOuts, SiteFiles
from bitextflow.policy.captures import SiteFileCaptures
from bitextflow.policy.robots import ROBOTS_MAX_BYTES
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import safe_key_part
from bitextflow.text.urls import origin_of

log = logging.getLogger(__name__)

#: In the crawl stage's folder: the captures of policy.robots_warcs; in the crawl's (ingest) or cc_fetch's folder (a
#: run from an index): the fetched files, one object per origin.
CAPTURED_SITE_FILES = "site-files.jsonl.gz"
FETCHED_SITE_FILES = "site-files/"
#: What an offline deployment assumes for a site nobody captured: RFC 9309's reading of a 404, or of no answer.
_ASSUMED = {"allow": 404, "disallow": None}

StageKey = Callable[[str], str]  # a name in the folder of the run's stage that learns the files -> its key


def gather_captures(store: ObjectStore, config: PairConfig, crawl_key: StageKey) -> int:
    """``policy.robots_warcs``' captures into the run's table (the crawl stage's ingest task); returns the origins."""
    captures = SiteFileCaptures()
    for reference in resolve_warcs(store, config.policy.robots_warcs, config.crawl.warc_buckets, "policy.robots_warcs"):
        source, key = warc_object(store, reference, config.crawl.warc_buckets)
        with source.open_read(key, WARC_READ_BUFFER) as stream:
            for response in iter_responses(stream, StageCounts("robots_warcs"), ROBOTS_MAX_BYTES):
                captures.add(response.url, response.status, response.headers, response.body)
    lines = [json.dumps(files.to_json(), ensure_ascii=False) for files in captures.site_files().values()]
    store.put_bytes(crawl_key(CAPTURED_SITE_FILES), gzip.compress("\n".join(lines).encode("utf-8"), mtime=0), "application/gzip")
    log.info("policy.robots_warcs: robots.txt captured for %d origins", len(lines))
    return len(lines)


def shard_sites(stream: IO[bytes], max_page_bytes: int) -> tuple[set[str], SiteFileCaptures]:
    """The origins of a shard's pages (responses that may make a document) and its own captures of site files."""
    origins: set[str] = set()
    captures = SiteFileCaptures()
    for response in iter_responses(stream, StageCounts("site_files"), max_page_bytes):  # counted by the extraction
        if not captures.add(response.url, response.status, response.headers, response.body):
            if response.status == 200 and response.mime in PAGE_TYPES:
                origins.add(origin_of(response.url))
    return origins, captures


def _captured_in_run(store: ObjectStore, crawl_key: StageKey, origins: set[str]) -> dict[str, SiteFiles]:
    if not origins:
        return {}
    found = {}
    for line in gzip.decompress(store.get_bytes(crawl_key(CAPTURED_SITE_FILES))).splitlines():
        files = SiteFiles.from_json(json.loads(line))
        if files.origin in origins:
            found[files.origin] = files
    return found


def _fetched_in_run(store: ObjectStore, stage_key: StageKey, origins: set[str]) -> dict[str, SiteFiles]:
    if not origins:
        return {}
    cached = set(store.list_keys(stage_key(FETCHED_SITE_FILES)))
    keys = {origin: stage_key(f"{FETCHED_SITE_FILES}{safe_key_part(origin)}.json") for origin in origins}
    return {origin: SiteFiles.from_json(store.get_json(key)) for origin, key in keys.items() if key in cached}


def shard_optouts(store: ObjectStore, config: PairConfig, crawl_key: StageKey, shard: ObjectStore, shard_key: str) -> OptOuts:
    """The policy with the site files of every origin of an ingested shard learnt (see the module docstring)."""
    with shard.open_read(shard_key, WARC_READ_BUFFER) as stream:
        origins, captures = shard_sites(stream, config.extract.max_page_bytes)
    known = captures.site_files(origins)
    sources: Counter[str] = Counter({"in the shard": len(known)})
    if config.policy.robots_warcs:  # only where it exists: a run without robots_warcs has no table
        found = _captured_in_run(store, crawl_key, origins - set(known))
        known |= found
        sources["captured in the crawl"] = len(found)
    return learned_optouts(store, config, crawl_key, origins, known, sources, shard_key)


def learned_optouts(
    store: ObjectStore,
    config: PairConfig,
    stage_key: StageKey,
    origins: set[str],
    known: dict[str, SiteFiles],
    sources: Counter[str],
    what: str,
) -> OptOuts:
    """The policy with the site files of every origin of ``origins`` learnt: those ``known`` (captured; ``sources``
    says where from, for the log), else fetched earlier in the run, else as ``policy.unknown_robots_on_ingest`` says
    (steps 3 and 4 of the module docstring; fetched files are cached under ``stage_key``). ``what``: the shard or
    partition, for the log."""
    known = dict(known)
    stance = config.policy.unknown_robots_on_ingest
    if stance == "fetch":  # a run that never fetches has no cache to look in
        found = _fetched_in_run(store, stage_key, origins - set(known))
        known |= found
        sources["fetched earlier"] = len(found)
        missing = sorted(origins - set(known))
        for files in fetch_site_files(missing, config.crawl, config.policy.honour_tdmrep):
            store.put_json(stage_key(f"{FETCHED_SITE_FILES}{safe_key_part(files.origin)}.json"), files.to_json())
            known[files.origin] = files
        sources["fetched now"] = len(missing)
    else:
        missing = sorted(origins - set(known))
        known |= {origin: SiteFiles(origin, _ASSUMED[stance], None, f"assumed: {stance}") for origin in missing}
        sources[f"assumed ({stance})"] = len(missing)
    optouts = OptOuts(config.policy, config.crawl.user_agent)
    for files in known.values():
        optouts.learn(files)
    log.info("opt-outs of %s: robots.txt of %d origins: %s", what, len(origins), dict(sources))
    return optouts
