"""Opt-outs and machine-translated pages end to end: a tiny site on 127.0.0.1 crawled through the crawl stage, and
generated WARC files (with robots.txt captures) ingested, on the real S3 server; what is set aside, and the counts.

The site and the WARC files carry every signal the policy honours, hostile spellings included; the tables of the
policy's own decisions are in tests/unit/test_optout_policy.py.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterator

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from bitextflow.config import load_pair_config
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage.tables import read_table
from tests.support import ROOT, QuietHandler, serving

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


class TinySite(QuietHandler):
    protocol_version = "HTTP/1.1"
    requested: list[str] = []

    def do_GET(self):
        TinySite.requested.append(self.path)
        if self.path == "/":
            self.answer(200, html("Home", links=tuple(PAGES)))
        elif self.path == "/robots.txt":
            self.answer(200, ROBOTS, "text/plain")
        elif self.path == "/.well-known/tdmrep.json":
            self.answer(200, TDMREP, "application/json")
        elif self.path in PAGES:
            headers, body = PAGES[self.path]
            self.answer(200, body, headers=headers)
        else:
            self.answer(404, b"not found")


@pytest.fixture
def tiny_site() -> Iterator[str]:
    TinySite.requested = []
    with serving(TinySite) as host:
        yield f"http://{host}"


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
    # the site names no sitemap and has no /sitemap.xml: the crawler's guess is counted, not stored
    assert counts["dropped"] == {
        "optout_noai": 2, "optout_robots": 3, "optout_tdmrep": 3, "robots_disallowed": 1, "sitemap_unavailable": 1
    }  # fmt: skip
    assert counts["in"] == counts["kept"] + sum(counts["dropped"].values()) and counts["kept"] == len(stored)

    # the machine-translated page is crawled (no opt-out) and flagged at extraction, where it is set aside
    (documents,) = REGISTRY.run(ctx, "extract", keys)
    assert "/mt.html" not in {url.removeprefix(tiny_site) for url in read_table(store, documents)["url"]}
    rejected = read_table(store, documents.replace(".documents.parquet", ".documents.rejected.parquet"))
    assert rejected.set_index("drop_reason").loc["machine_translated", "machine_translation"] == "lang-x-mtfrom"
    assert store.get_json(ctx.key("extract", "crawl-00000.documents.counts.json"))["dropped"]["machine_translated"] == 1


# -- ingest: generated WARC files with robots.txt captures ------------------------------------------------------------
def warc(records: list[tuple[str, str, dict[str, str], bytes]]) -> bytes:
    """(url, status line, headers, body) responses as a gzipped WARC file, as other crawlers write them."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="1.1")
    for url, status, headers, body in records:
        http_headers = StatusAndHeaders(
            status, list({"Content-Type": "text/html; charset=utf-8", **headers}.items()), protocol="HTTP/1.1"
        )
        writer.write_record(
            writer.create_warc_record(url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http_headers)
        )
    return buffer.getvalue()


def ok(url: str, body: bytes, **headers: str) -> tuple[str, str, dict[str, str], bytes]:
    return url, "200 OK", {name.replace("_", "-"): value for name, value in headers.items()}, body


A = "http://a.example"
TEXT_PLAIN = {"Content-Type": "text/plain"}
#: one shard: site a's pages and, after them, the robots.txt and tdmrep.json the same crawl captured; pages of sites
#: whose robots.txt is in the crawl's robotstxt file (b, c, d) or nowhere (the tiny site, fetched)
SHARD_ONE = [
    ok(f"{A}/ok.html", html("Allowed")),
    ok(f"{A}/private/a.html", html("Refused to every crawler")),
    ok(f"{A}/no-gpt/a.html", html("Refused to GPTBot")),
    ok(f"{A}/reserved/a.html", html("Reserved by the site file")),
    ok(f"{A}/reserved/lifted.html", html("Lifted by its meta", '<meta name="tdm-reservation" content="0">')),
    ok(f"{A}/tdm-header.html", html("Reserved by its header"), tdm_reservation="1"),
    ok(f"{A}/noai.html", html("noai meta", '<meta name="robots" content="noai">')),
    ok(f"{A}/noai-header.html", html("noai header"), X_Robots_Tag="noai, noimageai"),
    ok(f"{A}/mt.html", html("Machine translated", attributes='lang="es-x-mtfrom-en"')),
    ok(f"{A}/weglot.html", html("Served by Weglot", '<script src="https://cdn.weglot.com/weglot.min.js"></script>')),
    (
        f"{A}/robots.txt",
        "200 OK",
        TEXT_PLAIN,
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /private/\n\nuser-agent: GPTBot\ndisallow: /no-gpt/\n",
    ),
    (
        f"{A}/.well-known/tdmrep.json",
        "200 OK",
        {"Content-Type": "application/json"},
        b'[{"location": "/reserved/", "tdm-reservation": 1}]',
    ),
    ok("http://b.example/page.html", html("Refused to CCBot through a redirected robots.txt")),
    ok("http://c.example/page.html", html("robots.txt answered 503")),
    ok("http://d.example/page.html", html("robots.txt answered 404")),
]
ROBOTSTXT = [  # Common Crawl's robotstxt files hold responses like these
    ("http://b.example/robots.txt", "301 Moved Permanently", {"Location": "https://b.example/robots.txt", **TEXT_PLAIN}, b""),
    ("https://b.example/robots.txt", "200 OK", TEXT_PLAIN, b"User-agent: CCBot\nDisallow: /\n"),
    ("http://c.example/robots.txt", "503 Service Unavailable", TEXT_PLAIN, b"busy"),
    ("http://d.example/robots.txt", "404 Not Found", TEXT_PLAIN, b"no such file"),
]
INGEST_KEPT = {"/ok.html", "/reserved/lifted.html", "http://d.example/page.html", "/allowed.html"}


def test_ingested_pages_are_judged_by_their_captured_or_fetched_robots_txt_and_their_markup(tiny_site, store):
    store.put_bytes("ingest-optouts/pages/one.warc.gz", warc([*SHARD_ONE, ok(f"{tiny_site}/allowed.html", html("Allowed by the fetched robots.txt")),
                                                              ok(f"{tiny_site}/private/x.html", html("Refused by the fetched robots.txt"))]))  # fmt: skip
    store.put_bytes("ingest-optouts/pages/two.warc.gz", warc([ok(f"{tiny_site}/private/y.html", html("The fetch is cached"))]))
    store.put_bytes("ingest-optouts/robotstxt/CC-MAIN-robotstxt-00000.warc.gz", warc(ROBOTSTXT))
    ctx = _context(
        store, "test_optouts_ingest",
        {"crawl.seeds": [], "crawl.warcs": ["ingest-optouts/pages/"], "policy.robots_warcs": ["ingest-optouts/robotstxt/"]},
    )  # fmt: skip
    shards = REGISTRY.run(ctx, "crawl")
    assert len(shards) == 2
    captured = gzip.decompress(store.get_bytes(ctx.key("crawl", "site-files.jsonl.gz"))).decode().splitlines()
    assert [json.loads(line)["origin"] for line in captured] == [
        "http://b.example",
        "http://c.example",
        "http://d.example",
        "https://b.example",
    ]

    documents = [REGISTRY.run(ctx, "extract", [key])[0] for key in shards]
    kept = {url.removeprefix(A).removeprefix(tiny_site) for key in documents for url in read_table(store, key)["url"]}
    assert kept == INGEST_KEPT
    counts = store.get_json(ctx.key("extract", "one.documents.counts.json"))
    assert counts["dropped"] == {
        "optout_robots": 5,  # a: every crawler, GPTBot; b: CCBot behind a redirect; c: 503; the tiny site's Disallow
        "optout_tdmrep": 2,  # the site file; a header
        "optout_noai": 2,  # a meta; a header
        "machine_translated": 2,
        "not_html": 2,  # the captures themselves
    }
    assert store.get_json(ctx.key("extract", "two.documents.counts.json"))["dropped"] == {"optout_robots": 1}
    assert TinySite.requested == ["/robots.txt", "/.well-known/tdmrep.json"], "fetched once, then cached in the run"
    assert store.list_keys(ctx.key("crawl", "site-files/")) == [
        ctx.key("crawl", "site-files/http~3A~2F~2F127.0.0.1~3A" + tiny_site.rsplit(":", 1)[1] + ".json")
    ]

    rejected = read_table(store, ctx.key("extract", "one.documents.rejected.parquet"))
    flagged = rejected[rejected["drop_reason"] == "machine_translated"]
    assert dict(zip(flagged["url"].str.removeprefix(A), flagged["machine_translation"], strict=True)) == {
        "/mt.html": "lang-x-mtfrom", "/weglot.html": "weglot",
    }  # fmt: skip


@pytest.mark.parametrize(("stance", "kept"), [("allow", 1), ("disallow", 0)])
def test_an_offline_deployment_chooses_what_an_unknown_robots_txt_means(store, stance, kept):
    store.put_bytes(
        f"ingest-offline-{stance}/one.warc.gz", warc([ok("http://unknown.example/page.html", html("Nobody captured robots.txt"))])
    )
    ctx = _context(store, f"test_optouts_{stance}", {"crawl.seeds": [], "crawl.warcs": [f"ingest-offline-{stance}/"],
                                                      "policy.unknown_robots_on_ingest": stance})  # fmt: skip
    (documents,) = REGISTRY.run(ctx, "extract", REGISTRY.run(ctx, "crawl"))
    assert len(read_table(store, documents)) == kept
    assert store.get_json(ctx.key("extract", "one.documents.counts.json"))["dropped"] == ({} if kept else {"optout_robots": 1})


def test_machine_translated_pages_are_aligned_when_the_deployment_says_so(store):
    store.put_bytes(
        "ingest-mt/one.warc.gz", warc([ok("http://mt.example/page.html", html("MT", attributes='lang="es-x-mtfrom-en"'))])
    )
    ctx = _context(store, "test_optouts_mt", {"crawl.seeds": [], "crawl.warcs": ["ingest-mt/"], "policy.align_machine_translated": True,
                                              "policy.unknown_robots_on_ingest": "allow"})  # fmt: skip
    (documents,) = REGISTRY.run(ctx, "extract", REGISTRY.run(ctx, "crawl"))
    assert list(read_table(store, documents)["machine_translation"]) == ["lang-x-mtfrom"]
