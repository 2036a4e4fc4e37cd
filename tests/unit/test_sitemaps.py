"""Sitemap files read from the bytes the crawler fetched: indexes, gzip, text, hreflang alternates, bad input."""

from __future__ import annotations

import gzip

from bitextflow.crawl.sitemaps import parse_sitemap

URLSET = (
    '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>http://h/en/a.html</loc>'
    '<xhtml:link rel="alternate" hreflang="es-ES" href="http://h/es/a.html"/>'
    '<xhtml:link rel="alternate" hreflang="en" href="http://h/en/a.html"/>'
    '<xhtml:link rel="alternate" hreflang="x-default" href="http://h/"/></url>'
    "<url><loc>HTTP://H:80/b.html#top</loc></url><url><loc>mailto:x@h</loc></url></urlset>"
)


def test_a_urlset_gives_canonical_pages_with_their_declared_versions():
    sitemap = parse_sitemap(URLSET.encode(), "http://h/sitemap.xml", 10**6)
    assert [(page.url, page.alternates, page.language) for page in sitemap.pages] == [
        ("http://h/en/a.html", {"es": "http://h/es/a.html", "en": "http://h/en/a.html"}, "en"),
        ("http://h/b.html", {}, ""),
    ]
    assert not sitemap.sitemaps and not sitemap.error


def test_an_index_gives_its_children_and_a_gzipped_text_sitemap_its_lines():
    index = '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>http://h/s1.xml.gz</loc></sitemap></sitemapindex>'
    assert parse_sitemap(index.encode(), "http://h/i.xml", 10**6).sitemaps == ["http://h/s1.xml.gz"]
    text = gzip.compress(b"http://h/x.html\nnot a url\nhttp://h/y.html\n")
    assert [page.url for page in parse_sitemap(text, "http://h/s.txt.gz", 10**6).pages] == ["http://h/x.html", "http://h/y.html"]


def test_bad_sitemaps_are_reported_not_raised():
    assert parse_sitemap(b"\x1f\x8bnot gzip at all", "http://h/s.xml.gz", 10**6).error == "decoding_error"
    assert parse_sitemap(b"<html><body>a page</body></html>", "http://h/s.xml", 10**6).error == "not_a_sitemap"
    entities = b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY e "http://h/x">]><urlset><url><loc>&e;</loc></url></urlset>'
    assert parse_sitemap(entities, "http://h/s.xml", 10**6).error == "not_a_sitemap"  # entity declarations are refused
    bomb = gzip.compress(b"http://h/" + b"a" * 5_000_000)
    (cut,) = parse_sitemap(bomb, "http://h/s.txt.gz", 1000).pages  # inflated no further than the limit
    assert len(cut.url) == 1000
