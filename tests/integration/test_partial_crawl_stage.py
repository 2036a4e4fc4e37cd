"""The align_documents stage learns what the crawl knew (URLs left unfetched, declared versions) from the crawl files of
its partition's host groups only: a large crawl's other groups are never read."""

from __future__ import annotations

import gzip
import json

from bitextflow.config import load_pair_config
from bitextflow.crawl.urls import host_group
from bitextflow.stages.align_documents import AlignDocuments
from bitextflow.stages.registry import run_context
from tests.support import ROOT

GROUPS = 8


def _lines(*entries: dict) -> bytes:
    return gzip.compress("".join(json.dumps(entry) + "\n" for entry in entries).encode())


def test_only_the_partition_s_host_groups_are_read(store):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides({"crawl.host_groups": GROUPS})
    ctx = run_context(config, store, "partial_crawl_stage")
    store.ensure_bucket()
    ours, theirs = (
        "docs.example.org",
        next(
            f"site{k}.example.net"
            for k in range(100)
            if host_group(f"site{k}.example.net", GROUPS) != host_group("docs.example.org", GROUPS)
        ),
    )
    group, other = host_group(ours, GROUPS), host_group(theirs, GROUPS)
    store.put_bytes(ctx.key("crawl", f"crawl-log.hosts-{group:03d}.jsonl.gz"), _lines(
        {"url": f"http://{ours}/en/a.html", "outcome": "fetched"},
        {"url": f"http://{ours}/es/a.html", "outcome": "not_fetched_page_limit"},
        {"url": "http://elsewhere.example.com/es/b.html", "outcome": "not_fetched_page_limit"},  # another site: not ours
    ))  # fmt: skip
    store.put_bytes(ctx.key("crawl", f"declared-versions.hosts-{group:03d}.jsonl.gz"), _lines(
        {"url": f"http://{ours}/en/a.html", "alternates": {"es": f"http://{ours}/es/a.html"}},
    ))  # fmt: skip
    # the other group's files are not even gzip: reading them would fail
    store.put_bytes(ctx.key("crawl", f"crawl-log.hosts-{other:03d}.jsonl.gz"), b"not read")
    store.put_bytes(ctx.key("crawl", f"declared-versions.hosts-{other:03d}.jsonl.gz"), b"not read")
    declared, unfetched = AlignDocuments(ctx)._what_the_crawl_knew({f"http://{ours}/en/a.html"})  # noqa: SLF001
    assert unfetched == {f"http://{ours}/es/a.html"}
    assert declared == {f"http://{ours}/en/a.html": {"es": f"http://{ours}/es/a.html"}}
