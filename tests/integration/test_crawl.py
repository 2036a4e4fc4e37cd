"""The focused crawler: URLs, ranking, limits against a hostile local server, checkpoints, real S3.

Everything talks to 127.0.0.1 only: a hostile server started here, the local multilingual site and
SeaweedFS from the conftest fixtures.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.catalog.checkpoints import STATE_NAME, ObjectStoreCheckpoints
from bitextflow.config import CrawlConfig, load_pair_config
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.fetcher import _Decoder
from bitextflow.crawl.frontier import Entry, Frontier
from bitextflow.crawl.guard import AddressGuard
from bitextflow.crawl.scoring import BfsScorer, PageView, PairContext, TermsScorer, UrlRulesScorer
from bitextflow.crawl.smart_scorer import ModelScorer, SmartScorer, SmartSettings
from bitextflow.crawl.strategies import make_scorer
from bitextflow.crawl.urls import Link, extract_links, normalise_url, parse_html, predicted_language, url_languages
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.errors import StageError
from bitextflow.models.url_models import load_url_models
from bitextflow.stages.base import RunContext
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from tests.support import ROOT, QuietHandler, serving, wait_for

LOCAL = ["127.0.0.1"]


# -- URLs ---------------------------------------------------------------------------------------------
def test_normalise_url_canonicalises_and_refuses_non_http():
    assert (
        normalise_url("HTTP://Example.ORG:80/a/./b/../c.html?utm_source=x&b=2&a=1#frag") == "http://example.org/a/c.html?a=1&b=2"
    )
    assert normalise_url("http://example.org") == "http://example.org/"
    assert normalise_url("HTTP://Example.ORG:8080/a/b.html#frag") == "http://example.org:8080/a/b.html"
    assert normalise_url("../x.html#top", "http://h/a/b/c.html") == "http://h/a/x.html"
    for bad in ("mailto:someone@example.org", "javascript:void(0)", "http://h:99999/", "ftp://h/x", ""):
        assert normalise_url(bad) is None


def test_extract_links_resolves_relative_and_dedups():
    html = b'<a href="b.html">b</a><a href="/c#x">c</a><a href="b.html">again</a><a href="javascript:0">j</a>'
    assert extract_links(html, "http://h/a/index.html") == ["http://h/a/b.html", "http://h/c"]


def test_parse_html_gives_anchor_context_hreflang_and_survives_bad_input():
    page = parse_html(
        '<html lang="en"><title>Guide</title><body><p>Read the <a href="/es/g.html" hreflang="es">Español</a> '
        "version</p><script>no</script></body></html>".encode(),
        "http://h/en/g.html",
    )
    assert page is not None and page.title == "Guide" and "no" not in page.text.split()
    (link,) = page.links
    assert (link.url, link.anchor, link.hreflang) == ("http://h/es/g.html", "Español", "es")
    assert "Read the" in link.context
    # a wrong declared charset falls back instead of failing; binary junk parses to something or None
    assert parse_html("<p>año</p>".encode("latin-1"), "http://h/", "text/html; charset=utf-8").text == "año"
    parse_html(b"\x00\xff<<<>>>", "http://h/")


def test_url_languages_by_component_in_order_of_trust():
    assert url_languages("http://www.example.fr/docs/?lang=es") == {"parameter": "es", "public_suffix": "fr"}
    assert predicted_language("http://www.example.fr/docs/?lang=es") == ("es", 0.95)
    assert predicted_language("http://es.example.com/de/page.html") == ("de", 0.9)
    assert predicted_language("http://example.co.uk/page") == ("en", 0.75)
    assert predicted_language("http://fr.example.com/page") == ("fr", 0.7)
    assert predicted_language("http://h/reference/ch01.es.html")[0] == "es"
    assert predicted_language("http://example.ch/page") == ("", 0.0)  # several languages: no guess
    assert predicted_language("http://h/install/deutsch/a.html")[0] == "de"


def test_address_guard_refuses_tunnels_and_site_local_ipv6():
    """6to4 addresses carry an IPv4 address (2002:7f00:1:: is 127.0.0.1, 2002:a9fe:a9fe:: the metadata
    address); fec0::/10 is site-local. Both passed the guard."""
    guard = AddressGuard()
    assert guard.refusal("2002:7f00:1::1") == "6to4" and guard.refusal("2002:a9fe:a9fe::") == "6to4"
    assert guard.refusal("fec0::1") == "site-local"
    assert guard.refusal("2606:4700::1111") is None and guard.refusal("::ffff:127.0.0.1") == "loopback"


def test_address_guard_refuses_private_ranges_unless_allowed():
    guard = AddressGuard()
    for address in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "172.16.5.4", "169.254.169.254", "224.0.0.1", "::1",
                    "fe80::1", "0.0.0.0", "::ffff:10.0.0.1", "100.64.0.1"):  # fmt: skip
        assert guard.refusal(address), address
    assert guard.refusal("93.184.216.34") is None
    allowed = AddressGuard(["127.0.0.1", "10.0.0.0/8"])
    assert allowed.refusal("127.0.0.1") is None and allowed.refusal("10.9.9.9") is None
    assert allowed.refusal("127.0.0.2") == "loopback"


def test_bounded_decoder_stops_a_gzip_bomb():
    bomb = gzip.compress(b"\0" * 50_000_000)
    decoder = _Decoder("gzip")
    out = decoder.feed(bomb, 10_001)
    assert len(out) == 10_001
    deflate = zlib.compress(b"hello " * 10)
    assert _Decoder("deflate").feed(deflate, 1000) == b"hello " * 10
    raw = zlib.compressobj(wbits=-15)
    assert _Decoder("deflate").feed(raw.compress(b"raw deflate") + raw.flush(), 1000) == b"raw deflate"


# -- frontier and ranking -------------------------------------------------------------------------------
def test_frontier_orders_seeds_then_priority_then_fifo_and_round_trips():
    frontier = Frontier()
    frontier.push(Entry("http://h/low", "h", 1, None, 0.1))
    frontier.push(Entry("http://h/high", "h", 1, None, 0.9))
    frontier.push(Entry("http://h/seed", "h", 0, None, -5.0, seed=True))
    frontier.push(Entry("http://h/high2", "h", 1, None, 0.9))
    frontier.reprioritise("http://h/low", 0.95)
    restored = Frontier.from_state(json.loads(json.dumps(frontier.to_state())))
    for queue in (frontier, restored):
        assert [queue.pop("h").url for _ in range(4)] == ["http://h/seed", "http://h/low", "http://h/high", "http://h/high2"]
        assert queue.pop("h") is None and len(queue) == 0


def _view(url, language, html=b"<title>t</title><p>x</p>", depth=0):
    return PageView(url, depth, language, parse_html(html, url))


def test_bfs_ranks_by_depth():
    scorer = BfsScorer(PairContext("en", "es"))
    assert scorer.score(_view("http://h/", "en", depth=2), [Link("http://h/a", "", "")]) == [-3.0]


def test_terms_score_is_ilsp_fc_link_score():
    pair = PairContext("en", "es", {"en": {"kernel": 2.0, "package": 1.0}, "es": {"paquete": 1.0}})
    scorer = TermsScorer(pair, other_language_bonus=10.0)
    page = _view("http://h/en/a.html", "en", b"<title>kernel</title><body><p>package kernel</p></body>")
    # p = title 10 * 2 + text 1 * (2 + 1) (the title is part of no body text here) = 23, L = 4
    assert scorer.relevance(page) == pytest.approx(23.0)
    links = [
        Link("http://h/es/a.html", "Español", "", "es"),  # other language: + c
        Link("http://h/en/b.html", "kernel", "the kernel package"),  # terms: 2 + 1
        Link("http://h/en/c.html", "about", "about us"),
        Link("http://h/fr/a.html", "Français", "kernel kernel"),  # a third language: ILSP-FC would discard it
    ]
    assert scorer.score(page, links) == pytest.approx([10 + 23 / 4, 23 / 4 + 3, 23 / 4, 0.0])
    assert scorer.score(_view("http://h/de/a.html", "de"), links[:1]) == [0.0]  # a page in neither language


def test_url_rules_prefers_the_pair_and_completes_pairs():
    scorer = UrlRulesScorer(PairContext("en", "es"))
    index = _view("http://h/", "en")
    links = [Link(u, "", "") for u in ("http://h/fr/a.html", "http://h/es/a.html", "http://h/b.html")]
    fr, es, unmarked = scorer.score(index, links)
    assert es > unmarked > fr
    for link in links:
        scorer.queued(link.url, 0.0)
    # fetching /en/a.html makes /es/a.html complete a pair: it is re-ranked to the top
    updated = scorer.fetched(_view("http://h/en/a.html", "en"))
    assert set(updated) == {"http://h/es/a.html", "http://h/fr/a.html"}
    assert updated["http://h/es/a.html"] > es and updated["http://h/fr/a.html"] < es
    state = json.loads(json.dumps(scorer.state()))
    again = UrlRulesScorer(PairContext("en", "es"))
    again.restore(state, {link.url: 0.0 for link in links})
    assert again.score(index, links[1:2]) == [updated["http://h/es/a.html"]]


def test_smart_falls_back_to_url_rules_without_models_and_uses_registered_models():
    pair = PairContext("en", "es")
    assert make_scorer("smart", pair).name == "url-rules"
    with pytest.raises(StageError, match="/nowhere"):  # a named folder that is not there is an error, not a fallback
        load_url_models("/nowhere")

    class Models:
        version = "test"

        def language_probabilities(self, urls, language):
            return [0.9 if f"/{language}/" in url else 0.1 for url in urls]

        def parallel_probabilities(self, pairs):
            return [0.5 for _ in pairs]

    scorer = make_scorer("smart", pair, url_models=Models())
    assert isinstance(scorer, SmartScorer)
    links = [Link("http://h/es/a.html", "", ""), Link("http://h/de/a.html", "", "")]
    assert scorer.model.score(_view("http://h/en/a.html", "en"), links) == pytest.approx([0.45, 0.05])  # the seed's formula
    # the URL rules rank (0.9 x 0.5, 0.1 x 0.5 x 0.5) until the models' confidence reaches smart_promote_above
    assert scorer.score(_view("http://h/en/a.html", "en"), links) == pytest.approx([0.45, 0.025])
    promoting = make_scorer("smart", pair, url_models=Models(), smart=SmartSettings(promote_above=0.4))
    switcher = _view("http://h/en/a.html", "en", b'<a href="/es/a.html" hreflang="es">es</a>')  # names its version
    assert promoting.score(switcher, [switcher.page.links[0], links[1]]) == pytest.approx([0.6 + 1e-4 * 0.5, 0.025])
    assert make_scorer("smart", pair, url_models=None).name == "url-rules"


class _FileNameModels:
    """Stand-in URL models with known answers (the real ones are tested in test_url_models.py): the
    language is the URL's /xx/ directory, and two URLs are parallel when they name the same file."""

    version = "test"

    def language_probabilities(self, urls, language):
        return [0.9 if f"/{language}/" in url else 0.1 for url in urls]

    def parallel_probabilities(self, pairs):
        return [0.9 if a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1] else 0.1 for a, b in pairs]


def test_smart_reranks_waiting_translations_when_a_page_is_fetched():
    pair = PairContext("en", "es")
    scorer = ModelScorer(pair, _FileNameModels(), SmartSettings())
    frontier = Frontier()
    es_index = _view("http://h/es/index.html", "es", b'<a href="/es/a.html">a</a><a href="/es/b.html">b</a>')
    en_index = _view("http://h/en/index.html", "en", b'<a href="/es/x.html">x</a>')
    # the Spanish pages are first found on the Spanish index, the English one on the English index:
    # no link is its page's translation, so the Spanish x (linked from the English index) leads
    for view in (es_index, en_index):
        links = [link for link in view.page.links if link.url not in frontier]
        for link, priority in zip(links, scorer.score(view, links), strict=True):
            frontier.push(Entry(link.url, "h", 1, view.url, priority))
            scorer.queued(link.url, priority)
    assert frontier.peek("h").url == "http://h/es/x.html"
    # fetching the English a (its switcher links to the Spanish a) makes its translation the next URL...
    en_a = _view("http://h/en/a.html", "en", b'<a href="/es/a.html" hreflang="es">es</a>')
    raised = scorer.fetched(en_a)
    # P(es) = 1: the switcher's hreflang declares it; P(parallel) 0.9 from the model
    assert raised["http://h/es/a.html"] == pytest.approx(1.0 * 0.9)
    for url, priority in raised.items():
        frontier.reprioritise(url, priority)
    assert frontier.peek("h").url == "http://h/es/a.html"
    # ...and without a link: the waiting URLs that share its URL tokens are re-scored too (b here)
    en_b = _view("http://h/en/b.html", "en", b"<p>no links</p>")
    assert scorer.fetched(en_b) == {"http://h/es/b.html": pytest.approx(0.81)}
    # a page in neither language of the pair re-ranks nothing; nor does a priority that would fall
    assert scorer.fetched(_view("http://h/de/a.html", "de")) == {}
    assert scorer.fetched(en_a) == {}
    # a checkpoint restores the waiting URLs with their priorities (from the frontier): same decisions
    restored = ModelScorer(pair, _FileNameModels(), SmartSettings())
    restored.restore(scorer.state(), {entry.url: entry.priority for entry in frontier.entries()})
    assert restored.fetched(en_a) == {} and restored.fetched(_view("http://h/en/x.html", "en")) == scorer.fetched(
        _view("http://h/en/x.html", "en")
    )


def test_smart_takes_the_language_a_link_declares_over_the_url_models_guess():
    scorer = ModelScorer(PairContext("en", "es"), _FileNameModels(), SmartSettings())
    page = _view(
        "http://h/en/a.html",
        "en",
        b'<a href="/es/a.html" hreflang="de">Deutsch</a><a href="/x/a.html" hreflang="es">es</a><a href="/es/b.html">b</a>',
    )
    links = page.page.links
    # /es/a.html is declared German (no pair language: 0), /x/a.html Spanish (1 x 0.9), /es/b.html is the model's
    assert scorer.score(page, links) == pytest.approx([0.0, 0.9, 0.9 * 0.1])
    for link in links:
        scorer.queued(link.url, 0.0)
    assert scorer.state() == {"declared": {"http://h/es/a.html": "de", "http://h/x/a.html": "es"}}
    scorer.dequeued("http://h/x/a.html")  # fetched: its own language is known from then on
    assert scorer.state() == {"declared": {"http://h/es/a.html": "de"}}
    # a declared link the crawler refuses (robots.txt, scope, limits) is never queued: nothing kept for it
    other = _view("http://h/en/b.html", "en", b'<a href="http://elsewhere/es/" hreflang="es">es</a>')
    assert scorer.score(other, other.page.links) == pytest.approx([1.0 * 0.1])  # declared Spanish
    scorer.score(_view("http://h/en/c.html", "en", b""), [])
    assert scorer._declared == {"http://h/es/a.html": "de"}  # noqa: SLF001 - the scorer's memory is the point


# -- a hostile server -------------------------------------------------------------------------------------
def _page(title: str, links: list[str], text: str = "") -> bytes:
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    body = text or "This page is written in plain English so that the language identifier has enough words to read."
    return (
        f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p><ul>{anchors}</ul></body></html>".encode()
    )


HOSTILE_LINKS = [
    "/slow", "/trickle", "/endless", "/bomb", "/loop-a", "/chain/0", "/secret/page", "/always-500", "/flaky", "/malformed",
    "/latin1", "/binary", "/image.png", "http://10.1.2.3/internal", "http://169.254.169.254/latest/meta-data/",
    "http://[::1]:1/x", "/ok",
]  # fmt: skip


_BOMB = gzip.compress(b" " * 50_000_000, compresslevel=9)  # 50 MB that travel as about 50 kB


class HostileHandler(QuietHandler):
    protocol_version = "HTTP/1.1"
    flaky_hits: Counter[str] = Counter()
    request_times: list[tuple[str, float]] = []
    crawl_delay = 0.0

    def do_GET(self):  # noqa: C901 - one branch per hostile behaviour
        path = self.path
        HostileHandler.request_times.append((path, time.monotonic()))
        try:
            if path == "/robots.txt":
                delay = f"Crawl-delay: {self.crawl_delay}\n" if self.crawl_delay else ""
                self.answer(200, f"User-agent: *\nDisallow: /secret/\n{delay}".encode(), "text/plain")
            elif path == "/":
                self.answer(200, _page("Home", HOSTILE_LINKS))
            elif path == "/slow":
                time.sleep(3)
                self.answer(200, _page("Slow", []))
            elif path == "/trickle":  # never silent long enough for the read timeout
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "1000000")
                self.end_headers()
                for _ in range(100):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.2)
            elif path == "/endless":
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = b"<p>" + b"endless " * 1000 + b"</p>"
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            elif path == "/bomb":
                self.answer(200, _BOMB, headers={"Content-Encoding": "gzip"})
            elif path in ("/loop-a", "/loop-b"):
                self.answer(302, b"", headers={"Location": "/loop-b" if path == "/loop-a" else "/loop-a"})
            elif path.startswith("/chain/"):
                n = int(path.rsplit("/", 1)[1])
                self.answer(301, b"", headers={"Location": f"/chain/{n + 1}"})
            elif path == "/always-500":
                self.answer(500, b"<p>broken</p>")
            elif path == "/flaky":
                HostileHandler.flaky_hits[path] += 1
                if HostileHandler.flaky_hits[path] == 1:
                    self.answer(503, b"busy")
                else:
                    self.answer(200, _page("Flaky but fine", []))
            elif path == "/malformed":
                self.answer(200, b"<html><body><p>Unclosed <b>tags <a href='/ok2'>and a link</a><table><tr><td>cell")
            elif path == "/latin1":
                self.answer(200, "<p>Un texto en español sobre la instalación del núcleo.</p>".encode("latin-1"))
            elif path == "/binary":
                self.answer(200, os.urandom(2048), "application/octet-stream")
            elif path in ("/ok", "/ok2"):
                self.answer(200, _page("OK", []))
            else:
                self.answer(404, b"not found")
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def hostile():
    HostileHandler.flaky_hits = Counter()
    HostileHandler.request_times = []
    HostileHandler.crawl_delay = 0.0
    with serving(HostileHandler) as host:
        yield f"http://{host}/"


def _crawl(config: CrawlConfig, pair: PairContext | None = None) -> tuple[Crawler, dict[str, bytes]]:
    shards: dict[str, bytes] = {}

    def upload(path: Path, name: str) -> str:
        shards[name] = path.read_bytes()
        return name

    crawler = Crawler(config, RotatingWarcWriter(upload, 10**9), pair)
    crawler.crawl()
    return crawler, shards


def _responses(shards: dict[str, bytes]) -> list[str]:
    urls = []
    for data in shards.values():
        for record in ArchiveIterator(io.BytesIO(data)):
            if record.rec_type == "response":
                urls.append(record.rec_headers.get_header("WARC-Target-URI"))
    return urls


def test_hostile_server_every_bad_input_is_logged_counted_and_the_crawl_goes_on(hostile):
    config = CrawlConfig(
        seeds=[hostile], allow_private_addresses=LOCAL, delay_seconds=0, read_timeout_seconds=0.5, timeout_seconds=2,
        max_retries=1, retry_backoff_seconds=0.05, max_body_bytes=100_000, max_redirects=3, strategy="bfs",
        allowed_hosts=["*"],
    )  # fmt: skip
    started = time.monotonic()
    crawler, shards = _crawl(config)
    assert time.monotonic() - started < 30
    outcome = {entry.url.removeprefix(hostile.rstrip("/")): entry for entry in crawler.log}
    assert outcome["/"].outcome == "fetched"
    assert outcome["/slow"].outcome == "timeout" and outcome["/slow"].attempts == 2
    assert outcome["/trickle"].outcome == "timeout" and outcome["/trickle"].fetch_seconds < 6
    assert outcome["/endless"].outcome == "fetched" and outcome["/endless"].truncated
    assert outcome["/endless"].bytes == 100_000
    assert outcome["/bomb"].truncated and outcome["/bomb"].bytes == 100_000
    assert outcome["/secret/page"].outcome == "robots_disallowed"
    assert outcome["/always-500"].status == 500 and outcome["/always-500"].attempts == 2
    assert outcome["/flaky"].status == 200 and outcome["/flaky"].attempts == 2
    assert outcome["/malformed"].outcome == "fetched" and outcome["/ok2"].outcome == "fetched"
    assert outcome["/latin1"].detected_language == "es"
    assert outcome["/binary"].outcome == "content_type_refused"
    assert "/image.png" not in outcome
    for private in ("http://10.1.2.3/internal", "http://169.254.169.254/latest/meta-data/", "http://[::1]:1/x"):
        assert outcome[private].outcome == "private_address", private
    assert outcome["/ok"].outcome == "fetched"

    counts = crawler.counts.to_dict()
    assert counts["in"] == counts["kept"] + sum(counts["dropped"].values())
    dropped = counts["dropped"]
    assert dropped["redirect_loop"] == 1 and dropped["too_many_redirects"] == 1
    assert dropped["timeout"] == 2 and dropped["content_type_refused"] == 1 and dropped["robots_disallowed"] == 1
    assert dropped["private_address"] == 3 and dropped["skipped_extension"] == 1
    chain = [path for path in outcome if path.startswith("/chain/")]
    assert chain == ["/chain/0", "/chain/1", "/chain/2", "/chain/3"]  # 3 redirects followed, the 4th refused
    responses = _responses(shards)
    assert len(responses) == len(set(responses)) == counts["kept"]


def test_private_addresses_are_refused_unless_allow_listed(hostile):
    crawler, shards = _crawl(CrawlConfig(seeds=[hostile], delay_seconds=0))
    assert [entry.outcome for entry in crawler.log] == ["private_address"]
    assert crawler.counts.dropped["private_address"] == 1 and not shards


def test_robots_crawl_delay_is_honoured(hostile):
    HostileHandler.crawl_delay = 0.3
    config = CrawlConfig(seeds=[hostile], allow_private_addresses=LOCAL, delay_seconds=0, max_pages=4,
                         per_host_concurrency=4, strategy="bfs", include_paths={"*": ["^/$", "^/ok", "^/malformed"]})  # fmt: skip
    crawler, _ = _crawl(config)
    assert crawler.fetched == 4
    starts = [t for path, t in HostileHandler.request_times if path != "/robots.txt"]
    gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
    assert len(starts) >= 4 and min(gaps) >= 0.28, gaps


def test_limits_paths_pages_per_host_depth_and_time(hostile):
    base = {"seeds": [hostile], "allow_private_addresses": LOCAL, "delay_seconds": 0, "strategy": "bfs", "timeout_seconds": 1,
            "read_timeout_seconds": 0.5, "max_retries": 0}  # fmt: skip
    crawler, _ = _crawl(
        CrawlConfig(**base, exclude_paths={"*": ["^/(slow|trickle|endless|bomb|loop|chain|always|flaky|binary)"]})
    )
    fetched = {e.url.removeprefix(hostile.rstrip("/")) for e in crawler.log if e.outcome == "fetched"}
    assert fetched == {"/", "/malformed", "/latin1", "/ok", "/ok2"}
    assert crawler.counts.dropped["excluded_path"] == 9

    host = hostile.removeprefix("http://").rstrip("/")
    crawler, _ = _crawl(CrawlConfig(**base, include_paths={host: ["^/$", "^/ok"]}))
    assert {e.url for e in crawler.log if e.outcome == "fetched"} == {hostile, hostile + "ok"}

    crawler, _ = _crawl(CrawlConfig(**base, max_pages_per_host=3))
    assert crawler.fetched == 3 and crawler.counts.dropped["host_page_limit"] > 0

    crawler, _ = _crawl(CrawlConfig(**base, max_depth=0))
    assert crawler.fetched == 1 and crawler.counts.dropped["too_deep"] > 0

    crawler, _ = _crawl(CrawlConfig(**base, time_limit_seconds=0.5, concurrency=1))
    assert crawler.stop_reason == "time_limit" and crawler.counts.dropped["not_fetched_time_limit"] > 0


def test_language_scouting_drops_a_host_without_the_target_language(hostile):
    config = CrawlConfig(seeds=[hostile], allow_private_addresses=LOCAL, delay_seconds=0, strategy="bfs", scout_pages=3,
                         concurrency=1, include_paths={"*": ["^/$", "^/ok", "^/malformed", "^/flaky"]})  # fmt: skip
    crawler, _ = _crawl(config, PairContext("en", "de"))
    assert crawler.hosts[hostile.removeprefix("http://").rstrip("/")].dropped == "host_no_target_language"
    assert crawler.fetched == 3 and crawler.counts.dropped["host_no_target_language"] >= 1
    # with Spanish as the target the same host is kept: /latin1 is Spanish
    config = config.model_copy(update={"include_paths": {"*": ["^/$", "^/latin1", "^/ok"]}})
    crawler, _ = _crawl(config, PairContext("en", "es"))
    assert not crawler.hosts[hostile.removeprefix("http://").rstrip("/")].dropped


# -- the local site and real S3 -----------------------------------------------------------------------------
def _context(s3_server, run_id: str, overrides: dict) -> RunContext:
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)
    return run_context(config, ObjectStore(StorageSettings.from_env(s3_server.env()), "bitextflow"), run_id)


def _crawl_log(ctx) -> list[dict]:
    return [
        json.loads(line) for line in gzip.decompress(ctx.store.get_bytes(ctx.key("crawl", "crawl-log.jsonl.gz"))).splitlines()
    ]


def _warc_responses(ctx, keys) -> list[str]:
    return _responses({key: ctx.store.get_bytes(key) for key in keys})


def test_crawl_of_the_local_site_to_s3(site, s3_server):
    ctx = _context(s3_server, "test_crawl_site", {"crawl.seeds": [site.base_url], "crawl.max_pages": 120,
                                                   "crawl.warc_max_bytes": 400_000, "crawl.checkpoint_every_pages": 50})  # fmt: skip
    keys = REGISTRY.run(ctx, "crawl")
    assert len(keys) > 1, "warc_max_bytes should rotate shards"
    log = _crawl_log(ctx)
    fetched = [entry for entry in log if entry["outcome"] == "fetched"]
    assert len(fetched) == 120 and fetched[0]["url"] == site.base_url, "seeds are fetched first"
    assert not [e for e in fetched if "/private/" in e["url"]], "robots.txt Disallow must be honoured"
    assert {"url", "status", "mime", "bytes", "depth", "priority", "parent", "predicted_language", "detected_language",
            "fetch_seconds"} <= set(fetched[1])  # fmt: skip
    assert Counter(e["detected_language"] for e in fetched if e["mime"] == "text/html")["es"] > 30
    assert all(e["parent"] for e in fetched[1:])
    counts = ctx.store.get_json(ctx.key("crawl", "crawl.counts.json"))
    assert counts["kept"] == 120 and counts["in"] == counts["kept"] + sum(counts["dropped"].values())

    responses = requests = infos = 0
    for key in keys:
        for record in ArchiveIterator(io.BytesIO(ctx.store.get_bytes(key))):
            assert record.rec_headers.protocol == "WARC/1.1"
            if record.rec_type == "response":
                responses += 1
                assert record.rec_headers.get_header("WARC-Payload-Digest")
            elif record.rec_type == "request":
                requests += 1
                assert record.rec_headers.get_header("WARC-Concurrent-To")
            else:
                infos += record.rec_type == "warcinfo"
    assert responses == requests == 120 and infos == len(keys)
    # a rerun of the finished task returns the same shards without crawling again
    assert REGISTRY.run(ctx, "crawl") == keys


def test_max_body_is_enforced_while_streaming(site):
    config = CrawlConfig(seeds=[site.base_url], max_pages=1, max_body_bytes=1024, delay_seconds=0, allow_private_addresses=LOCAL)
    crawler, shards = _crawl(config)
    assert crawler.log[0].bytes == 1024 and crawler.log[0].truncated
    records = [r for r in ArchiveIterator(io.BytesIO(next(iter(shards.values())))) if r.rec_type == "response"]
    assert records[0].rec_headers.get_header("WARC-Truncated") == "length"


def _pairs_found(urls: list[str], truth) -> list[int]:
    """After each download, how many true en-es pairs have both sides downloaded."""
    from bitextflow_local.localsite.truth import site_path

    partner = {}
    for en, es in truth.pairs("en", "es"):
        partner[en], partner[es] = es, en
    have, found, curve = set(), 0, []
    for url in urls:
        path = site_path(url)
        have.add(path)
        found += partner.get(path) in have
        curve.append(found)
    return curve


def test_url_rules_finds_pairs_earlier_than_bfs(site, truth):
    found = {}
    for strategy in ("bfs", "url-rules"):
        config = CrawlConfig(seeds=[site.base_url], max_pages=120, delay_seconds=0, allow_private_addresses=LOCAL,
                             strategy=strategy, per_host_concurrency=4, concurrency=4)  # fmt: skip
        crawler, _ = _crawl(config, PairContext("en", "es"))
        found[strategy] = _pairs_found([e.url for e in crawler.log if e.outcome == "fetched"], truth)[-1]
    assert found["url-rules"] >= 1.5 * found["bfs"], found


RESUME_SCRIPT = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
logging.getLogger("bitextflow.crawl.crawler").setLevel(logging.DEBUG)
from pathlib import Path
from bitextflow.catalog.status import collect_counts
from bitextflow.stages.base import RunContext, shard_name
from bitextflow.stages.classify import Classify
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline
from bitextflow.stages.score import Score
from bitextflow.storage.layout import stage_key
from bitextflow.config import load_pair_config
from bitextflow.storage import ObjectStore
config = load_pair_config(Path(sys.argv[1])).with_overrides(__import__("json").loads(sys.argv[2]))
ctx = run_context(config, ObjectStore.from_env("bitextflow"), sys.argv[3])
print("KEYS", REGISTRY.run(ctx, "crawl"), flush=True)
"""


def test_crawl_killed_with_sigkill_resumes_with_no_page_lost_or_fetched_twice(site, s3_server):
    overrides = {"crawl.seeds": [site.base_url], "crawl.max_pages": 5000, "crawl.delay_seconds": 0.01,
                 "crawl.per_host_concurrency": 2, "crawl.checkpoint_every_pages": 40, "crawl.warc_max_bytes": 1_000_000}  # fmt: skip
    ctx = _context(s3_server, "test_crawl_resume", overrides)
    process = subprocess.Popen(
        [sys.executable, "-c", RESUME_SCRIPT, str(ROOT / "include" / "pairs" / "en-es.yaml"), json.dumps(overrides), ctx.run_id],
        env={**os.environ, **s3_server.env()}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    state_key = ctx.key("crawl", STATE_NAME)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        progress = {"committed": 0, "fetched": 0}

        def between_checkpoints() -> bool:
            assert process.poll() is None, "the crawl ended before it could be killed: " + "".join(lines)[-2000:]
            if ctx.store.exists(state_key):
                progress["committed"] = json.loads(gzip.decompress(ctx.store.get_bytes(state_key)))["fetched"]
                progress["fetched"] = sum("crawl: fetched " in line for line in list(lines))
            # kill between checkpoints: some pages fetched but not committed
            return progress["committed"] >= 120 and progress["fetched"] >= progress["committed"] + 5

        wait_for(between_checkpoints, "5 pages fetched past a checkpoint of 120 or more", seen=lambda: progress, poll_s=0.02)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        reader.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    output = "".join(lines)
    assert process.returncode == -signal.SIGKILL and "KEYS" not in output
    killed_at = json.loads(gzip.decompress(ctx.store.get_bytes(state_key)))
    assert not killed_at["complete"] and killed_at["fetched"] >= 120
    fetched_before_kill = output.count("crawl: fetched ")
    assert fetched_before_kill > killed_at["fetched"], "the kill should lose pages fetched after the last checkpoint"
    # a checkpoint writes the URLs seen since the last one, never the whole seen-set again
    checkpoints = ObjectStoreCheckpoints(ctx.store, lambda name: ctx.key("crawl", name))
    parts = [checkpoints.load_seen(part) for part in range(killed_at["seen_parts"])]
    seen = [url for part in parts for url in part]
    assert "seen" not in killed_at and len(parts) >= 3 and all(parts)
    assert len(seen) == len(set(seen)) and len(seen) >= killed_at["fetched"]

    resumed_keys = REGISTRY.run(ctx, "crawl")
    resumed = _warc_responses(ctx, resumed_keys)
    assert len(resumed) == len(set(resumed)), [u for u, n in Counter(resumed).items() if n > 1][:5]
    all_shards = [k for k in ctx.store.list_keys(ctx.key("crawl", "")) if k.endswith(".warc.gz")]
    assert sorted(all_shards) == sorted(resumed_keys)

    reference = _context(s3_server, "test_crawl_reference", overrides)
    reference_keys = REGISTRY.run(reference, "crawl")
    expected = _warc_responses(reference, reference_keys)
    assert set(resumed) == set(expected), (set(expected) - set(resumed), set(resumed) - set(expected))

    log = _crawl_log(ctx)
    assert sorted(e["url"] for e in log if e["outcome"] == "fetched") == sorted(resumed)
    counts = ctx.store.get_json(ctx.key("crawl", "crawl.counts.json"))
    assert counts["kept"] == len(resumed) and counts["in"] == counts["kept"] + sum(counts["dropped"].values())


# -- URL pairs --------------------------------------------------------------------------------------------
def test_match_url_pairs_passes_from_general_to_pair_specific_markers():
    from bitextflow.crawl.urlpairs import match_url_pairs, pair_markers

    english = ["http://a.org/en/x.html", "http://www.b.org/news-e/6-4.htm", "http://c.org/musiqueen/1.asp",
               "http://d.org/englisch/start.htm", "http://e.org/p?id=1", "http://e.org/p?id=2"]  # fmt: skip
    french = ["http://a.org/fr/x.html", "http://b.org/news-f/6-4.htm", "http://c.org/musiquefr/1.asp",
              "http://d.org/franzoesisch/start.htm", "http://e.org/p?id=1&lang=fr", "http://e.org/p?id=3"]  # fmt: skip
    matches = match_url_pairs(english, french, "en", "fr")
    assert sorted((a.split("/")[2], name) for a, _b, name in matches) == [
        ("a.org", "url_key"), ("c.org", "glued_markers"), ("d.org", "pair_markers"), ("e.org", "url_key"),
        ("www.b.org", "pair_markers"),
    ]  # fmt: skip
    assert all(a.split("/")[-1][:2] == b.split("/")[-1][:2] for a, b, _ in matches)
    # an initial shared by both languages marks neither
    assert "e" not in pair_markers("en", "es") and {"e", "f", "anglais", "englisch"} <= set(pair_markers("en", "fr"))


def test_url_rules_recall_on_the_wmt16_gold():
    from bitextflow.crawl.urlpairs import match_url_pairs
    from tests.support import eval_dir

    lines = (eval_dir("wmt16_docalign_test_gold") / "test.pairs").read_text().splitlines()
    gold = {tuple(line.split("\t")) for line in lines}
    matches = match_url_pairs([a for a, _ in gold], [b for _, b in gold], "en", "fr")
    correct = sum((a, b) in gold for a, b, _ in matches)
    assert correct / len(gold) >= 0.58 and correct == len(matches)


def test_smart_settings_are_the_crawl_config_options():
    from bitextflow.config import CrawlConfig

    seeds = ["http://127.0.0.1:1/"]
    assert SmartSettings() == SmartSettings.from_config(CrawlConfig(seeds=seeds))
    tuned = CrawlConfig(seeds=seeds, smart_promote_above=0.3, smart_rerank_similar=2, smart_common_token=5)
    assert SmartSettings.from_config(tuned) == SmartSettings(promote_above=0.3, rerank_similar=2, common_token=5)
