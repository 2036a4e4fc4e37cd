"""Crawl the real local site into WARC on real S3, then extract documents and sentences from it.

The crawler's own checks (WARC records, politeness, limits, resume) are in tests/integration/test_crawl.py.
"""

import pandas as pd
import pytest

from bitextflow.config import load_pair_config
from bitextflow.stages.base import shard_name
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.tables import read_table
from bitextflow.text.urls import site_partition
from tests.support import ROOT, cross_shard_duplicates


@pytest.fixture(scope="module")
def crawl_run(site, s3_server):
    """One crawl of a slice of the site, shared by the tests below."""
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {"crawl.seeds": [site.base_url], "crawl.max_pages": 120, "crawl.warc_max_bytes": 400_000}
    )
    ctx = run_context(config, ObjectStore(StorageSettings.from_env(s3_server.env()), "bitextflow"), "test_crawl_extract")
    warc_keys = REGISTRY.run(ctx, "crawl")
    return ctx, warc_keys


def test_extract_gives_typed_language_tagged_documents(crawl_run):
    ctx, warc_keys = crawl_run
    documents = read_table(ctx.store, REGISTRY.run(ctx, "extract", [warc_keys[0]])[0])
    assert len(documents) > 0
    assert set(documents["language"]) & {"en", "es"}
    assert documents["warc_offset"].is_monotonic_increasing
    shard = shard_name(warc_keys[0])
    sentences = read_table(ctx.store, ctx.key("extract", f"{shard}.sentences.parquet"))
    assert set(sentences["language"]) <= {"en", "es"}
    assert set(sentences["paragraph_type"]) <= {"heading", "text", "listitem", "cell", "quote"}
    assert sentences["text"].str.split().str.len().min() >= ctx.config.extract.min_sentence_tokens
    doc_counts = ctx.store.get_json(ctx.key("extract", f"{shard}.documents.counts.json"))
    assert doc_counts["kept"] == len(documents)
    assert doc_counts["in"] == doc_counts["kept"] + sum(doc_counts["dropped"].values())
    sent_counts = ctx.store.get_json(ctx.key("extract", f"{shard}.sentences.counts.json"))
    assert sent_counts["kept"] == len(sentences)
    assert set(documents["partition"]) == set(sentences["partition"]) == {site_partition(str(ctx.config.crawl.seeds[0]), 16)}


def test_cross_shard_duplicates_are_set_aside_before_document_alignment(crawl_run):
    ctx, warc_keys = crawl_run
    documents_keys = [REGISTRY.run(ctx, "extract", [key])[0] for key in warc_keys]
    documents = pd.concat([read_table(ctx.store, key) for key in documents_keys], ignore_index=True)
    partitions = REGISTRY.run(ctx, "partition", documents_keys)
    REGISTRY.run(ctx, "deduplicate", partitions)
    REGISTRY.run(ctx, "align_documents", partitions)
    counts = ctx.store.get_json(ctx.key("deduplicate", "deduplicate.counts.json"))
    removed = cross_shard_duplicates(ctx)
    print(f"{len(warc_keys)} shards, {len(documents)} documents, cross-shard duplicates: {counts['dropped']}")
    assert counts["in"] == len(documents) and counts["kept"] + len(removed) == len(documents)
    language = dict(zip(documents["doc_id"], documents["language"], strict=True))
    kept = set(documents["doc_id"]) - set(removed["doc_id"])
    for doc_id, twin in zip(removed["doc_id"], removed["duplicate_of"], strict=True):
        assert twin in kept and language[twin] == language[doc_id]
