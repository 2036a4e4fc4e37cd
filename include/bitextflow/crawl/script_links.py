"""Links that JavaScript builds: URL-looking strings in a site's own script files, followed speculatively.

Sites build menus and tables of contents in script files (``menu.js`` writes ``<a href="...">`` or fills an array of
paths), so a crawler that reads only ``<a href>`` never sees those pages. Heritrix's ExtractorJS (Internet Archive,
``org.archive.modules.extractor.ExtractorJS``) reads the string literals of a script and keeps those that look like
URIs, "speculatively": some are not links at all and answer 404. The same here, narrower: only scripts of the page's
own host are read (``crawl.script_links``), only scripts that carry ``href`` (navigation builders; a library does
not), and only strings that are an absolute http(s) URL or a path to a page (a ``/``, or a web page's extension); the
crawler keeps those on the script's host and counts the others.
"""

from __future__ import annotations

import re

from bitextflow.crawl.urls import normalise_url

# A string literal in single, double or back quotes, no longer than a URL is likely to be, on one line.
_STRING = re.compile(r"""(["'`])((?:(?!\1)[^\\\n]|\\.){1,2000})\1""")
_PAGE_PATH = re.compile(
    r"^(?:https?://[^\s\"'<>{}]+|[^\s\"'<>:?#{}]*?(?:/|\.(?:html?|xhtml|php|aspx?|jsp|shtml))(?:[?#][^\s\"'<>{}]*)?)$", re.I
)
# Strings that are markup or code, not paths: an href attribute inside a string is handled by its own match.
_HREF_ATTRIBUTE = re.compile(r"""href\s*=\s*\\?["']([^"'\\]+)""", re.I)


def carries_links(script: str) -> bool:
    """Whether a script builds links (holds ``href``): menus and tables of contents do, libraries mostly not."""
    return "href" in script


def script_urls(script: str, base: str) -> list[str]:
    """Canonical URLs of the strings of ``script`` that look like links, resolved against ``base`` (the document base
    URL of the page that loads the script), in order of appearance, each once."""
    found: dict[str, None] = {}
    for match in _STRING.finditer(script):
        literal = match.group(2)
        candidates = [m.group(1) for m in _HREF_ATTRIBUTE.finditer(literal)] or [literal]
        for candidate in candidates:
            candidate = candidate.strip()
            if candidate and _PAGE_PATH.match(candidate) and not candidate.startswith("//"):
                url = normalise_url(candidate, base)
                if url is not None:
                    found.setdefault(url)
    return list(found)
