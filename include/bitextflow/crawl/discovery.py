"""What a crawl reads besides pages' links: sitemaps (:mod:`bitextflow.crawl.sitemaps`) and the site's own script
files (:mod:`bitextflow.crawl.script_links`), and how the links of any of them are admitted to the frontier.
:class:`bitextflow.crawl.crawler.Crawler` fetches them; this is what it does with what it fetched."""

from __future__ import annotations

import functools

from bitextflow.crawl.crawl_state import CrawlState
from bitextflow.crawl.fetcher import FetchResult
from bitextflow.crawl.frontier import Entry
from bitextflow.crawl.scoring import PageView
from bitextflow.crawl.script_links import carries_links, script_urls
from bitextflow.crawl.sitemaps import GUESSED_PATH, parse_sitemap
from bitextflow.crawl.urls import Link, ParsedPage, decode_html, host_of, normalise_url


class Discovery(CrawlState):
    """Admitting links (of pages, sitemaps and scripts) and reading sitemaps and scripts."""

    def _follow(self, entry: Entry, view: PageView, links: list[Link]) -> None:
        """Admit the links of a fetched page or sitemap that are new, ranked by the strategy."""
        first: dict[str, Link] = {}
        for link in links:
            first.setdefault(link.url, link)
        new = [link for url, link in first.items() if url not in self.seen]
        new = self._within_frontier_limit(new, self.config.max_frontier_per_host)
        if entry.depth >= self.config.max_depth:  # counted as too_deep, not scored
            for link in new:
                self._admit(link.url, entry.depth + 1, entry.url, 0.0)
        else:
            for link, priority in zip(new, self.scorer.score(view, new), strict=True):
                self._admit(link.url, entry.depth + 1, entry.url, priority)

    def _within_frontier_limit(self, links: list[Link], cap: int) -> list[Link]:
        """The links whose host has room in the frontier (``crawl.max_frontier_per_host``); the others are seen and
        counted ``frontier_host_limit``."""
        room: dict[str, int] = {}
        kept = []
        for link in links:
            host = host_of(link.url)
            left = room.setdefault(host, cap - self.frontier.waiting(host))
            if left > 0:
                room[host] = left - 1
                kept.append(link)
            else:
                self.seen.add(link.url)
                self.counts.seen()
                self.counts.drop("frontier_host_limit")
        return kept

    def _admit_sitemaps(self, origin: str, listed: list[str]) -> None:
        """The sitemaps a host's robots.txt lists (``Sitemap:`` lines), else its ``/sitemap.xml``, join the frontier once
        robots.txt is read (``crawl.max_sitemaps_per_host`` 0: none)."""
        if not self.config.max_sitemaps_per_host:
            return
        robots_url = f"{origin}/robots.txt"
        for url in listed or [origin + GUESSED_PATH]:
            sitemap = normalise_url(url, robots_url)
            if sitemap is None:
                self.counts.seen()
                self.counts.drop("link_malformed")
                continue
            self._admit(sitemap, 1, robots_url, 0.0, sitemap=True)

    def _sitemap(self, entry: Entry, result: FetchResult) -> str:
        """Read a fetched sitemap: its child sitemaps and its pages join the frontier (the pages ranked like the links
        of a page in no known language, each with the language the sitemap declares for it), its hreflang alternates
        become declared versions. Returns why it held nothing ("" when it was read)."""
        sitemap = parse_sitemap(result.body, entry.url, self.config.max_body_bytes)
        if sitemap.error:  # fetched (its record is in the WARC), but nothing in it could be read
            self.counts.seen()
            self.counts.drop(f"sitemap_{sitemap.error}")
        if sitemap.over_limit:  # the protocol's 50,000 URLs a sitemap: the rest were not read
            self.counts.seen(sitemap.over_limit)
            self.counts.drop("sitemap_url_limit", sitemap.over_limit)
        for child in sitemap.sitemaps:
            if self._sitemap_may_name(entry, child):
                self._admit(child, entry.depth + 1, entry.url, 0.0, sitemap=True)
        links = []
        for listed in sitemap.pages:
            if not self._sitemap_may_name(entry, listed.url):
                continue
            alternates = {language: url for language, url in listed.alternates.items() if self._sitemap_may_name(entry, url)}
            self.declare(listed.url, alternates)
            links.append(Link(listed.url, "", "", listed.language))
            links += [Link(url, "", "", language) for language, url in alternates.items() if url != listed.url]
        self._follow(entry, PageView(entry.url, entry.depth, "", ParsedPage("", "", "", "", links)), links)
        return sitemap.error

    @functools.cached_property
    def _allowed_hosts(self) -> frozenset[str]:
        return frozenset(host.lower().rstrip(".") for host in self.config.allowed_hosts)

    def _sitemap_may_name(self, entry: Entry, url: str) -> bool:
        """Whether a sitemap may list ``url`` (a page, an alternate, a child sitemap): on the sitemap's own host or one
        the run allows (``crawl.allowed_hosts``), else counted ``sitemap_off_host``: one host's sitemap declaring
        another host's pages as language versions made pairs of pages neither host's owner paired."""
        host = host_of(url)
        if host == entry.host or self._any_host or host in self._allowed_hosts:
            return True
        self.counts.seen()
        self.counts.drop("sitemap_off_host")
        return False

    def _script(self, entry: Entry, result: FetchResult) -> None:
        """Follow the URL-looking strings of a script that builds links (:mod:`bitextflow.crawl.script_links`), resolved
        against the document base URL of the page that loaded it (the entry's parent); those off its host are counted
        ``script_link_off_site``, the others join the frontier as links of a page in no known language."""
        script = decode_html(result.body, result.content_type)
        if not carries_links(script):
            return
        links = []
        for url in script_urls(script, entry.parent or entry.url):
            if host_of(url) == entry.host:
                links.append(Link(url, "", ""))
            else:
                self.counts.seen()
                self.counts.drop("script_link_off_site")
        self._follow(entry, PageView(entry.url, entry.depth, "", ParsedPage("", "", "", "", links)), links)
