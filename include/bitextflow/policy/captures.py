"""Site-wide files captured by a crawl: the responses of ``/robots.txt`` and ``/.well-known/tdmrep.json`` URLs in its
WARC files (Common Crawl publishes its robots.txt captures as ``robotstxt`` WARC files of each crawl; Heritrix and
others write them beside the pages), gathered by origin.

The first capture of a file per origin counts. A capture that is a redirect stands for its target's capture when the
crawl captured that one too (http://example.org/robots.txt -> https://example.org/robots.txt, the most common case);
otherwise it stays a 3xx answer, which RFC 9309 lets a crawler read as no robots.txt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from bitextflow.policy.optouts import SiteFiles
from bitextflow.policy.robots import ROBOTS_PATH
from bitextflow.policy.tdmrep import TDMREP_PATH
from bitextflow.text.urls import origin_of

_SITE_FILES = (ROBOTS_PATH, TDMREP_PATH)


@dataclass(frozen=True)
class _Capture:
    status: int
    body: bytes
    location: str  # of a redirect, absolute

    def answer(self) -> bytes | int:
        return self.body if 200 <= self.status < 300 else self.status


def site_file_of(url: str) -> str | None:
    """``/robots.txt`` or ``/.well-known/tdmrep.json`` when ``url`` is one of an origin's site-wide files, else None."""
    parts = urlsplit(url)
    return parts.path if parts.path in _SITE_FILES and not parts.query else None


class SiteFileCaptures:
    """The captures of site-wide files seen so far, by file and origin (see the module docstring)."""

    def __init__(self) -> None:
        self._captures: dict[tuple[str, str], _Capture] = {}

    def __len__(self) -> int:
        return len({origin for _file, origin in self._captures})

    def add(self, url: str, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> bool:
        """Keep a response if it is the first capture of a site-wide file of its origin; True when it is a site file."""
        file = site_file_of(url)
        if file is None:
            return False
        location = next((value for name, value in headers if name.strip().lower() == "location"), "")
        self._captures.setdefault((file, origin_of(url)), _Capture(status, body, urljoin(url, location) if location else ""))
        return True

    def _answer(self, file: str, origin: str) -> bytes | int | None:
        capture = self._captures.get((file, origin))
        if capture is None:
            return None
        if 300 <= capture.status < 400 and capture.location and site_file_of(capture.location) == file:
            target = self._captures.get((file, origin_of(capture.location)))
            if target is not None and not 300 <= target.status < 400:
                return target.answer()
        return capture.answer()

    def site_files(self, origins: Iterable[str] | None = None) -> dict[str, SiteFiles]:
        """The origins (all, or those of ``origins``) whose robots.txt was captured, with their files."""
        captured = {origin for file, origin in self._captures if file == ROBOTS_PATH}
        wanted = captured if origins is None else captured & set(origins)
        return {
            origin: SiteFiles(origin, self._answer(ROBOTS_PATH, origin), self._answer(TDMREP_PATH, origin), "capture")
            for origin in sorted(wanted)
        }
