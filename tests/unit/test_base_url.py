"""The document base URL of a page (HTML standard) and the links a page gives no crawlable URL for, counted."""

from __future__ import annotations

from bitextflow.crawl.urls import parse_html

PAGE = "http://host/en/a/b/page.html"


def _links(html: str, url: str = PAGE):
    page = parse_html(html.encode(), url)
    assert page is not None
    return [link.url for link in page.links], dict(page.discarded)


def test_a_relative_base_is_resolved_against_the_page_url():
    links, _ = _links('<head><base href="../../../"></head><body><a href="en/x/y.html">y</a></body>')
    assert links == ["http://host/en/x/y.html"]


def test_the_first_base_with_an_href_wins_and_a_base_without_one_is_skipped():
    html = '<head><base target="_blank"><base href="/docs/"><base href="/other/"></head><a href="p.html">p</a>'
    assert _links(html)[0] == ["http://host/docs/p.html"]


def test_a_base_that_gives_no_http_url_leaves_the_page_url():
    for base in ("javascript:void(0)", "data:text/html,x", "http://host:99999/"):
        assert _links(f'<head><base href="{base}"></head><a href="p.html">p</a>')[0] == ["http://host/en/a/b/p.html"], base


def test_every_discarded_link_is_counted_by_reason():
    html = (
        '<a href="javascript:void(0)">j</a><a href="JavaScript:go()">j2</a><a href="mailto:a@b.org">m</a>'
        '<a href="data:text/html,x">d</a><a href="tel:+123">t</a><a href="http://host:99999/">port</a>'
        '<a href="/n" rel="external nofollow">n</a><a name="top">named anchors are no links</a>'
        '<a href="mailto:a@b.org">the same link again counts once</a><a href="ok.html">ok</a>'
    )
    links, discarded = _links(html)
    assert links == ["http://host/en/a/b/ok.html"]
    assert discarded == {"link_not_http": 5, "link_malformed": 1, "link_nofollow": 1}


def test_declared_language_versions_are_read_from_link_alternates():
    html = (
        '<head><base href="../../../"><link rel="alternate" hreflang="es-ES" href="es/a/b/page.html">'
        '<link rel="alternate" hreflang="x-default" href="/"><link rel="stylesheet" hreflang="fr" href="s.css"></head>'
    )
    page = parse_html(html.encode(), PAGE)
    assert page is not None and page.alternates == {"es": "http://host/es/a/b/page.html"}
