"""A takedown list: what the deployment was asked to stop publishing, and who asked, when and why.

The list is JSON Lines, one entry per line; each entry names exactly one of

- ``url``: one page (compared without scheme, fragment, default port and case of the host, so ``http://`` and
  ``https://`` spellings of a page are the same page);
- ``prefix``: every page whose URL starts with it (compared the same way);
- ``host``: every page of a host and of its subdomains (``example.com`` covers ``www.example.com``);
- ``text``: every sentence equal to it after the project's text normalisation
  (:func:`bitextflow.text.comparison.normalise_for_comparison`: case-folded letters and digits only), in either
  language of a pair;

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
from collections.abc import Iterable, Sequence
from datetime import date
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bitextflow.errors import ConfigError
from bitextflow.text.comparison import normalise_for_comparison

TAKEDOWN_KINDS: tuple[str, ...] = ("url", "prefix", "host", "text")
_DEFAULT_PORTS = {"http": 80, "https": 443}


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
        return self

    @property
    def kind(self) -> str:
        return next(kind for kind in TAKEDOWN_KINDS if getattr(self, kind))

    @property
    def reason(self) -> str:
        """The count reason of what it takes down: ``takedown_url``, ``takedown_prefix``, ``takedown_host``, ``takedown_text``."""
        return f"takedown_{self.kind}"


def comparable_url(url: str) -> str:
    """``host[:port]/path[?query]`` with the host lower-cased, the default port, scheme and fragment dropped."""
    parts = urlsplit(url.strip() if "//" in url else f"//{url.strip()}")
    host = (parts.hostname or "").rstrip(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port in (None, _DEFAULT_PORTS.get(parts.scheme.lower())) else f"{host}:{port}"
    return f"{netloc}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")


def _host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").rstrip(".")


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
                self._urls.setdefault(comparable_url(entry.url), entry)
            elif entry.prefix is not None:
                self._prefixes.append((comparable_url(entry.prefix), entry))
            elif entry.host is not None:
                self._hosts.setdefault(entry.host.strip().lower().rstrip("."), entry)
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
