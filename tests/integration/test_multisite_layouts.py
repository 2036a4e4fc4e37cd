"""Sites of a web under other URL layouts (the crawl benchmark's held-out sites): each layout's paths, links that all
resolve on the site, and the local site's own layout unchanged byte for byte."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from bitextflow.text.urls import url_key
from bitextflow_local.localsite import build_site
from bitextflow_local.localsite.multisite import LAYOUTS, Web, build_web
from bitextflow_local.localsite.truth import site_path
from tests.integration.test_localsite import file_hashes

_LINK = re.compile(r'(?:href|src)="([^"]*)"')
_ORIGIN = "http://site.test/"


def _broken_links(docroot: Path) -> list[str]:
    """Links of the site's pages that name a path of the site with no file behind it."""
    broken = []
    for page in docroot.rglob("*.html"):
        path = page.relative_to(docroot).as_posix()
        for href in _LINK.findall(page.read_text(encoding="utf-8")):
            url = urljoin(_ORIGIN + path, href)
            if url.startswith(_ORIGIN) and not (docroot / site_path(url)).is_file():
                broken.append(f"{path} -> {href}")
    return broken


def test_each_layout_moves_the_language_marker_and_keeps_every_link_whole(tmp_path: Path) -> None:
    source = build_site()
    web = build_web(source, tmp_path / "laid-out", len(LAYOUTS), seed=7, layouts=LAYOUTS)
    assert Web.load(web.root) == web
    forms = {
        "as-built": (r"(\.en\.html|/en/)", r"(\.es\.html|/es/)"),
        "folder": (r"^en/", r"^es/"),
        "names": (r"^english/", r"^spanish/"),
        "letter": (r"_e\.html$", r"_s\.html$"),
        "numbered": (r"^1/", r"^2/"),
        "translated": (r"^(install|reference)/", r"^[0-9a-f]{2}/[0-9a-f]{8}\.html$"),
    }
    for site in web.sites:
        pairs = site.truth.pairs("en", "es")
        english, spanish = forms[site.layout]
        assert pairs and all(re.search(english, a) and re.search(spanish, b) for a, b in pairs), site.layout
        assert all((site.docroot / path).is_file() for document in site.documents for path in document.values())
        assert _broken_links(site.docroot) == [], site.layout
    translated = next(site for site in web.sites if site.layout == "translated")
    assert all(url_key(_ORIGIN + a)[1] == [] for a, _b in translated.truth.pairs("en", "es")), "no marker left to read"
    plain = build_web(source, tmp_path / "plain", 1, seed=7)
    assert file_hashes(plain.sites[0].docroot) == file_hashes(web.sites[0].docroot)  # as-built: the bytes of before
    assert urlsplit(web.sites[0].url(8790)).hostname == "127.0.0.2"
