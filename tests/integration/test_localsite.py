"""The local site: built from Debian packages, served on 127.0.0.1, with a truth the crawl is measured by.

The site is built once per session in the shared cache (the packages download once per machine); the
determinism test rebuilds it from scratch in a temporary cache that reuses the downloaded packages.
Every request goes to 127.0.0.1.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import signal
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import pytest

from bitextflow.errors import StageError
from bitextflow_local.cli import main
from bitextflow_local.localsite import Site, SiteServer, Truth, build_site, serve
from bitextflow_local.localsite.composition import found_auc, measure
from tests.support import ROOT

# No proxy: an http_proxy in the environment must not route loopback requests elsewhere.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_LINK = re.compile(r'(?:href|src)="([^"]*)"')
_SWITCHER = re.compile(r'<div class="language-switcher">(.*?)</div>', re.DOTALL)
_SWITCHER_LINK = re.compile(r'<a href="([^"]+)" hreflang="([^"]+)" lang="[^"]+">([^<]+)</a>')


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes


def fetch(url: str) -> Response:
    assert urlsplit(url).hostname == "127.0.0.1", f"test tried to leave the machine: {url}"
    try:
        with _OPENER.open(url, timeout=10) as response:
            return Response(response.status, response.headers.get("Content-Type", ""), response.read())
    except urllib.error.HTTPError as error:
        return Response(error.code, error.headers.get("Content-Type", ""), error.read())


def file_hashes(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="session")
def site() -> Site:
    return build_site()


@pytest.fixture(scope="session")
def truth(site: Site) -> Truth:
    return Truth.load(site.cache_dir)


@pytest.fixture(scope="session")
def server(site: Site) -> Iterator[SiteServer]:
    with serve(site.docroot) as running:
        yield running


def test_server_binds_loopback_and_answers_404_for_missing_pages(server: SiteServer) -> None:
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.base_url)
    assert fetch(server.base_url + "no-such-page.html").status == 404
    assert fetch(server.base_url + "install/").status == 404, "directory listings must be refused"


def test_robots_txt_disallows_the_private_directory_linked_from_the_home_page(server: SiteServer, truth: Truth) -> None:
    robots = fetch(server.base_url + "robots.txt")
    assert robots.status == 200
    assert "crawl-delay" not in robots.body.decode().lower()
    parser = RobotFileParser()
    parser.parse(robots.body.decode().splitlines())
    home = fetch(server.base_url).body.decode()
    private_links = [href for href in _LINK.findall(home) if href.startswith("/private/")]
    assert len(private_links) >= 2
    assert {href.lstrip("/") for href in private_links} == truth.disallowed
    for href in private_links:
        assert not parser.can_fetch("*", urljoin(server.base_url, href))
        assert fetch(urljoin(server.base_url, href)).status == 200, "the page exists; only robots.txt protects it"
    assert parser.can_fetch("*", server.base_url + "reference/ch01.en.html")
    assert not truth.disallowed & truth.documents("en")


@pytest.mark.parametrize("page", ["reference/ch03.es.html", "install/fr/ch03s02.html"])
def test_language_switcher_links_resolve_to_translations(server: SiteServer, truth: Truth, page: str) -> None:
    response = fetch(server.base_url + page)
    assert response.status == 200
    switcher = _SWITCHER.search(response.body.decode("utf-8"))
    assert switcher is not None
    links = _SWITCHER_LINK.findall(switcher.group(1))
    assert {hreflang for _, hreflang, _ in links} == {"en", "es", "fr", "de"} - {"es" if ".es." in page else "fr"}
    endonyms = {"en": "English", "es": "Español", "fr": "Français", "de": "Deutsch"}
    for href, hreflang, name in links:
        assert name == endonyms[hreflang]
        url = urljoin(server.base_url + page, href)
        assert fetch(url).status == 200
        assert truth.are_translations(server.base_url + page, url)


def test_some_pages_exist_in_one_language_only(server: SiteServer, truth: Truth) -> None:
    english_only = "reference/ch10.en.html"
    assert english_only in truth.documents("en")
    assert not any(english_only in pair for pair in truth.pairs("en", "es"))
    assert fetch(server.base_url + "reference/ch10.es.html").status == 404
    page = fetch(server.base_url + english_only).body.decode()
    switcher = _SWITCHER.search(page)
    assert switcher is not None and not _SWITCHER_LINK.findall(switcher.group(1))
    # Translated pages fall back to the original instead of linking to a missing translation.
    assert 'href="ch10.en.html' in fetch(server.base_url + "reference/ch09.es.html").body.decode()

    assert "install/es/ch05s04.html" in truth.documents("es")
    assert fetch(server.base_url + "install/en/ch05s04.html").status == 404
    assert "news/2023-06-documentation-refresh.html" in truth.documents("en")
    assert all(not path.startswith("news/") for path in truth.documents("es"))


def test_non_html_files_are_served_with_their_content_type(server: SiteServer) -> None:
    expected = {
        "reference/images/note.png": ("image/png", b"\x89PNG"),
        "install/en/install.en.pdf": ("application/pdf", b"%PDF"),
        "install/es/install.es.txt": ("text/plain; charset=utf-8", b""),
        "reference/debian-reference.css": ("text/css; charset=utf-8", b""),
        "downloads/debian-reference-images.tar.gz": ("application/gzip", b"\x1f\x8b"),
    }
    for path, (content_type, magic) in expected.items():
        response = fetch(server.base_url + path)
        assert (response.status, response.content_type) == (200, content_type), path
        assert response.body.startswith(magic), path
    tarball = fetch(server.base_url + "downloads/debian-reference-images.tar.gz").body
    with tarfile.open(fileobj=io.BytesIO(tarball)) as archive:
        assert "images/note.png" in archive.getnames()


def test_truth_has_enough_en_es_pairs_and_all_are_served(server: SiteServer, truth: Truth) -> None:
    pairs = truth.pairs("en", "es")
    assert len(pairs) >= 60
    assert {
        ("reference/ch01.en.html", "reference/ch01.es.html"),
        ("install/en/ch03s02.html", "install/es/ch03s02.html"),
    } <= pairs
    for english, spanish in sorted(pairs):
        assert fetch(server.base_url + english).status == 200
        assert fetch(server.base_url + spanish).status == 200


def test_truth_compares_paths_whatever_the_host(truth: Truth) -> None:
    assert truth.are_translations("http://example.org:9/reference/ch01.en.html", "/reference/ch01.de.html")
    assert not truth.are_translations("reference/ch01.en.html", "reference/ch02.es.html")
    assert not truth.are_translations("reference/ch01.en.html", "reference/ch01.en.html")
    assert not truth.are_translations("http://127.0.0.1:1/", "reference/ch01.en.html")


def test_every_link_on_the_site_resolves_and_html_is_utf8(server: SiteServer, site: Site) -> None:
    """Crawl everything reachable from the home page; links inside the site must never be broken."""
    to_visit, seen = [server.base_url], {server.base_url}
    html_pages = 0
    while to_visit:
        url = to_visit.pop()
        response = fetch(url)
        assert response.status == 200, url
        if not response.content_type.startswith("text/html"):
            continue
        assert response.content_type == "text/html; charset=utf-8", url
        text = response.body.decode("utf-8")
        assert re.search(r'charset="?utf-8', text[:2000], re.IGNORECASE), f"{url} does not declare UTF-8"
        html_pages += 1
        for href in _LINK.findall(text):
            target = urljoin(url, href).split("#")[0]
            if target.startswith(server.base_url) and target not in seen:
                seen.add(target)
                to_visit.append(target)
    assert html_pages == sum(site.pages.values()) + 1 + 2  # documents, the home page, the private pages


def test_build_is_deterministic_idempotent_and_fast_when_cached(site: Site, tmp_path: Path) -> None:
    cache = tmp_path / "localsite"
    cache.mkdir()
    (cache / "debs").symlink_to(site.cache_dir / "debs")  # reuse the downloads, rebuild everything else

    rebuilt = build_site(cache)
    first_hashes = file_hashes(rebuilt.docroot)
    assert first_hashes == file_hashes(site.docroot)
    assert rebuilt.truth_path.read_bytes() == site.truth_path.read_bytes()

    started = time.monotonic()
    again = build_site(cache)
    assert time.monotonic() - started < 1.0
    assert file_hashes(again.docroot) == first_hashes
    assert again.pages == site.pages


def test_unknown_language_is_refused_before_any_download(tmp_path: Path) -> None:
    with pytest.raises(StageError, match="choose among"):
        build_site(tmp_path, languages=("en", "xx"))
    assert not (tmp_path / "debs").exists()


def test_serve_command_runs_until_sigterm(site: Site) -> None:
    command = [sys.executable, "-m", "bitextflow_local.localsite", "serve", "--port", "0", "--cache", str(site.cache_dir)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        announcement = process.stdout.readline()
        base_url = re.search(r"http://127\.0\.0\.1:\d+/", announcement)
        assert base_url is not None, f"no URL announced: {announcement!r}"
        assert fetch(base_url.group(0) + "reference/index.en.html").status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_full_site_lists_languages_in_debians_order_behind_portals(site: Site, tmp_path: Path) -> None:
    """The crawl benchmark's site (here in three of its languages, to download little): every manual in
    the languages it is packaged in, portals one level below the home page, in Debian's order."""
    cache = tmp_path / "localsite-full"
    cache.mkdir()
    (cache / "debs").symlink_to(site.cache_dir / "debs")  # reuse the downloads (the maint-guide ones are added)
    full = build_site(cache, ["es", "en", "ca"], full=True)
    assert full.languages == ("ca", "en", "es")  # Català, English, Español: Debian's order, not the request's
    home = (full.docroot / "index.html").read_text(encoding="utf-8")
    assert re.findall(r'<a href="/(\w+)/" hreflang', home) == ["ca", "en", "es"]
    assert ".html" not in home.split("<h2>News</h2>")[0]  # the manuals are one level deeper
    portal = (full.docroot / "es" / "index.html").read_text(encoding="utf-8")
    assert '<html lang="es">' in portal
    for manual in ("/reference/index.es.html", "/install/es/index.html", "/maint-guide/index.es.html"):
        assert f'href="{manual}"' in portal and (full.docroot / manual.lstrip("/")).is_file()
    # Catalan has the Installation and New Maintainers' Guides but no Reference package
    assert not list((full.docroot / "reference").glob("*.ca.html")) and (full.docroot / "install" / "ca" / "index.html").is_file()
    truth = Truth.load(full.cache_dir)
    pairs = truth.pairs("en", "es")
    assert ("maint-guide/first.en.html", "maint-guide/first.es.html") in pairs
    assert len(pairs) > 94  # the default site's Reference and Guide pairs, plus the New Maintainers' Guide
    assert json.loads((cache / "site.stamp.json").read_text())["layout"] == "full"
    # the default site is untouched by the full one: its own cache, no layout in its stamp
    assert "layout" not in json.loads((site.cache_dir / "site.stamp.json").read_text())

    # man pages: English, a minority translated; cited pages linked in the page's language, else English
    assert ("man/man7/ascii.7.en.html", "man/man7/ascii.7.es.html") in pairs
    spanish = (full.docroot / "man/man7/armscii-8.7.es.html").read_text(encoding="utf-8")
    assert '<html lang="es">' in spanish and "<h2>NOMBRE</h2>" in spanish
    assert 'href="/man/man7/armscii-8.7.en.html" hreflang="en"' in spanish
    assert '<a href="/man/man7/ascii.7.es.html">ascii(7)</a>' in spanish
    english = (full.docroot / "man/man2/open.2.en.html").read_text(encoding="utf-8")
    assert '<a href="/man/man2/close.2.en.html">close(2)</a>' in english and "<h2>SYNOPSIS</h2>" in english
    assert not (full.docroot / "man/man2/creat.2.en.html").exists()  # an alias of open(2), not a page
    assert 'href="/man/index.es.html"' in (full.docroot / "man/index.html").read_text(encoding="utf-8")
    # changelogs: one English page per entry, archives paged newest first
    archive = (full.docroot / "changes/maint-guide/index.html").read_text(encoding="utf-8")
    assert archive.count("<li>") == 10 and 'href="/changes/maint-guide/page2.html">Older entries' in archive
    assert {"en": "changes/maint-guide/1.2.53.html"} in truth.groups
    home = (full.docroot / "index.html").read_text(encoding="utf-8")
    assert home.index("<h2>News</h2>") < home.index('href="/man/"') < home.index('href="/changes/"') < home.index("Downloads")

    composition = measure(full.docroot, truth, ("en", "es"))
    assert composition.one_language_documents > len(truth.groups) / 2  # most documents have no translation
    assert max(composition.depths.values()) >= 7  # the paged changelog archives
    assert composition.documents == len(truth.groups) and len(composition.pair_found_at) == len(pairs)


def test_composition_walks_the_site_breadth_first_and_locates_the_pairs(site: Site, truth: Truth, capsys) -> None:
    composition = measure(site.docroot, truth, ("en", "es"))
    order = composition.bfs_order
    assert order[0] == "index.html" and composition.depths["index.html"] == 0
    assert [composition.depths[path] for path in order] == sorted(composition.depths[path] for path in order)
    assert not set(order) & truth.disallowed and "install/en/install.en.pdf" not in order
    assert "install/en/install.en.txt" in order  # text files are fetched, downloads are not
    assert set(truth.documents("en")) <= set(order)
    position = {path: index + 1 for index, path in enumerate(order)}
    assert list(composition.pair_found_at) == sorted(max(position[a], position[b]) for a, b in truth.pairs("en", "es"))
    assert composition.ideal_auc > composition.bfs_auc > 0
    figures = composition.as_dict()
    assert figures["one_language_documents"] == sum(len(group) == 1 for group in truth.groups)
    assert figures["max_auc_vs_bfs"] == pytest.approx(composition.ideal_auc / composition.bfs_auc, abs=1e-3)
    assert main(["site", "stats", "--pair", "en-fr"]) == 0
    assert json.loads(capsys.readouterr().out)["pair"] == "en-fr"


def test_command_line_offers_services_site_demo_report_and_prepare() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).parent / "bitextflow-local"), "--help"], capture_output=True, text=True, check=True
    )
    assert "{services,site,demo,report,prepare}" in result.stdout
    site = subprocess.run(
        [str(Path(sys.executable).parent / "bitextflow-local"), "site", "--help"], capture_output=True, text=True, check=True
    )
    assert "{build,serve,stats,multi,ccindex}" in site.stdout


def test_found_auc_matches_the_benchmarks_trapezoids() -> None:
    # two pairs in four downloads, complete at downloads 2 and 4: curve 0, 1, 1, 2 of 2
    assert found_auc([2, 4], 4) == pytest.approx((0 + 0.5 + 1 + 1.5) / (4 * 2))
    assert found_auc([], 4) == 0.0


def test_partly_translated_pages_keep_the_original_under_translated_navigation(server: SiteServer, truth: Truth) -> None:
    """Chapter 11's translations have sections 11.1 and 11.3 translated and the rest in English, as unfinished
    translations are published; the truth knows them, and their links stay within the translation."""
    assert truth.partly_translated == {f"reference/ch11.{lang}.html" for lang in ("es", "fr", "de")}
    assert truth.partly_translated_pairs("en", "es") == {("reference/ch11.en.html", "reference/ch11.es.html")}
    assert ("reference/ch11.en.html", "reference/ch11.es.html") in truth.pairs("en", "es")
    assert not truth.partly_translated_pairs("es", "en")  # the partly translated page is the second of the pair

    page = fetch(server.base_url + "reference/ch11.es.html").body.decode()
    headings = re.findall(r'<h2 class="title"><a id="[^"]*"/>([^<]*)', page)
    assert [heading[:5] for heading in headings] == [f"11.{n}." for n in range(1, 8)]
    assert "Herramientas" in headings[0] and "Configuración" in headings[2]  # 11.1 and 11.3 translated
    assert headings[1].endswith("XML data") and headings[6].endswith("Miscellaneous data conversion")
    assert "<title>Capítulo 11. Conversión de datos</title>" in page and 'alt="Siguiente"' in page  # translated navigation
    switcher = _SWITCHER.search(page)
    assert switcher is not None
    assert {hreflang for _, hreflang, _ in _SWITCHER_LINK.findall(switcher.group(1))} == {"en", "fr", "de"}
    # the English sections link the Spanish pages (ch10 has none: its English page, as everywhere on the site)
    links = set(_LINK.findall(page))
    assert "ch11.es.html#_basic_hints_for_xml" in links and not any(link.startswith("ch11.en.html") for link in links)
    assert "ch10.en.html" in links
    assert 'href="ch11.es.html' in fetch(server.base_url + "reference/index.es.html").body.decode()
    assert fetch(server.base_url + "reference/ch11.en.html").body.decode().count('<h2 class="title">') == 7


#: a config that uses no encoder: the dictionary aligner, no pair scorer, no domain classifier
BARE = {"domain.classifier": None, "score.pair_scorer": "none", "align.sentence_aligner": "hunalign"}


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        # the shipped config: hunalign's dictionary, the margin scorer's encoder, the offline domain classifier (a
        # probe on the encoder, copied from the package: no offline set to build)
        ({}, ["local site", "heliport environment", "dictionary en-es", "encoder", "offline classifier en"]),
        (BARE, ["local site", "heliport environment", "dictionary en-es"]),
        ({**BARE, "score.pair_scorer": "margin"}, ["local site", "heliport environment", "dictionary en-es", "encoder"]),
        ({**BARE, "align.sentence_aligner": "hybrid-e5"}, ["local site", "heliport environment", "dictionary en-es", "encoder"]),
        # the static embeddings are distilled from the encoder
        (
            {**BARE, "align.sentence_aligner": "hybrid"},
            ["local site", "heliport environment", "dictionary en-es", "encoder", "static embeddings"],
        ),
        # document alignment's tfidf method translates with the dictionary
        ({**BARE, "align.sentence_aligner": "gale-church"}, ["local site", "heliport environment", "dictionary en-es"]),
        (
            {**BARE, "domain.classifier": "offline"},
            ["local site", "heliport environment", "dictionary en-es", "encoder", "offline classifier en"],
        ),
        # heliport's environment is for its language identifier, the default
        ({**BARE, "extract.language_identifier": "cld2"}, ["local site", "dictionary en-es"]),
    ],
)
def test_prepare_builds_what_the_pair_config_uses(overrides: dict[str, str], expected: list[str]) -> None:
    from bitextflow.config import load_pair_config
    from bitextflow_local.prepare import steps_for

    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(overrides)
    assert [step.name for step in steps_for(config)] == expected


def test_prepare_builds_the_offline_set_where_the_package_ships_no_probe(tmp_path, monkeypatch) -> None:
    from bitextflow.classify import offline_model
    from bitextflow.config import load_pair_config
    from bitextflow_local.prepare import steps_for

    monkeypatch.setattr(offline_model, "SHIPPED_DIR", tmp_path)  # a package that ships no probe
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml")
    assert [step.name for step in steps_for(config)][-2:] == ["offline domain set en", "offline classifier en"]
