"""What a crawl reads besides pages' links: sitemaps (:mod:`bitextflow.crawl.sitemaps`) and the site's own script
files (:mod:`bitextflow.crawl.script_links`), and how the links of any of them are admitted to the frontier.
:class:`bitextflow.crawl.crawler.Crawler` fetches them; this is what it does with what it fetched."""

from __future__ import annotations

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
        if entry.depth >= self.config.max_depth:  # counted as too_deep, not scored
            for link in new:
                self._admit(link.url, entry.depth + 1, entry.url, 0.0)
        else:
            for link, priority in zip(new, self.scorer.score(view, new), strict=True):
                self._admit(link.url, entry.depth + 1, entry.url, priority)

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
        for child in sitemap.sitemaps:
            self._admit(child, entry.depth + 1, entry.url, 0.0, sitemap=True)
        links = []
        for listed in sitemap.pages:
            self.declare(listed.url, listed.alternates)
            links.append(Link(listed.url, "", "", listed.language))
            links += [Link(url, "", "", language) for language, url in listed.alternates.items() if url != listed.url]
        self._follow(entry, PageView(entry.url, entry.depth, "", ParsedPage("", "", "", "", links)), links)
        return sitemap.error

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
