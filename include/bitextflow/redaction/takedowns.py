"""A takedown list: what the deployment was asked to stop publishing, and who asked, when and why.

The list is JSON Lines, one entry per line; each entry names exactly one of

- ``url``: one page, compared as the crawler spells the URLs it keeps (:func:`bitextflow.text.urls.canonical_url`:
  query sorted, ``utm_*`` and other trackers dropped, dot segments resolved, an IDN host in Unicode whether written
  so or in punycode), then without scheme, fragment and default port, with every percent escape upper-cased and
  those of unreserved characters decoded (RFC 3986 6.2.2), on both sides: ``?b=2&a=1``, ``%c3%a9`` or a raw ``é``,
  ``&utm_source=``, ``/./``, ``%7E`` and ``xn--`` spellings of a released page are that page. An entry that no
  crawled URL can be (not http(s)) is refused, naming the fix;
- ``prefix``: every page whose URL starts with it (compared the same way);
- ``host``: every page of a host and of its subdomains (``example.com`` covers ``www.example.com``; punycode or
  Unicode); a host written as a URL (``https://example.com/``) is refused, naming the fix;
- ``text``: every sentence equal to it after the project's text normalisation
  (:func:`bitextflow.text.comparison.normalise_for_comparison`: case-folded letters, digits and vowel signs only),
  in either language of a pair;

with ``who`` (the requester), ``when`` (the date of the request, ISO 8601) and ``why`` (its grounds, e.g.
``copyright``, ``privacy``), all three required::

    {"host": "example.org", "who": "Example Ltd", "when": "2026-11-30", "why": "copyright"}
    {"text": "Call Jane on her mobile.", "who": "Jane Doe", "when": "2026-12-01", "why": "privacy"}

A sentence pair is taken down when either page or either sentence is listed; the entry that matches first in the
order url, prefix, host, text names the reason it is counted under (``takedown_<kind>``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from datetime import date
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bitextflow.errors import ConfigError
from bitextflow.text.comparison import normalise_for_comparison
from bitextflow.text.urls import canonical_url

TAKEDOWN_KINDS: tuple[str, ...] = ("url", "prefix", "host", "text")


class TakedownEntry(BaseModel):
    """One request: exactly one of ``url``, ``prefix``, ``host``, ``text``, with who, when and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    prefix: str | None = None
    host: str | None = None
    text: str | None = None
    who: str = Field(min_length=1)
    when: date
    why: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_target(self) -> TakedownEntry:
        given = [kind for kind in TAKEDOWN_KINDS if getattr(self, kind)]
        if len(given) != 1:
            raise ValueError(f"an entry names exactly one of {', '.join(TAKEDOWN_KINDS)} (got {', '.join(given) or 'none'})")
        if self.text is not None and not normalise_for_comparison(self.text):
            raise ValueError("text has no letter or digit, so it would match every sentence without one")
        for kind in ("url", "prefix"):
            value = getattr(self, kind)
            if value is not None and comparable_url(value) is None:
                raise ValueError(f"{kind} {value!r} is no http(s) URL a crawl keeps; write it as https://host/path")
        if self.host is not None and not _HOST.fullmatch(self.host.strip()):
            raise ValueError(
                f"host {self.host!r} is not a host name; write the host alone (example.org), or a page or folder as a "
                "url or prefix entry"
            )
        return self

    @property
    def kind(self) -> str:
        return next(kind for kind in TAKEDOWN_KINDS if getattr(self, kind))

    @property
    def reason(self) -> str:
        """The count reason of what it takes down: ``takedown_url``, ``takedown_prefix``, ``takedown_host``, ``takedown_text``."""
        return f"takedown_{self.kind}"


_HOST = re.compile(r"[^\s/:?#@\[\]]+\.?")  # a host name: no scheme, path, port, user info or spaces
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?!\d)")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _escape(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else f"%{match.group(1).upper()}"


def unicode_host(host: str) -> str:
    """``host`` lower-cased, its root dot dropped and its punycode labels (``xn--``) in Unicode, as the crawler keeps
    IDN hosts."""
    labels = []
    for label in host.strip().lower().rstrip(".").split("."):
        if label.startswith("xn--"):
            try:
                label = label[4:].encode("ascii").decode("punycode")
            except (UnicodeError, ValueError):
                pass
        labels.append(label)
    return ".".join(labels)


def comparable_url(url: str) -> str | None:
    """``host[:port]/path[?query]`` of the crawler's canonical form of ``url`` (a URL without a scheme is taken as
    http), escapes upper-cased and unreserved ones decoded; None when it is no http(s) URL."""
    url = url.strip()
    has_scheme = "://" in url or _SCHEME.match(url) is not None  # mailto:, urn:, but not host:8080
    canonical = canonical_url(url if has_scheme else f"http://{url.removeprefix('//')}")
    if canonical is None:
        return None
    parts = urlsplit(canonical)
    netloc = unicode_host(parts.netloc)
    rest = _ESCAPE.sub(_escape, (parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    return netloc + rest


def _host_of(url: str) -> str:
    return unicode_host(urlsplit(url).hostname or "")


class TakedownList:
    """The entries of a list, indexed so that a pair is checked in a few dictionary look-ups."""

    def __init__(self, entries: Iterable[TakedownEntry] = ()):
        self.entries = tuple(entries)
        self._urls: dict[str, TakedownEntry] = {}
        self._prefixes: list[tuple[str, TakedownEntry]] = []
        self._hosts: dict[str, TakedownEntry] = {}
        self._texts: dict[str, TakedownEntry] = {}
        for entry in self.entries:
            if entry.url is not None:
                self._urls.setdefault(str(comparable_url(entry.url)), entry)
            elif entry.prefix is not None:
                self._prefixes.append((str(comparable_url(entry.prefix)), entry))
            elif entry.host is not None:
                self._hosts.setdefault(unicode_host(entry.host), entry)
            else:
                self._texts.setdefault(normalise_for_comparison(str(entry.text)), entry)

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def parse(cls, data: bytes | str, source: str) -> TakedownList:
        """The list in ``data`` (JSON Lines; blank lines skipped); a bad line raises a one-line error naming
        ``source`` and the line."""
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        entries = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                entries.append(TakedownEntry.model_validate(json.loads(line)))
            except ValueError as exc:  # json.JSONDecodeError and pydantic's ValidationError are both ValueErrors
                problem = _first_problem(exc) if isinstance(exc, ValidationError) else f"not JSON ({exc})"
                raise ConfigError(
                    f"{source}:{number}: {problem}; each line is an object such as "
                    '{"url": "https://...", "who": "...", "when": "2026-12-01", "why": "..."}'
                ) from None
        return cls(entries)

    def to_jsonl(self) -> bytes:
        return b"".join(entry.model_dump_json(exclude_none=True).encode("utf-8") + b"\n" for entry in self.entries)

    def with_entries(self, entries: Sequence[TakedownEntry]) -> TakedownList:
        return TakedownList((*self.entries, *entries))

    def covering_texts(self, texts: Iterable[tuple[str, TakedownEntry]]) -> TakedownList:
        """This list, also taking down each sentence given under the entry given with it (the sentences of a page it
        takes down, where a sentence's page is no longer known); its entries, and so its digest, stay the same."""
        covering = TakedownList(self.entries)
        for text, entry in texts:
            if key := normalise_for_comparison(text):
                covering._texts.setdefault(key, entry)
        return covering

    @property
    def sha256(self) -> str:
        """The digest of the list as stored: what a redacted release says it applied."""
        return hashlib.sha256(self.to_jsonl()).hexdigest()

    def match_url(self, url: str) -> TakedownEntry | None:
        """The entry that takes down the page ``url`` (url, then prefix, then host), if any."""
        if not url or not (self._urls or self._prefixes or self._hosts):
            return None
        comparable = comparable_url(url)
        if comparable is None:
            return None
        if comparable in self._urls:
            return self._urls[comparable]
        for prefix, entry in self._prefixes:
            if comparable.startswith(prefix):
                return entry
        labels = _host_of(url).split(".")
        for start in range(len(labels)):
            entry = self._hosts.get(".".join(labels[start:]))
            if entry is not None:
                return entry
        return None

    def match_text(self, text: str) -> TakedownEntry | None:
        if not self._texts or not text:
            return None
        return self._texts.get(normalise_for_comparison(text))

    def match(self, urls: Sequence[str], texts: Sequence[str]) -> TakedownEntry | None:
        """The entry that takes down the item with these pages and sentences (a pair's two, or a sentence's one)."""
        for url in urls:
            if (entry := self.match_url(url)) is not None:
                return entry
        for text in texts:
            if (entry := self.match_text(text)) is not None:
                return entry
        return None

    def reasons_by_why(self) -> dict[str, int]:
        """How many entries the list holds per ``why``: what the datasheet says the list is made of."""
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.why] = counts.get(entry.why, 0) + 1
        return dict(sorted(counts.items()))


def _first_problem(exc: ValidationError) -> str:
    error = exc.errors()[0]
    field = ".".join(str(part) for part in error["loc"])
    return f"{field}: {error['msg']}" if field else error["msg"].removeprefix("Value error, ")
