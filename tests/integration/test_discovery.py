"""Discovery on tiny sites served on 127.0.0.1: relative base URLs, sitemaps, declared language versions, links that
scripts build."""

from __future__ import annotations

import gzip
import json

from bitextflow.config import load_pair_config
from bitextflow.crawl.scoring import PairContext
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage import ObjectStore, StorageSettings
from bitextflow_local.localsite import serve
from tests.support import ROOT
from tests.support.tiny_sites import ENGLISH, SPANISH, crawl, fetched_paths, page, write_site


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


def _sitemap(entries: list[tuple[str, dict[str, str]]]) -> str:
    """A urlset whose entries each list their hreflang alternates (themselves included)."""
    urls = "".join(
        f"<url><loc>{loc}</loc>"
        + "".join(f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>' for lang, href in alternates.items())
        + "</url>"
        for loc, alternates in entries
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        f'xmlns:xhtml="http://www.w3.org/1999/xhtml">{urls}</urlset>'
    )


def test_a_site_reachable_only_through_a_gzipped_sitemap_index_is_crawled_with_its_declared_versions(tmp_path):
    """robots.txt names a sitemap index; its children are gzipped; no page links any other. The pages enter the
    frontier ranked like links, and their hreflang alternates are declared language versions."""
    pages = {f"{lang}/{name}.html": page(f"{name} {lang}", text=ENGLISH if lang == "en" else SPANISH)
             for lang in ("en", "es") for name in ("guide", "faq", "news")}  # fmt: skip
    with serve(write_site(tmp_path, {"index.html": page("Home"), **pages})) as server:
        base = server.base_url
        en_es = [(f"{base}{lang}/{name}.html", {"en": f"{base}en/{name}.html", "es": f"{base}es/{name}.html"})
                 for name in ("guide", "faq") for lang in ("en", "es")]  # fmt: skip
        write_site(tmp_path, {
            "robots.txt": f"User-agent: *\nDisallow: /private/\nSitemap: {base}maps/index.xml\n",
            "maps/index.xml": '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<sitemap><loc>{base}{path}</loc></sitemap>" for path in ("maps/pairs.xml.gz", "maps/news.txt.gz",
                                                                                 "private/hidden.xml"))
            + "</sitemapindex>",
            "maps/pairs.xml.gz": gzip.compress(_sitemap(en_es).encode()),
            "maps/news.txt.gz": gzip.compress(f"{base}en/news.html\n{base}es/news.html\n".encode()),
        })  # fmt: skip
        crawler = crawl(base, PairContext("en", "es"), strategy="url-rules", concurrency=1)
    fetched = fetched_paths(crawler, base)
    assert fetched[:3] == ["", "maps/index.xml", "maps/pairs.xml.gz"]  # the seed, then the sitemaps
    assert set(fetched) == {"", "maps/index.xml", "maps/pairs.xml.gz", "maps/news.txt.gz", *pages}
    assert crawler.declared[f"{base}en/guide.html"] == {"es": f"{base}es/guide.html"}
    assert crawler.declared[f"{base}es/faq.html"] == {"en": f"{base}en/faq.html"}
    dropped = crawler.counts.dropped
    assert dropped["robots_disallowed"] == 1  # the sitemap under /private/ is not read
    assert dropped["sitemap_unavailable"] == 0 and crawler.counts.kept == len(fetched)


def test_a_declared_counterpart_is_fetched_next_and_a_missing_sitemap_is_counted(tmp_path):
    """A page's <link rel="alternate" hreflang> names its translation, which no page links: url-rules fetches it right
    after the page, before the links waiting on the same host; /sitemap.xml, guessed when robots.txt names none, is
    absent (404) and counted, with no WARC record."""
    head = f'<link rel="alternate" hreflang="es" href="/otro/camino/{"x" * 3}.html">'
    links = "".join(f'<a href="/en/p{i}.html">p{i}</a> ' for i in range(5))
    write_site(tmp_path, {
        "index.html": page("Home", links, head),
        "otro/camino/xxx.html": page("Inicio", text=SPANISH),
        **{f"en/p{i}.html": page(f"P{i}") for i in range(5)},
    })  # fmt: skip
    with serve(tmp_path) as server:
        crawler = crawl(server.base_url, PairContext("en", "es"), strategy="url-rules", concurrency=1)
    fetched = fetched_paths(crawler, server.base_url)
    assert fetched[:2] == ["", "otro/camino/xxx.html"] and len(fetched) == 7
    assert crawler.counts.dropped["sitemap_unavailable"] == 1
    assert crawler.counts.kept == 7


def test_a_site_whose_navigation_lives_in_a_script_file_is_crawled_with_script_links_on(tmp_path):
    """The menu is built by /js/menu.js (an array of paths and a document.write of a link); with crawl.script_links the
    script is read and its page paths followed, those on other hosts counted; by default nothing past the home page."""
    menu = (
        'var pages = ["docs/one.html", "docs/two.html", "http://elsewhere.example/x.html", "not a link", "logo.png"];\n'
        "document.write('<a href=\"docs/three.html\">three</a>');\n"
        'for (var p of pages) { menu.innerHTML += "<a href=" + p + ">" + p + "</a>"; }\n'
    )
    write_site(tmp_path, {
        "index.html": page("Home", "", '<base href="/"><script src="js/menu.js"></script><script src="js/lib.js"></script>'),
        "js/menu.js": menu,
        "js/lib.js": 'function f(a) { return "lib/" + a + ".html"; }',  # carries no href: read for nothing
        **{f"docs/{name}.html": page(name.title()) for name in ("one", "two", "three")},
    })  # fmt: skip
    with serve(tmp_path) as server:
        off = crawl(server.base_url, strategy="bfs")
        on = crawl(server.base_url, strategy="bfs", script_links=True)
    assert fetched_paths(off, server.base_url) == [""]
    assert set(fetched_paths(on, server.base_url)) == {
        "",
        "js/menu.js",
        "js/lib.js",
        *(f"docs/{n}.html" for n in ("one", "two", "three")),
    }
    assert on.counts.dropped["script_link_off_site"] == 1  # strings that are no page path (logo.png) are no links
