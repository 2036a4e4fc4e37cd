"""What a fetched page says about itself: TDMRep reservation, ``noai`` directives, machine-translation signals.

Read from its HTTP headers and its HTML. The HTML is parsed only when a cheap search of its bytes finds one of the
words these signals are written with (most pages hold none); the parse then decides whether the word is in the
markup that carries the signal (a ``<meta>``, a language tag, a script's address) or merely in the text.

Opt-outs (honoured as :class:`bitextflow.config.PolicyConfig` says):

- ``tdm-reservation`` (TDMRep, :mod:`bitextflow.policy.tdmrep`): the HTTP header, superseded by
  ``<meta name="tdm-reservation">``;
- ``noai`` / ``noimageai`` (DeviantArt's directives of 2022, taken up by other publishers): in an ``X-Robots-Tag``
  header (optionally ``agent: directives``, as Google reads it) or a robots ``<meta>`` named ``robots`` or after an
  agent the corpus honours. ``noimageai`` is kept in the signals but reserves images only.

Machine-translation signals (:data:`MT_SIGNALS`), each the name a flagged document carries:

- ``lang-x-mtfrom``: a language tag with the private-use subtags ``x-mtfrom-<source>`` (``es-x-mtfrom-en``) on
  ``<html>``/``<body>``, in ``<meta http-equiv="content-language">`` or the ``Content-Language`` header: what Google
  writes on pages it translated (translate.goog proxy pages, Google's machine-translated documentation);
- ``lang-t0``: a language tag with BCP 47 extension T's ``t0`` field (RFC 6497, Unicode LDML: "machine translated",
  ``ja-t-de-t0-und``);
- ``mt-proxy-url``: a page captured through a translation proxy (``*.translate.goog``,
  ``translate.googleusercontent.com``, ``translate.google.*/translate``, Bing's ``translatetheweb.com`` and
  ``microsofttranslator.com`` wrappers);
- ``google-translated-dom``: ``<html class="translated-ltr|translated-rtl">``, set by Google's Website Translator
  widget and Chrome's page translation on a page they translated (captures of rendered pages);
- ``translation-stats-meta``: ``<meta name="translation-stats">``, written by page-translation tools;
- ``weglot``, ``conveythis``, ``gtranslate``: the site is served in its languages by a machine-translation service
  (their scripts, or elements they insert, in the markup; a ``<meta name="generator">`` naming one counts too). These
  serve machine translations unless the site owner edited them, on every language version, so both sides of a pair
  carry the flag. A client-side widget alone (Google Website Translator's script, Bing's widget) is no signal: the
  page a crawler gets from such a site is the original, not a translation.

TranslatePress' automatic mode is not among them: its markup (``trp-language-switcher``) is the same whether a person
or a machine translated the page, and flagging every TranslatePress site would drop human translations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import lxml.etree
import lxml.html

from bitextflow.policy.tdmrep import reservation_value

#: The machine-translation signals, in the order they are looked for (a document carries the first found).
MT_SIGNALS = (
    "mt-proxy-url", "lang-x-mtfrom", "lang-t0", "google-translated-dom", "translation-stats-meta",
    "weglot", "conveythis", "gtranslate",
)  # fmt: skip
#: Machine-translation services whose scripts or elements mark a site translated by them, by the words they use.
MT_SERVICES = {"weglot": ("weglot",), "conveythis": ("conveythis",), "gtranslate": ("gtranslate",)}
# Words without which a page holds none of the signals above (lower case): the search that spares the parse. Plain
# substring tests of the lower-cased bytes: 0.7 ms for a 114 kB page, where one case-insensitive regex of these
# alternatives took 6 ms (Python's re tries every alternative at every position).
_NEEDLES = (
    b"noai",
    b"tdm-reservation",
    b"mtfrom",
    b"-t0-",
    b"translated-",
    b"translation-stats",
    b"weglot",
    b"conveythis",
    b"gtranslate",
)
_MT_PROXY_HOST = re.compile(
    r"(^|\.)translate\.goog$|^translate\.googleusercontent\.com$|^(www\.)?translatetheweb\.com$|(^|\.)microsofttranslator\.com$"
)
_GOOGLE_TRANSLATE_HOST = re.compile(r"^translate\.google\.[a-z.]+$")
# X-Robots-Tag directives that take a value after a colon (Google's list), so "max-snippet: 20" names no agent.
_VALUED_DIRECTIVES = frozenset({"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"})
_PARSER = lxml.html.HTMLParser(collect_ids=False, remove_comments=True, remove_pis=True, no_network=True)


@dataclass(frozen=True)
class PageSignals:
    """What one page declares: ``tdm_reservation`` (1, 0 or None: unset by header and meta), the robots directives
    that apply to the corpus' agents (lower case), and the first machine-translation signal ("" when none)."""

    tdm_reservation: int | None = None
    robots_directives: frozenset[str] = frozenset()
    machine_translation: str = ""


NO_SIGNALS = PageSignals()


def _header_values(headers: Iterable[tuple[str, str]], name: str) -> list[str]:
    return [value for key, value in headers if key.strip().lower() == name]


def _directives(content: str) -> set[str]:
    """``noai, noimageai`` -> {"noai", "noimageai"}: commas (or, leniently, spaces) separate directives; a value
    follows a colon (``max-snippet: 20``) and is no directive."""
    found = set()
    for part in content.lower().split(","):
        name, colon, _value = part.partition(":")
        found |= {name.strip()} if colon else set(part.split())
    return found - {""}


def x_robots_directives(values: Iterable[str], agents: Sequence[str]) -> set[str]:
    """Directives of ``X-Robots-Tag`` header values that apply to ``agents``: those naming no agent, or one of them
    (``GPTBot: noai``), as Google reads the header (one agent prefix per header value)."""
    wanted = {agent.lower() for agent in agents}
    found: set[str] = set()
    for value in values:
        head, colon, rest = value.partition(":")
        agent = head.strip().lower()
        if colon and agent and "," not in agent and " " not in agent and agent not in _VALUED_DIRECTIVES:
            if agent in wanted:
                found |= _directives(rest)
            continue
        found |= _directives(value)
    return found


def _language_signal(tag: str) -> str:
    """``lang-x-mtfrom`` or ``lang-t0`` when a BCP 47 language tag says its text was machine translated, else ""."""
    subtags = tag.strip().lower().replace("_", "-").split("-")
    private = subtags.index("x") if "x" in subtags else len(subtags)
    if "mtfrom" in subtags[private + 1 :]:
        return "lang-x-mtfrom"
    extension = subtags[:private]
    if "t" in extension[1:] and "t0" in extension[extension.index("t", 1) + 1 :]:
        return "lang-t0"
    return ""


def proxy_signal(url: str) -> str:
    """``mt-proxy-url`` when ``url`` is a page served through a machine-translation proxy, else ""."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if _MT_PROXY_HOST.search(host) or (_GOOGLE_TRANSLATE_HOST.match(host) and parts.path.startswith("/translate")):
        return "mt-proxy-url"
    return ""


def may_hold_signals(body: bytes) -> bool:
    """Whether a body holds a word some signal is written with (else it holds no signal, and is not parsed)."""
    lowered = body.lower()
    return any(needle in lowered for needle in _NEEDLES)


def _parse(body: bytes) -> lxml.html.HtmlElement | None:
    try:
        return lxml.html.document_fromstring(body, parser=_PARSER)
    except (ValueError, lxml.etree.LxmlError):
        return None


def _meta(tree: lxml.html.HtmlElement, attribute: str) -> list[tuple[str, str]]:
    """``(name, content)`` of the page's ``<meta>`` elements that have ``attribute`` (name or http-equiv), lower-case names."""
    return [
        (element.get(attribute, "").strip().lower(), element.get("content") or "")
        for element in tree.iter("meta")
        if element.get(attribute)
    ]


def _markup_mt_signal(tree: lxml.html.HtmlElement, meta_names: list[tuple[str, str]]) -> str:
    root = tree.getroottree().getroot()
    body = root.find("body")
    tags = [element.get(name) or "" for element in (root, body) if element is not None for name in ("lang", "xml:lang")]
    tags += [content for name, content in _meta(tree, "http-equiv") if name == "content-language"]
    for tag in tags:
        if signal := _language_signal(tag):
            return signal
    if {"translated-ltr", "translated-rtl"} & set((root.get("class") or "").lower().split()):
        return "google-translated-dom"
    meta = dict(meta_names)
    if "translation-stats" in meta:
        return "translation-stats-meta"
    generator = meta.get("generator", "").lower()
    # where a service leaves its name: its scripts and stylesheets, the class and id of the elements it inserts (a link
    # to its site or its name in the text is no sign of its use)
    sources = [element.get("src") for element in tree.iter("script")] + [element.get("href") for element in tree.iter("link")]
    names = [value for element in tree.iter(lxml.etree.Element) for value in (element.get("class"), element.get("id"))]
    marks = " ".join(value for value in sources + names if value).lower()
    for service, words in MT_SERVICES.items():
        if any(word in generator or word in marks for word in words):
            return service
    return ""


def read_page(url: str, headers: Iterable[tuple[str, str]], body: bytes, agents: Sequence[str]) -> PageSignals:
    """The signals of one response: its URL, HTTP headers and body (HTML or not), for the corpus' robots ``agents``."""
    headers = list(headers)
    tdm = None
    for value in _header_values(headers, "tdm-reservation"):
        tdm = reservation_value(value) if tdm is None else tdm
    directives = x_robots_directives(_header_values(headers, "x-robots-tag"), agents)
    signal = proxy_signal(url)
    for value in _header_values(headers, "content-language"):
        signal = signal or next((s for tag in value.split(",") if (s := _language_signal(tag))), "")
    if may_hold_signals(body) and (tree := _parse(body)) is not None:
        meta_names = _meta(tree, "name")
        wanted = {"robots"} | {agent.lower() for agent in agents if agent != "*"}
        for name, content in meta_names:
            if name == "tdm-reservation" and (value := reservation_value(content)) is not None:
                tdm = value  # the page's own declaration supersedes the header's (TDMRep "Processing priority")
            elif name in wanted:
                directives |= _directives(content)
        signal = signal or _markup_mt_signal(tree, meta_names)
    if tdm is None and not directives and not signal:
        return NO_SIGNALS
    return PageSignals(tdm, frozenset(directives), signal)
