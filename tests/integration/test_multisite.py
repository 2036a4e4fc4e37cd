"""The scale benchmark's web: many small bilingual sites carved out of the local site, each on its own loopback
address, and the small WARC files of ingest-mode runs.

The webs are built from the local site of the shared cache (built once per session, as in test_localsite) into
temporary folders; every request goes to an address of 127.0.0.0/8.
"""

from __future__ import annotations

import io
import ipaddress
import json
import re
import shlex
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from bitextflow.config import load_pair_config
from bitextflow.crawl.guard import AddressGuard
from bitextflow.crawl.urls import host_of
from bitextflow.errors import StageError
from bitextflow_local.cli import main
from bitextflow_local.localsite import Site, build_site, serve
from bitextflow_local.localsite.multisite import WEB_FILENAME, Web, build_web
from bitextflow_local.localsite.server import SiteServers, serve_sites
from bitextflow_local.localsite.warcs import page, translated_pairs, warc_files
from tests.integration.test_localsite import file_hashes
from tests.support import ROOT

SITES = 3
# No proxy: an http_proxy in the environment must not route loopback requests elsewhere.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LINK = re.compile(r'(?:href|src)="([^"]*)"')
_LANGUAGE_LINK = re.compile(r'<a href="([^"]+)" hreflang="([^"]+)"')


def status(url: str) -> tuple[int, bytes]:
    assert ipaddress.ip_address(urlsplit(url).hostname or "") in ipaddress.ip_network("127.0.0.0/8"), url
    try:
        with _OPENER.open(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


@pytest.fixture(scope="session")
def source() -> Site:
    return build_site()


@pytest.fixture(scope="module")
def web(source: Site, tmp_path_factory: pytest.TempPathFactory) -> Web:
    return build_web(source, tmp_path_factory.mktemp("web"), SITES, seed=7)


@pytest.fixture(scope="module")
def served(web: Web) -> Iterator[SiteServers]:
    with serve_sites({site.address: site.docroot for site in web.sites}) as servers:
        yield servers


def test_the_build_is_deterministic_and_a_larger_web_begins_with_the_smaller(source: Site, tmp_path: Path) -> None:
    first = build_web(source, tmp_path / "first", 4, seed=3)
    again = build_web(source, tmp_path / "again", 4, seed=3)
    assert file_hashes(first.root) == file_hashes(again.root)
    assert Web.load(first.root) == first

    larger = build_web(source, tmp_path / "larger", 6, seed=3)
    assert [site.documents for site in larger.sites[:4]] == [site.documents for site in first.sites]
    assert file_hashes(larger.sites[3].docroot) == file_hashes(first.sites[3].docroot)
    other_seed = build_web(source, tmp_path / "other", 4, seed=4)
    assert [site.documents for site in other_seed.sites] != [site.documents for site in first.sites]


def test_each_site_is_its_own_loopback_host_with_pairs_and_untranslated_pages(web: Web) -> None:
    addresses = [ipaddress.ip_address(site.address) for site in web.sites]
    assert len(set(addresses)) == SITES and ipaddress.ip_address("127.0.0.1") not in addresses
    assert all(address in ipaddress.ip_network("127.0.0.0/8") for address in addresses)
    assert len({host_of(seed) for seed in web.seeds(8790)}) == SITES
    for site in web.sites:
        assert 15 <= site.pages <= 40, site.address
        assert len(site.truth.pairs("en", "es")) >= 5
        one_language = [next(iter(document)) for document in site.documents if len(document) == 1]
        assert {"en", "es"} <= set(one_language), f"{site.address} has a page without counterpart in each language"
    # the sites are dealt different documents until the local site runs out of them (94 translated ones)
    documents = [frozenset(path for document in site.documents for path in document.values()) for site in web.sites]
    translated = [{path for document in site.documents if len(document) == 2 for path in document.values()} for site in web.sites]
    assert not translated[0] & translated[1] and not translated[1] & translated[2]
    assert len(documents[0] & documents[1]) < len(documents[0]) / 2


def test_the_truth_file_matches_the_pages_and_their_language_links(web: Web) -> None:
    truth = json.loads((web.root / WEB_FILENAME).read_text(encoding="utf-8"))
    assert [site["address"] for site in truth["sites"]] == [site.address for site in web.sites]
    url_pairs = web.url_pairs(8790, "en", "es")
    assert len(url_pairs) == sum(len(site["pairs"]["en-es"]) for site in truth["sites"])
    assert all(host_of(english) == host_of(spanish) for english, spanish in url_pairs), "a pair never spans two sites"
    for site, recorded in zip(web.sites, truth["sites"], strict=True):
        assert {tuple(pair) for pair in recorded["pairs"]["en-es"]} == site.truth.pairs("en", "es")
        pages = {path.relative_to(site.docroot).as_posix() for path in site.docroot.rglob("*.html")}
        assert pages == {path for document in site.documents for path in document.values()} | {"index.html"}
        assert recorded["pages"] == len(pages)
        for document in site.documents:
            for lang, path in document.items():
                html = (site.docroot / path).read_text(encoding="utf-8")
                language_links = {href.lstrip("/"): hreflang for href, hreflang in _LANGUAGE_LINK.findall(html)}
                # a page links its translations on this site, and no translation the site does not publish
                assert language_links == {other_path: other for other, other_path in document.items() if other != lang}, path


def test_every_link_of_every_site_is_served_and_every_page_is_reachable(web: Web, served: SiteServers) -> None:
    for site in web.sites:
        home = site.url(served.port)
        to_visit, seen, pages = [home], {home}, set()
        while to_visit:
            url = to_visit.pop()
            code, body = status(url)
            assert code == 200, url
            if not url.endswith((".html", "/")):
                continue
            pages.add(url)
            for href in _LINK.findall(body.decode("utf-8")):
                target = urljoin(url, href).split("#")[0]
                if target.startswith(home) and target not in seen:
                    seen.add(target)
                    to_visit.append(target)
        assert pages == {home} | {site.url(served.port, path) for document in site.documents for path in document.values()}
    assert {address: server.host for address, server in served.servers.items()} == {
        site.address: site.address for site in web.sites
    }


def test_a_crawl_of_the_web_reaches_every_site_and_only_it(web: Web, served: SiteServers, store) -> None:
    """The printed allow-list (`<network>:<port>` entries) lets the crawler reach every site on the web's port only."""
    from bitextflow.catalog.checkpoints import crawl_log
    from bitextflow.stages.crawl import Crawl
    from bitextflow.stages.registry import REGISTRY, run_context

    allowed = web.allowed_addresses(served.port)
    assert allowed == [f"127.0.0.2/31:{served.port}", f"127.0.0.4/32:{served.port}"]
    guard = AddressGuard(allowed)
    assert all(guard.refusal(site.address, served.port) is None for site in web.sites)
    assert guard.refusal(web.sites[0].address, served.port + 1) == f"loopback, port {served.port + 1} not allowed"
    assert guard.refusal("127.0.0.1", served.port) == "loopback"  # the services' address stays refused
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {
            "crawl.seeds": web.seeds(served.port),
            "crawl.allow_private_addresses": allowed,
            "crawl.strategy": "bfs",
            "crawl.delay_seconds": 0,
            "crawl.max_pages": 4 * SITES,
            # each site's share of the budget: which host answers first (a matter of load) cannot spend another's
            "crawl.max_pages_per_host": 4,
        }
    )
    ctx = run_context(config, store, "test_multisite_crawl")
    REGISTRY.run(ctx, "crawl", Crawl.first_inputs(config))
    fetched = [line["url"] for line in crawl_log(store, config.pair, ctx.run_id) if line["outcome"] == "fetched"]
    assert {urlsplit(url).hostname for url in fetched} == {site.address for site in web.sites}
    assert {host_of(url) for url in fetched} == {host_of(seed) for seed in web.seeds(served.port)}


def test_servers_bind_loopback_addresses_only(source: Site) -> None:
    for host in ("0.0.0.0", "::", "192.0.2.1", "localhost"):
        with pytest.raises(StageError, match="loopback addresses only"):
            serve(source.docroot, 0, host)
    with serve(source.docroot, 0, "127.0.0.9") as server:
        assert server.base_url == f"http://127.0.0.9:{server.port}/"
        assert status(server.base_url)[0] == 200


def test_the_command_builds_the_web_and_prints_its_crawl_overrides(source: Site, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cli-web"
    assert main(["site", "multi", "--sites", "2", "--out", str(out), "--cache", str(source.cache_dir), "--port", "8799"]) == 0
    printed = capsys.readouterr().out
    overrides = dict(
        argument.split("=", 1) for argument in shlex.split(printed.split("overrides: ", 1)[1]) if argument != "--set"
    )
    assert json.loads(overrides["crawl.seeds"]) == ["http://127.0.0.2:8799/", "http://127.0.0.3:8799/"]
    assert json.loads(overrides["crawl.allow_private_addresses"]) == ["127.0.0.2/31:8799"]
    assert load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(
        {name: json.loads(value) for name, value in overrides.items()}
    )
    assert Web.load(out).seeds(8799) == json.loads(overrides["crawl.seeds"])

    assert main(["site", "multi", "--sites", "0", "--out", str(out), "--cache", str(source.cache_dir)]) == 1
    assert "1 to 16777213 sites" in capsys.readouterr().err
    assert main(["site", "multi", "--sites", "2", "--out", str(out), "--cache", str(source.cache_dir), "--port", "0"]) == 1
    assert "goes with --serve" in capsys.readouterr().err


def test_warc_files_of_a_multi_site_web_are_reproducible_with_some_translated_pairs() -> None:
    files = list(warc_files(20, sites=3))
    assert files == list(warc_files(20, sites=3))
    assert [name for name, _ in files[:2]] == ["file-00000.warc.gz", "file-00001.warc.gz"]
    records = [next(iter(ArchiveIterator(io.BytesIO(data)))) for _, data in files]
    urls = [record.rec_headers.get_header("WARC-Target-URI") for record in records]
    assert urls[:2] == ["http://site-000.test/en/page-0.html", "http://site-000.test/es/page-0.html"]
    assert len({urlsplit(url).hostname for url in urls}) == 3
    assert translated_pairs(20, sites=3) == {(page(2 * n, 3).url, page(2 * n + 1, 3).url) for n in range(10) if n not in (4, 9)}
    assert page(9, 3).url == "http://site-001.test/es/nota-4.html", "every fifth Spanish page is no translation"
    english, spanish = page(2), page(3)
    assert (english.lang, spanish.lang) == ("en", "es") and english.text != spanish.text
    assert f"<p>{spanish.text}</p>" in records[3].content_stream().read().decode("utf-8")
