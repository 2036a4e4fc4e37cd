"""Sitemap files read from the bytes the crawler fetched: indexes, gzip, text, hreflang alternates, bad input."""

from __future__ import annotations

import gzip

from bitextflow.crawl import sitemaps
from bitextflow.crawl.sitemaps import MAX_URLS, parse_sitemap
from tests.support import cpu_clock

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


def test_a_small_gzip_of_one_long_element_is_read_in_linear_time():
    # 1.28 MB of "a\n" in one <loc> (a 1.5 KB gzip) took 15 s: the text was joined by concatenation at each newline;
    # the entity references of the second split it the same way
    for filler in (b"a\n", b"&amp;"):
        body = gzip.compress(b"<urlset><url><loc>" + filler * 640_000 + b"</loc></url><url><loc>http://h/a</loc></url></urlset>")
        assert len(body) < 10_000
        with cpu_clock() as seconds:
            sitemap = parse_sitemap(body, "http://h/sitemap.xml.gz", 10**7)
        assert seconds() < 2, f"{filler!r}: {seconds():.1f} s of CPU"
        assert "http://h/a" in [page.url for page in sitemap.pages]


def test_a_sitemap_lists_at_most_50000_urls_and_says_how_many_more(monkeypatch):
    assert MAX_URLS == 50_000  # the protocol's; 200,000 URLs in a 500 KB gzip took 17 s of CPU and 280 MB
    monkeypatch.setattr(sitemaps, "MAX_URLS", 100)
    lines = "".join(f"<url><loc>http://h/{n}</loc></url>" for n in range(107))
    sitemap = parse_sitemap(gzip.compress(f"<urlset>{lines}</urlset>".encode()), "http://h/s.xml.gz", 10**8)
    assert len(sitemap.pages) == 100 and sitemap.over_limit == 7


def test_feeds_and_cut_files_give_what_they_hold():
    rss = b"<rss><channel><item><link>http://h/r.html</link></item></channel></rss>"
    atom = b'<feed><entry><link rel="alternate" href="http://h/x"/><link href="http://h/a.html"/></entry></feed>'
    cut = b"<urlset><url><loc>http://h/1</loc></url><url><loc>http://h/2"
    assert [page.url for page in parse_sitemap(rss, "http://h/f", 10**6).pages] == ["http://h/r.html"]
    assert [page.url for page in parse_sitemap(atom, "http://h/f", 10**6).pages] == ["http://h/a.html"]
    assert [page.url for page in parse_sitemap(cut, "http://h/s", 10**6).pages] == ["http://h/1", "http://h/2"]
    assert parse_sitemap(b"<a>" * 100_000, "http://h/s", 10**6).error == "not_a_sitemap"
