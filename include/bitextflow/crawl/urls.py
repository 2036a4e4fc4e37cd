"""URLs for the crawler: canonical form, links with their context, and the languages a URL names.

Canonicalisation is courlan's (lower-case scheme and host, default port dropped, percent-encoding
normalised, tracking parameters dropped, query sorted) after resolving dot segments and dropping the
fragment, so one resource has one string and the seen-set dedups exactly.

Language markers are recognised by :func:`bitextflow.text.urls.url_key` (every ISO 639-1
language, ISO 639-2 codes, English names, endonyms, language-country tags); this module only says
*where* in the URL a marker is, because the crawler trusts the components differently (order of the
smart-crawling seed): language parameter values, then directory and file names, then the public
suffix (a country-code TLD whose country has one language), then the subdomain.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import lxml.etree
import lxml.html

from bitextflow.text import encoding
from bitextflow.text.languages import language_of_tag, normalise_language
from bitextflow.text.urls import canonical_url, site_bucket, url_key

# Trust in a language marker by URL component (the order of the smart-crawling seed).
COMPONENT_TRUST: dict[str, float] = {"parameter": 0.95, "path": 0.9, "public_suffix": 0.75, "subdomain": 0.7}


def normalise_url(url: str, base: str | None = None) -> str | None:
    """Canonical absolute http(s) URL (relative ones resolved against ``base``); None if not crawlable."""
    url = url.strip()
    if base is not None:
        try:
            url = urljoin(base, url)
        except ValueError:
            return None
    return canonical_url(url)


def host_of(url: str) -> str:
    """``host[:port]`` of a canonical URL: the unit of politeness, page limits and scouting."""
    return urlsplit(url).netloc


@functools.lru_cache(maxsize=65_536)  # asked for every URL a crawl admits
def host_group(host: str, groups: int) -> int:
    """Which of ``groups`` crawl host groups crawls ``host``: its site's bucket (:func:`site_bucket`), so a site's
    hosts (``www.``, ``docs.``) share one frontier, one politeness schedule and one task, and a crawl with as many
    host groups as the run has site partitions crawls each partition's sites in one task."""
    return site_bucket(host, groups)


def has_skipped_extension(url: str, extensions: Iterable[str]) -> bool:
    name = urlsplit(url).path.rsplit("/", 1)[-1].lower()
    return "." in name and name.rsplit(".", 1)[1] in set(extensions)


@dataclass(frozen=True)
class Link:
    """An outgoing link: its canonical target, anchor text, text around it and ``hreflang``."""

    url: str
    anchor: str
    context: str
    hreflang: str = ""


@dataclass(frozen=True)
class ParsedPage:
    """What the crawler reads from an HTML page: title, metadata, visible text, links, the links it discarded (by
    reason: :data:`DISCARDED_LINK_REASONS`) and the language versions it declares (``<link rel="alternate"
    hreflang>``: language -> canonical URL)."""

    title: str
    description: str
    keywords: str
    text: str
    links: list[Link]
    language_attribute: str = ""
    discarded: Counter[str] = field(default_factory=Counter)
    alternates: dict[str, str] = field(default_factory=dict)
    scripts: list[str] = field(default_factory=list)  # canonical URLs of the script files it loads (<script src>)
    base: str = ""  # its document base URL (:func:`document_base_url`)


_SPACE = re.compile(r"\s+")
_CONTEXT_CHARS = 200


def _clean(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")


_HEADER_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.IGNORECASE)


def decode_html(body: bytes, content_type: str = "") -> str:
    """Text of an HTML body, decoded as extraction will decode it (:func:`bitextflow.text.encoding.decode_html`)."""
    declared = _HEADER_CHARSET.search(content_type)
    return encoding.decode_html(body, declared.group(1) if declared else None).text


class _TextMap:
    """The visible text of a tree, as :func:`_clean` would give it, and where elements' texts lie in it.

    One walk over the tree: the text of an element is a slice of the whole, so the context of every
    link comes out in time linear in the page (searching each anchor's text in its parent's text was
    quadratic in the links of one element: 20,000 links took seconds and stalled every fetch).
    """

    def __init__(self, root: lxml.html.HtmlElement, shown: lxml.html.HtmlElement | None):
        """Walk ``root``, keeping where the texts of its links, their parents and ``shown`` lie."""
        self._pieces: list[str] = []
        self._length = 0
        self.spans: dict[lxml.html.HtmlElement, tuple[int, int]] = {}
        self.anchors: list[lxml.html.HtmlElement] = []
        opened: list[int] = []
        wanted = {shown}  # lxml gives one proxy per element while it is referenced: identity holds
        for event, element in lxml.etree.iterwalk(root, events=("start", "end")):
            if event == "start":
                opened.append(self._length + (1 if self._pieces else 0))
                if element.tag == "a":
                    self.anchors.append(element)
                    wanted.update((element, element.getparent()))
                if isinstance(element.tag, str):  # comments and processing instructions show no text
                    self._add(element.text)
            else:
                start = opened.pop()
                if element in wanted:
                    self.spans[element] = (start, self._length)
                if element is not root:
                    self._add(element.tail)
        self.text = " ".join(self._pieces)

    def _add(self, raw: str | None) -> None:
        cleaned = _clean(raw) if raw else ""
        if cleaned:
            self._length += len(cleaned) + (1 if self._pieces else 0)
            self._pieces.append(cleaned)

    def of(self, element: lxml.html.HtmlElement) -> str:
        start, end = self.spans[element]
        return self.text[start:end]

    def around(self, anchor: lxml.html.HtmlElement, chars: int) -> str:
        """The text of the anchor's parent element; a long one cut to ``chars`` either side of the anchor."""
        start, end = self.spans[anchor]
        low, high = self.spans[anchor.getparent()]
        if high - low > 2 * chars + end - start:
            low, high = max(low, start - chars), min(high, end + chars)
        return self.text[low:high]


#: Why a link is not followed (counted by the crawl): not http(s) (``javascript:``, ``mailto:``, ``data:``), malformed, nofollow.
DISCARDED_LINK_REASONS = ("link_not_http", "link_malformed", "link_nofollow")
_SCHEME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9+.-]*):")


def document_base_url(tree: lxml.html.HtmlElement, page_url: str) -> str:
    """The HTML standard's document base URL: the ``href`` of the first ``<base>`` element that has one, parsed
    relative to the page's URL (a relative ``<base href="../../../">`` is common on mirrored sites); the page's URL
    when there is none or it does not give an http(s) URL (``javascript:``, ``data:``, a malformed one)."""
    hrefs = tree.xpath("(//base[@href])[1]/@href")
    if not hrefs:
        return page_url
    try:
        resolved = urljoin(page_url, str(hrefs[0]).strip())
    except ValueError:
        return page_url
    return resolved if canonical_url(resolved) is not None else page_url


def _discard_reason(href: str) -> str:
    """Why ``href`` gives no crawlable URL (:data:`DISCARDED_LINK_REASONS`)."""
    scheme = _SCHEME.match(href)
    return "link_not_http" if scheme and scheme.group(1).lower() not in ("http", "https") else "link_malformed"


def parse_html(body: bytes, base_url: str, content_type: str = "") -> ParsedPage | None:
    """Parse an HTML page fetched from ``base_url``; None when it is not parseable at all (counted by the caller).

    Links resolve against the document base URL (:func:`document_base_url`); each ``<a href>`` that gives no link
    is counted in ``discarded`` by reason (links repeated on the page count once).
    """
    text = _XML_DECLARATION.sub("", decode_html(body, content_type))
    if not text.strip():
        return None
    try:
        tree = lxml.html.fromstring(text, base_url=base_url)
    except (ValueError, lxml.etree.ParserError, lxml.etree.XMLSyntaxError):
        return None
    base = document_base_url(tree, base_url)
    scripts = list(dict.fromkeys(url for src in tree.xpath("//script/@src") if (url := normalise_url(str(src), base))))
    for bad in tree.xpath("//script|//style|//noscript"):
        bad.drop_tree()
    title = _clean(tree.xpath("string(//title)"))
    description = _clean(tree.xpath("string(//meta[@name='description']/@content)"))
    keywords = _clean(tree.xpath("string(//meta[@name='keywords']/@content)"))
    body_element = tree.find(".//body")
    shown = body_element if body_element is not None else tree
    if tree.getparent() is None and tree.tag in ("script", "style", "noscript"):
        shown = None  # the whole page was one of them (a fragment parses to that element): nothing shows
    # from the document's root: a fragment parses to an element whose parent (body) holds the link's context
    document = tree.getroottree().getroot()
    texts = _TextMap(document, shown)
    links: dict[str, Link] = {}
    discarded: dict[str, str] = {}
    for anchor in texts.anchors:
        href = anchor.get("href")
        if href is None:
            continue  # a named anchor, not a link
        if "nofollow" in (anchor.get("rel") or "").lower().split():
            discarded.setdefault(href.strip(), "link_nofollow")
            continue
        target = normalise_url(href, base)
        if target is None:
            discarded.setdefault(href.strip(), _discard_reason(href))
            continue
        if target in links:
            continue
        anchor_text = texts.of(anchor) or _clean(anchor.get("title") or "")
        context = texts.around(anchor, _CONTEXT_CHARS) if anchor.getparent() is not None else anchor_text
        links[target] = Link(target, anchor_text, context, (anchor.get("hreflang") or "").strip())
    language = (tree.get("lang") or tree.get("{http://www.w3.org/XML/1998/namespace}lang") or "").strip()
    return ParsedPage(
        title, description, keywords, texts.of(shown) if shown is not None else "", list(links.values()), language,
        Counter(discarded.values()), declared_alternates(tree, base), scripts, base,
    )  # fmt: skip


def declared_alternates(tree: lxml.html.HtmlElement, base: str) -> dict[str, str]:
    """The language versions a page declares with ``<link rel="alternate" hreflang="es" href="...">`` (:func:`add_alternate`)."""
    found: dict[str, str] = {}
    for element in tree.xpath("//link[@hreflang][@href]"):
        if "alternate" in (element.get("rel") or "").lower().split():
            add_alternate(found, element.get("hreflang") or "", element.get("href") or "", base)
    return found


def add_alternate(found: dict[str, str], hreflang: str, href: str, base: str) -> None:
    """Add a language version that a page or sitemap declares to ``found`` (language -> canonical URL): ``x-default``,
    an empty language and an ``href`` that gives no http(s) URL are left out; the first of a language wins."""
    hreflang = hreflang.strip()
    if hreflang.lower() in ("", "x-default"):
        return
    url = normalise_url(href, base)
    if url:
        found.setdefault(language_of_tag(hreflang), url)


def extract_links(html: bytes, base_url: str) -> list[str]:
    """Canonical targets of ``<a href>`` in document order, duplicates removed."""
    page = parse_html(html, base_url)
    return [link.url for link in page.links] if page else []


# -- languages named by a URL ----------------------------------------------------------------------
@functools.cache
def _suffix_language(suffix: str) -> str | None:
    """The one de-facto official language of a country-code TLD's country (``es`` -> es, ``ch`` -> None)."""
    from babel.languages import get_official_languages

    label = suffix.rsplit(".", 1)[-1].upper()
    if len(label) != 2 or not label.isalpha():
        return None
    territory = {"UK": "GB", "EU": ""}.get(label, label)
    if not territory:
        return None
    try:
        languages = {normalise_language(code) for code in get_official_languages(territory, de_facto=True)}
    except (KeyError, ValueError):
        return None
    return languages.pop() if len(languages) == 1 else None


def _majority(languages: list[str]) -> str | None:
    if not languages:
        return None
    counts = Counter(languages)
    best = max(counts.values())
    return next(code for code in reversed(languages) if counts[code] == best)


def url_languages(url: str) -> dict[str, str]:
    """Language named by each URL component that names one: ``{component: code}``.

    Components are ``parameter`` (a language parameter's value, e.g. ``?lang=es``), ``path``
    (directory and file names: ``/es/``, ``ch01.es.html``), ``public_suffix`` (``.fr``) and
    ``subdomain`` (``es.example.org``). When a component names several languages the most frequent
    (last on ties) wins.
    """
    from tld import get_tld

    parts = urlsplit(url)
    found: dict[str, str] = {}
    if parts.query:
        language = _majority(url_key(f"http://x.invalid/?{parts.query}")[1])
        if language:
            found["parameter"] = language
    language = _majority(url_key(f"http://x.invalid{parts.path}")[1])
    if language:
        found["path"] = language
    domain = get_tld(url, as_object=True, fail_silently=True)
    if domain is not None:
        suffix_language = _suffix_language(domain.tld)
        if suffix_language:
            found["public_suffix"] = suffix_language
        if domain.subdomain:
            language = _majority(url_key(f"http://{domain.subdomain}.x.invalid/")[1])
            if language:
                found["subdomain"] = language
    return found


def predicted_language(url: str) -> tuple[str, float]:
    """The most trusted language a URL names and the trust in it; ``("", 0.0)`` when it names none."""
    found = url_languages(url)
    for component, trust in COMPONENT_TRUST.items():
        if component in found:
            return found[component], trust
    return "", 0.0


def language_of_anchor(link: Link) -> str:
    """Language a link says its target is in: ``hreflang`` or an anchor that is a language name."""
    if link.hreflang:
        return language_of_tag(link.hreflang)
    anchor = link.anchor.strip()
    if 2 <= len(anchor) <= 30 and " " not in anchor:
        code = normalise_language(anchor)
        if len(code) == 2 and (code != anchor.lower() or len(anchor) == 2) and code.isalpha():
            return code
    return ""
