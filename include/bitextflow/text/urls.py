"""URLs as text: language-neutral keys (language markers removed), site keys, and the words of a URL.

Multilingual sites usually publish a translation under the URL of the original with the language
marker swapped: ``/en/guide.html`` and ``/es/guide.html``, ``ch01.en.html`` and ``ch01.es.html``,
``?lang=fr``, ``fr.example.com``, ``/english/`` and ``/espanol/``. :func:`url_key` removes every
language marker, giving a key that the versions share (the WMT16 shared-task / Bitextor URL rule that
:func:`bitextflow.align.documents.align_by_url` pairs documents by and the crawler predicts pairs with).

Markers are the tokens of :func:`bitextflow.text.languages.language_markers` (ISO 639-1 and 639-2
codes, English names, endonyms) and language tags (``es-ES``, ``zh_Hant``), for every language, not
only a pair's, because sites mark all their versions and a marker left in a key (``/de/`` on an en-es
site) would break nothing but would hide pages that are reachable under several prefixes. A token is
only removed when it is a whole host label, path segment, dot-delimited file-name part, language query
value, or a hyphen/underscore part of a segment; two-letter codes that are also common English words
(``it``, ``to``, ``no``) are not removed as hyphen/underscore parts, where they are more often words
than markers.

:func:`url_text` and :func:`url_tokens` are a URL's words: what the URL models read and what URL
similarity (Jaccard, shared tokens) compares.
"""

from __future__ import annotations

import functools
import hashlib
import re
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from courlan import normalize_url
from tld import get_fld

from bitextflow.text.languages import language_markers, language_of_tag

# Two-letter codes that are also frequent English words or abbreviations: trusted only where a
# whole token stands for a language (segment, dot part, host label, query value).
_WORD_LIKE_CODES = frozenset(
    "am an as be ca co cs eu ga ha he hi hr id ie io is it la li ml mr ms my no or os pa pi ps so st to ts".split()
)

# Query parameters that select the page's language (besides any whose name contains "lang"); the
# value may be a code or a site's own number (``choixlang=2``), so the parameter goes whatever it is.
_LANGUAGE_PARAMETERS = frozenset({"locale", "hl", "lng", "lc", "l", "ln", "idioma", "langue", "sprache"})

# File extensions after which one more dot part is a language (Apache MultiViews: index.html.fr).
_WEB_EXTENSIONS = frozenset({"html", "htm", "xhtml", "shtml", "php", "asp", "aspx", "jsp", "cgi", "txt", "pdf"})

# Script subtags of language tags (zh-Hans, sr-Latn); regions are any two letters or three digits.
_SCRIPTS = frozenset({"hans", "hant", "latn", "cyrl", "arab"})

_DELIMITED = re.compile(r"([._-])")


def _is_region(token: str) -> bool:
    if not token.isascii():
        return False
    return (len(token) == 2 and token.isalpha()) or (len(token) == 3 and token.isdigit()) or token.lower() in _SCRIPTS


def _compound_language(language: str, region: str) -> str | None:
    """Language of a ``xx-YY`` / ``xx_YY`` tag (with the script the region or script subtag names where it is not the
    language's usual one: ``zh-tw``, ``zh_Hant`` and ``sr-latn`` are zh_Hant, zh_Hant and sr_Latn), or None if the two
    tokens are not one.

    A word-like code only counts when its region is written in capitals (``it-IT``) or repeats it
    (``it-it``), so that ``to-do`` stays a word.
    """
    markers = language_markers()
    code = language.lower()
    if len(code) not in (2, 3) or code not in markers or not _is_region(region):
        return None
    if code in _WORD_LIKE_CODES and not (region.isupper() or region.lower() == code):
        return None
    return language_of_tag(f"{markers[code]}-{region}")  # a region may say the script: zh-tw is zh_Hant


def _value_language(value: str) -> str | None:
    """Language named by a whole query value (``es``, ``spa``, ``es_ES``), or None."""
    markers = language_markers()
    lowered = value.lower()
    if lowered in markers:
        return markers[lowered]
    parts = re.split(r"[-_]", value)
    return _compound_language(parts[0], parts[1]) if len(parts) == 2 else None


def _strip_token_markers(text: str, *, protect_extension: bool) -> tuple[str, list[str]]:
    """Remove language markers from one path segment or host label.

    Returns the text without them and the languages removed. With ``protect_extension`` the last
    dot part of a file name is taken for an extension (``.ps``, ``.pl``), not a language, unless it
    follows a web extension (``index.html.fr``).
    """
    markers = language_markers()
    parts = _DELIMITED.split(text)
    words, delimiters = parts[0::2], ["", *parts[1::2]]  # delimiters[k] precedes words[k]
    last = len(words) - 1
    removed = [False] * len(words)
    languages: list[str] = []

    def bounded_by_dots(first: int, final: int) -> bool:
        return (first == 0 or delimiters[first] == ".") and (final == last or delimiters[final + 1] == ".")

    k = 0
    while k <= last:
        if k < last and delimiters[k + 1] in "-_":
            compound = _compound_language(words[k], words[k + 1])
            if compound is not None:
                removed[k] = removed[k + 1] = True
                languages.append(compound)
                k += 2
                continue
        word = words[k].lower()
        is_extension = protect_extension and k == last and k > 0 and delimiters[k] == "."
        if is_extension and words[k - 1].lower() not in _WEB_EXTENSIONS:
            k += 1
            continue
        trusted = bounded_by_dots(k, k)
        if word in markers and (trusted or word not in _WORD_LIKE_CODES):
            removed[k] = True
            languages.append(markers[word])
        k += 1

    kept = [(delimiters[k], words[k]) for k in range(len(words)) if not removed[k]]
    if kept and removed[0]:
        kept[0] = ("", kept[0][1])
    return "".join(delimiter + word for delimiter, word in kept), languages


def _host(netloc: str) -> tuple[str, list[str]]:
    """Lower-cased host with ``www`` and language labels removed (the last two labels are kept:
    a country-code TLD such as ``.es`` names a site, not a version of one)."""
    host = netloc.lower().rsplit("@", 1)[-1]
    labels = host.split(".")
    head, tail = labels[:-2], labels[-2:]
    languages: list[str] = []
    kept: list[str] = []
    for label in head:
        if label == "www":
            continue
        stripped, found = _strip_token_markers(label, protect_extension=False)
        languages += found
        if stripped:
            kept.append(stripped)
    return ".".join(kept + tail), languages


def without_credentials(url: str) -> str:
    """``url`` with any user name and password (or token) replaced by ``***``, for logs, errors and returned records."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: ``/a/./b/../c`` -> ``/a/c`` (a trailing ``.``/``..`` keeps the slash)."""
    if "." not in path:
        return path
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
        elif segment == "..":
            if len(output) > 1:
                output.pop()
            if last:
                output.append("")
        else:
            output.append(segment)
    return "/".join(output) if output and output[0] == "" else "/" + "/".join(output)


def _netloc(scheme: str, hostname: str | None, port: int | None) -> str:
    """``host[:port]`` without userinfo, the root label's dot or a default port: one host, one string.

    Userinfo would reach the server as Basic credentials and, like ``site.`` or ``site:80``, make the same
    host look like another one with its own politeness delay, robots.txt and page limit.
    """
    host = (hostname or "").rstrip(".")
    if not host:
        return ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"


@functools.lru_cache(maxsize=65_536)
def canonical_url(url: str) -> str | None:
    """The canonical absolute http(s) form of ``url`` the crawler keeps (see :mod:`bitextflow.crawl.urls`); None if
    it is not one. Here, below the crawler, so that what compares URLs with released ones (takedown lists) spells
    them as the crawler did."""
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        netloc = _netloc(scheme, parts.hostname, parts.port)  # parts.port raises ValueError on a malformed port
        if scheme not in ("http", "https") or not netloc:
            return None
        path = _remove_dot_segments(parts.path) or "/"
        # the fragment is dropped here: with none, courlan's non-strict mode keeps every parameter
        # but trackers (utm_*, fbclid, ...)
        canonical = normalize_url(urlunsplit((scheme, netloc, path, parts.query, "")), strict=False)
    except ValueError:
        return None
    split = urlsplit(canonical)
    if not split.path:
        canonical = urlunsplit((split.scheme, split.netloc, "/", split.query, ""))
    return canonical


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL, lower case, without credentials or a default port: the scope of a site's
    robots.txt (RFC 9309 2.3) and of its ``/.well-known/`` files (RFC 8615)."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # a port out of range: no port is the best guess of which origin the page claims
        port = None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port and port != _DEFAULT_PORTS.get(scheme) else "")


def url_key(url: str) -> tuple[str, list[str]]:
    """Language-neutral key of a URL and the languages whose markers were removed from it.

    The key is host + path + sorted query, with the scheme, a ``www`` label, the fragment, empty
    path segments and every language marker removed; the path keeps its case (servers are case
    sensitive) but markers are recognised in any case.
    """
    parts = urlsplit(url.strip())
    host, languages = _host(parts.netloc)
    segments: list[str] = []
    raw_segments = [s for s in unquote(parts.path).split("/") if s]
    for position, segment in enumerate(raw_segments):
        is_file = position == len(raw_segments) - 1
        stripped, found = _strip_token_markers(segment, protect_extension=is_file)
        languages += found
        if stripped:
            segments.append(stripped)
    query: list[tuple[str, str]] = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name.lower() in _LANGUAGE_PARAMETERS or "lang" in name.lower():
            value_language = _value_language(value)
            if value_language is not None:
                languages.append(value_language)
        else:
            stripped, found = _strip_token_markers(value, protect_extension=False)
            languages += found
            query.append((name, stripped))
    key = host + "/" + "/".join(segments)
    if query:
        key += "?" + urlencode(sorted(query))
    return key, languages


def site_key(url: str) -> str:
    """The web site of a URL with language labels removed (``es.example.com`` -> ``example.com``).

    Content and structure methods compare documents only within one site: the versions of a page are
    published by the same site, and blocking by site keeps candidate generation far from all-pairs.
    """
    return _host(urlsplit(url.strip()).netloc)[0]


def url_depth(url: str) -> int:
    """Number of non-empty path segments: ILSP-FC's depth, which differs by at most one within a pair."""
    return sum(1 for segment in urlsplit(url.strip()).path.split("/") if segment)


def resource_key(url: str) -> str:
    """The URL without scheme, ``www``, fragment, empty segments or query order: two documents
    with the same resource key are one resource served in two languages, not two pages."""
    parts = urlsplit(url.strip())
    host = parts.netloc.lower().rsplit("@", 1)[-1].removeprefix("www.")
    path = "/".join(s for s in unquote(parts.path).split("/") if s)
    return f"{host}/{path}?{urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))}"


_URL_SEPARATORS = re.compile(r"[/._\-?=&:;,+~%#]+")


def url_text(url: str) -> str:
    """A URL as the URL models read it: host (no port), path and query, separators turned into spaces."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return " ".join(_URL_SEPARATORS.sub(" ", f"{host} {parts.path} {parts.query}").split())


def url_tokens(url: str) -> frozenset[str]:
    """The lower-cased words of :func:`url_text`: what URL similarity (Jaccard, shared tokens) compares."""
    return frozenset(url_text(url).lower().split())


@functools.lru_cache(maxsize=65_536)
def site_of(host: str) -> str:
    """The registered domain of ``host[:port]`` (``docs.debian.org`` -> ``debian.org``, by the public suffix
    list); the host itself for an address or a name under no known suffix."""
    hostname = urlsplit(f"http://{host}").hostname or host
    return get_fld(hostname, fix_protocol=True, fail_silently=True) or hostname


def site_bucket(host: str, buckets: int) -> int:
    """Which of ``buckets`` the site of ``host[:port]`` falls in: a stable hash (SHA-1) of its registered domain,
    the same on every machine and Python version. Crawl host groups and site partitions both use it."""
    digest = hashlib.sha1(site_of(host).encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:8], "big") % buckets


def site_partition(url: str, partitions: int) -> int:
    """The site partition of ``url``'s page: pages of one web site (registered domain) share a partition, which
    is what document alignment, 1-1 per site, needs to see together."""
    return site_bucket(urlsplit(url).netloc, partitions)
