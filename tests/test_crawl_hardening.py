"""Hostile pages and scope tricks against the crawler (issue: hardening), each a case that failed before.

A real HTTP server on 127.0.0.1 plays the hostile site; nothing is mocked.
"""

from __future__ import annotations

import time

from bitextflow.crawl.urls import parse_html


def _links_in_one_paragraph(count: int) -> bytes:
    anchors = " ".join(f'<a href="/p{n}.html">link {n}</a> words between' for n in range(count))
    return f"<html><body><p>{anchors}</p></body></html>".encode()


def _parse_seconds(html: bytes) -> float:
    started = time.perf_counter()
    page = parse_html(html, "http://h/")
    assert page is not None
    return time.perf_counter() - started


def test_link_context_is_linear_in_the_links_of_one_element():
    """Each link's context was found by searching its anchor text in the parent's text: 20,000 links in one
    paragraph cost 400 million character comparisons. Ten times the links must cost about ten times the time."""
    small, large = _links_in_one_paragraph(2_000), _links_in_one_paragraph(20_000)
    _parse_seconds(small)  # warm caches (URL canonicalisation is memoised per string)
    ratio = min(_parse_seconds(large) for _ in range(2)) / min(_parse_seconds(small) for _ in range(3))
    assert ratio < 25, f"10x the links took {ratio:.1f}x the time: link context is not linear"


def test_link_context_is_taken_where_the_link_is_not_where_its_text_first_appears():
    words = "filler " * 60
    html = f'<p>Install brltty first. {words} On the <a href="/brltty">brltty</a> site, read the key bindings.</p>'
    (link,) = parse_html(html.encode(), "http://h/").links
    assert link.context.endswith("site, read the key bindings."), link.context
