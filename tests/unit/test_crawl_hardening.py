"""Hostile pages and scope tricks against the crawler (issue: hardening), each a case that failed before.

A real HTTP server on 127.0.0.1 plays the hostile site; nothing is mocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import io
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.config import CrawlConfig, load_pair_config
from bitextflow.crawl.crawler import Crawler, run_sync
from bitextflow.crawl.fetcher import Fetcher, FetchResult
from bitextflow.crawl.guard import AddressGuard, AddressRefused, guarded_transport
from bitextflow.crawl.urls import host_of, normalise_url, parse_html
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import ConfigError
from tests.support import ROOT, QuietHandler, cpu_clock, serving

PAIRS = ROOT / "include" / "pairs"


def _links_in_one_paragraph(count: int) -> bytes:
    anchors = " ".join(f'<a href="/p{n}.html">link {n}</a> words between' for n in range(count))
    return f"<html><body><p>{anchors}</p></body></html>".encode()


def _parse_seconds(html: bytes) -> float:
    with cpu_clock() as seconds:
        page = parse_html(html, "http://h/")
    assert page is not None
    return seconds()


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


# -- scope: one host, one string; allowed ports; redirects under the normal rules -------------------------
class _SiteHandler(QuietHandler):
    """A small site whose pages say where they link; every request is recorded with its Authorization."""

    protocol_version = "HTTP/1.1"
    pages: dict[str, tuple[int, bytes, dict[str, str]]] = {}
    requests: list[tuple[str, str, str]] = []

    def do_GET(self):
        _SiteHandler.requests.append((self.headers.get("Host", ""), self.path, self.headers.get("Authorization", "")))
        status, body, headers = self.pages.get(self.path, (404, b"not found", {}))
        headers = dict(headers)  # the page table is the class's: each request reads it as set
        self.answer(status, body, headers.pop("Content-Type", "text/html; charset=utf-8"), headers)


@contextlib.contextmanager
def _serve(pages: dict[str, tuple[int, bytes, dict[str, str]]]) -> Iterator[int]:
    _SiteHandler.pages, _SiteHandler.requests = pages, []
    with serving(_SiteHandler) as host:
        yield int(host.rsplit(":", 1)[1])


def _page(*links: str) -> bytes:
    return ("<html><body>" + "".join(f'<p><a href="{link}">{link}</a></p>' for link in links) + "</body></html>").encode()


def _config(seed: str, allowed: list[str], **settings) -> CrawlConfig:
    return CrawlConfig(seeds=[seed], allow_private_addresses=allowed, delay_seconds=0, strategy="bfs", scout_pages=0,
                       timeout_seconds=5, **settings)  # fmt: skip


def test_normalised_hosts_drop_userinfo_the_root_dot_and_default_ports():
    assert normalise_url("http://user:secret@Example.COM.:80/a") == "http://example.com/a"
    assert normalise_url("https://example.com:443/") == "https://example.com/"
    assert normalise_url("http://example.com.:8080/") == "http://example.com:8080/"
    assert host_of(normalise_url("http://a@[::1]:80/")) == "[::1]"


def test_userinfo_and_a_trailing_dot_are_the_same_host_and_no_credentials_are_sent():
    """``a@site`` and ``site.`` were other hosts (their own delay, robots.txt, page limit), and httpx sent
    the userinfo to the server as Basic credentials."""
    with _serve({}) as port:
        site = f"127.0.0.1:{port}"
        _SiteHandler.pages.update({
            "/": (200, _page(f"http://user:secret@{site}/a", f"http://127.0.0.1.:{port}/b"), {}),
            "/a": (200, _page(), {}), "/b": (200, _page(), {}), "/robots.txt": (200, b"", {"Content-Type": "text/plain"}),
        })  # fmt: skip
        crawler, _bodies = _crawl_bodies(_config(f"http://{site}/", ["127.0.0.1"]))
    assert set(crawler.hosts) == {site}
    assert [path for _host, path, _auth in _SiteHandler.requests].count("/robots.txt") == 1
    assert not [auth for _host, _path, auth in _SiteHandler.requests if auth], "credentials from a link were sent"
    assert {entry.url for entry in crawler.log if entry.outcome == "fetched"} == {f"http://{site}/{p}" for p in ("", "a", "b")}


def test_an_allowed_address_with_a_port_admits_that_port_only():
    guard = AddressGuard(["127.0.0.1:8765", "[::1]:8765", "10.0.0.0/8"])
    assert guard.refusal("127.0.0.1", 8765) is None and guard.refusal("::1", 8765) is None
    assert guard.refusal("127.0.0.1", 8080) == "loopback, port 8080 not allowed"
    assert guard.refusal("10.1.2.3", 8080) is None
    with pytest.raises(ConfigError, match="'127.0.0.1:99999' is not an IP address or network with an optional port"):
        load_pair_config(PAIRS / "en-es.yaml").with_overrides({"crawl.allow_private_addresses": ["127.0.0.1:99999"]})
    with _serve({}) as port, _serve({}) as other:
        _SiteHandler.pages.update({"/": (200, _page(f"http://127.0.0.1:{other}/api/v2/dags"), {}),
                                   "/robots.txt": (404, b"", {})})  # fmt: skip
        crawler, _bodies = _crawl_bodies(
            _config(f"http://127.0.0.1:{port}/", [f"127.0.0.1:{port}"], allowed_hosts=[f"127.0.0.1:{other}"])
        )
    assert not [path for _host, path, _auth in _SiteHandler.requests if path.startswith("/api/")]
    outcomes = {entry.url: entry.outcome for entry in crawler.log}
    assert outcomes[f"http://127.0.0.1:{other}/api/v2/dags"] == "private_address"


def test_a_seed_that_redirects_widens_the_scope_but_its_target_follows_the_normal_rules():
    """The redirect target of a seed was admitted as a seed itself: extension and path rules skipped."""
    with _serve({}) as port:
        _SiteHandler.pages.update({
            "/": (301, b"", {"Location": f"http://localhost:{port}/manual.pdf"}),
            "/old": (301, b"", {"Location": f"http://localhost:{port}/new"}),
            "/new": (200, _page("/page"), {}), "/page": (200, _page(), {}), "/manual.pdf": (200, b"%PDF", {}),
        })  # fmt: skip
        pdf, _bodies = _crawl_bodies(_config(f"http://127.0.0.1:{port}/", ["127.0.0.1", "::1"]))
        moved, _bodies = _crawl_bodies(_config(f"http://127.0.0.1:{port}/old", ["127.0.0.1", "::1"]))
    assert pdf.counts.to_dict()["dropped"].get("skipped_extension") == 1
    assert not [path for _host, path, _auth in _SiteHandler.requests if path == "/manual.pdf"]
    assert f"localhost:{port}" in moved.scope
    assert f"http://localhost:{port}/page" in {entry.url for entry in moved.log if entry.outcome == "fetched"}


# -- the fetcher: every gzip member; resolution inside the timeout; every address tried ------------------
def test_a_body_of_several_gzip_members_is_decoded_whole():
    """Only the first member was decoded and the rest dropped without a truncation mark."""
    members = gzip.compress(b"<p>first</p>") + gzip.compress(b"<p>second</p>") + b"\0\0 trailing garbage"
    with _serve({"/": (200, members, {"Content-Encoding": "gzip"}), "/robots.txt": (404, b"", {})}) as port:
        crawler, fetched = _crawl_bodies(_config(f"http://127.0.0.1:{port}/", ["127.0.0.1"], max_pages=1))
    assert fetched == [b"<p>first</p><p>second</p>"] and not crawler.log[0].truncated


class _NameTable(AddressGuard):
    """Name resolution from a fixed table: the test cannot change this machine's DNS (a stand-in for it)."""

    def __init__(self, names: dict[str, list[str]], seconds: float = 0.0, **settings):
        super().__init__(["127.0.0.0/8"], **settings)
        self.names, self.seconds = names, seconds

    async def resolve(self, host: str, port: int) -> list[str]:
        await asyncio.sleep(self.seconds)
        for address in self.names[host]:
            if self.refusal(address, port):
                raise AddressRefused(host, address, self.refusal(address, port) or "")
        return self.names[host]


def test_every_address_of_a_host_is_tried_and_resolution_is_bounded_by_the_connect_timeout():
    with _serve({"/": (200, b"<p>up</p>", {})}) as port:
        # 127.0.0.2 is loopback too, but nothing listens there: the second address answers
        guard = _NameTable({"twice.test": ["127.0.0.2", "127.0.0.1"]})
        transport = guarded_transport(guard, httpx.Limits())
        fetcher = Fetcher(CrawlConfig(seeds=["http://twice.test/"], delay_seconds=0), guard, transport)
        result = run_sync(_fetch_and_close(fetcher, f"http://twice.test:{port}/"))
    assert (result.status, result.body, result.error) == (200, b"<p>up</p>", "")

    slow = _NameTable({"slow.test": ["127.0.0.1"]}, seconds=30, resolve_timeout=0.2)
    started = time.perf_counter()
    assert run_sync(slow.check_host("slow.test", 80)) is None
    # the name answers after 30 s: a check that returns well before then gave up at its own timeout
    assert time.perf_counter() - started < 15, "a name that never resolves held the crawl"


async def _fetch_and_close(fetcher: Fetcher, url: str) -> FetchResult:
    try:
        return await fetcher.fetch(url)
    finally:
        await fetcher.close()


def _crawl_bodies(config: CrawlConfig) -> tuple[Crawler, list[bytes]]:
    """Crawl to the end; the crawler and the bodies of the responses it wrote to WARC."""
    shards: dict[str, bytes] = {}

    def upload(path: Path, name: str) -> str:
        shards[name] = path.read_bytes()
        return name

    crawler = Crawler(config, RotatingWarcWriter(upload, 10**9))
    crawler.crawl()
    bodies = [
        record.content_stream().read()
        for data in shards.values()
        for record in ArchiveIterator(io.BytesIO(data))
        if record.rec_type == "response"
    ]
    return crawler, bodies


def test_a_page_that_is_only_a_script_or_noscript_shows_nothing():
    """Found by tests/unit/test_fuzz.py: a fragment parses to its one element, which is then dropped."""
    for body in (b"<NOSCRIPT>", b"<script>x</script>", b"<noscript><a href=/n>n</a></noscript>"):
        page = parse_html(body, "http://h/")
        assert page is not None and (page.text, page.links) == ("", []), body
