"""A hostile Common Crawl index (issue 39, item 10) without a store: rows whose ``warc_filename`` climbs out of
``warc_root``, whose offset or length S3 cannot range over (it answers ``bytes=10-9`` with the whole object) or whose
length is no record's, and rows pointing at another page's record. Each is refused by reason before any request
(cc_records, the admission point, the fetch) or once fetched (``record_url_mismatch``); records are real gzipped WARC
records."""

from __future__ import annotations

import pyarrow as pa
import pytest

from bitextflow.catalog.cc_locations import located, location_problem, location_verdicts
from bitextflow.catalog.cc_record_checks import captured_site_files, record_verdict
from bitextflow.catalog.ccindex import RECORDS, Admission
from bitextflow.config import PolicyConfig
from bitextflow.counts import StageCounts
from bitextflow.policy import OptOuts, SiteFiles
from bitextflow_local.localsite.warcs import WarcPage, warc_record

GOOD = "crawl-data/CC-MAIN-2024-33/segments/1722640353668.0/warc/CC-MAIN-20240802234508-20240803024508-00000.warc.gz"
MAX = 10_000_000

HOSTILE_ROWS = [
    # (warc_filename, offset, length, reason)
    ("../other-bucket-prefix/secret.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data/../../x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data/./x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("/absolute/x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data//x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data/%2e%2e/x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data\\..\\x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data/x.warc.gz\n", 0, 100, "index_warc_filename_invalid"),
    ("crawl-data/x.parquet", 0, 100, "index_warc_filename_invalid"),
    ("", 0, 100, "index_warc_filename_invalid"),
    (None, 0, 100, "index_warc_filename_invalid"),
    ("a/" * 600 + "x.warc.gz", 0, 100, "index_warc_filename_invalid"),
    (GOOD, -1, 100, "index_offset_invalid"),
    (GOOD, None, 100, "index_offset_invalid"),
    (GOOD, 0, 0, "index_length_invalid"),
    (GOOD, 10, -5, "index_length_invalid"),
    (GOOD, 10, None, "index_length_invalid"),
    (GOOD, 10, MAX + 1, "index_length_too_large"),
    (GOOD, 2**62, 2**62, "index_length_too_large"),
]


@pytest.mark.parametrize(("filename", "offset", "length", "reason"), HOSTILE_ROWS)
def test_a_row_no_record_can_be_fetched_from_is_refused_by_reason(filename, offset, length, reason):
    assert location_problem(filename, offset, length, MAX) == reason


def test_common_crawls_own_locations_pass():
    assert location_problem(GOOD, 0, 1, MAX) is None
    assert location_problem("crawl-data/CC-MAIN-2099-01/segments/0/robotstxt/CC-MAIN-2099-01-00000.warc.gz", 7, MAX, MAX) is None


def rows(*locations: tuple[object, object, object], urls: list[str] | None = None) -> pa.Table:
    urls = urls or [f"http://a.org/en/{n}" for n in range(len(locations))]
    return pa.table(
        {"partition": [0] * len(locations), "url": urls, "domain": ["a.org"] * len(locations),
         "language": ["en"] * len(locations), "crawl": ["A"] * len(locations),
         "warc_filename": [location[0] for location in locations],
         "warc_record_offset": [location[1] for location in locations],
         "warc_record_length": [location[2] for location in locations]},
        schema=RECORDS,
    )  # fmt: skip


def test_cc_records_drops_the_rows_by_reason_as_one_row_would_be_judged():
    table = rows(*[(f, o, n) for f, o, n, _ in HOSTILE_ROWS], (GOOD, 0, 100))
    assert location_verdicts(table, MAX).to_pylist() == [reason for *_, reason in HOSTILE_ROWS] + [None]
    counts = StageCounts("cc_records")
    counts.seen(table.num_rows)
    kept = located(table, MAX, counts)
    counts.keep(kept.num_rows)
    assert kept["warc_filename"].to_pylist() == [GOOD]
    assert counts.items_in == counts.kept + counts.dropped_total
    assert counts.dropped == {
        "index_warc_filename_invalid": 12, "index_offset_invalid": 2, "index_length_invalid": 3, "index_length_too_large": 2,
    }  # fmt: skip


def test_an_invalid_row_takes_no_place_at_the_admission_point():
    counts = StageCounts("cc_fetch")
    admission = Admission(cap=1, counts=counts, max_record_bytes=MAX)
    batch = rows(("../x.warc.gz", 0, 9), (GOOD, 0, 0), (GOOD, 0, 9), urls=["http://a.org/en/1"] * 3)
    admitted = list(admission.admitted(batch))
    assert [(row["url"], row["warc_record_length"]) for row in admitted] == [("http://a.org/en/1", 9)], (
        "the URL and the site's cap are still free for the valid capture"
    )
    assert counts.to_dict() == {
        "stage": "cc_fetch", "in": 3, "kept": 0, "dropped": {"index_warc_filename_invalid": 1, "index_length_invalid": 1},
    }  # fmt: skip


def page(url: str, **kwargs) -> bytes:
    content_type = "text/plain" if url.endswith("/robots.txt") else "text/html; charset=utf-8"
    return warc_record(WarcPage(url, "en", "A page of text."), content_type=content_type, **kwargs)


def test_a_row_pointing_at_another_pages_record_is_set_aside():
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles("http://a.org", b"User-agent: *\nDisallow: /es/private\n"))
    mine, other = page("http://a.org/en/1"), page("http://a.org/es/private")
    assert record_verdict(optouts, mine, "http://a.org/en/1", 1 << 20) is None
    assert record_verdict(optouts, other, "http://a.org/en/1", 1 << 20) == "record_url_mismatch", (
        "a page its site opts out of reached the shards under an admitted URL"
    )
    assert record_verdict(optouts, mine + other, "http://a.org/en/1", 1 << 20) == "record_url_mismatch", (
        "a range spanning the next record carries it into the shard"
    )
    reserved = page("http://a.org/en/2", head='<meta name="tdm-reservation" content="1">')
    assert record_verdict(optouts, reserved, "http://a.org/en/2", 1 << 20) == "optout_tdmrep"
    assert record_verdict(optouts, b"not a WARC record", "http://a.org/en/3", 1 << 20) is None, "left to extract"


def test_a_robots_row_pointing_at_another_hosts_robots_txt_is_no_capture():
    captures = [
        {"url": "http://victim.org/robots.txt", "crawl": "A"},
        {"url": "http://b.org/robots.txt", "crawl": "A"},
        {"url": "http://c.org/robots.txt", "crawl": "A"},
    ]
    records = [
        page("http://attacker.org/robots.txt", body=b"User-agent: *\nAllow: /\n"),
        page("http://b.org/robots.txt", body=b"User-agent: *\nDisallow: /\n"),
        None,
    ]
    counts = StageCounts("cc_fetch_robots")
    found = captured_site_files(captures, records, ["A"], counts)
    assert set(found.site_files(["http://victim.org", "http://attacker.org", "http://b.org"])) == {"http://b.org"}
    assert counts.to_dict() == {
        "stage": "cc_fetch_robots", "in": 3, "kept": 1, "dropped": {"record_url_mismatch": 1, "warc_missing": 1},
    }  # fmt: skip
