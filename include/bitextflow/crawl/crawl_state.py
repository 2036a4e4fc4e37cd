"""A crawl's state, the scope rules that admit URLs into it, and its checkpoints.

:class:`CrawlState` holds what a crawl knows (frontier, seen-set, scope, host states, counts, log
lines, the link scorer) and admits a new URL to the frontier after exact URL dedup and the scope
rules (seed hosts and ``allowed_hosts``, depth, extensions, per-host path patterns, per-host page
limit, dropped hosts). :class:`bitextflow.crawl.crawler.Crawler` runs the event loop on top of it.

A checkpoint (when a :class:`CheckpointStore` is given) writes the open WARC shard (as far as it goes),
the log lines and the URLs first seen since the last checkpoint (each a numbered part, so a checkpoint
costs what happened since the last one, not the whole seen-set again) and, last, the state (frontier,
host states, counts, scorer state, the number of parts). The state object is the commit point: a crawl
killed at any moment resumes from the last one, re-fetching exactly the pages whose records were not yet
committed, so no page is lost and none is in the WARC twice.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from protego import Protego

from bitextflow.config import CrawlConfig, PolicyConfig, path_pattern
from bitextflow.counts import StageCounts
from bitextflow.crawl.frontier import Entry, Frontier
from bitextflow.crawl.scoring import LinkScorer, PairContext
from bitextflow.crawl.smart_scorer import SmartSettings
from bitextflow.crawl.strategies import make_scorer
from bitextflow.crawl.urls import has_skipped_extension, host_group, host_of, normalise_url, predicted_language
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.models.url_models import load_url_models
from bitextflow.policy import OptOuts

log = logging.getLogger(__name__)

CHECKPOINT_VERSION = 2


def canonical_seeds(config: CrawlConfig) -> list[str]:
    """The seeds as canonical URLs, in order; a seed that is not a crawlable URL is left out (counted by the crawl)."""
    return [url for url in (normalise_url(str(seed)) for seed in config.seeds) if url]


@dataclass
class CrawlLogEntry:
    """One line of the crawl log: a URL the crawler fetched or refused, and what it learnt."""

    url: str
    status: int
    mime: str
    bytes: int
    depth: int
    priority: float
    parent: str | None
    predicted_language: str
    detected_language: str
    fetch_seconds: float
    outcome: str  # "fetched" (response in the WARC) or the reason it is not
    error: str = ""
    attempts: int = 0
    truncated: bool = False
    time: float = 0.0


def log_records(entries: list[CrawlLogEntry]) -> list[dict]:
    return [asdict(entry) for entry in entries]


class CheckpointStore(Protocol):
    """Where a crawl keeps its checkpoints (the pipeline's is S3, under the run's ``crawl/`` prefix)."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any]) -> None: ...

    def save_log(self, part: int, entries: list[dict[str, Any]]) -> None: ...

    def save_seen(self, part: int, urls: list[str]) -> None: ...

    def load_seen(self, part: int) -> list[str]: ...


@dataclass
class HostState:
    pages: int = 0  # responses written
    html_pages: int = 0
    languages: Counter[str] = field(default_factory=Counter)
    dropped: str = ""  # reason, once the host is dropped
    target_seen: bool = False
    sitemaps: int = 0  # sitemaps admitted to the frontier
    # not checkpointed: learnt again after a resume
    robots: Protego | None = None
    robots_state: str = "unknown"  # unknown | fetching | ready
    delay: float = 0.0
    next_allowed: float = 0.0
    in_flight: int = 0

    def to_state(self) -> dict[str, Any]:
        return {"pages": self.pages, "html_pages": self.html_pages, "languages": dict(self.languages),
                "dropped": self.dropped, "target_seen": self.target_seen, "sitemaps": self.sitemaps}  # fmt: skip

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> HostState:
        return cls(state["pages"], state["html_pages"], Counter(state["languages"]), state["dropped"], state["target_seen"],
                   state.get("sitemaps", 0))  # fmt: skip


class CrawlState:
    """What a crawl knows, the scope rules that admit URLs to it, and its checkpoints; see the module
    docstring. :class:`bitextflow.crawl.crawler.Crawler` runs the crawl on it."""

    def __init__(
        self,
        config: CrawlConfig,
        warc: RotatingWarcWriter,
        pair: PairContext | None = None,
        checkpoints: CheckpointStore | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_entry: Callable[[CrawlLogEntry], None] | None = None,
        host_group: int | None = None,
        optouts: OptOuts | None = None,
    ):
        self.config = config
        # the opt-outs every page must pass besides robots.txt for our own agent (default: the policy's defaults)
        self.optouts = optouts or OptOuts(PolicyConfig(), config.user_agent)
        self.warc = warc
        self.pair = pair or PairContext()
        self.checkpoints = checkpoints
        self._transport = transport
        self._on_entry = on_entry
        self.host_group = host_group  # of config.host_groups; None: every host is this crawl's
        self.scorer: LinkScorer = make_scorer(
            config.strategy,
            self.pair,
            other_language_bonus=config.terms_other_language_bonus,
            url_models=load_url_models(config.url_models) if config.strategy == "smart" and config.url_models else None,
            smart=SmartSettings.from_config(config),
        )
        self.counts = StageCounts("crawl")
        self.log: list[CrawlLogEntry] = []
        self.frontier = Frontier()
        self.seen: set[str] = set()
        self._seen_since_checkpoint: list[str] = []
        self._seen_parts = 0
        self.hosts: dict[str, HostState] = {}
        # the language versions pages and sitemaps declare: url -> {language: url} (:meth:`declare`)
        self.declared: dict[str, dict[str, str]] = {}
        self.seed_urls = set(canonical_seeds(config))
        self.scope: set[str] = {host_of(url) for url in self.seed_urls}
        self.fetched = 0
        self.resumed = False
        self.complete = False
        self.stop_reason = ""
        self.keys: list[str] = []
        self._elapsed_before = 0.0
        self._log_flushed = 0
        self._log_parts = 0
        self._include = {host: [path_pattern(p) for p in ps] for host, ps in config.include_paths.items()}
        self._exclude = {host: [path_pattern(p) for p in ps] for host, ps in config.exclude_paths.items()}
        self._skip = {ext.lower().lstrip(".") for ext in config.skip_extensions}
        self._any_host = "*" in config.allowed_hosts
        self.scope |= {host.lower().rstrip(".") for host in config.allowed_hosts if host != "*"}

    @property
    def strategy_used(self) -> str:
        return self.scorer.name

    @property
    def log_parts(self) -> int:
        """Crawl-log parts written to the checkpoint store so far."""
        return self._log_parts

    # -- bookkeeping ----------------------------------------------------------------------------
    def _host(self, host: str) -> HostState:
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = HostState(delay=self.config.delay_seconds)
        return state

    def _path_allowed(self, url: str, host: str) -> bool:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        include = self._include.get(host, []) + self._include.get("*", [])
        if include and not any(p.search(target) for p in include):
            return False
        exclude = self._exclude.get(host, []) + self._exclude.get("*", [])
        return not any(p.search(target) for p in exclude)

    def declare(self, url: str, alternates: dict[str, str]) -> None:
        """Record the language versions (language -> URL) declared for ``url``; each is declared for the others too
        where the declaration says which language ``url`` itself is in (it lists itself, as sitemaps and hreflang
        links should)."""
        if not alternates:
            return
        own = next((language for language, alternate in alternates.items() if alternate == url), "")
        self.declared.setdefault(url, {}).update({lang: alt for lang, alt in alternates.items() if alt != url})
        if own:
            for alternate in alternates.values():
                if alternate != url:
                    self.declared.setdefault(alternate, {}).setdefault(own, url)

    def _admit(self, url: str, depth: int, parent: str | None, priority: float, *, seed: bool = False,
               redirects: list[str] | None = None, sitemap: bool = False, script: bool = False) -> bool:  # fmt: skip
        """Put a new URL in the frontier, or count why not; URLs already seen are ignored. A sitemap or script file is
        subject to the crawl's hosts (and a sitemap to ``max_sitemaps_per_host``), not to the depth, extension and
        path rules of links."""
        resource = sitemap or script
        if url in self.seen:
            return False
        self.seen.add(url)
        self._seen_since_checkpoint.append(url)
        self.counts.seen()
        host = host_of(url)
        state = self.hosts.get(host)
        reason = ""
        if not seed and not (self._any_host or host in self.scope):
            reason = "off_host"
        elif self.host_group is not None and host_group(host, self.config.host_groups) != self.host_group:
            reason = "other_host_group"  # in scope, but another group's task crawls it
        elif sitemap and state is not None and state.sitemaps >= self.config.max_sitemaps_per_host:
            reason = "sitemap_limit"
        elif depth > self.config.max_depth and not resource:
            reason = "too_deep"
        elif not (seed or resource) and has_skipped_extension(url, self._skip):
            reason = "skipped_extension"
        elif not (seed or resource) and not self._path_allowed(url, host):
            reason = "excluded_path"
        elif state is not None and state.dropped:
            reason = "host_dropped"
        elif self.config.max_pages_per_host and state is not None and state.pages >= self.config.max_pages_per_host:
            reason = "host_page_limit"
        if reason:
            self.counts.drop(reason)
            return False
        language, _trust = predicted_language(url)
        entry = Entry(url, host, depth, parent, priority, seed, language, list(redirects or []), sitemap=sitemap, script=script)
        self.frontier.push(entry)
        self._host(host).sitemaps += sitemap
        if not resource:
            self.scorer.queued(url, priority)
        return True

    # -- checkpoints ----------------------------------------------------------------------------
    def _flush_log(self) -> None:
        assert self.checkpoints is not None
        self.checkpoints.save_log(self._log_parts, log_records(self.log[self._log_flushed :]))
        self._log_flushed = len(self.log)
        self._log_parts += 1

    def _save_state(self) -> None:
        assert self.checkpoints is not None
        warc_state = {"index": 0, "bytes": 0, "uploaded": self.keys} if self.complete else self.warc.checkpoint()
        self._flush_log()
        self.checkpoints.save_seen(self._seen_parts, self._seen_since_checkpoint)
        self._seen_parts += 1
        self._seen_since_checkpoint = []
        elapsed = time.monotonic() - getattr(self, "_started", time.monotonic() - self._elapsed_before)
        self.checkpoints.save(
            {
                "version": CHECKPOINT_VERSION,
                "complete": self.complete,
                "strategy": self.config.strategy,
                "strategy_used": self.strategy_used,
                "stop_reason": self.stop_reason,
                "fetched": self.fetched,
                "elapsed_seconds": elapsed,
                "frontier": self.frontier.to_state(),
                "seen_parts": self._seen_parts,
                "scope": sorted(self.scope),
                "hosts": {host: state.to_state() for host, state in self.hosts.items()},
                "counts": self.counts.to_dict(),
                "warc": warc_state,
                "log_parts": self._log_parts,
                "scorer": self.scorer.state(),
                "declared": self.declared,
            }
        )

    def checkpoint(self) -> None:
        """Commit everything fetched so far (call with no request in flight)."""
        self._save_state()
        log.info("crawl: checkpoint after %d pages (%d waiting, %d seen)", self.fetched, len(self.frontier), len(self.seen))

    def _restore(self, state: dict[str, Any]) -> None:
        if state.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"crawl checkpoint version {state.get('version')} is not {CHECKPOINT_VERSION}")
        self.resumed = True
        self.complete = state["complete"]
        self.stop_reason = state["stop_reason"]
        self.fetched = state["fetched"]
        self._elapsed_before = state["elapsed_seconds"]
        self.frontier = Frontier.from_state(state["frontier"])
        self._seen_parts = state["seen_parts"]
        assert self.checkpoints is not None
        self.seen = {url for part in range(self._seen_parts) for url in self.checkpoints.load_seen(part)}
        self._seen_since_checkpoint = []
        self.scope = set(state["scope"])
        self.hosts = {host: HostState.from_state(data) for host, data in state["hosts"].items()}
        for host_state in self.hosts.values():
            host_state.delay = self.config.delay_seconds
        self.counts = StageCounts.from_dict(state["counts"])
        self._log_parts = state["log_parts"]
        self.declared = state.get("declared", {})
        pages = {entry.url: entry.priority for entry in self.frontier.entries() if not entry.resource}
        self.scorer.restore(state["scorer"], pages)
        if self.complete:
            self.keys = list(state["warc"]["uploaded"])
        else:
            self.warc.resume(state["warc"])
        log.info(
            "crawl: resumed from checkpoint: %d pages fetched, %d waiting, %d seen",
            self.fetched,
            len(self.frontier),
            len(self.seen),
        )
