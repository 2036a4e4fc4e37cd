"""TDMRep: reservations of text-and-data-mining rights (W3C TDM Reservation Protocol, community group final report,
https://www.w3.org/community/reports/tdmrep/CG-FINAL-tdmrep-20240510/), the EU DSM Directive's article 4 opt-out.

A reservation is ``tdm-reservation`` = 1 (reserved) or 0 (not reserved); any other value is a protocol error, read
as unset. It is declared three ways, each superseding the one before (the report's "Processing priority"):

1. ``/.well-known/tdmrep.json`` on the origin: a JSON array of rules ``{"location": pattern, "tdm-reservation":
   0|1, "tdm-policy": url}``; the first rule whose location matches the URL's path applies (the report: "the most
   specific match is the first in sequence"). Locations are robots.txt path patterns (``*`` any characters, a final
   ``$`` the end), matched case-sensitively after decoding percent-encoded unreserved characters on both sides.
   No file (a 3xx or 4xx answer), or a file that is not an array, means the origin does not use the protocol; a 5xx,
   a 429 or no answer after retries, a file over 500 KB or nested too deep reserves every page of the origin
   (:class:`TdmRepFile`), as robots.txt's "unreachable" disallows every path;
2. a ``tdm-reservation`` HTTP response header;
3. ``<meta name="tdm-reservation" content="...">`` in an HTML page (:mod:`bitextflow.policy.markup` reads it).

``tdm-policy`` (where a licence may be asked for) is not followed: a reserved page is left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bitextflow.config import path_pattern

TDMREP_PATH = "/.well-known/tdmrep.json"
TDMREP_MAX_BYTES = 512_000  # a site-wide file like robots.txt; nothing the report asks for is larger
#: what a crawler asks for: one byte more than a file may hold, so that a longer one is known to be cut
TDMREP_FETCH_BYTES = TDMREP_MAX_BYTES + 1
_UNRESERVED_ESCAPE = re.compile(r"%(2[dDeE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF]|7[eE])")


def reservation_value(value: object) -> int | None:
    """1 or 0 from a ``tdm-reservation`` value (a header, a meta content, a JSON number or string); None: unset."""
    if isinstance(value, bool):  # JSON true is no reservation value
        return None
    if isinstance(value, int):
        return value if value in (0, 1) else None
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def _unescape_unreserved(path: str) -> str:
    """``%7E`` -> ``~`` and the like: percent-encoded unreserved characters (RFC 3986 2.3) compare decoded."""
    return _UNRESERVED_ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), path)


def location_pattern(location: str) -> Any:
    """A ``location`` as a pattern matched from the path's start: ``*`` any characters, a final ``$`` the end. Compiled
    by RE2, as ``crawl.include_paths`` are (:func:`bitextflow.config.path_pattern`): Python's ``re`` backtracks over
    the ``.*`` a wildcard becomes (a dozen ``*`` against a 60-character link held the crawl's event loop for more than
    20 s), RE2 matches in time linear in the path."""
    location = _unescape_unreserved(location)
    anchored = location.endswith("$")
    body = ".*".join(re.escape(part) for part in location.removesuffix("$").split("*"))
    return path_pattern("(?s)" + body + ("$" if anchored else ""))


@dataclass(frozen=True)
class TdmRule:
    location: str
    reservation: int
    pattern: Any


#: Why a tdmrep.json could not be read within its bounds, the name the crawl counts it under (see :class:`TdmRepFile`).
TDMREP_TOO_DEEP = "tdmrep_too_deep"
TDMREP_TOO_LARGE = "tdmrep_too_large"
TDMREP_UNREACHABLE = "tdmrep_unreachable"


@dataclass(frozen=True)
class TdmRepFile:
    """An origin's ``/.well-known/tdmrep.json`` rules (none: the origin does not use the protocol).

    ``unreadable`` names why a file the origin serves could not be read within the bounds a remote file gets: its
    JSON nested deeper than Python's parser goes (``RecursionError``, which no ``ValueError`` handler catches, used to
    end the crawl, every retry of it, and the extract and cc_fetch stages that read the stored copy), a file longer
    than :data:`TDMREP_MAX_BYTES` (cut, its later rules lost), or no answer after the fetcher's retries (a 5xx, a
    429, a timeout: status 0). Such an origin reserves every page, as robots.txt's "unreachable" disallows every
    path: it may have said something about mining its pages, and what it said cannot be known. A 4xx (no file) and
    a body that is not a JSON array still mean that the origin does not use the protocol."""

    rules: tuple[TdmRule, ...] = ()
    unreadable: str = ""

    @classmethod
    def of_answer(cls, answer: bytes | str | int | None) -> TdmRepFile:
        """The rules of a fetch or capture's answer: the body of a 2xx answer (else a status code, or None)."""
        if isinstance(answer, int) and (answer == 429 or answer >= 500 or answer < 200):
            return cls(unreadable=TDMREP_UNREACHABLE)  # 5xx, 429 or no answer (0), after the fetcher's retries
        if not isinstance(answer, bytes | str):
            return cls()
        if len(answer) > TDMREP_MAX_BYTES:
            return cls(unreadable=TDMREP_TOO_LARGE)  # cut at the limit: its later rules would be missing
        try:
            data = json.loads(answer)
        except RecursionError:
            return cls(unreadable=TDMREP_TOO_DEEP)
        except (ValueError, UnicodeDecodeError):
            return cls()
        if not isinstance(data, list):
            return cls()
        rules = []
        for item in data:
            if not isinstance(item, dict) or not isinstance(item.get("location"), str):
                continue  # a rule needs a location and a reservation; a broken one is skipped, not the file
            value = reservation_value(item.get("tdm-reservation"))
            if value is not None:
                rules.append(TdmRule(item["location"], value, location_pattern(item["location"])))
        return cls(tuple(rules))

    def reservation(self, url: str) -> int | None:
        """The reservation of the first rule whose location matches ``url``'s path (and query); None when none does."""
        if self.unreadable:
            return 1
        if not self.rules:
            return None
        parts = urlsplit(url)
        path = _unescape_unreserved((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        for rule in self.rules:
            if rule.pattern.match(path):
                return rule.reservation
        return None
