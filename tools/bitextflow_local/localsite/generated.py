"""Files of the local site that no Debian package provides: the home page, English-only news, the
robots-protected private pages, robots.txt, a stylesheet and a tarball.

They exist to give the crawler what a real site has besides translated manuals: monolingual pages that
must not be paired, pages a polite crawler must skip, and non-HTML downloads it must not parse as text.
All output is a pure function of its arguments, so the site is byte-for-byte reproducible.
"""

from __future__ import annotations

import gzip
import html
import io
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

PRIVATE_DIR = "private"


@dataclass(frozen=True)
class Link:
    """A link on the home page; `lang` marks links to pages in a language other than the page's."""

    href: str
    text: str
    lang: str | None = None


@dataclass(frozen=True)
class IndexSection:
    """A titled list of links on the home page."""

    heading: str
    links: Sequence[Link]
    lang: str | None = None


@dataclass(frozen=True)
class Article:
    """A generated English page: a title and its paragraphs."""

    title: str
    paragraphs: tuple[str, ...]


NEWS_ARTICLES: dict[str, Article] = {
    "news/2023-06-documentation-refresh.html": Article(
        'Documentation refreshed for Debian 12 "bookworm"',
        (
            "The Debian Reference and the Installation Guide on this mirror now follow the versions "
            "shipped with Debian 12. Chapters about package management, the boot process and network "
            "configuration were revised to describe the current defaults.",
            "Translations are updated by volunteer teams at their own pace. Where a chapter has not yet "
            "been translated, the links in the translated manuals point to the English original, so "
            "readers never land on a missing page.",
            "Printable versions of the Installation Guide are available as plain text and PDF from the "
            "chapter that describes where to find the documentation.",
        ),
    ),
    "news/2023-09-translators-wanted.html": Article(
        "Translators wanted for the Debian Reference",
        (
            "Several chapters of the Debian Reference are still only available in English. If you read "
            "English well and write another language fluently, the translation team would welcome your "
            "help.",
            "Translations are maintained as PO files next to the DocBook sources. A typical chapter takes "
            "an experienced translator a few evenings, and reviewers check every change before it is "
            "published.",
            "Please introduce yourself on the mailing list of your language team before you start, so "
            "that two people do not translate the same chapter.",
        ),
    ),
}

PRIVATE_ARTICLES: dict[str, Article] = {
    f"{PRIVATE_DIR}/staff-notes.html": Article(
        "Staff notes (internal)",
        (
            "These notes are for the mirror operators only and are excluded from indexing by robots.txt.",
            "Rotate the access logs weekly and keep them for no longer than thirty days.",
        ),
    ),
    f"{PRIVATE_DIR}/unpublished-draft.html": Article(
        "Draft: documentation roadmap (not for publication)",
        (
            "This draft has not been reviewed. Do not quote or translate it until the team approves it.",
            "Candidate topics for the next release are containers, secure boot and reproducible builds.",
        ),
    ),
}

STYLESHEET_PATH = "style.css"
_STYLESHEET = """\
body { font-family: sans-serif; max-width: 48em; margin: 2em auto; line-height: 1.5; }
h1, h2 { color: #a80030; }
"""


def robots_txt() -> str:
    """Disallow only the private directory; no Crawl-delay, so that polite crawls of the site stay fast."""
    return f"User-agent: *\nDisallow: /{PRIVATE_DIR}/\n"


def stylesheet() -> str:
    """The stylesheet of the generated pages."""
    return _STYLESHEET


def article_page(article: Article) -> str:
    """An English article page that links back to the home page."""
    body = "".join(f"<p>{html.escape(paragraph)}</p>\n" for paragraph in article.paragraphs)
    body += '<p><a href="/">Back to the home page</a></p>\n'
    return page(article.title, "en", f"<h1>{html.escape(article.title)}</h1>\n{body}")


def index_page(sections: Sequence[IndexSection], title: str = "Debian documentation mirror") -> str:
    """A page of titled link lists: the home page `/` (the crawl's seed: every part of the site is
    reachable from it) and the indexes of the full site's parts."""
    parts = [f"<h1>{html.escape(title)}</h1>\n"]
    for section in sections:
        lang_attribute = f' lang="{section.lang}"' if section.lang else ""
        parts.append(f"<h2{lang_attribute}>{html.escape(section.heading)}</h2>\n<ul>\n")
        for link in section.links:
            link_lang = f' hreflang="{link.lang}" lang="{link.lang}"' if link.lang else ""
            parts.append(f'<li><a href="{html.escape(link.href)}"{link_lang}>{html.escape(link.text)}</a></li>\n')
        parts.append("</ul>\n")
    return page(title, "en", "".join(parts))


def portal_page(name: str, lang: str, links: Sequence[Link]) -> str:
    """The full site's page of one language (`/<lang>/`): its manuals and downloads, and the way home."""
    items = "".join(f'<li><a href="{html.escape(link.href)}">{html.escape(link.text)}</a></li>\n' for link in links)
    body = f"<h1>{html.escape(name)}</h1>\n<ul>\n{items}</ul>\n" + '<p><a href="/" hreflang="en" lang="en">Debian</a></p>\n'
    return page(name, lang, body)


def tarball(files: Sequence[tuple[str, Path]]) -> bytes:
    """A .tar.gz of `(archive name, source file)` pairs with fixed metadata, so that it is reproducible."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as compressed,
        tarfile.open(fileobj=compressed, mode="w", format=tarfile.USTAR_FORMAT) as archive,
    ):
        for name, source in sorted(files):
            data = source.read_bytes()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def page(title: str, lang: str, body: str) -> str:
    """An HTML5 page that declares UTF-8 and uses the site stylesheet."""
    return (
        f'<!DOCTYPE html>\n<html lang="{lang}">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n"
        f'<link rel="stylesheet" type="text/css" href="/{STYLESHEET_PATH}">\n'
        f"</head>\n<body>\n{body}</body>\n</html>\n"
    )
