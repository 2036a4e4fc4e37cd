"""Sitemaps (the sitemaps.org protocol 0.9): the pages a site lists, its sitemap indexes, and the language versions
it declares with ``<xhtml:link rel="alternate" hreflang>``.

The crawler fetches sitemaps itself, as frontier entries (address guard, size and time limits, politeness and
robots.txt like every other URL: :mod:`bitextflow.crawl.crawler`), and this module only reads the bytes it got.
The files are read with lxml (libxml2's parser: no DTD, no entities, no network, its default limits on depth and on
the length of a text node; a file cut short gives what it holds): XML sitemaps and indexes, RSS and Atom feeds, text
sitemaps, hreflang alternates; a DOCTYPE is refused. ultimate-sitemap-parser did this until its XML reader was found
to join an element's text by string concatenation at each newline and entity (quadratic): a 1.5 KB
``sitemap.xml.gz`` held the crawl's event loop for minutes. libxml2 builds the same text in linear time, in C, and
the walk below visits the root's children and theirs, never a deeper level.

A sitemap lists at most :data:`MAX_URLS` URLs (the protocol's 50,000); the crawl counts the others
(``sitemap_url_limit``) without reading them. Gzipped sitemaps (``sitemap.xml.gz``, served as ``application/gzip``
rather than with a ``Content-Encoding``) are inflated here through the fetcher's bounded decompressor, to
``crawl.max_body_bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import lxml.etree

from bitextflow.crawl.fetcher import DecodingError, gunzip_bounded
from bitextflow.crawl.urls import add_alternate, normalise_url

#: Where a site's sitemap is looked for when its robots.txt names none.
GUESSED_PATH = "/sitemap.xml"
#: URLs one sitemap may list (sitemaps.org: "no more than 50,000 URLs"); an index may list as many sitemaps.
MAX_URLS = 50_000
_GZIP_MAGIC = b"\x1f\x8b"
_PARSER = lxml.etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, recover=True, remove_comments=True,
    remove_pis=True,
)  # fmt: skip


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
    """What one sitemap file holds: pages, child sitemaps (of an index), ``over_limit`` (URLs it listed beyond
    :data:`MAX_URLS`, not read) and ``error`` when it held nothing readable (``decoding_error``: a corrupt gzip;
    ``not_a_sitemap``: neither XML, text, RSS nor Atom sitemap)."""

    pages: list[SitemapPage] = field(default_factory=list)
    sitemaps: list[str] = field(default_factory=list)
    error: str = ""
    over_limit: int = 0


def _local(element: lxml.etree._Element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _children(element: lxml.etree._Element, name: str) -> Iterator[lxml.etree._Element]:
    return (child for child in element if _local(child) == name)


def _text(element: lxml.etree._Element, name: str) -> str:
    return next(((child.text or "").strip() for child in _children(element, name)), "")


def _entries(root: lxml.etree._Element) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(location, hreflang alternates) of each entry of a urlset, an index, an RSS or an Atom feed."""
    kind = _local(root)
    if kind in ("urlset", "sitemapindex"):
        for entry in _children(root, "url" if kind == "urlset" else "sitemap"):
            links = [
                (link.get("hreflang", ""), link.get("href", ""))
                for link in _children(entry, "link")
                if link.get("rel") == "alternate" and link.get("hreflang") and link.get("href")
            ]
            yield _text(entry, "loc"), links
    elif kind == "rss":
        for channel in _children(root, "channel"):
            for item in _children(channel, "item"):
                yield _text(item, "link"), []
    elif kind == "feed":
        for entry in _children(root, "entry"):
            links = list(_children(entry, "link"))
            own = next((link for link in links if link.get("rel", "self").lower() == "self"), links[0] if links else None)
            yield ("" if own is None else own.get("href", "").strip()), []


def _read(text: str) -> tuple[str, Iterator[tuple[str, list[tuple[str, str]]]]] | None:
    """The kind of sitemap (``urlset``, ``sitemapindex``, ``rss``, ``feed``, ``text``) and its entries; None when it
    is none of them."""
    if not text[:20].strip().startswith("<"):
        lines = (line.strip() for line in text.splitlines())
        return "text", ((line, []) for line in lines if line.startswith(("http://", "https://")))
    try:
        root = lxml.etree.fromstring(text.encode("utf-8"), _PARSER)
    except lxml.etree.XMLSyntaxError:
        return None
    if root is None or root.getroottree().docinfo.doctype or _local(root) not in ("urlset", "sitemapindex", "rss", "feed"):
        return None  # a DOCTYPE is refused, as the entity declarations it may carry
    return _local(root), _entries(root)


def parse_sitemap(body: bytes, url: str, max_bytes: int) -> Sitemap:
    """The pages and child sitemaps of the sitemap fetched from ``url`` (URLs canonical, relative ones resolved
    against ``url``; those that are no http(s) URL left out), at most :data:`MAX_URLS` of them."""
    if body[:2] == _GZIP_MAGIC:
        try:
            body = gunzip_bounded(body, max_bytes)
        except DecodingError:
            return Sitemap(error="decoding_error")
    read = _read(body.decode("utf-8", errors="replace").removeprefix("\ufeff"))  # the protocol: sitemaps are UTF-8
    if read is None:
        return Sitemap(error="not_a_sitemap")
    kind, entries = read
    pages: list[SitemapPage] = []
    children: list[str] = []
    listed = over = 0
    for location, links in entries:
        if not location:
            continue
        if listed >= MAX_URLS:
            over += 1
            continue
        listed += 1
        canonical = normalise_url(location, url)
        if canonical is None:
            continue
        if kind == "sitemapindex":
            children.append(canonical)
            continue
        alternates: dict[str, str] = {}
        for hreflang, href in links:
            add_alternate(alternates, hreflang, href, url)
        pages.append(SitemapPage(canonical, alternates))
    return Sitemap(pages, children, over_limit=over)
