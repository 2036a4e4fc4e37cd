"""A crawl of two hosts whose robots.txt, tdmrep.json and sitemaps are hostile in the ways of docs/security.md
("Crawling the web"): the crawl ends within its page budget and time, fetches every well-formed page the policy allows,
and counts each refused file by reason. One throwaway server on 127.0.0.1 answers as both hosts (``127.0.0.1`` and
``localhost``), telling them apart by the Host header."""

from __future__ import annotations

import gzip

from bitextflow.config import CrawlConfig, PolicyConfig
from bitextflow.crawl.crawler import Crawler
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.policy import OptOuts
from tests.support import QuietHandler, cpu_clock, serving

PAGES = [f"/en/page{n}.html" for n in range(6)]
#: the sitemap lists these besides the pages; the frontier holds at most FRONTIER of one host
FRONTIER = 40


def _page(path: str) -> bytes:
    links = "".join(f'<a href="{other}">{other}</a> ' for other in PAGES)
    return f"<html><head><title>{path}</title></head><body><p>Some English text on {path}.</p>{links}</body></html>".encode()


class _Hostile(QuietHandler):
    protocol_version = "HTTP/1.1"
    requests: list[str] = []

    def do_GET(self) -> None:
        host = self.headers.get("Host", "")
        other = host.replace("127.0.0.1", "localhost") if host.startswith("127.") else host.replace("localhost", "127.0.0.1")
        _Hostile.requests.append(f"{host}{self.path}")
        deep_host = host.startswith("127.")
        if self.path == "/robots.txt":  # long and repetitive, with the sitemaps it names
            rules = b"User-agent: *\n" + b"Disallow: /nothing-here/*a*a*a*a*a*a*a*a*a*a*a*b$\n" * 2_000
            self.answer(200, rules + b"Sitemap: /sitemap.xml.gz\nSitemap: /sitemap.xml\n", "text/plain")
        elif self.path == "/.well-known/tdmrep.json":
            if deep_host:  # a location of a dozen wildcards matched against every link (none matches)
                wild = '[{"location": "/' + "*a" * 12 + 'b", "tdm-reservation": 1}]'
                self.answer(200, wild.encode(), "application/json")
            else:  # a server error on every try: no answer, which reserves the site as robots.txt's would disallow it
                self.answer(503, b"busy", "text/plain")
        elif self.path == "/sitemap.xml.gz":  # 1.5 KB of gzip, 1.28 MB of newlines in one <loc>
            body = b"<urlset><url><loc>" + b"a\n" * 640_000 + b"</loc></url>"
            body += b"".join(f"<url><loc>{page}</loc></url>".encode() for page in PAGES)
            body += b"".join(f"<url><loc>/filler/{n}.html</loc></url>".encode() for n in range(FRONTIER * 2))
            self.answer(200, gzip.compress(body + b"</urlset>"), "application/gzip")
        elif self.path == "/sitemap.xml":  # another host's pages declared as this host's versions
            alternate = f'<xhtml:link rel="alternate" hreflang="es" href="http://{other}/es/stolen.html"/>'
            body = f'<urlset xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>/en/page0.html</loc>{alternate}</url>'
            body += f"<url><loc>http://{other}/en/theirs.html</loc></url></urlset>"
            self.answer(200, body.encode(), "application/xml")
        elif self.path in PAGES or self.path.startswith("/filler/"):
            self.answer(200, _page(self.path))
        else:
            self.answer(404, b"no")


def test_a_hostile_site_is_crawled_within_its_budget_and_every_refusal_is_counted() -> None:
    _Hostile.requests = []
    with serving(_Hostile) as address:
        port = address.rsplit(":", 1)[1]
        config = CrawlConfig(
            seeds=[f"http://127.0.0.1:{port}/en/page0.html", f"http://localhost:{port}/en/page0.html"],
            allow_private_addresses=[f"127.0.0.1:{port}", f"[::1]:{port}"],
            delay_seconds=0, strategy="bfs", scout_pages=0, timeout_seconds=5, max_pages=200, time_limit_seconds=60,
            max_frontier_per_host=FRONTIER, max_retries=1, retry_backoff_seconds=0.01,
        )  # fmt: skip
        crawler = Crawler(config, RotatingWarcWriter(lambda path, name: name, 10**9), optouts=OptOuts(PolicyConfig()))
        with cpu_clock() as seconds:
            log = crawler.crawl()
    assert seconds() < 20, f"the crawl took {seconds():.1f} s of CPU"
    dropped = crawler.counts.dropped
    fetched = {line.url for line in log if line.outcome == "fetched"}
    # 127.0.0.1: every well-formed page fetched, the sitemaps read despite the long element
    assert {f"http://127.0.0.1:{port}{page}" for page in PAGES} <= fetched
    # localhost's tdmrep.json answered 503 on both tries: no answer, every page reserved, the file counted
    assert dropped["tdmrep_unreachable"] == 1, dict(dropped)
    assert not [url for url in fetched if url.startswith("http://localhost") and "/en/" in url]
    assert dropped["optout_tdmrep"] >= 1
    assert sum(1 for request in _Hostile.requests if request.startswith("localhost") and "tdmrep" in request) == 2
    # each host's sitemap.xml named the other host's page and alternate: refused, counted
    assert dropped["sitemap_off_host"] >= 2, dict(dropped)
    assert f"http://localhost:{port}/en/theirs.html" not in fetched and not any("stolen" in url for url in fetched)
    # the sitemap listed more of 127.0.0.1 than its frontier holds
    assert dropped["frontier_host_limit"] > 0
    assert crawler.counts.items_in == crawler.counts.kept + crawler.counts.dropped_total
    assert crawler.fetched <= config.max_pages
