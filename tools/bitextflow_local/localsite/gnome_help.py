"""GNOME's desktop help as a second local site to measure releases on, in languages no Debian manual has.

Debian's ``gnome-user-docs`` holds the help of the GNOME desktop as Mallard pages (``usr/share/help/<locale>/gnome-help``),
in English and about 40 translations, Persian (right to left, in the Arabic script) among them. The builder renders each
page to HTML the way GNOME's help site shows it: titles, paragraphs, steps, notes, tables and term lists, inline links
(an empty one shows the target page's title), key sequences joined by ``+``, and a guide page's list of its topics; the
conditions of the standard desktop on the web (not the classic mode, not a phone, no install buttons) choose among
conditional blocks; figures, editors' comments and the ``info`` block are left out. Pages are at
``/help/<lang>/<page>.html``, each with a language switcher, ``/help/<lang>/index.html`` the help's front page.

The help is translated with itstool, which keeps the English page's elements in their order (it drops the editors'
comments, left out here for that reason, and leaves a message nobody translated in English), so block i of an English
page translates block i of its translation, as with po4a's manuals, and :mod:`bitextflow_local.localsite.block_truth`
judges released pairs by position the same way (``bench/release_precision.py --site help``). Unlike the manuals, most
translations are unfinished: a page mixes translated blocks with English ones, which the judge counts as not
translated, and a translation of which under half the text is translated is an English page with a translated title,
listed as partly translated in the truth.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import html
import re
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from lxml import etree

from bitextflow.errors import StageError
from bitextflow.settings import cache_dir
from bitextflow.training.debian import fetch_packages
from bitextflow_local.localsite import generated
from bitextflow_local.localsite.assets import write_file
from bitextflow_local.localsite.block_truth import PageBlocks
from bitextflow_local.localsite.build import Site, assemble_unless_current, built_site, exclusive_lock, publish
from bitextflow_local.localsite.paths import DOCROOT_DIRNAME, default_cache_dir

PACKAGE = "gnome-user-docs"
HELP_DIR = "usr/share/help"
DOCUMENT = "gnome-help"
SITE_DIR = "help"
# Bump whenever the output changes for the same package, so that cached sites are rebuilt.
BUILDER_VERSION = "4"
#: GNOME's locale folder of a site language (:func:`bitextflow_local.localsite.layouts.site_language`), where it is not
#: the language's code.
LOCALE_FOLDERS = {"en": "C", "zh-cn": "zh_CN", "zh-tw": "zh_TW", "pt-br": "pt_BR", "sr_Latn": "sr@latin"}
#: GNOME's locale folders whose language is not the folder's name in the project's spelling.
LOCALE_LANGUAGES = {"zh_CN": "zh", "zh_TW": "zh_Hant", "pt_BR": "pt", "sr@latin": "sr_Latn"}
#: A block whose letters agree this much with the English block's is the English text (a link's title translated in it).
UNTRANSLATED_SIMILARITY = 0.5
MALLARD = "{http://projectmallard.org/1.0/}"
CONDITIONAL = "{http://projectmallard.org/if/1.0/}"
#: Conditions that do not hold for the standard desktop's help on the web; any other holds.
FALSE_CONDITIONS = frozenset({"platform:gnome-classic", "target:mobile", "action:install"})
#: Mallard's block elements and the HTML element each becomes (their children are blocks too).
BLOCKS = {"p": "p", "code": "pre", "screen": "pre", "note": "div", "example": "div", "figure": "div", "quote": "blockquote",
          "synopsis": "div", "list": "ul", "steps": "ol", "terms": "dl", "table": "table", "thead": "thead",
          "tbody": "tbody", "tr": "tr", "td": "td", "th": "th", "title": "p", "subtitle": "p", "desc": "p", "cite": "p"}  # fmt: skip
#: Elements of text and inline elements only.
TEXT_BLOCKS = frozenset({"p", "code", "screen", "title", "subtitle", "desc", "cite"})
SKIPPED = frozenset({"info", "comment", "media", "include"})
INLINE_HTML = {"em": "em", "code": "code", "cmd": "code", "input": "kbd", "key": "kbd", "output": "samp", "var": "var"}


def _local(element: etree._Element) -> str:
    return etree.QName(element).localname


def _holds(test: str | None) -> bool:
    """Whether a Mallard condition holds: comma-separated alternatives of space-separated conditions that must all hold,
    each of them negated by ``!``."""
    if test is None:
        return True
    return any(
        all(
            (token[1:] in FALSE_CONDITIONS) if token.startswith("!") else (token not in FALSE_CONDITIONS)
            for token in group.split()
        )
        for group in test.split(",")
    )


def _is_shown(element: etree._Element) -> bool:
    """Whether the page shows the element: an element (no comment or processing instruction), not one left out, and
    its condition holds."""
    return isinstance(element.tag, str) and _local(element) not in SKIPPED and _holds(element.get(CONDITIONAL + "test"))


def _shown(element: etree._Element) -> list[etree._Element]:
    """The element's children as the page shows them, conditions resolved: an ``if:choose`` shows its first ``if:when``
    that holds, else its ``if:else``."""
    shown: list[etree._Element] = []
    for child in filter(_is_shown, element):
        if child.tag == CONDITIONAL + "if":
            shown += _shown(child)
        elif child.tag == CONDITIONAL + "choose":
            chosen = next((option for option in child if option.tag == CONDITIONAL + "when" and _holds(option.get("test"))), None)
            chosen = chosen if chosen is not None else child.find(CONDITIONAL + "else")
            shown += _shown(chosen) if chosen is not None else []
        else:
            shown.append(child)
    return shown


class PageRenderer:
    """Renders the Mallard pages of one language, given every page's title in it (inline HTML) and each guide's
    topics."""

    def __init__(self, titles: Mapping[str, str], topics: Mapping[str, Sequence[str]]) -> None:
        self.titles = titles
        self.topics = topics

    def body(self, page_id: str, root: etree._Element) -> str:
        """The page's content as HTML blocks."""
        return self._blocks(_shown(root), "page", page_id, depth=1)

    def _blocks(self, elements: Sequence[etree._Element], parent: str, page_id: str, depth: int) -> str:
        parts = []
        listed_topics = False
        for child in elements:
            name = _local(child)
            if name == "title" and parent in ("page", "section"):
                parts.append(f"<h{depth}>{self.inline(child)}</h{depth}>\n")
            elif name == "section":
                parts.append(f'<div class="section" id="{html.escape(child.get("id", ""))}">\n')
                place = f"{page_id.partition('#')[0]}#{child.get('id', '')}"  # a section lists the topics filed under it
                parts.append(self._blocks(_shown(child), name, place, depth + 1) + "</div>\n")
            elif name == "links":  # a guide lists its topics once; links to sections and "see also" are left out
                if child.get("type") == "topic" and not listed_topics:
                    listed_topics = True
                    parts.append(self._topic_list(page_id))
            elif name == "item" and parent == "terms":
                shown = _shown(child)
                heads = "".join(f"<dt>{self.inline(term)}</dt>\n" for term in shown if _local(term) == "title")
                described = [part for part in shown if _local(part) != "title"]
                parts.append(f"{heads}<dd>\n{self._blocks(described, name, page_id, depth)}</dd>\n")
            elif name == "item":
                parts.append(f"<li>\n{self._blocks(_shown(child), name, page_id, depth)}</li>\n")
            elif name in TEXT_BLOCKS:
                parts.append(f"<{BLOCKS[name]}>{self.inline(child)}</{BLOCKS[name]}>\n")
            else:
                parts.append(self._container(child, page_id, depth))
        return "".join(parts)

    def _container(self, element: etree._Element, page_id: str, depth: int) -> str:
        """A block of blocks; a list's title goes before it and a table's becomes its caption, where HTML has them."""
        name = _local(element)
        tag = "ol" if name == "list" and element.get("type") == "numbered" else BLOCKS.get(name, "div")
        shown = _shown(element)
        if tag in ("ul", "ol", "dl", "table"):
            titles = [self.inline(title) for title in shown if _local(title) == "title"]
            shown = [part for part in shown if _local(part) != "title"]
            inner = self._blocks(shown, name, page_id, depth)
            if tag == "table":
                return f"<table>\n{''.join(f'<caption>{title}</caption>' for title in titles[:1])}{inner}</table>\n"
            return "".join(f'<p class="title">{title}</p>\n' for title in titles) + f"<{tag}>\n{inner}</{tag}>\n"
        return f"<{tag}>\n{self._blocks(shown, name, page_id, depth)}</{tag}>\n"

    def _topic_list(self, page_id: str) -> str:
        items = "".join(
            f'<li><a href="{topic}.html">{self.titles[topic]}</a></li>\n'
            for topic in self.topics.get(page_id, ())
            if topic in self.titles
        )
        return f'<ul class="topics">\n{items}</ul>\n' if items else ""

    def inline(self, element: etree._Element) -> str:
        """The element's content as inline HTML: its text, its shown children's and every child's tail."""
        if _local(element) in ("keyseq", "guiseq"):
            joiner = "+" if _local(element) == "keyseq" else " ▸ "
            return joiner.join(self._inline_element(child) for child in _shown(element))
        parts = [html.escape(element.text or "")]
        for child in element:
            if _is_shown(child):
                parts.append(self._inline_element(child))
            parts.append(html.escape(child.tail or ""))
        return "".join(parts)

    def _inline_element(self, element: etree._Element) -> str:
        name = _local(element)
        content = self.inline(element)
        if name == "link":
            target = element.get("xref")
            if target:
                page, _, section = target.partition("#")
                content = content.strip() or self.titles.get(page, html.escape(page))
                return f'<a href="{html.escape(page)}.html{"#" + html.escape(section) if section else ""}">{content}</a>'
            href = element.get("href", "")
            return f'<a href="{html.escape(href)}">{content or html.escape(href)}</a>' if href.startswith("http") else content
        if name in INLINE_HTML:
            return f"<{INLINE_HTML[name]}>{content}</{INLINE_HTML[name]}>"
        return content


def locale_folder(lang: str) -> str:
    """GNOME's locale folder of a site language."""
    return LOCALE_FOLDERS.get(lang, lang)


def locale_language(folder: str) -> str:
    """The project's language code of a GNOME locale folder (``pt_BR`` is pt, ``sr@latin`` sr_Latn)."""
    return LOCALE_LANGUAGES.get(folder, folder)


def build_help_site(languages: Sequence[str], cache_dir: Path | None = None) -> Site:
    """Download ``gnome-user-docs`` if needed and (re)build the help's site in ``languages`` (site codes, English among
    them or not) in ``cache_dir`` (default the cache folder ``localsite-help-<languages>`` beside the local site's), as
    :func:`bitextflow_local.localsite.build_site` does the manuals'."""
    langs = tuple(dict.fromkeys(languages))
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir().with_name(f"localsite-help-{'-'.join(langs)}")
    cache.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(cache / ".lock"):
        package = fetch_packages([PACKAGE], cache)[PACKAGE]
        help_root = package.root / HELP_DIR
        missing = [lang for lang in langs if not (help_root / locale_folder(lang) / DOCUMENT).is_dir()]
        if missing:
            offered = sorted(folder.name for folder in help_root.iterdir() if (folder / DOCUMENT).is_dir())
            raise StageError(
                f"GNOME's help ({PACKAGE} {package.version}) has no {', '.join(missing)}: choose among its locale folders "
                f"{', '.join(offered)} (C is en)"
            )
        stamp = {"builder_version": BUILDER_VERSION, "languages": list(langs), "packages": {PACKAGE: package.version}}
        assemble_unless_current(cache, stamp, lambda: write_help_site(cache, help_root, langs))
    return built_site(cache, langs)


def write_help_site(cache: Path, help_root: Path, languages: tuple[str, ...]) -> None:
    """Render every page of every language into a docroot beside the old one, swap it in and write the truth file."""
    staging = cache / (DOCROOT_DIRNAME + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    write_file(staging, "robots.txt", generated.robots_txt())
    write_file(staging, generated.STYLESHEET_PATH, generated.stylesheet())
    sources = {lang: sorted((help_root / locale_folder(lang) / DOCUMENT).glob("*.page")) for lang in languages}
    published: dict[str, dict[str, str]] = {}
    for lang, paths in sources.items():
        for path in paths:
            published.setdefault(path.stem, {})[lang] = f"{SITE_DIR}/{lang}/{path.stem}.html"
    for lang, paths in sources.items():
        pages = {path.stem: etree.parse(str(path)).getroot() for path in paths}
        renderer = PageRenderer({page_id: _title(root) for page_id, root in pages.items()}, _topics(pages))
        for page_id, root in pages.items():
            switcher = " ".join(
                f'<a href="/{path}" hreflang="{other}" lang="{other}">{other}</a>'
                for other, path in published[page_id].items()
                if other != lang
            )
            body = f'<div class="language-switcher">{switcher}</div>\n{renderer.body(page_id, root)}'
            page = generated.page(html.unescape(re.sub("<[^>]*>", "", renderer.titles[page_id])), lang, body)
            write_file(staging, published[page_id][lang], page)
    truth = {
        "builder_version": BUILDER_VERSION,
        "languages": list(languages),
        "groups": list(published.values()),
        "disallowed": [],
        "partly_translated": sorted(_mostly_untranslated(staging, published)),
    }
    publish(cache, staging, truth)


def is_translated(original: str, block: str) -> bool:
    """Whether a block (letters) is a translation of the original's, not the original with a link's title translated."""
    return difflib.SequenceMatcher(None, original, block, autojunk=False).ratio() < UNTRANSLATED_SIMILARITY


def _mostly_untranslated(docroot: Path, published: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The translations of which under half the text (in letters) is in blocks translated from the English page's
    (:func:`is_translated`): pages in English on the site (the truth's ``partly_translated``)."""
    found = []
    for paths in published.values():
        if "en" not in paths:
            continue
        english = PageBlocks(docroot / paths["en"]).keys
        for lang, path in paths.items():
            translation = PageBlocks(docroot / path).keys
            if lang == "en" or len(translation) != len(english):
                continue
            translated = sum(len(key) for original, key in zip(english, translation, strict=True) if is_translated(original, key))
            if 2 * translated < sum(map(len, translation)):
                found.append(path)
    return found


def add_help_arguments(parser: argparse.ArgumentParser) -> None:
    """A benchmark's ``--help-dir`` and ``--cache``: where :func:`help_folder` finds GNOME's help."""
    parser.add_argument("--help-dir", type=Path, default=None, help="an unpacked usr/share/help (default: fetch the package)")
    parser.add_argument("--cache", type=Path, default=cache_dir("gnome-help"), help="where the package is fetched")


def help_folder(help_dir: Path | None, cache: Path) -> Path:
    """GNOME's ``usr/share/help``: ``help_dir`` where given, else the one of ``gnome-user-docs``, fetched into ``cache``
    if needed (:class:`~bitextflow.errors.StageError` where neither can be had)."""
    found = help_dir or fetch_packages([PACKAGE], cache)[PACKAGE].root / HELP_DIR
    if not (found / "C" / DOCUMENT).is_dir():
        raise StageError(f"{found} has no C/{DOCUMENT}, the English pages of {PACKAGE}")
    return found


def translated_pages(
    help_root: Path, locale: str, blocks: Callable[[etree._Element], list[str]]
) -> Iterator[list[tuple[str, str]]]:
    """Each page ``locale`` translates that has as many blocks (``blocks`` of a page's root) as the English page, as
    its blocks' ``(English, translation)``: itstool keeps the English page's elements in order."""
    for english in sorted((help_root / "C" / DOCUMENT).glob("*.page")):
        translation = help_root / locale / DOCUMENT / english.name
        if translation.is_file():
            originals, translated = _english_blocks(english, blocks), blocks(etree.parse(str(translation)).getroot())
            if len(originals) == len(translated):
                yield list(zip(originals, translated, strict=True))


def translated_blocks(help_root: Path, locale: str, blocks: Callable[[etree._Element], list[str]]) -> Iterator[tuple[str, str]]:
    """``(English, translation)`` of each block of the pages of :func:`translated_pages`."""
    for page in translated_pages(help_root, locale, blocks):
        yield from page


@functools.lru_cache(maxsize=2048)  # every locale pairs with the same English pages: each is read once
def _english_blocks(page: Path, blocks: Callable[[etree._Element], list[str]]) -> list[str]:
    return blocks(etree.parse(str(page)).getroot())


def running_paragraphs(root: etree._Element) -> list[str]:
    """The text of each paragraph (``p``) the page shows at its top level or in its sections, in page order, spaces
    collapsed: running text, where paragraphs in list items, steps, notes and tables are often fragments."""
    found: list[str] = []
    for child in _shown(root):
        if child.tag == MALLARD + "p":
            found.append(" ".join(_shown_text(child).split()))
        elif child.tag == MALLARD + "section":
            found += running_paragraphs(child)
    return found


def _shown_text(element: etree._Element) -> str:
    """The element's text as the page shows it: without a figure's text, an editor's comment or an ``info`` block."""
    shown = "".join((_shown_text(child) if _is_shown(child) else "") + (child.tail or "") for child in element)
    return (element.text or "") + shown


def _title(root: etree._Element) -> str:
    """The page's own title, as inline HTML."""
    title = root.find(MALLARD + "title")
    return PageRenderer({}, {}).inline(title) if title is not None else ""


def _topics(pages: Mapping[str, etree._Element]) -> dict[str, list[str]]:
    """Each guide page's topics (``guide``) and each of its sections' (``guide#section``): the pages whose ``info`` links
    to it as their guide."""
    topics: dict[str, list[str]] = {}
    for page_id, root in pages.items():
        for link in root.iterfind(f"{MALLARD}info/{MALLARD}link[@type='guide']"):
            guide = link.get("xref") or ""
            if guide and page_id not in topics.get(guide, []):
                topics.setdefault(guide, []).append(page_id)
    return topics
