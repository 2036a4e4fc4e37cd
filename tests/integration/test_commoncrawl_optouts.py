"""The opt-out guards on a run from a Common Crawl index (``crawl.index``), on the real S3 server: pages judged by
their host's robots.txt from the index's ``robotstxt`` captures before they are fetched, and by their own headers and
markup once fetched; a host nobody captured, as ``policy.unknown_robots_on_ingest`` says (a live fetch from a server
on 127.0.0.1). The generated Common Crawl (:mod:`bitextflow_local.localsite.ccindex`) knows by construction what the
default policy sets aside; the policy's own decisions are tested in tests/unit/test_optout_policy.py."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.config import load_pair_config
from bitextflow.stages.cc_fetch import CcFetch
from bitextflow.stages.registry import REGISTRY, run_context, run_pipeline, run_stage
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow.storage.layout import safe_key_part
from bitextflow_local.localsite.ccindex import PAGES, Capture, build_index, write_subset
from bitextflow_local.localsite.warcs import parallel_text
from tests.support import BUCKET as RUN_BUCKET
from tests.support import ROOT, QuietHandler, serving

CRAWL = "CC-MAIN-2099-05"


@pytest.fixture(scope="module")
def generated(s3_server):
    """The generated Common Crawl of 40 sites (8 bilingual), one crawl, in a bucket of its own."""
    store = ObjectStore(StorageSettings.from_env(s3_server.env()), "commoncrawl-optouts")
    store.ensure_bucket()
    return build_index(store, sites=40, crawls=(CRAWL,))


def index_run(overrides: dict, run_id: str):
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        overrides | {"extract.site_partitions": 4}
    )
    return run_context(config, ObjectStore.from_env(RUN_BUCKET), run_id)


def shard_urls(ctx, shards: list[str]) -> list[str]:
    urls = []
    for key in shards:
        for record in ArchiveIterator(io.BytesIO(ctx.store.get_bytes(key))):
            urls.append(record.rec_headers.get_header("WARC-Target-URI"))
    return urls


def fetch_counts(ctx) -> list[dict]:
    """The page records' counts of every cc_fetch task (not its robots.txt captures', ``cc_fetch_robots``)."""
    keys = ctx.store.list_keys(ctx.key("cc_fetch", ""))
    parts = [ctx.store.get_json(key) for key in keys if key.endswith(".counts.json")]
    return [part for part in parts if part["stage"] == "cc_fetch"]


def test_pages_their_site_or_they_themselves_opt_out_are_counted_and_never_reach_the_shards(s3_env, generated):
    ctx = index_run(generated.overrides(), "cc-optouts")
    outputs = run_pipeline(ctx, until="extract")
    set_aside = generated.set_aside()
    admitted = {row.capture.url for row in generated.selected()} | set(set_aside)
    by_host: dict[str, set[str]] = {}
    for url in admitted:
        by_host.setdefault(urlsplit(url).hostname, set()).add(url)
    www = {host for host in by_host if host.startswith("www.")}
    robots_404 = {
        row.capture.host for row in generated.located if row.capture.subset == "robotstxt" and row.capture.status == 404
    }
    kinds = {
        "gptbot": {host for host in www if generated.refused(host) == "/"},
        "es": {host for host in www if generated.refused(host) == "/es/"},
        "404": www & robots_404,
        "private": {host for host in www if generated.refused(host) == "/private/"},
    }
    assert all(kinds.values()), f"the bilingual sites' hosts have every kind of robots.txt: {kinds}"

    fetched = set(shard_urls(ctx, outputs["cc_fetch"]))
    assert fetched == {row.capture.url for row in generated.selected()}
    assert not fetched & set(set_aside), "no record of a page opted out is in a WARC shard"
    for host in kinds["gptbot"]:  # GPTBot may fetch nothing: the whole host is out
        assert by_host[host] and not by_host[host] & fetched
        assert {set_aside[url] for url in by_host[host]} == {"optout_robots"}
    for host in kinds["es"]:  # Disallow: /es/ for every agent: the Spanish pages only
        assert {urlsplit(url).path[:4] for url in by_host[host] & fetched} == {"/en/"}
        assert {url for url in by_host[host] if set_aside.get(url) == "optout_robots"} == {
            url for url in by_host[host] if "/es/" in url
        }
    for host in kinds["404"] | kinds["private"]:  # no rule refuses a page: only the pages' own opt-outs are out
        assert {url for url in by_host[host] - fetched} == {url for url in by_host[host] if url.endswith(f"-{PAGES + 1}.html")}
    declared = {reason for url, reason in set_aside.items() if urlsplit(url).hostname in kinds["404"] | kinds["private"]}
    assert declared == {"optout_tdmrep", "optout_noai"}, "a <meta> reservation and a noai header, read from the records"

    counts = fetch_counts(ctx)
    dropped = sum((Counter(part["dropped"]) for part in counts), Counter())
    assert {reason: n for reason, n in dropped.items() if reason.startswith("optout_")} == Counter(set_aside.values())
    assert sum(part["kept"] for part in counts) == len(fetched)
    assert all(part["in"] == part["kept"] + sum(part["dropped"].values()) for part in counts)
    robots = [ctx.store.get_json(key) for key in ctx.store.list_keys(ctx.key("cc_records", "robots-"))
              if key.endswith(".counts.json")]  # fmt: skip
    hosts = {row.capture.host for row in generated.located if row.capture.domain in generated.bilingual_sites}
    assert sum(part["kept"] for part in robots) == len(hosts), "one robots.txt capture per host of the selected sites"
    read = [
        ctx.store.get_json(key) for key in ctx.store.list_keys(ctx.key("cc_fetch", "")) if key.endswith("-robots.counts.json")
    ]
    assert read and all(part["stage"] == "cc_fetch_robots" and not part["dropped"] for part in read), (
        f"every robots.txt capture the fetch tasks read is its row's URL's: {read}"
    )

    # extract does not judge the fetched pages again (it would find no robots.txt in the shard): nothing is counted twice
    shard = outputs["cc_fetch"][0]
    REGISTRY.run(ctx, "extract", [shard])
    name = shard.rsplit("/", 1)[1].removesuffix(".warc.gz")
    documents = ctx.store.get_json(ctx.key("extract", f"{name}.documents.counts.json"))
    assert documents["kept"] and not any(reason.startswith("optout_") for reason in documents["dropped"])


class RobotsOnly(QuietHandler):
    """A site that serves its robots.txt only: GPTBot may not fetch its Spanish pages."""

    protocol_version = "HTTP/1.1"
    requested: list[str] = []

    def do_GET(self):
        RobotsOnly.requested.append(self.path)
        found = self.path == "/robots.txt"
        body = b"User-agent: GPTBot\nDisallow: /es/\n" if found else b"not found"
        self.answer(200 if found else 404, body, "text/plain")


@pytest.fixture
def live_site() -> Iterator[str]:
    RobotsOnly.requested = []
    with serving(RobotsOnly) as address:
        yield address


@pytest.mark.parametrize(
    ("stance", "kept", "dropped"),
    [("fetch", {"en"}, {"optout_robots": 3}), ("allow", {"en", "es"}, {}), ("disallow", set(), {"optout_robots": 6})],
)
def test_a_host_the_index_has_no_robots_txt_of_follows_unknown_robots_on_ingest(s3_env, live_site, stance, kept, dropped):
    # a crawl of one bilingual host without a robotstxt subset: its robots.txt is fetched now, or assumed
    store = ObjectStore.from_env(f"commoncrawl-unknown-{stance}")
    store.ensure_bucket()
    pages = [
        Capture(f"http://{live_site}/{lang}/page-{n}.html", live_site, "127.0.0.1", code, "text/html", 200, lang=lang,
                text=parallel_text(n, side))
        for side, (lang, code) in enumerate((("en", "eng"), ("es", "spa"))) for n in range(3)
    ]  # fmt: skip
    write_subset(store, CRAWL, "warc", pages)
    index = {"table": f"s3://{store.bucket}/cc-index/table/cc-main/warc/", "warc_root": f"s3://{store.bucket}/",
             "crawls": [CRAWL], "min_captures": 3}  # fmt: skip
    ctx = index_run({"crawl.seeds": [], "crawl.index": index, "policy.unknown_robots_on_ingest": stance}, f"cc-unknown-{stance}")
    outputs = run_pipeline(ctx, until="extract")
    assert {urlsplit(url).path[1:3] for url in shard_urls(ctx, outputs["cc_fetch"])} == kept
    (counts,) = fetch_counts(ctx)
    assert counts["dropped"] == dropped
    cached = ctx.store.list_keys(ctx.key("cc_fetch", "site-files/"))
    if stance == "fetch":
        assert RobotsOnly.requested == ["/robots.txt", "/.well-known/tdmrep.json"]
        assert cached == [ctx.key("cc_fetch", f"site-files/{safe_key_part(f'http://{live_site}')}.json")]
        (inputs,) = REGISTRY.get("cc_fetch")(ctx).plan(outputs["cc_records"])
        assert run_stage(ctx, CcFetch, [inputs]) == outputs["cc_fetch"], "a retry judges by the cached answer"
        assert len(RobotsOnly.requested) == 2, "fetched once per run"
    else:
        assert not RobotsOnly.requested and not cached, "an offline deployment asks no site"
