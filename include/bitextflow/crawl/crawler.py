"""The focused bilingual crawler: asynchronous, polite, resumable, ranking its frontier per pair.

One event loop dispatches fetches (:mod:`bitextflow.crawl.fetcher`) under a global and a per-host
concurrency limit and a per-host delay (the larger of ``crawl.delay_seconds`` and the robots.txt
Crawl-delay), always taking the best-ranked URL of a host that may be contacted now. Each response is
written to WARC (request + response records), its language identified with CLD2, its links scored by
the pair's strategy (:mod:`bitextflow.crawl.scoring`) and admitted to the frontier after exact URL
dedup and the scope rules (seed hosts and ``allowed_hosts``, depth, extensions, per-host path
patterns, per-host page limit, hosts dropped by language scouting).

Every URL that enters the crawl (``counts.in``) ends fetched (``kept``: a response in the WARC, any
status) or dropped for a named reason; every URL the crawler acts on gets a crawl-log line.

Checkpoints (when a :class:`CheckpointStore` is given): every ``checkpoint_every_pages`` pages or
``checkpoint_every_seconds``, dispatching pauses until in-flight requests finish; then the open WARC
shard (as far as it goes), the log lines since the last checkpoint and, last, the state (frontier,
seen-set, host states, counts, scorer state) are written. The state object is the commit point: a
crawl killed at any moment resumes from the last one, re-fetching exactly the pages whose records
were not yet committed, so no page is lost and none is in the WARC twice.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from protego import Protego

from bitextflow.config import CrawlConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.fetcher import Fetcher, FetchResult
from bitextflow.crawl.frontier import Entry, Frontier
from bitextflow.crawl.guard import AddressGuard
from bitextflow.crawl.lid import detect_language
from bitextflow.crawl.scoring import LinkScorer, PageView, PairContext, SmartSettings, make_scorer
from bitextflow.crawl.urls import (
    decode_html,
    has_skipped_extension,
    host_of,
    normalise_url,
    origin_of,
    parse_html,
    predicted_language,
)
from bitextflow.crawl.warc import RotatingWarcWriter

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
CHECKPOINT_VERSION = 1


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


@dataclass
class HostState:
    pages: int = 0  # responses written
    html_pages: int = 0
    languages: Counter[str] = field(default_factory=Counter)
    dropped: str = ""  # reason, once the host is dropped
    target_seen: bool = False
    # not checkpointed: learnt again after a resume
    robots: Protego | None = None
    robots_state: str = "unknown"  # unknown | fetching | ready
    delay: float = 0.0
    next_allowed: float = 0.0
    in_flight: int = 0

    def to_state(self) -> dict[str, Any]:
        return {"pages": self.pages, "html_pages": self.html_pages, "languages": dict(self.languages),
                "dropped": self.dropped, "target_seen": self.target_seen}  # fmt: skip

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> HostState:
        return cls(state["pages"], state["html_pages"], Counter(state["languages"]), state["dropped"], state["target_seen"])


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run``, also from a thread that already runs an event loop (then in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class Crawler:
    """Crawls from ``config.seeds``; see the module docstring. ``crawl()`` runs it to the end."""

    def __init__(
        self,
        config: CrawlConfig,
        warc: RotatingWarcWriter,
        pair: PairContext | None = None,
        checkpoints: CheckpointStore | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        on_entry: Callable[[CrawlLogEntry], None] | None = None,
    ):
        self.config = config
        self.warc = warc
        self.pair = pair or PairContext()
        self.checkpoints = checkpoints
        self._transport = transport
        self._on_entry = on_entry
        self.scorer: LinkScorer = make_scorer(
            config.strategy,
            self.pair,
            other_language_bonus=config.terms_other_language_bonus,
            url_models=config.url_models,
            smart=SmartSettings.from_config(config),
        )
        self.counts = StageCounts("crawl")
        self.log: list[CrawlLogEntry] = []
        self.frontier = Frontier()
        self.seen: set[str] = set()
        self.hosts: dict[str, HostState] = {}
        self.scope: set[str] = {host_of(url) for url in (normalise_url(str(s)) for s in config.seeds) if url}
        self.fetched = 0
        self.resumed = False
        self.complete = False
        self.stop_reason = ""
        self.keys: list[str] = []
        self._elapsed_before = 0.0
        self._log_flushed = 0
        self._log_parts = 0
        self._include = {host: [re.compile(p) for p in ps] for host, ps in config.include_paths.items()}
        self._exclude = {host: [re.compile(p) for p in ps] for host, ps in config.exclude_paths.items()}
        self._skip = {ext.lower().lstrip(".") for ext in config.skip_extensions}
        self._any_host = "*" in config.allowed_hosts
        self.scope |= {host.lower() for host in config.allowed_hosts if host != "*"}

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

    def _record(self, entry: Entry, outcome: str, result: FetchResult | None = None, detected: str = "", error: str = "") -> None:
        line = CrawlLogEntry(
            url=entry.url,
            status=result.status if result else 0,
            mime=result.mime if result else "",
            bytes=len(result.body) if result else 0,
            depth=entry.depth,
            priority=round(entry.priority, 6),
            parent=entry.parent,
            predicted_language=entry.predicted_language,
            detected_language=detected,
            fetch_seconds=round(result.seconds, 4) if result else 0.0,
            outcome=outcome,
            error=error or (result.detail if result else ""),
            attempts=result.attempts if result else 0,
            truncated=bool(result and result.truncated),
            time=round(time.time(), 3),
        )
        self.log.append(line)
        log.debug("crawl: %s %s %s", outcome, line.status, entry.url)
        if self._on_entry is not None:
            self._on_entry(line)

    def _path_allowed(self, url: str, host: str) -> bool:
        parts = urlsplit(url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        include = self._include.get(host, []) + self._include.get("*", [])
        if include and not any(p.search(target) for p in include):
            return False
        exclude = self._exclude.get(host, []) + self._exclude.get("*", [])
        return not any(p.search(target) for p in exclude)

    def _admit(self, url: str, depth: int, parent: str | None, priority: float, *, seed: bool = False,
               redirects: list[str] | None = None) -> bool:  # fmt: skip
        """Put a new URL in the frontier, or count why not; URLs already seen are ignored."""
        if url in self.seen:
            return False
        self.seen.add(url)
        self.counts.seen()
        host = host_of(url)
        state = self.hosts.get(host)
        reason = ""
        if not seed and not (self._any_host or host in self.scope):
            reason = "off_host"
        elif depth > self.config.max_depth:
            reason = "too_deep"
        elif not seed and has_skipped_extension(url, self._skip):
            reason = "skipped_extension"
        elif not seed and not self._path_allowed(url, host):
            reason = "excluded_path"
        elif state is not None and state.dropped:
            reason = "host_dropped"
        elif self.config.max_pages_per_host and state is not None and state.pages >= self.config.max_pages_per_host:
            reason = "host_page_limit"
        if reason:
            self.counts.drop(reason)
            return False
        language, _trust = predicted_language(url)
        self.frontier.push(Entry(url, host, depth, parent, priority, seed, language, list(redirects or [])))
        self.scorer.queued(url, priority)
        self._host(host)
        return True

    def _drop_host(self, host: str, reason: str) -> None:
        state = self._host(host)
        if state.dropped:
            return
        state.dropped = reason
        dropped = self.frontier.drop_host(host)
        log.info("crawl: dropping host %s (%s); %d waiting URLs dropped", host, reason, len(dropped))
        for entry in dropped:
            self.scorer.dequeued(entry.url)
            self.counts.drop(reason)
            self._record(entry, reason)

    # -- dispatching ----------------------------------------------------------------------------
    def _ready_hosts(self, now: float) -> tuple[list[str], float | None]:
        """Hosts that may be contacted now, and the earliest time another one may (None: none waits on time)."""
        ready, wake = [], None
        for host in self.frontier.hosts():
            state = self._host(host)
            if state.in_flight >= (1 if state.robots_state != "ready" else self.config.per_host_concurrency):
                continue
            if state.robots_state == "fetching":
                continue
            if self.config.max_pages_per_host and state.pages + state.in_flight >= self.config.max_pages_per_host:
                continue
            if state.next_allowed > now:
                wake = state.next_allowed if wake is None else min(wake, state.next_allowed)
                continue
            ready.append(host)
        return ready, wake

    def _pick(self, now: float) -> tuple[str, str | Entry] | None:
        """The next thing to do: ("robots", host) or ("fetch", entry); None when nothing may start now."""
        while True:
            ready, _wake = self._ready_hosts(now)
            if not ready:
                return None
            host = min(ready, key=lambda h: self.frontier.peek_key(h) or (2, 0.0, 0))
            state = self._host(host)
            if state.robots_state == "unknown":
                return "robots", host
            entry = self.frontier.pop(host)
            if entry is None:
                continue
            self.scorer.dequeued(entry.url)
            assert state.robots is not None
            if not state.robots.can_fetch(entry.url, self.config.user_agent):
                self.counts.drop("robots_disallowed")
                self._record(entry, "robots_disallowed")
                continue
            return "fetch", entry

    async def _fetch_task(self, entry: Entry, delay: float) -> FetchResult:
        parts = urlsplit(entry.url)
        refused = await self._guard.check_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        if refused is not None:
            return FetchResult(entry.url, error="private_address", detail=str(refused))
        return await self._fetcher.fetch(entry.url, delay)

    async def _robots_task(self, host: str, origin: str) -> tuple[str | None, str]:
        parts = urlsplit(origin)
        refused = await self._guard.check_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        if refused is not None:
            return None, "private_address"
        return await self._fetcher.fetch_robots(origin)

    def _robots_done(self, host: str, text: str | None, outcome: str) -> None:
        state = self._host(host)
        state.in_flight -= 1
        state.robots_state = "ready"
        if text is None:
            state.robots = Protego.parse("User-agent: *\nDisallow: /\n")
            reason = "private_address" if outcome == "private_address" else "robots_unavailable"
            log.info("crawl: robots.txt of %s: %s", host, outcome)
            self._drop_host(host, reason)
            return
        state.robots = Protego.parse(text)
        robots_delay = state.robots.crawl_delay(self.config.user_agent) or 0.0
        rate = state.robots.request_rate(self.config.user_agent)
        if rate is not None and rate.requests:
            robots_delay = max(robots_delay, rate.seconds / rate.requests)
        state.delay = max(self.config.delay_seconds, min(float(robots_delay), self.config.max_robots_delay_seconds))

    # -- results --------------------------------------------------------------------------------
    def _fetch_done(self, entry: Entry, result: FetchResult) -> None:
        state = self._host(entry.host)
        state.in_flight -= 1
        if result.error or result.status == 0:
            reason = result.error or "fetch_error"
            self.counts.drop(reason)
            self._record(entry, reason, result)
            if reason == "private_address":
                self._drop_host(entry.host, "private_address")
            return
        self.warc.write_exchange(
            entry.url,
            result.request_headers,
            result.status,
            result.reason,
            result.response_headers,
            result.body,
            result.truncated,
        )
        self.fetched += 1
        self._since_checkpoint += 1
        state.pages += 1
        self.counts.keep()
        detected = ""
        if 300 <= result.status < 400 and result.location:
            self._redirect(entry, result.location)
        elif 200 <= result.status < 300 and result.mime in HTML_TYPES:
            detected = self._html(entry, result, state)
        elif 200 <= result.status < 300 and result.mime.startswith("text/"):
            detected, _reliable = detect_language(decode_html(result.body, result.content_type))
        self._record(entry, "fetched", result, detected, "truncated" if result.truncated else "")
        if self.config.max_pages_per_host and state.pages >= self.config.max_pages_per_host:
            self._drop_host(entry.host, "host_page_limit")

    def _redirect(self, entry: Entry, location: str) -> None:
        target = normalise_url(location, entry.url)
        chain = [*entry.redirects, entry.url]
        reason = ""
        if target is None:
            reason = "invalid_redirect"
        elif target in chain:
            reason = "redirect_loop"
        elif len(chain) > self.config.max_redirects:
            reason = "too_many_redirects"
        if reason:
            self.counts.seen()
            self.counts.drop(reason)
            log.info("crawl: %s -> %s: %s", entry.url, location, reason)
            return
        assert target is not None
        if entry.seed:
            self.scope.add(host_of(target))
        self._admit(target, entry.depth, entry.url, entry.priority, seed=entry.seed, redirects=chain)

    def _html(self, entry: Entry, result: FetchResult, state: HostState) -> str:
        page = parse_html(result.body, entry.url, result.content_type)
        if page is None:
            return ""
        detected, _reliable = detect_language(f"{page.title}\n{page.text}")
        state.html_pages += 1
        if detected:
            state.languages[detected] += 1
        target = self.pair.target
        if target and detected == target:
            state.target_seen = True
        view = PageView(entry.url, entry.depth, detected, page)
        for url, priority in self.scorer.fetched(view).items():
            self.frontier.reprioritise(url, priority)
        new = [link for link in page.links if link.url not in self.seen]
        if entry.depth >= self.config.max_depth:  # counted as too_deep, not scored
            for link in new:
                self._admit(link.url, entry.depth + 1, entry.url, 0.0)
        else:
            for link, priority in zip(new, self.scorer.score(view, new), strict=True):
                self._admit(link.url, entry.depth + 1, entry.url, priority)
        if target and self.config.scout_pages and not state.target_seen and state.html_pages >= self.config.scout_pages:
            self._drop_host(entry.host, "host_no_target_language")
        return detected

    # -- the loop -------------------------------------------------------------------------------
    def _add_seeds(self) -> None:
        for seed in self.config.seeds:
            url = normalise_url(str(seed))
            if url is None:
                self.counts.seen()
                self.counts.drop("invalid_seed")
                continue
            self._admit(url, 0, None, self.scorer.seed_priority(url), seed=True)

    def crawl(self) -> list[CrawlLogEntry]:
        """Run the crawl to its end (or resume it from its checkpoint); returns this run's log lines."""
        run_sync(self.run())
        return self.log

    async def run(self) -> None:
        state = self.checkpoints.load() if self.checkpoints is not None else None
        if state is not None:
            self._restore(state)
            if self.complete:
                log.info("crawl: already complete (%d pages); nothing to do", self.fetched)
                return
        else:
            self._add_seeds()
        self._guard = AddressGuard(self.config.allow_private_addresses)
        self._fetcher = Fetcher(self.config, self._guard, self._transport)
        try:
            await self._loop()
        finally:
            await self._fetcher.close()
        self._finish()

    async def _loop(self) -> None:
        config = self.config
        started = time.monotonic() - self._elapsed_before
        self._started = started
        in_flight: dict[asyncio.Task[Any], tuple[str, Any]] = {}
        self._since_checkpoint = 0
        last_checkpoint = time.monotonic()
        while True:
            now = time.monotonic()
            if config.time_limit_seconds and now - started >= config.time_limit_seconds and not self.stop_reason:
                self.stop_reason = "time_limit"
            checkpoint_due = (
                self.checkpoints is not None
                and self._since_checkpoint > 0
                and (
                    self._since_checkpoint >= config.checkpoint_every_pages
                    or now - last_checkpoint >= config.checkpoint_every_seconds
                )
            )
            pages_in_flight = sum(1 for kind, _ in in_flight.values() if kind == "fetch")
            if not self.stop_reason and not checkpoint_due:
                while len(in_flight) < config.concurrency and self.fetched + pages_in_flight < config.max_pages:
                    choice = self._pick(now)
                    if choice is None:
                        break
                    kind, item = choice
                    if kind == "robots":
                        host = str(item)
                        state = self._host(host)
                        state.robots_state = "fetching"
                        state.in_flight += 1
                        state.next_allowed = now + config.delay_seconds
                        head = self.frontier.peek(host)
                        assert head is not None
                        origin = origin_of(head.url)
                        in_flight[asyncio.create_task(self._robots_task(host, origin))] = ("robots", host)
                    else:
                        assert isinstance(item, Entry)
                        state = self._host(item.host)
                        state.in_flight += 1
                        state.next_allowed = now + state.delay
                        in_flight[asyncio.create_task(self._fetch_task(item, state.delay))] = ("fetch", item)
                        pages_in_flight += 1
            if not in_flight:
                if checkpoint_due:
                    self.checkpoint()
                    self._since_checkpoint = 0
                    last_checkpoint = time.monotonic()
                    continue
                if self.stop_reason or self.fetched >= config.max_pages or not len(self.frontier):
                    break
                _ready, wake = self._ready_hosts(now)
                if wake is None:  # nothing can ever become ready (should not happen); avoid spinning
                    break
                await asyncio.sleep(max(wake - now, 0.0005))
                continue
            _ready, wake = self._ready_hosts(time.monotonic())
            timeout = None
            if wake is not None and len(in_flight) < config.concurrency and not checkpoint_due:
                timeout = max(wake - time.monotonic(), 0.0005)
            done, _pending = await asyncio.wait(in_flight, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                kind, item = in_flight.pop(task)
                if kind == "robots":
                    text, outcome = task.result()
                    self._robots_done(item, text, outcome)
                else:
                    self._fetch_done(item, task.result())
        if not self.stop_reason:
            self.stop_reason = "page_limit" if self.fetched >= config.max_pages else "frontier_empty"

    def _finish(self) -> None:
        reason = {"time_limit": "not_fetched_time_limit"}.get(self.stop_reason, "not_fetched_page_limit")
        for entry in self.frontier.drain():
            self.scorer.dequeued(entry.url)
            self.counts.drop(reason)
        self.keys = self.warc.close()
        self.complete = True
        if self.checkpoints is not None:
            self._save_state()
        log.info("crawl: finished (%s): %s", self.stop_reason, self.counts.summary())

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
                "seen": sorted(self.seen),
                "scope": sorted(self.scope),
                "hosts": {host: state.to_state() for host, state in self.hosts.items()},
                "counts": self.counts.to_dict(),
                "warc": warc_state,
                "log_parts": self._log_parts,
                "scorer": self.scorer.state(),
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
        self.seen = set(state["seen"])
        self.scope = set(state["scope"])
        self.hosts = {host: HostState.from_state(data) for host, data in state["hosts"].items()}
        for host_state in self.hosts.values():
            host_state.delay = self.config.delay_seconds
        self.counts = StageCounts.from_dict(state["counts"])
        self._log_parts = state["log_parts"]
        self.scorer.restore(state["scorer"], {entry.url: entry.priority for entry in self.frontier.entries()})
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
