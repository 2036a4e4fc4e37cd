"""A web of many small bilingual sites, carved out of the local site, each served on its own loopback address.

The scale benchmark crawls many sites instead of one large one: the crawler's politeness, host groups and
site partitions are per host, and so is document alignment. :func:`build_web` deals the documents of a
built local site (:func:`bitextflow_local.localsite.build_site`: the default site, or the full one for more
material) out to N sites. Each site has a home page and about 15 to 40 pages:

- translated documents, published in every language of the web, linked to each other by the language
  switcher the local site gives every manual page;
- documents the local site has in one language only (news, untranslated chapters; many man pages and
  changelogs on the full site), and translated documents published here in one language only, at least
  one per language, so that every site has pages without a counterpart in each language.

The documents are dealt, not drawn: each kind of document goes out in a shuffled order, and only when every
one of them has been dealt are they dealt again, in another order. So sites share no document until the
local site runs out of them (the default site has 95 en-es translated documents, the full one 206), then
repeat some, as mirrors do. The first sites of a larger web are the sites of a smaller one with the same seed.

A page is copied from the local site with its links mended for the smaller site: a language-switcher link to
a translation this site does not publish is removed; a link to a page it does not publish goes to that page's
version in another language where the site has one, else to the home page; the files pages use (stylesheets,
images, downloads) are brought along. So every link of a site resolves on that site.

With ``layouts``, site k publishes its language versions under the URL layout ``layouts[k % len(layouts)]`` instead
of the local site's (:data:`LAYOUTS`: the language as a first folder, a language name, a one-letter suffix, a number,
or the second language under opaque paths), and every link of its pages is rewritten to match: the crawl benchmark
holds out one layout at a time (``bench/crawl_efficiency.py --leave-one-site-out``), so that a URL model meets a layout
it was not trained on, some of which the URL rules cannot read either.

Site k (from 0) is served on 127.0.0.(k + 2) (127.0.0.1 stays the local site's and the services'), all sites
on one port (:func:`bitextflow_local.localsite.server.serve_sites`). The crawler knows a site by its registered
domain, which for an address is the address itself, so every site is a host, a politeness queue and a site
partition of its own. The web's truth (`web.json`: each site's address, documents and translated page pairs)
lies beside the sites, for benchmarks to measure what a run found; it is never an input of the pipeline.
"""

from __future__ import annotations

import functools
import ipaddress
import itertools
import json
import os
import random
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from bitextflow.errors import StageError
from bitextflow_local.localsite import generated
from bitextflow_local.localsite.assets import write_file
from bitextflow_local.localsite.build import Site
from bitextflow_local.localsite.layouts import DEBIAN_LANGUAGE_ORDER
from bitextflow_local.localsite.pages import title_of
from bitextflow_local.localsite.server import LOOPBACK
from bitextflow_local.localsite.truth import Truth, site_path
from bitextflow_local.localsite.url_layouts import LAYOUTS, laid_out

# Bump whenever the output changes for the same local site, seed and number of sites.
BUILDER_VERSION = "1"
WEB_FILENAME = "web.json"
SITES_DIRNAME = "sites"
DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "es")
DEFAULT_PORT = 8790
FIRST_ADDRESS = ipaddress.IPv4Address("127.0.0.2")
MAX_SITES = int(LOOPBACK.broadcast_address) - int(FIRST_ADDRESS)
# How many documents of each kind a site gets (inclusive ranges): with two languages, 15 to 35 pages.
TRANSLATED_PER_SITE = (5, 12)
ONE_SIDE_PER_LANGUAGE = (1, 2)  # translated documents published in that language only
ONE_LANGUAGE_PER_SITE = (2, 6)  # documents the local site has in one language only
# Only resolves relative links; nothing is requested from it.
_ORIGIN = "http://site.invalid/"
_LINK = re.compile(r'\b(href|src)="([^"]*)"')
# A link that names its target's language, as the language switcher's do (`pages.py`): ` <a href="/x.es.html"
# hreflang="es" lang="es">Español</a>`, with the space that separates it from the item before.
_LANGUAGE_LINK = re.compile(r' ?<a href="([^"]*)" hreflang="[^"]*" lang="[^"]*">[^<]*</a>')


@dataclass(frozen=True)
class WebSite:
    """One site of a web: its address, its docroot and its documents (language -> site path each)."""

    address: str
    docroot: Path
    documents: tuple[Mapping[str, str], ...]
    layout: str = LAYOUTS[0]

    @property
    def truth(self) -> Truth:
        """Which of this site's pages translate which (site-relative paths, as for the local site)."""
        return Truth(self.documents, ())

    @property
    def pages(self) -> int:
        """The site's HTML pages: its documents' and the home page."""
        return 1 + sum(len(document) for document in self.documents)

    def url(self, port: int, path: str = "") -> str:
        """`http://<address>:<port>/<path>`."""
        return f"http://{self.address}:{port}/{path}"


@dataclass(frozen=True)
class Web:
    """A built web: its folder, the seed and languages it was built with, and its sites in address order."""

    root: Path
    seed: int
    languages: tuple[str, ...]
    sites: tuple[WebSite, ...]

    @classmethod
    def load(cls, root: Path) -> Web:
        """Read the web that :func:`build_web` wrote to `root`."""
        path = Path(root) / WEB_FILENAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StageError(f"{path} does not exist: build the web first (bitextflow-local site multi --out {root})") from None
        except ValueError as error:
            raise StageError(f"{path} is not valid JSON ({error}): build the web again") from error
        sites = tuple(
            WebSite(site["address"], Path(root) / site["docroot"], tuple(site["documents"]), site.get("layout", LAYOUTS[0]))
            for site in data["sites"]
        )
        return cls(Path(root), data["seed"], tuple(data["languages"]), sites)

    @property
    def pages(self) -> int:
        """HTML pages of every site together."""
        return sum(site.pages for site in self.sites)

    def seeds(self, port: int) -> list[str]:
        """Every site's home page: the `crawl.seeds` of a crawl of the whole web."""
        return [site.url(port) for site in self.sites]

    def allowed_addresses(self, port: int) -> list[str]:
        """The `crawl.allow_private_addresses` that let a crawl reach every site on `port` and nothing else: the
        networks that hold exactly the sites' addresses, each with the port (`127.0.0.2/31:8790`, `127.0.0.4/30:8790`,
        ...; 127.0.0.1, where the local services listen, stays refused)."""
        first, last = (ipaddress.IPv4Address(site.address) for site in (self.sites[0], self.sites[-1]))
        return [f"{network}:{port}" for network in ipaddress.summarize_address_range(first, last)]

    def url_pairs(self, port: int, lang_a: str, lang_b: str) -> set[tuple[str, str]]:
        """Every (URL in lang_a, URL in lang_b) pair of translated pages of the web served on `port`."""
        return {
            (site.url(port, path_a), site.url(port, path_b))
            for site in self.sites
            for path_a, path_b in site.truth.pairs(lang_a, lang_b)
        }


def build_web(
    source: Site,
    out: Path,
    sites: int,
    seed: int = 0,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    layouts: Sequence[str] = (),
) -> Web:
    """Write a web of `sites` sites in `languages`, dealt from the documents of the built local site `source`,
    to `<out>/sites/<address>/`, and its truth to `<out>/web.json`; site k laid out as `layouts[k % len(layouts)]`
    (:data:`LAYOUTS`; none: the local site's own).

    The same local site, number of sites, seed and languages give the same bytes. The sites are written beside
    the old ones and swapped in, so a failed build leaves the previous web whole.
    """
    langs = _validated(source, sites, languages)
    unknown = [layout for layout in layouts if layout not in LAYOUTS]
    if unknown:
        raise StageError(f"unknown site layout {', '.join(unknown)}; choose from {', '.join(LAYOUTS)}")
    truth = Truth.load(source.cache_dir)
    documents = [
        {lang: group[lang] for lang in langs if lang in group} for group in truth.groups if any(lang in group for lang in langs)
    ]
    translated = [document for document in documents if len(document) > 1]
    one_language = [document for document in documents if len(document) == 1]
    if not translated:
        raise StageError(
            f"the local site at {source.docroot} has no document in two of {', '.join(langs)}; choose other --languages"
        )
    carved = _Source(
        source.docroot,
        frozenset(path.relative_to(source.docroot).as_posix() for path in source.docroot.rglob("*") if path.is_file()),
        {path: group for group in truth.groups for path in group.values()},
    )
    translated_deal = _Deal(translated, f"{seed}:translated")
    one_language_deal = _Deal(one_language, f"{seed}:one-language")

    out = Path(out)
    if (out / SITES_DIRNAME).exists() and not (out / WEB_FILENAME).is_file():
        raise StageError(f"{out} has a {SITES_DIRNAME}/ folder that is no web's (no {WEB_FILENAME}); choose another --out")
    staging = out / (SITES_DIRNAME + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    built = []
    for index in range(sites):
        address = str(FIRST_ADDRESS + index)
        published = _site_documents(random.Random(f"{seed}:site:{index}"), langs, translated_deal, one_language_deal)
        layout = layouts[index % len(layouts)] if layouts else LAYOUTS[0]
        moved = laid_out(published, layout, langs)
        _write_site(carved, staging / address, f"Documentation site {index + 1}", published, langs, moved)
        documents = tuple({lang: moved.get(path, path) for lang, path in document.items()} for document in published)
        built.append(WebSite(address, out / SITES_DIRNAME / address, documents, layout))
    shutil.rmtree(out / SITES_DIRNAME, ignore_errors=True)
    staging.rename(out / SITES_DIRNAME)
    web = Web(out, seed, langs, tuple(built))
    _write_truth(web)
    return web


def _validated(source: Site, sites: int, languages: Sequence[str]) -> tuple[str, ...]:
    """The web's languages without duplicates; refuses a number of sites or languages the web cannot have."""
    if not 1 <= sites <= MAX_SITES:
        raise StageError(f"a web has 1 to {MAX_SITES} sites (one address of {LOOPBACK} each), not {sites}")
    langs = tuple(dict.fromkeys(languages))
    missing = [lang for lang in langs if lang not in source.languages]
    if len(langs) < 2 or missing:
        raise StageError(
            f"a web's sites are in two or more languages of the local site ({', '.join(source.languages)}); "
            f"{', '.join(missing or langs)} will not do: choose others with --languages"
        )
    return langs


class _Deal:
    """Documents dealt out to the sites: every one once in a shuffled order, then again in another order, and so on."""

    def __init__(self, documents: Sequence[Mapping[str, str]], name: str) -> None:
        self.size = len(documents)
        self._order = self._rounds(documents, name)

    @staticmethod
    def _rounds(documents: Sequence[Mapping[str, str]], name: str) -> Iterator[Mapping[str, str]]:
        for round_number in itertools.count():
            order = list(documents)
            random.Random(f"{name}:{round_number}").shuffle(order)
            yield from order

    def take(self, count: int) -> list[Mapping[str, str]]:
        """The next `count` documents (at most all of them), skipping one dealt twice to a site where two rounds meet."""
        taken: list[Mapping[str, str]] = []
        while len(taken) < min(count, self.size):
            document = next(self._order)
            if document not in taken:
                taken.append(document)
        return taken


def _site_documents(
    rng: random.Random,
    languages: Sequence[str],
    translated: _Deal,
    one_language: _Deal,
) -> list[dict[str, str]]:
    """One site's documents, each as the language -> path of the versions it publishes."""
    one_side = [lang for lang in languages for _ in range(rng.randint(*ONE_SIDE_PER_LANGUAGE))]
    dealt = translated.take(rng.randint(*TRANSLATED_PER_SITE) + len(one_side))
    split = max(len(dealt) - len(one_side), 0)  # a local site with few translated documents gives fewer one-side ones
    published = [dict(document) for document in dealt[:split]]
    # a translated document published in one language: the page stays, its counterpart is left out
    for lang, document in zip(one_side, dealt[split:], strict=False):
        kept = lang if lang in document else next(iter(document))  # with three languages or more, not all have `lang`
        published.append({kept: document[kept]})
    published += [dict(document) for document in one_language.take(rng.randint(*ONE_LANGUAGE_PER_SITE))]
    return published


def _write_site(
    source: _Source,
    docroot: Path,
    title: str,
    published: Sequence[Mapping[str, str]],
    languages: Sequence[str],
    moved: Mapping[str, str],
) -> None:
    """Write one site: its pages (at their ``moved`` paths, where they move), their links mended (module docstring),
    the files they use, a home page that lists each document in its first language (the others are a language switch
    away), robots.txt, a stylesheet."""
    paths = {path for document in published for path in document.values()}
    mender = _LinkMender(source, paths, moved)
    listed: dict[str, list[generated.Link]] = {lang: [] for lang in languages}
    for document in published:
        for lang, path in document.items():
            page = mender.mended(path, lang)
            write_file(docroot, moved.get(path, path), page)
            if lang == next(iter(document)):
                listed[lang].append(generated.Link("/" + moved.get(path, path), title_of(page, source.docroot / path), lang))
    for path in sorted(mender.files):
        _link_or_copy(source.docroot / path, docroot / path)
    sections = [generated.IndexSection(DEBIAN_LANGUAGE_ORDER[lang], links, lang) for lang, links in listed.items() if links]
    write_file(docroot, "index.html", generated.index_page(sections, title))
    write_file(docroot, "robots.txt", generated.robots_txt())
    write_file(docroot, generated.STYLESHEET_PATH, generated.stylesheet())


@dataclass(frozen=True)
class _Source:
    """What the sites are carved from: the local site's docroot, its files, and the truth group of each of its pages."""

    docroot: Path
    files: frozenset[str]
    group_of: Mapping[str, Mapping[str, str]]


class _LinkMender:
    """Rewrites the links of a local-site page for a site that publishes only `paths` of it, some of them `moved`
    (local-site path -> site path: every link then becomes absolute, to where its target is); collects the other
    files (not pages) its pages link to in `files`."""

    def __init__(self, source: _Source, paths: set[str], moved: Mapping[str, str]) -> None:
        self.source = source
        self.paths = paths
        self.moved = moved
        self.files: set[str] = set()

    def mended(self, path: str, lang: str) -> str:
        """The page at `path` (in `lang`) of the local site, with its links mended."""
        text = (self.source.docroot / path).read_text(encoding="utf-8")
        text = _LANGUAGE_LINK.sub(lambda link: "" if _resolved(path, link.group(1)) not in self.paths else link.group(0), text)
        return _LINK.sub(lambda link: self._link(path, lang, link), text)

    def _link(self, page: str, lang: str, link: re.Match[str]) -> str:
        href = link.group(2)
        target = _resolved(page, href)
        if target is None or href.startswith("#"):
            return link.group(0)  # off the site (another host, mailto:), or within the page
        group = self.source.group_of.get(target, {})
        if target in self.paths or target == page:
            destination = target  # published, or the page itself
        elif not group and target in self.source.files and not target.endswith(".html"):
            self.files.add(target)
            destination = target
        else:
            stand_in = self._stand_in(group, lang)
            return f'{link.group(1)}="/{self.moved.get(stand_in, stand_in)}"'
        if not self.moved:
            return link.group(0)
        fragment = urlsplit(href).fragment
        return f'{link.group(1)}="/{self.moved.get(destination, destination)}{"#" + fragment if fragment else ""}"'

    def _stand_in(self, group: Mapping[str, str], lang: str) -> str:
        """Where a link to an unpublished page of `group` goes: the page's version in `lang` or another language
        that the site publishes, else the home page (`""`)."""
        if group.get(lang) in self.paths:
            return group[lang]
        return next((version for version in group.values() if version in self.paths), "")


@functools.lru_cache(maxsize=1 << 16)  # a web links the same pages of the local site from many sites
def _resolved(page: str, href: str) -> str | None:
    """The site path that a link `href` on the page at `page` names, or None for a link off the site."""
    url = urljoin(_ORIGIN + page, href)
    return site_path(url) if url.startswith(_ORIGIN) else None


def _link_or_copy(source: Path, target: Path) -> None:
    """A hard link to `source` where the file system allows one (a web of 200 sites uses the same downloads many
    times), else a copy."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _write_truth(web: Web) -> None:
    """`web.json`: per site its address, docroot, page count, documents and translated page pairs per language pair."""
    language_pairs = list(itertools.combinations(web.languages, 2))
    sites = [
        {
            "address": site.address,
            "docroot": site.docroot.relative_to(web.root).as_posix(),
            "pages": site.pages,
            "documents": [dict(document) for document in site.documents],
            "pairs": {f"{a}-{b}": sorted(site.truth.pairs(a, b)) for a, b in language_pairs},
        }
        | ({"layout": site.layout} if site.layout != LAYOUTS[0] else {})
        for site in web.sites
    ]
    truth = {"builder_version": BUILDER_VERSION, "seed": web.seed, "languages": list(web.languages), "sites": sites}
    (web.root / WEB_FILENAME).write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
