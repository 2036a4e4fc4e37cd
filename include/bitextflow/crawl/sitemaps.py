"""Sitemaps (the sitemaps.org protocol 0.9): the pages a site lists, its sitemap indexes, and the language versions
it declares with ``<xhtml:link rel="alternate" hreflang>``.

The crawler fetches sitemaps itself, as frontier entries (address guard, size and time limits, politeness and
robots.txt like every other URL: :mod:`bitextflow.crawl.crawler`), and this module only reads the bytes it got.
The parsing is ultimate-sitemap-parser's (``usp.tree.sitemap_from_str``: XML sitemaps and indexes, text sitemaps,
RSS and Atom feeds, hreflang alternates; DOCTYPE and entity declarations refused). It was chosen over
``trafilatura.sitemaps``, which is already a dependency, because trafilatura's ``SitemapObject`` keeps the
``href`` of each alternate but not the ``<loc>`` it is an alternate of (so no declared pair can be made), tells a
child sitemap from a page by a ``.xml`` in its URL rather than by the ``<sitemapindex>`` element, and drops URLs
by its own language and domain filters; and over a hand-written ``lxml`` parser, which would repeat what a
maintained one does. Gzipped sitemaps (``sitemap.xml.gz``, served as ``application/gzip`` rather than with a
``Content-Encoding``) are inflated here through the fetcher's bounded decompressor, to ``crawl.max_body_bytes``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from usp.objects.sitemap import AbstractIndexSitemap, InvalidSitemap
from usp.tree import sitemap_from_str

from bitextflow.crawl.fetcher import DecodingError, gunzip_bounded
from bitextflow.crawl.urls import add_alternate, normalise_url

# its messages name the placeholder URL it parses strings under; the crawler counts and logs what failed itself
logging.getLogger("usp").setLevel(logging.CRITICAL)

#: Where a site's sitemap is looked for when its robots.txt names none.
GUESSED_PATH = "/sitemap.xml"
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class SitemapPage:
    """A page a sitemap lists, with the language versions declared for it (language -> canonical URL; the page
    itself under its own language when the sitemap lists it, as the protocol asks)."""

    url: str
    alternates: dict[str, str] = field(default_factory=dict)

    @property
    def language(self) -> str:
        """The language the sitemap declares for the page itself ("" when it lists no alternate that is the page)."""
        return next((language for language, url in self.alternates.items() if url == self.url), "")


@dataclass(frozen=True)
class Sitemap:
    """What one sitemap file holds: pages, child sitemaps (of an index), and ``error`` when it held nothing readable
    (``decoding_error``: a corrupt gzip; ``not_a_sitemap``: neither XML, text, RSS nor Atom sitemap)."""

    pages: list[SitemapPage] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    error: str = ""


def parse_sitemap(body: bytes, url: str, max_bytes: int) -> Sitemap:
    """The pages and child sitemaps of the sitemap fetched from ``url`` (URLs canonical, relative ones resolved
    against ``url``; those that are no http(s) URL left out)."""
    if body[:2] == _GZIP_MAGIC:
        try:
            body = gunzip_bounded(body, max_bytes)
        except DecodingError:
            return Sitemap(error="decoding_error")
    parsed = sitemap_from_str(body.decode("utf-8", errors="replace"))  # the protocol: sitemaps are UTF-8
    if isinstance(parsed, InvalidSitemap):
        return Sitemap(error="not_a_sitemap")
    children = parsed.sub_sitemaps if isinstance(parsed, AbstractIndexSitemap) else []
    pages = []
    for page in parsed.all_pages():
        page_url = normalise_url(page.url, url)
        if page_url is None:
            continue
        alternates: dict[str, str] = {}
        for hreflang, href in page.alternates or ():
            add_alternate(alternates, hreflang, href, url)
        pages.append(SitemapPage(page_url, alternates))
    return Sitemap(pages, [child for child in (normalise_url(s.url, url) for s in children) if child])
