"""The opt-outs of a run from a Common Crawl index without a store: the admission point's order, which robots.txt
capture an origin is judged by, and what a fetched record says of itself. Records are real gzipped WARC records."""

from __future__ import annotations

import pyarrow as pa

from bitextflow.catalog.cc_record_checks import captured_site_files, declared_optout
from bitextflow.catalog.ccindex import RECORDS, Admission
from bitextflow.config import PolicyConfig
from bitextflow.counts import StageCounts
from bitextflow.policy import OptOuts, SiteFiles
from bitextflow_local.localsite.warcs import WarcPage, warc_record


def record(url: str, status: str = "200 OK", headers: tuple[tuple[str, str], ...] = (), head: str = "", body=None) -> bytes:
    content_type = "text/plain" if url.endswith("/robots.txt") else "text/html; charset=utf-8"
    return warc_record(WarcPage(url, "en", "A page of text."), status, content_type, body, headers, head)


def rows(*urls: str) -> pa.Table:
    return pa.table(
        {"partition": [0] * len(urls), "url": list(urls), "domain": ["a.org"] * len(urls),
         "language": [url.split("/")[3] for url in urls], "crawl": ["A"] * len(urls),
         "warc_filename": ["w.warc.gz"] * len(urls), "warc_record_offset": list(range(len(urls))),
         "warc_record_length": [1] * len(urls)},
        schema=RECORDS,
    )  # fmt: skip


def test_admission_judges_the_site_before_the_cap_so_that_refused_pages_take_no_place():
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles("http://a.org", b"User-agent: GPTBot\nDisallow: /es/secret\n"))
    counts = StageCounts("cc_fetch")
    admission = Admission(cap=1, counts=counts, optouts=optouts)
    batch = rows("http://a.org/es/secret-1", "http://a.org/es/2", "http://a.org/es/3", "http://b.org/en/1")
    assert [row["url"] for row in admission.admitted(batch)] == ["http://a.org/es/2"]
    assert dict(counts.dropped) == {"optout_robots": 2, "site_language_cap": 1}, "b.org's robots.txt was never learnt"


def test_an_origin_is_judged_by_its_capture_in_the_first_crawl_listed_and_a_redirect_by_its_target():
    captures = [
        {"url": "http://a.org/robots.txt", "crawl": "OLD"},
        {"url": "http://a.org/robots.txt", "crawl": "NEW"},
        {"url": "http://b.org/robots.txt", "crawl": "NEW"},
        {"url": "https://b.org/robots.txt", "crawl": "NEW"},
        {"url": "http://c.org/robots.txt", "crawl": "NEW"},
    ]
    records = [
        record("http://a.org/robots.txt", body=b"User-agent: *\nDisallow: /\n"),
        record("http://a.org/robots.txt", body=b"User-agent: *\nAllow: /\n"),
        record("http://b.org/robots.txt", "301 Moved Permanently", (("Location", "https://b.org/robots.txt"),), body=b""),
        record("https://b.org/robots.txt", body=b"User-agent: CCBot\nDisallow: /\n"),
        None,  # the record is missing: c.org has no capture
    ]
    found = captured_site_files(captures, records, ["NEW", "OLD"]).site_files(["http://a.org", "http://b.org", "http://c.org"])
    assert set(found) == {"http://a.org", "http://b.org"}
    assert found["http://a.org"].robots == b"User-agent: *\nAllow: /\n", "the newest crawl, listed first, counts"
    assert found["http://b.org"].robots == b"User-agent: CCBot\nDisallow: /\n"


def test_a_fetched_page_that_reserves_itself_or_says_noai_is_set_aside():
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles("http://a.org", 404))
    reserved = record("http://a.org/en/1", head='<meta name="tdm-reservation" content="1">')
    noai = record("http://a.org/en/2", headers=(("X-Robots-Tag", "noai"),))
    assert declared_optout(optouts, reserved, 1 << 20) == "optout_tdmrep"
    assert declared_optout(optouts, noai, 1 << 20) == "optout_noai"
    assert declared_optout(optouts, record("http://a.org/en/3"), 1 << 20) is None
    assert declared_optout(optouts, record("http://a.org/en/4", "404 Not Found", (("X-Robots-Tag", "noai"),)), 1 << 20) is None
    assert declared_optout(OptOuts(PolicyConfig(honour_noai=False)), noai, 1 << 20) is None
    assert declared_optout(optouts, b"not a WARC record", 1 << 20) is None, "left to extract, which counts it"
