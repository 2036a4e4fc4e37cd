"""A polite same-host crawler: robots.txt (protego), per-host delay, breadth-first from the seeds.

This is the walking-skeleton crawler; the focused bilingual crawler (async fetching, link ranking,
URL models, checkpoints) replaces its frontier and fetcher without changing its outputs: WARC shards
of request/response records and one crawl-log line per fetched URL.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

import httpx
import lxml.html
from protego import Protego

from bitextflow.config import CrawlConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.warc import RotatingWarcWriter

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")


def normalise_url(url: str) -> str | None:
    """Absolute http(s) URL without fragment, lower-case scheme and host; None for other schemes."""
    url, _fragment = urldefrag(url.strip())
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    netloc = parts.hostname.lower() + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def extract_links(html: bytes, base_url: str) -> list[str]:
    """Normalised targets of <a href> in document order, duplicates removed."""
    try:
        tree = lxml.html.fromstring(html, base_url=base_url)
    except (ValueError, lxml.etree.ParserError):
        return []
    seen: dict[str, None] = {}
    for href in tree.xpath("//a/@href"):
        target = normalise_url(urljoin(base_url, str(href)))
        if target:
            seen.setdefault(target)
    return list(seen)


@dataclass
class CrawlLogEntry:
    url: str
    status: int
    mime: str
    bytes: int
    depth: int
    parent: str | None
    fetch_seconds: float
    error: str = ""


class Crawler:
    """Fetches from the seeds breadth-first, staying on the seeds' hosts, until ``max_pages``."""

    def __init__(self, config: CrawlConfig, warc: RotatingWarcWriter, client: httpx.Client | None = None):
        self.config = config
        self.warc = warc
        self.counts = StageCounts("crawl")
        self.log: list[CrawlLogEntry] = []
        self._client = client or httpx.Client(
            timeout=config.timeout_seconds, follow_redirects=False, headers={"User-Agent": config.user_agent}
        )
        self._robots: dict[str, Protego] = {}
        self._next_fetch_at: dict[str, float] = {}
        self._hosts = {urlsplit(str(seed)).netloc.lower() for seed in config.seeds}

    # -- politeness -----------------------------------------------------------------------------
    def _robots_for(self, url: str) -> Protego:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._wait_for_host(parts.netloc)
            try:
                response = self._client.get(f"{origin}/robots.txt")
                text = response.text if response.status_code == 200 else ""
            except httpx.HTTPError as exc:
                log.warning("robots.txt of %s unreachable (%s); treating as allow-all", origin, exc)
                text = ""
            self._robots[origin] = Protego.parse(text)
        return self._robots[origin]

    def _wait_for_host(self, host: str) -> None:
        robots_delay = 0.0
        for origin, robots in self._robots.items():
            if urlsplit(origin).netloc == host:
                robots_delay = robots.crawl_delay(self.config.user_agent) or 0.0
        delay = max(self.config.delay_seconds, robots_delay)
        now = time.monotonic()
        ready_at = self._next_fetch_at.get(host, now)
        if ready_at > now:
            time.sleep(ready_at - now)
        self._next_fetch_at[host] = max(now, ready_at) + delay

    # -- fetching -------------------------------------------------------------------------------
    def _fetch(self, url: str) -> tuple[httpx.Response, bytes, bool]:
        """GET with the body capped at ``max_body_bytes`` while streaming (the rest is never read)."""
        with self._client.stream("GET", url) as response:
            body = bytearray()
            truncated = False
            for chunk in response.iter_bytes():
                body.extend(chunk)
                if len(body) > self.config.max_body_bytes:
                    del body[self.config.max_body_bytes :]
                    truncated = True
                    break
        return response, bytes(body), truncated

    def crawl(self) -> Iterator[CrawlLogEntry]:
        """Run the crawl; yields one log entry per attempted URL (for progress reporting)."""
        frontier: deque[tuple[str, int, str | None]] = deque()
        seen: set[str] = set()
        for seed in self.config.seeds:
            url = normalise_url(str(seed))
            if url and url not in seen:
                seen.add(url)
                self.counts.seen()
                frontier.append((url, 0, None))
        fetched = 0
        while frontier and fetched < self.config.max_pages:
            url, depth, parent = frontier.popleft()
            if not self._robots_for(url).can_fetch(url, self.config.user_agent):
                self.counts.drop("robots_disallowed")
                continue
            self._wait_for_host(urlsplit(url).netloc)
            started = time.monotonic()
            try:
                response, body, truncated = self._fetch(url)
            except httpx.HTTPError as exc:
                entry = CrawlLogEntry(url, 0, "", 0, depth, parent, time.monotonic() - started, type(exc).__name__)
                self.counts.drop("fetch_error")
                self.log.append(entry)
                yield entry
                continue
            fetched += 1
            mime = response.headers.get("content-type", "").split(";")[0].strip().lower()
            entry = CrawlLogEntry(url, response.status_code, mime, len(body), depth, parent, time.monotonic() - started)
            self.log.append(entry)
            self.warc.write_exchange(
                url,
                list(response.request.headers.items()),
                response.status_code,
                response.reason_phrase,
                list(response.headers.multi_items()),
                body,
                truncated,
            )
            self.counts.keep()
            for link in self._links_to_follow(response, body, url, depth):
                if link not in seen:
                    seen.add(link)
                    self.counts.seen()
                    frontier.append((link, depth + 1, url))
            yield entry
        self.counts.drop("not_fetched_page_limit", len(frontier))

    def _links_to_follow(self, response: httpx.Response, body: bytes, url: str, depth: int) -> list[str]:
        if response.is_redirect:
            target = normalise_url(urljoin(url, response.headers.get("location", "")))
            links = [target] if target else []
        elif response.status_code == 200 and response.headers.get("content-type", "").startswith(HTML_TYPES):
            links = extract_links(body, url) if depth < self.config.max_depth else []
        else:
            links = []
        return [link for link in links if urlsplit(link).netloc in self._hosts]

    def close(self) -> None:
        self._client.close()


def log_records(entries: list[CrawlLogEntry]) -> list[dict]:
    return [asdict(entry) for entry in entries]
