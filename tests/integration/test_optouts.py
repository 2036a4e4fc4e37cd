"""Opt-outs and machine-translated pages end to end: a tiny site on 127.0.0.1 crawled through the crawl stage, and
generated WARC files (with robots.txt captures) ingested, on the real S3 server; what is set aside, and the counts.

The site and the WARC files carry every signal the policy honours, hostile spellings included; the tables of the
policy's own decisions are in tests/unit/test_optout_policy.py.
"""

from __future__ import annotations

import gzip
import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.config import load_pair_config
from bitextflow.stages.registry import REGISTRY, run_context
from tests.support import ROOT

TEXT = (
    "The package manager installs the archives of the system and keeps the configuration files that you changed. "
    "Read the manual of each package before you edit its configuration by hand, and keep a copy of the old files."
)
ROBOTS = b"""\xef\xbb\xbfUser-agent: *
Disallow: /private/

USER-AGENT :  gptbot
Disallow:/no-gpt/

# a second group for the same agent: RFC 9309 merges them
user-agent: GPTBot
disallow: /also-no-gpt/

User-agent: ClaudeBot
User-agent: CCBot
Disallow: /*.pdf.html$
"""
TDMREP = b'[{"location": "/reserved/", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0}]'


def html(title: str, head: str = "", attributes: str = 'lang="en"', links: tuple[str, ...] = ()) -> bytes:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f"<html {attributes}><head><title>{title}</title>{head}</head><body><h1>{title}</h1><p>{TEXT}</p>"
        f"<p>{title}: {TEXT}</p><ul>{anchors}</ul></body></html>"
    ).encode()


#: path -> (headers, body) of the tiny site; the home links to every page, the outcome of each in its name
PAGES: dict[str, tuple[dict[str, str], bytes]] = {
    "/allowed.html": ({}, html("Allowed")),
    "/private/own-agent.html": ({}, html("Refused to every crawler")),
    "/no-gpt/a.html": ({}, html("Refused to GPTBot")),
    "/also-no-gpt/a.html": ({}, html("Refused to GPTBot by its second group")),
    "/manual.pdf.html": ({}, html("Refused to CCBot and ClaudeBot by a wildcard")),
    "/manual.pdf.html?print=1": ({}, html("Allowed past the end anchor")),
    "/reserved/a.html": ({}, html("Reserved by tdmrep.json")),
    "/tdm-header.html": ({"TDM-Reservation": " 1"}, html("Reserved by its header")),
    "/tdm-meta.html": ({}, html("Reserved by its meta", '<meta name="tdm-reservation" content="1">')),
    "/tdm-lifted.html": ({"tdm-reservation": "1"}, html("Lifted by its meta", '<meta name="tdm-reservation" content="0">')),
    "/noai-meta.html": ({}, html("noai meta", '<meta name="Robots" content="index, NoAI">')),
    "/noai-header.html": ({"X-Robots-Tag": "GPTBot: noai"}, html("noai header")),
    "/noimageai.html": ({}, html("Images reserved only", '<meta name="robots" content="noimageai">')),
    "/mt.html": ({}, html("Machine translated", attributes='lang="es-x-mtfrom-en"')),
}
CRAWL_OUTCOMES = {
    "/allowed.html": "fetched",
    "/private/own-agent.html": "robots_disallowed",
    "/no-gpt/a.html": "optout_robots",
    "/also-no-gpt/a.html": "optout_robots",
    "/manual.pdf.html": "optout_robots",
    "/manual.pdf.html?print=1": "fetched",
    "/reserved/a.html": "optout_tdmrep",
    "/tdm-header.html": "optout_tdmrep",
    "/tdm-meta.html": "optout_tdmrep",
    "/tdm-lifted.html": "fetched",
    "/noai-meta.html": "optout_noai",
    "/noai-header.html": "optout_noai",
    "/noimageai.html": "fetched",
    "/mt.html": "fetched",
}


class TinySite(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requested: list[str] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        TinySite.requested.append(self.path)
        if self.path == "/":
            self._send(200, {}, html("Home", links=tuple(PAGES)))
        elif self.path == "/robots.txt":
            self._send(200, {"Content-Type": "text/plain"}, ROBOTS)
        elif self.path == "/.well-known/tdmrep.json":
            self._send(200, {"Content-Type": "application/json"}, TDMREP)
        elif self.path in PAGES:
            self._send(200, *PAGES[self.path])
        else:
            self._send(404, {}, b"not found")

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "text/html; charset=utf-8", **headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tiny_site() -> Iterator[str]:
    TinySite.requested = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), TinySite)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _context(store, run_id: str, overrides: dict):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)
    return run_context(config, store, run_id)


def test_the_crawl_sets_aside_every_opted_out_page_and_counts_it_by_reason(tiny_site, store):
    ctx = _context(
        store, "test_optouts_crawl", {"crawl.seeds": [tiny_site + "/"], "crawl.strategy": "bfs", "crawl.scout_pages": 0}
    )
    keys = REGISTRY.run(ctx, "crawl")

    log = [json.loads(line) for line in gzip.decompress(store.get_bytes(ctx.key("crawl", "crawl-log.jsonl.gz"))).splitlines()]
    outcomes = {entry["url"].removeprefix(tiny_site): entry["outcome"] for entry in log}
    assert {path: outcomes.get(path) for path in CRAWL_OUTCOMES} == CRAWL_OUTCOMES
    # what a site's files refuse is never requested; what only a page says is fetched, then left out of the WARC
    assert not {"/private/own-agent.html", "/no-gpt/a.html", "/reserved/a.html", "/manual.pdf.html"} & set(TinySite.requested)
    assert TinySite.requested[:2] == ["/robots.txt", "/.well-known/tdmrep.json"]
    stored = []
    for key in keys:
        for record in ArchiveIterator(io.BytesIO(store.get_bytes(key))):
            if record.rec_type == "response":
                stored.append(record.rec_headers.get_header("WARC-Target-URI").removeprefix(tiny_site))
    assert sorted(stored) == sorted(["/", *(path for path, outcome in CRAWL_OUTCOMES.items() if outcome == "fetched")])

    counts = store.get_json(ctx.key("crawl", "crawl.counts.json"))
    assert counts["dropped"] == {"optout_noai": 2, "optout_robots": 3, "optout_tdmrep": 3, "robots_disallowed": 1}
    assert counts["in"] == counts["kept"] + sum(counts["dropped"].values()) and counts["kept"] == len(stored)
