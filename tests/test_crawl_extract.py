"""Crawl the real local site into WARC on real S3, then extract documents and sentences from it."""

import gzip
import io
import json
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow import pipeline
from bitextflow.config import CrawlConfig, load_pair_config
from bitextflow.crawl.crawler import Crawler, extract_links, normalise_url
from bitextflow.crawl.warc import RotatingWarcWriter
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.tables import read_table

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.integration


def test_normalise_url():
    assert normalise_url("HTTP://Example.ORG:8080/a/b.html#frag") == "http://example.org:8080/a/b.html"
    assert normalise_url("mailto:someone@example.org") is None
    assert normalise_url("http://example.org") == "http://example.org/"


def test_extract_links_resolves_relative_and_dedups():
    html = b'<a href="b.html">b</a><a href="/c#x">c</a><a href="b.html">again</a><a href="javascript:0">j</a>'
    assert extract_links(html, "http://h/a/index.html") == ["http://h/a/b.html", "http://h/c"]


@pytest.fixture(scope="module")
def crawl_run(site, s3_server):
    """One crawl of a slice of the site, shared by the tests below."""
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [site.base_url], "crawl.max_pages": 120, "crawl.warc_max_bytes": 400_000}
    )
    ctx = pipeline.RunContext(config, ObjectStore(StorageSettings.from_env(s3_server.env()), "bitextflow"), "test_crawl_extract")
    warc_keys = pipeline.run_crawl(ctx)
    return ctx, warc_keys


def test_crawl_is_polite_and_writes_warc_shards(crawl_run, site):
    ctx, warc_keys = crawl_run
    assert len(warc_keys) > 1, "warc_max_bytes should rotate shards"
    log = [json.loads(line) for line in gzip.decompress(ctx.store.get_bytes(ctx.key("crawl", "crawl-log.jsonl.gz"))).splitlines()]
    urls = [entry["url"] for entry in log]
    assert len(urls) == len(set(urls)) == 120
    assert urls[0] == site.base_url, "seeds are fetched first"
    assert not [u for u in urls if "/private/" in u], "robots.txt Disallow must be honoured"
    assert any(not entry["mime"].startswith("text/html") for entry in log), "non-HTML files are fetched too"
    counts = ctx.store.get_json(ctx.key("crawl", "crawl.counts.json"))
    assert counts["kept"] == 120 and counts["in"] == counts["kept"] + sum(counts["dropped"].values())

    responses = requests = 0
    for key in warc_keys:
        for record in ArchiveIterator(io.BytesIO(ctx.store.get_bytes(key))):
            assert record.rec_headers.protocol == "WARC/1.1"
            if record.rec_type == "response":
                responses += 1
                assert record.rec_headers.get_header("WARC-Payload-Digest")
            elif record.rec_type == "request":
                requests += 1
                assert record.rec_headers.get_header("WARC-Concurrent-To")
    assert responses == requests == 120


def test_max_body_is_enforced_while_streaming(site):
    config = CrawlConfig(seeds=[site.base_url], max_pages=1, max_body_bytes=1024, delay_seconds=0)
    uploaded = {}
    warc = RotatingWarcWriter(lambda path, name: uploaded.setdefault(name, path.read_bytes()) and name, 10**9)
    crawler = Crawler(config, warc)
    entries = list(crawler.crawl())
    crawler.close()
    warc.close()
    assert entries[0].bytes == 1024
    records = list(ArchiveIterator(io.BytesIO(next(iter(uploaded.values())))))
    assert records[0].rec_headers.get_header("WARC-Truncated") == "length"


def test_extract_gives_typed_language_tagged_documents(crawl_run):
    ctx, warc_keys = crawl_run
    documents = read_table(ctx.store, pipeline.run_extract(ctx, warc_keys[0]))
    assert len(documents) > 0
    assert set(documents["language"]) & {"en", "es"}
    assert documents["warc_offset"].is_monotonic_increasing
    sentences = read_table(ctx.store, documents["sentences_key"].iloc[0])
    assert set(sentences["language"]) <= {"en", "es"}
    assert set(sentences["paragraph_type"]) <= {"heading", "text", "listitem", "cell", "quote"}
    assert sentences["text"].str.split().str.len().min() >= ctx.config.extract.min_sentence_tokens
    shard = pipeline.shard_name(warc_keys[0])
    doc_counts = ctx.store.get_json(ctx.key("extract", f"{shard}.documents.counts.json"))
    assert doc_counts["kept"] == len(documents)
    assert doc_counts["in"] == doc_counts["kept"] + sum(doc_counts["dropped"].values())
    sent_counts = ctx.store.get_json(ctx.key("extract", f"{shard}.sentences.counts.json"))
    assert sent_counts["kept"] == sum(len(read_table(ctx.store, k)) for k in set(documents["sentences_key"]))
