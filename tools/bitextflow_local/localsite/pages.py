"""One manual page as the local site serves it: relative links rewritten to keep working, and a
language switcher (links with hreflang and endonym to the same page in the other languages) at the top
of its body. A page its section declares partly translated keeps the original's text after its first
sections (:mod:`bitextflow_local.localsite.partial`).
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from bitextflow.errors import StageError
from bitextflow_local.localsite import partial
from bitextflow_local.localsite.layouts import ORIGINAL_LANGUAGE, Document, Section


def link_rewrites(section: Section, documents: Sequence[Document], lang: str) -> dict[str, str]:
    """How the pages of `section` in `lang` must rewrite their relative links to keep them working.

    A link to a page missing in `lang` points to the page in the first built language that has it, as
    sites do when they fall back to the original.
    """
    page_dir = posixpath.dirname(section.site_path("", lang))  # one directory per section and language
    rewrites = {href.format(lang=section.code(lang)): target for href, target in section.link_rewrites.items()}
    for document in documents:
        if lang not in document.sources:
            fallback = document.site_path(next(iter(document.sources)))
            rewrites[posixpath.basename(document.site_path(lang))] = posixpath.relpath(fallback, page_dir)
    return rewrites


_HREF = re.compile(r'\bhref="([^"#?]*)([^"]*)"')
_BODY_OPEN = re.compile(r"<body\b[^>]*>")
_TITLE = re.compile(r"<title>(.*?)</title>", re.DOTALL)


def original_links(documents: Sequence[Document], lang: str) -> dict[str, str]:
    """How the original's text on a partly translated page in `lang` must rewrite its links: a page of the
    manual in the original's language becomes the page in `lang` where there is one, as the translated
    manual's own build links them (file names are relative: the languages' pages share a directory or
    their names)."""
    return {
        posixpath.basename(document.site_path(ORIGINAL_LANGUAGE)): posixpath.basename(document.site_path(lang))
        for document in documents
        if ORIGINAL_LANGUAGE in document.sources and lang in document.sources
    }


def is_partly_translated(document: Document, lang: str) -> bool:
    """Whether the page in `lang` keeps part of its original's text (its section says so and the original is built)."""
    return (
        document.key in document.section.partly_translated and lang != ORIGINAL_LANGUAGE and ORIGINAL_LANGUAGE in document.sources
    )


def render_page(
    document: Document,
    lang: str,
    languages: Sequence[str],
    endonyms: Mapping[str, str],
    rewrites: Mapping[str, str],
    original_rewrites: Mapping[str, str],
) -> str:
    """The page as served: links rewritten (`original_rewrites` first, in the original's text that a partly
    translated page keeps) and a language switcher at the top of <body>."""
    source = document.sources[lang]
    text = _read(source)
    if is_partly_translated(document, lang):
        original = _rewrite_links(_read(document.sources[ORIGINAL_LANGUAGE]), original_rewrites)
        text = partial.partly_translated(text, original, document.section.partly_translated[document.key], source)
    return with_switcher(_rewrite_links(text, rewrites), source, document, lang, languages, endonyms)


def _read(source: Path) -> str:
    """A page's source. It must be UTF-8 (all these packages are, and their pages declare it); decoding strictly
    makes a package that changed encoding fail the build instead of serving mojibake."""
    try:
        return source.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise StageError(f"{source} is not UTF-8 ({error.reason}); the local site serves UTF-8 only") from error


def _rewrite_links(text: str, rewrites: Mapping[str, str]) -> str:
    """`text` with each relative link named in `rewrites` pointing to its replacement (fragment and query kept)."""

    def rewrite(match: re.Match[str]) -> str:
        target = rewrites.get(match.group(1))
        return match.group(0) if target is None else f'href="{target}{match.group(2)}"'

    return _HREF.sub(rewrite, text)


def with_switcher(
    text: str, source: Path, document: Document, lang: str, languages: Sequence[str], endonyms: Mapping[str, str]
) -> str:
    """The page `text` with the language switcher at the top of its <body>."""
    body = _BODY_OPEN.search(text)
    if body is None:
        raise StageError(f"{source} has no <body> tag; cannot add the language switcher")
    switcher = _language_switcher(document, lang, languages, endonyms)
    return f"{text[: body.end()]}\n{switcher}{text[body.end() :]}"


def _language_switcher(document: Document, lang: str, languages: Sequence[str], endonyms: Mapping[str, str]) -> str:
    """Links with hreflang and endonym to the same page in every other language that has it."""
    items = []
    for other in languages:
        if other == lang:
            items.append(f'<strong lang="{lang}">{endonyms[lang]}</strong>')
        elif other in document.sources:
            href = "/" + document.site_path(other)
            items.append(f'<a href="{href}" hreflang="{other}" lang="{other}">{endonyms[other]}</a>')
    return f'<div class="language-switcher">{" ".join(items)}</div>\n'


def title_of(page: str, source: Path) -> str:
    """The plain-text <title> of a page, for the home page's links."""
    match = _TITLE.search(page)
    if match is None:
        raise StageError(f"{source} has no <title>")
    return " ".join(html.unescape(match.group(1)).split())
