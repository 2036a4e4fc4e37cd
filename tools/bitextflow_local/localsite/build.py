"""Build the local multilingual website from Debian documentation packages.

The site is the crawl target of the demo, the tests and the benchmarks. It is made of real translated
manuals (the Debian Reference and the Installation Guide), laid out the way multilingual sites are:
the Reference encodes the language in a file-name suffix (`/reference/ch01.es.html`, like Debian's
content negotiation) and the Installation Guide in a directory (`/install/es/ch03s02.html`), so URL
matching meets both styles. Every manual page gets a language switcher, a few pages exist in one
language only, English-only news pages and a robots-protected directory are added, and non-HTML files
are linked. One chapter's translations are left unfinished: past their first section they keep the English
text, under translated navigation (`partial.py`). Because the builder decides all of this, it also knows which
pages are translations of which, and which are partly translated: it writes that truth outside the docroot, for
measuring what the pipeline finds.

Two layouts. The default site (tests, demo) has both manuals in the languages requested, linked from the
home page in that order. The full site (`build_site(full=True)`, `bitextflow-local site build
--full`, its own cache folder) is the crawl benchmark's: every language Debian packages each manual in
(the Installation Guide in 19 languages, the Reference and the New Maintainers' Guide in 11, the FAQ in 10), so most pages
are in neither language of a pair; the home page lists the languages in the order Debian's web site
does, each linking to a portal page in that language that links to its manuals (one level deeper).
Like real multilingual sites, most of its documents have no translation: it also has the Linux man
pages in English with the minority that is translated (`manpages.py`) and paged changelog archives
(`changelogs.py`). `layouts.py` declares both layouts, `pages.py` renders a manual's pages, `assets.py` copies
their stylesheets, images and downloads, and `composition.py` measures what a built site is made of.
"""

from __future__ import annotations

import fcntl
import json
import os
import posixpath
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bitextflow.errors import StageError
from bitextflow.training.debian import FetchedPackage, fetch_packages
from bitextflow_local.localsite import changelogs, generated, manpages
from bitextflow_local.localsite.assets import copy_file, copy_install_assets, copy_reference_assets, write_file
from bitextflow_local.localsite.layouts import (
    DEFAULT_LANGUAGES,
    DEFAULT_LAYOUT,
    FULL_LAYOUT,
    FULL_LAYOUT_VERSION,
    INSTALL_PACKAGE,
    MAN_PAGES,
    REFERENCE_COMMON_PACKAGE,
    REFERENCE_IMAGES_TARBALL,
    Document,
    Layout,
    Section,
)
from bitextflow_local.localsite.pages import (
    is_partly_translated,
    link_rewrites,
    original_links,
    render_page,
    title_of,
    with_switcher,
)
from bitextflow_local.localsite.paths import DOCROOT_DIRNAME, FULL_SITE_DIRNAME, TRUTH_FILENAME, default_cache_dir
from bitextflow_local.localsite.truth import Truth

# Bump whenever the output changes for the same packages, so that cached sites are rebuilt.
BUILDER_VERSION = "2"
STAMP_FILENAME = "site.stamp.json"


@dataclass(frozen=True)
class Site:
    """A built local site: where it is, and how many HTML documents each language has."""

    cache_dir: Path
    docroot: Path
    truth_path: Path
    languages: tuple[str, ...]
    pages: Mapping[str, int]


def build_site(cache_dir: Path | None = None, languages: Sequence[str] | None = None, *, full: bool = False) -> Site:
    """Download the packages if needed and (re)build the docroot `<cache_dir>/site/`.

    `full` builds the full layout (default cache folder `localsite-full`; `languages` default to all
    of it and are put in Debian's order); otherwise the default layout in `languages` (default
    `DEFAULT_LANGUAGES`), in the order given.
    The docroot is rebuilt only when it is missing or when the package versions, the languages or the
    builder version changed, so calling this before every crawl is cheap. The same inputs give the same
    bytes. A file lock serialises concurrent builders (parallel tests, several Airflow tasks).
    """
    layout = FULL_LAYOUT if full else DEFAULT_LAYOUT
    default_cache = default_cache_dir().with_name(FULL_SITE_DIRNAME) if full else default_cache_dir()
    cache = Path(cache_dir) if cache_dir is not None else default_cache
    langs = _validated_languages(layout, languages)
    cache.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(cache / ".lock"):
        packages = fetch_packages(_package_names(layout, langs), cache)
        stamp = {
            "builder_version": BUILDER_VERSION,
            "languages": list(langs),
            "packages": {name: package.version for name, package in sorted(packages.items())},
        }
        if full:  # only here, so that caches of the default site stay valid
            stamp["layout"] = layout.name
            stamp["layout_version"] = FULL_LAYOUT_VERSION
        assemble_unless_current(cache, stamp, lambda: _assemble(cache, layout, langs, packages))
    return built_site(cache, langs)


def assemble_unless_current(cache: Path, stamp: Mapping[str, object], assemble: Callable[[], None]) -> None:
    """Run ``assemble`` (which writes the docroot and the truth file of ``cache``) unless both are there and the cache's
    stamp is ``stamp``; stamp the cache after. Call it holding :func:`exclusive_lock`."""
    stamp_path = cache / STAMP_FILENAME
    if not ((cache / DOCROOT_DIRNAME).is_dir() and (cache / TRUTH_FILENAME).is_file() and _read_stamp(stamp_path) == stamp):
        stamp_path.unlink(missing_ok=True)
        assemble()
        stamp_path.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")


def built_site(cache: Path, languages: tuple[str, ...]) -> Site:
    """The site built in ``cache``, with its pages per language from its truth file."""
    truth = Truth.load(cache)
    return Site(
        cache,
        cache / DOCROOT_DIRNAME,
        cache / TRUTH_FILENAME,
        languages,
        {lang: len(truth.documents(lang)) for lang in languages},
    )


def _validated_languages(layout: Layout, languages: Sequence[str] | None) -> tuple[str, ...]:
    """The requested languages without duplicates, in order (Debian's order for the full site); unknown
    ones are refused before any download."""
    if languages is None:
        languages = tuple(layout.endonyms) if layout.portals else DEFAULT_LANGUAGES
    langs = tuple(dict.fromkeys(languages))
    unknown = [lang for lang in langs if lang not in layout.endonyms]
    if not langs or unknown:
        raise StageError(
            f"the {layout.name} local site cannot be built in {', '.join(unknown) or 'no language'}; "
            f"choose among {', '.join(layout.endonyms)}"
        )
    return tuple(lang for lang in layout.endonyms if lang in langs) if layout.portals else langs


def _package_names(layout: Layout, languages: Sequence[str]) -> list[str]:
    """Every package the site needs: each manual in each of its languages, and the Reference's common files."""
    names = [section.package_name(lang) for section in layout.sections for lang in section.built_in(languages)]
    if _has_man_pages(layout, languages):
        names += manpages.package_names(languages)
    return list(dict.fromkeys([*names, REFERENCE_COMMON_PACKAGE]))


def _has_man_pages(layout: Layout, languages: Sequence[str]) -> bool:
    """Man pages are built with their English originals, so only on a site in English."""
    return layout.man_pages and "en" in languages


def _read_stamp(stamp_path: Path) -> object:
    """The stamp of the cached site, or None when there is none or it is unreadable."""
    try:
        return json.loads(stamp_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


@contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` for the duration of the block."""
    with lock_path.open("w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def _assemble(cache: Path, layout: Layout, languages: tuple[str, ...], packages: Mapping[str, FetchedPackage]) -> None:
    """Write the whole docroot beside the old one and swap it in, then write the truth file.

    Building aside means a failed build never leaves a half-written site behind a valid stamp.
    """
    staging = cache / (DOCROOT_DIRNAME + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()

    groups: list[dict[str, str]] = []
    partly_translated: list[str] = []
    titles: dict[tuple[str, str], str] = {}
    for section in layout.sections:
        documents = _discover(section, languages, packages)
        for lang in section.built_in(languages):
            rewrites = link_rewrites(section, documents, lang)
            original_rewrites = original_links(documents, lang)
            for document in documents:
                if lang not in document.sources:
                    continue
                page = render_page(document, lang, languages, layout.endonyms, rewrites, original_rewrites)
                write_file(staging, document.site_path(lang), page)
                if is_partly_translated(document, lang):
                    partly_translated.append(document.site_path(lang))
                if document.key == "index":
                    titles[section.title, lang] = title_of(page, document.sources[lang])
        groups.extend({lang: document.site_path(lang) for lang in document.sources} for document in documents)

    copy_reference_assets(packages[REFERENCE_COMMON_PACKAGE].root, staging)
    install = next(section for section in layout.sections if section.package == INSTALL_PACKAGE)
    copy_install_assets(packages[INSTALL_PACKAGE].root, staging, [install.code(lang) for lang in install.built_in(languages)])
    for section in layout.sections:
        if section.stylesheet and section.built_in(languages):
            lang = section.built_in(languages)[0]
            site_dir = posixpath.dirname(section.site_path("", lang))
            source = packages[section.package_name(lang)].root / section.source_folder(lang) / section.stylesheet
            copy_file(source, staging / site_dir / section.stylesheet)
    parts = []
    if _has_man_pages(layout, languages):
        groups.extend(_write_man_pages(staging, languages, layout.endonyms, packages))
        parts.append(generated.IndexSection("Manual pages", [generated.Link(f"/{manpages.SITE_DIR}/", "Linux manual pages")]))
    changelog_packages = [package for package in layout.changelog_packages if package in packages]
    if changelog_packages:
        groups.extend(_write_changelogs(staging, changelog_packages, packages))
        parts.append(
            generated.IndexSection("Changes", [generated.Link(f"/{changelogs.SITE_DIR}/", "Changelogs of the documentation")])
        )
    _write_generated_pages(staging, layout, languages, titles, parts)
    groups.extend({"en": path} for path in generated.NEWS_ARTICLES)

    truth = {
        "builder_version": BUILDER_VERSION,
        "languages": list(languages),
        "groups": groups,
        "disallowed": sorted(generated.PRIVATE_ARTICLES),
        "partly_translated": sorted(partly_translated),
    }
    publish(cache, staging, truth)


def publish(cache: Path, staging: Path, truth: Mapping[str, object]) -> None:
    """Swap the docroot built in ``staging`` in for the cache's, then write the site's truth file
    (:class:`bitextflow_local.localsite.truth.Truth`)."""
    docroot = cache / DOCROOT_DIRNAME
    shutil.rmtree(docroot, ignore_errors=True)
    staging.rename(docroot)
    (cache / TRUTH_FILENAME).write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _discover(section: Section, languages: Sequence[str], packages: Mapping[str, FetchedPackage]) -> list[Document]:
    """The pages of `section` found in the packages, with `only_in` pages reduced to their one language."""
    sources: dict[str, dict[str, Path]] = {}
    for lang in section.built_in(languages):
        package = section.package_name(lang)
        source_dir = section.source_folder(lang)
        directory = packages[package].root / source_dir
        if not directory.is_dir():
            raise StageError(
                f"package {package} has no {source_dir}: its layout changed, "
                f"so the {section.title} entry in bitextflow_local.localsite.layouts needs updating"
            )
        suffix = section.source_file.format(key="", lang=section.code(lang))
        for source in directory.glob("*" + suffix):
            sources.setdefault(source.name[: -len(suffix)], {})[lang] = source
    documents = []
    for key in sorted(sources):
        by_language = sources[key]
        only_language = section.only_in.get(key)
        if only_language in by_language:
            by_language = {only_language: by_language[only_language]}
        documents.append(Document(section, key, by_language))
    return documents


def _write_man_pages(
    docroot: Path, languages: Sequence[str], endonyms: Mapping[str, str], packages: Mapping[str, FetchedPackage]
) -> list[dict[str, str]]:
    """The man pages, their indexes (`/man/`: the sections in English, then one page per translation
    language), and their truth groups. A cited page links to its translation in the citing page's
    language where there is one, else to the English page."""
    sources = manpages.discover({name: package.root for name, package in packages.items()}, languages)
    texts = manpages.render_all(sources, workers=os.cpu_count() or 1)
    built = [lang for lang in languages if any(lang in pages for pages in sources.values())]
    listed: dict[str, list[tuple[str, str, str]]] = {lang: [] for lang in built}
    for lang in built:
        href_of = {
            key.split("/", 1)[1]: MAN_PAGES.site_path(key, lang if lang in pages else "en") for key, pages in sources.items()
        }
        for key, pages in sources.items():
            if lang not in pages:
                continue
            document = Document(MAN_PAGES, key, pages)
            title, body = manpages.page_html(key, texts[key, lang], href_of)
            page = with_switcher(generated.page(title, lang, body), pages[lang], document, lang, languages, endonyms)
            write_file(docroot, document.site_path(lang), page)
            listed[lang].append((document.site_path(lang), key.split("/", 1)[1], manpages.description(texts[key, lang])))
    for number in manpages.MAN_SECTIONS:
        heading = f"Manual pages, section {number}"
        entries = [entry for entry in listed["en"] if entry[0].startswith(f"{manpages.SITE_DIR}/man{number}/")]
        write_file(
            docroot,
            f"{manpages.SITE_DIR}/man{number}/index.html",
            generated.page(heading, "en", manpages.index_body(heading, entries)),
        )
    for lang in built[1:] if built and built[0] == "en" else built:
        body = manpages.index_body(endonyms[lang], listed[lang])
        write_file(docroot, f"{manpages.SITE_DIR}/index.{lang}.html", generated.page(endonyms[lang], lang, body))
    sections = [generated.Link(f"/{manpages.SITE_DIR}/man{number}/", f"Section {number}") for number in manpages.MAN_SECTIONS]
    translations = [
        generated.Link(f"/{manpages.SITE_DIR}/index.{lang}.html", endonyms[lang], lang) for lang in built if lang != "en"
    ]
    index = [generated.IndexSection("Sections", sections), generated.IndexSection("Translations", translations)]
    write_file(docroot, f"{manpages.SITE_DIR}/index.html", generated.index_page(index, "Linux manual pages"))
    return [{lang: MAN_PAGES.site_path(key, lang) for lang in pages} for key, pages in sources.items()]


def _write_changelogs(
    docroot: Path, package_names: Sequence[str], packages: Mapping[str, FetchedPackage]
) -> list[dict[str, str]]:
    """The changelog archives of `package_names` and their index `/changes/`; their truth groups (English only)."""
    groups: list[dict[str, str]] = []
    archives = []
    for name in package_names:
        entries = changelogs.parse(changelogs.changelog_file(packages[name].root, name))
        if not entries:
            raise StageError(f"the changelog of {name} has no entry this builder can read: check its format")
        source = entries[0].source
        for entry in entries:
            write_file(
                docroot, entry.site_path, generated.page(f"{entry.source} {entry.version}", "en", changelogs.entry_body(entry))
            )
            groups.append({"en": entry.site_path})
        for path, body in changelogs.archive_pages(source, entries):
            write_file(docroot, path, generated.page(f"Changes in {source}", "en", body))
        archives.append(generated.Link(f"/{changelogs.SITE_DIR}/{source}/", source))
    index = generated.index_page([generated.IndexSection("Packages", archives)], "Changelogs")
    write_file(docroot, f"{changelogs.SITE_DIR}/index.html", index)
    return groups


def _write_generated_pages(
    docroot: Path,
    layout: Layout,
    languages: Sequence[str],
    titles: Mapping[tuple[str, str], str],
    parts: Sequence[generated.IndexSection] = (),
) -> None:
    """The home page, the language portals of the full layout, news, private pages, robots.txt and
    stylesheet; `parts` are home-page sections listed after the news (the site's other parts)."""
    write_file(docroot, "robots.txt", generated.robots_txt())
    write_file(docroot, generated.STYLESHEET_PATH, generated.stylesheet())
    for path, article in {**generated.NEWS_ARTICLES, **generated.PRIVATE_ARTICLES}.items():
        write_file(docroot, path, generated.article_page(article))

    sections = []
    for lang in languages:
        links = [
            generated.Link("/" + section.site_path("index", lang), titles[section.title, lang], lang)
            for section in layout.sections
            if (section.title, lang) in titles
        ]
        install = next(section for section in layout.sections if section.package == INSTALL_PACKAGE)
        if lang in install.built_in(languages):
            code = install.code(lang)
            links += [
                generated.Link(f"/install/{code}/install.{code}.{extension}", f"install.{code}.{extension}", lang)
                for extension in ("pdf", "txt")
                if (docroot / f"install/{code}/install.{code}.{extension}").is_file()
            ]
        if layout.portals:
            write_file(docroot, f"{lang}/index.html", generated.portal_page(layout.endonyms[lang], lang, links))
        else:
            sections.append(generated.IndexSection(layout.endonyms[lang], links, lang))
    if layout.portals:
        portals = [generated.Link(f"/{lang}/", layout.endonyms[lang], lang) for lang in languages]
        sections.append(generated.IndexSection("Documentation in your language", portals))
    news = [generated.Link("/" + path, article.title) for path, article in generated.NEWS_ARTICLES.items()]
    downloads = [
        generated.Link("/" + REFERENCE_IMAGES_TARBALL, "Debian Reference images (tar.gz)"),
        generated.Link("/install/example-preseed.txt", "Example preseed file (text)"),
    ]
    private = [generated.Link("/" + path, article.title) for path, article in generated.PRIVATE_ARTICLES.items()]
    sections += [
        generated.IndexSection("News", news),
        *parts,
        generated.IndexSection("Downloads", downloads),
        generated.IndexSection("Staff only", private),
    ]
    write_file(docroot, "index.html", generated.index_page(sections))
