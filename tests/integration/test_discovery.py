"""Discovery on tiny sites served on 127.0.0.1: relative base URLs, sitemaps, declared language versions, links that
scripts build."""

from __future__ import annotations

import gzip
import json

from bitextflow.config import load_pair_config
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow_local.localsite import serve
from tests.support import ROOT
from tests.support.tiny_sites import page, write_site


def test_a_site_whose_pages_all_carry_a_relative_base_is_crawled_whole_by_the_crawl_stage(tmp_path, s3_server):
    """The held-out site's defect: every page has ``<base href="../../../">``-like bases, and each relative link was
    resolved against the unresolved base, lost and not counted (the crawl stopped after its seeds)."""
    base = '<base href="../../">'
    nav = '<a href="en/a/one.html">one</a> <a href="es/a/uno.html">uno</a> <a href="javascript:void(0)">menu</a>'
    write_site(tmp_path, {
        "index.html": page("Home", nav, '<base href="./">'),
        "en/a/one.html": page("One", '<a href="en/b/two.html">two</a> <a href="mailto:x@y.org">mail</a>', base),
        "en/b/two.html": page("Two", '<a href="en/a/one.html">one</a>', base),
        "es/a/uno.html": page("Uno", '<a href="es/b/dos.html">dos</a>', base),
        "es/b/dos.html": page("Dos", "", base),
    })  # fmt: skip
    with serve(tmp_path) as server:
        config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
            {"crawl.seeds": [server.base_url], "crawl.max_pages": 50}
        )
        ctx = run_context(config, ObjectStore(StorageSettings.from_env(s3_server.env()), "bitextflow"), "test_relative_base")
        REGISTRY.run(ctx, "crawl")
        counts = ctx.store.get_json(ctx.key("crawl", "crawl.counts.json"))
        log = gzip.decompress(ctx.store.get_bytes(ctx.key("crawl", "crawl-log.jsonl.gz"))).splitlines()
    fetched = {json.loads(line)["url"].removeprefix(server.base_url) for line in log if json.loads(line)["outcome"] == "fetched"}
    assert fetched == {"", "en/a/one.html", "en/b/two.html", "es/a/uno.html", "es/b/dos.html"}
    assert counts["dropped"]["link_not_http"] == 2  # the script menu and the mail link, counted where found
    assert counts["in"] == counts["kept"] + sum(counts["dropped"].values())
