"""One manual page as the local site serves it: relative links rewritten to keep working, and a
language switcher (links with hreflang and endonym to the same page in the other languages) at the top
of its body.
"""

from __future__ import annotations

import html
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from bitextflow.errors import StageError
from bitextflow_local.localsite.layouts import Document, Section


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


def render_page(
    document: Document, lang: str, languages: Sequence[str], endonyms: Mapping[str, str], rewrites: Mapping[str, str]
) -> str:
    """The page as served: links rewritten and a language switcher at the top of <body>.

    The source must be UTF-8 (all these packages are, and their pages declare it); decoding strictly
    makes a package that changed encoding fail the build instead of serving mojibake.
    """
    source = document.sources[lang]
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise StageError(f"{source} is not UTF-8 ({error.reason}); the local site serves UTF-8 only") from error

    def rewrite(match: re.Match[str]) -> str:
        target = rewrites.get(match.group(1))
        return match.group(0) if target is None else f'href="{target}{match.group(2)}"'

    return with_switcher(_HREF.sub(rewrite, text), source, document, lang, languages, endonyms)


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
