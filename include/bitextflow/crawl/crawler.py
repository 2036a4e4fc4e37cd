"""The focused bilingual crawler: asynchronous, polite, resumable, ranking its frontier per pair.

One event loop dispatches fetches (:mod:`bitextflow.crawl.fetcher`) under a global and a per-host
concurrency limit and a per-host delay (the larger of ``crawl.delay_seconds`` and the robots.txt
Crawl-delay), always taking the best-ranked URL of a host that may be contacted now. Each response is
written to WARC (request + response records), its language identified with CLD2, its links scored by
the pair's strategy (:mod:`bitextflow.crawl.scoring`) and admitted to the frontier after exact URL
dedup and the scope rules of :class:`bitextflow.crawl.crawl_state.CrawlState`; a host whose first pages
are not in the pair's target language is dropped (language scouting).

Every URL that enters the crawl (``counts.in``) ends fetched (``kept``: a response in the WARC, any
status) or dropped for a named reason; every URL the crawler acts on gets a crawl-log line.

Checkpoints (when a :class:`bitextflow.crawl.crawl_state.CheckpointStore` is given): every
``checkpoint_every_pages`` pages or ``checkpoint_every_seconds``, dispatching pauses until in-flight
requests finish, then :meth:`bitextflow.crawl.crawl_state.CrawlState.checkpoint` commits what was
fetched so far.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Coroutine
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from bitextflow.crawl.crawl_state import CrawlLogEntry, HostState
from bitextflow.crawl.discovery import Discovery
from bitextflow.crawl.fetcher import Fetcher, FetchResult
from bitextflow.crawl.frontier import Entry
from bitextflow.crawl.guard import AddressGuard
from bitextflow.crawl.lid import detect_language
from bitextflow.crawl.scoring import PageView
from bitextflow.crawl.urls import Link, decode_html, host_of, normalise_url, parse_html
from bitextflow.policy.robots import RobotsFile, robots_body
from bitextflow.policy.tdmrep import TDMREP_FETCH_BYTES, TDMREP_PATH, TdmRepFile
from bitextflow.text.urls import origin_of

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")


def run_sync(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run``, also from a thread that already runs an event loop (then in a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


class Crawler(Discovery):
    """Crawls from ``config.seeds``; see the module docstring. ``crawl()`` runs it to the end."""

    # -- bookkeeping ----------------------------------------------------------------------------
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
            host = min(ready, key=lambda h: self.frontier.peek_key(h) or (3, 0.0, 0))
            state = self._host(host)
            if state.robots_state == "unknown":
                return "robots", host
            entry = self.frontier.pop(host)
            if entry is None:
                continue
            self.scorer.dequeued(entry.url)
            assert state.robots is not None
            reason = "" if state.robots.can_fetch(entry.url, self.config.user_agent) else "robots_disallowed"
            if reason := reason or self.optouts.site_verdict(entry.url).reason:
                self.counts.drop(reason)
                self._record(entry, reason)
                continue
            return "fetch", entry

    async def _fetch_task(self, entry: Entry, delay: float) -> FetchResult:
        parts = urlsplit(entry.url)
        refused = await self._guard.check_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        if refused is not None:
            return FetchResult(entry.url, error="private_address", detail=str(refused))
        return await self._fetcher.fetch(entry.url, delay, check_type=not entry.resource)

    async def _robots_task(self, host: str, origin: str) -> tuple[str | None, str, bytes | int | None]:
        """robots.txt (text, outcome) and, when the policy honours TDMRep, ``/.well-known/tdmrep.json``'s answer."""
        parts = urlsplit(origin)
        refused = await self._guard.check_host(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
        if refused is not None:
            return None, "private_address", None
        text, outcome = await self._fetcher.fetch_robots(origin)
        tdmrep = None
        if text is not None and self.optouts.config.honour_tdmrep:
            await asyncio.sleep(self.config.delay_seconds)
            tdmrep = await self._fetcher.fetch_site_file(origin, TDMREP_PATH, TDMREP_FETCH_BYTES)
        return text, outcome, tdmrep

    def _robots_done(self, host: str, origin: str, text: str | None, outcome: str, tdmrep: bytes | int | None) -> None:
        state = self._host(host)
        state.in_flight -= 1
        state.robots_state = "ready"
        if text is None:
            state.robots = Protego.parse("User-agent: *\nDisallow: /\n")
            reason = "private_address" if outcome == "private_address" else "robots_unavailable"
            log.info("crawl: robots.txt of %s: %s", host, outcome)
            self._drop_host(host, reason)
            return
        state.robots = Protego.parse(robots_body(text))  # a byte order mark would hide the first group from Protego
        site_file = TdmRepFile.of_answer(tdmrep)
        if site_file.unreadable:  # a file the policy could not read within its bounds: counted, the site reserved
            self.counts.seen()
            self.counts.drop(site_file.unreadable)
            log.info("crawl: %s%s: %s; every page of the host reserved", origin, TDMREP_PATH, site_file.unreadable)
        # one robots.txt per host, the crawler's unit of politeness, whatever the scheme of the URL that led to it
        for scheme in ("http", "https"):
            self.optouts.learn_parsed(f"{scheme}://{host}", RobotsFile(state.robots), site_file)
        robots_delay = state.robots.crawl_delay(self.config.user_agent) or 0.0
        rate = state.robots.request_rate(self.config.user_agent)
        if rate is not None and rate.requests:
            robots_delay = max(robots_delay, rate.seconds / rate.requests)
        state.delay = max(self.config.delay_seconds, min(float(robots_delay), self.config.max_robots_delay_seconds))
        state.next_allowed = time.monotonic() + state.delay  # the site files were requests to the host too
        self._admit_sitemaps(origin, list(state.robots.sitemaps))

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
        if entry.resource and not 200 <= result.status < 400:  # none there (most sites have no /sitemap.xml): no record
            reason = "sitemap_unavailable" if entry.sitemap else "script_unavailable"
            self.counts.drop(reason)
            self._record(entry, reason, result)
            return
        # a page whose owner opted out (TDMRep header or meta, noai) is not stored and its links not followed
        signals = None if entry.resource else self.optouts.read(entry.url, result.response_headers, result.body)
        if signals is not None and (reason := self.optouts.page_verdict(entry.url, signals).reason):
            self.counts.drop(reason)
            self._record(entry, reason, result)
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
        detected = error = ""
        if 300 <= result.status < 400 and result.location:
            self._redirect(entry, result.location)
        elif entry.sitemap and 200 <= result.status < 300:
            error = self._sitemap(entry, result)
        elif entry.script and 200 <= result.status < 300:
            self._script(entry, result)
        elif 200 <= result.status < 300 and result.mime in HTML_TYPES:
            detected = self._html(entry, result, state)
        elif 200 <= result.status < 300 and result.mime.startswith("text/"):
            detected, _reliable = detect_language(decode_html(result.body, result.content_type), frozenset(self.pair.languages))
        self._record(entry, "fetched", result, detected, error or ("truncated" if result.truncated else ""))
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
        if chain[0] in self.seed_urls:  # the seed's site moved (http -> https, a www. host): crawl it there
            self.scope.add(host_of(target))
        # the target is not a seed: extension and path rules apply to it as to any link (a sitemap's stays a sitemap)
        self._admit(target, entry.depth, entry.url, entry.priority, redirects=chain, sitemap=entry.sitemap)

    def _html(self, entry: Entry, result: FetchResult, state: HostState) -> str:
        page = parse_html(result.body, entry.url, result.content_type)
        if page is None:
            return ""
        for reason, discarded in page.discarded.items():  # links that name no crawlable URL, counted where found
            self.counts.seen(discarded)
            self.counts.drop(reason, discarded)
        detected, _reliable = detect_language(f"{page.title}\n{page.text}", frozenset(self.pair.languages))
        state.html_pages += 1
        if detected:
            state.languages[detected] += 1
        target = self.pair.target
        if target and detected == target:
            state.target_seen = True
        self.declare(entry.url, page.alternates)
        linked = {link.url for link in page.links}
        declared = [Link(url, "", "", language) for language, url in page.alternates.items() if url not in linked]
        view = PageView(entry.url, entry.depth, detected, page)
        for url, priority in self.scorer.fetched(view).items():
            self.frontier.reprioritise(url, priority)
        self._follow(entry, view, [*page.links, *declared])
        if self.config.script_links:  # the site's own scripts only; a script on another host is not read
            for script in page.scripts:
                if host_of(script) == entry.host:
                    self._admit(script, entry.depth + 1, page.base, 0.0, script=True)
        counterpart = self.declared.get(entry.url, {}).get(self.pair.other(detected) or "")
        if counterpart and self.scorer.follows_declared_versions:
            self.frontier.promote(counterpart)
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
        self._guard = AddressGuard(self.config.allow_private_addresses, self.config.connect_timeout_seconds)
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
                        in_flight[asyncio.create_task(self._robots_task(host, origin))] = ("robots", (host, origin))
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
                    self._robots_done(*item, *task.result())
                else:
                    self._fetch_done(item, task.result())
        if not self.stop_reason:
            self.stop_reason = "page_limit" if self.fetched >= config.max_pages else "frontier_empty"

    def _finish(self) -> None:
        reason = {"time_limit": "not_fetched_time_limit"}.get(self.stop_reason, "not_fetched_page_limit")
        for entry in self.frontier.drain():  # logged: document alignment tells "not crawled" from "not there" by them
            self.scorer.dequeued(entry.url)
            self.counts.drop(reason)
            self._record(entry, reason)
        self.keys = self.warc.close()
        self.complete = True
        if self.checkpoints is not None:
            self._save_state()
        log.info("crawl: finished (%s): %s", self.stop_reason, self.counts.summary())
