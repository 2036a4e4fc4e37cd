"""An origin's robots.txt, read for the user agents a corpus honours (RFC 9309, parsed by Protego).

The answer a robots.txt fetch (or a capture of one) got decides what the rules are, as RFC 9309 2.3.1 and Google's
crawlers do (https://developers.google.com/search/docs/crawling-indexing/robots/robots_txt):

- a 2xx answer: its rules, read from its first 500 KiB (RFC 9309 2.5; Google too ignores what lies beyond);
- a 4xx answer ("unavailable"), a 3xx whose target is unknown (RFC 9309 2.3.1.2: after too many redirects the file
  MAY be taken as unavailable): no rules, every path allowed; except 429 Too Many Requests, which says the server
  is overloaded, not that there is no file: Google treats it as a server error, and so do we;
- a 5xx answer, or no answer at all (unreachable host, timeout, refused address): "unreachable", a full disallow.

Protego matches user agents case-insensitively, merges the groups that name one agent, takes the longest matching
rule (``Allow`` on a tie) and knows ``*`` and ``$`` in paths; paths are matched case-sensitively, as RFC 9309 says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from protego import Protego

from bitextflow.policy.verdict import ALLOWED, OPTOUT_ROBOTS, Verdict

ROBOTS_MAX_BYTES = 512_000  # RFC 9309 2.5: crawlers must parse at least 500 KiB
ROBOTS_PATH = "/robots.txt"
#: What a robots.txt fetch or capture gave: the body of a 2xx answer, the status of any other, or None (no answer).
RobotsAnswer = bytes | str | int | None


def robots_body(data: bytes | str) -> str:
    """A robots.txt body as text: UTF-8 (RFC 9309 2.3), its first 500 KiB cut at the last complete line, no BOM."""
    if isinstance(data, bytes):
        if len(data) > ROBOTS_MAX_BYTES:
            cut = data[:ROBOTS_MAX_BYTES]
            data = cut[: cut.rfind(b"\n") + 1] or cut
        data = data.decode("utf-8", errors="replace")
    elif len(data) > ROBOTS_MAX_BYTES:
        return robots_body(data.encode("utf-8"))
    return data.removeprefix("\ufeff")


@dataclass(frozen=True)
class RobotsFile:
    """What an origin's robots.txt says: ``rules`` to match, or (``rules`` None) one answer for every path."""

    rules: Protego | None
    allow_all: bool = True
    #: why there are no rules, for a verdict's detail ("unreachable (503)")
    answer: str = ""

    @classmethod
    def of_answer(cls, answer: RobotsAnswer) -> RobotsFile:
        """The rules that ``answer`` (a body, a status code or None) gives, as the module docstring says."""
        if isinstance(answer, bytes | str):
            return cls(Protego.parse(robots_body(answer)))
        if answer is None:
            return cls(None, allow_all=False, answer="unreachable (no answer)")
        if 200 <= answer < 300:
            return cls(Protego.parse(""))
        if answer == 429 or answer >= 500 or answer < 200:
            return cls(None, allow_all=False, answer=f"unreachable ({answer})")
        return cls(None, allow_all=True, answer=f"unavailable ({answer})")

    def verdict(self, url: str, agents: Sequence[str]) -> Verdict:
        """Allowed when every agent of ``agents`` may fetch ``url``; else set aside, naming the first one refused."""
        if self.rules is None:
            return ALLOWED if self.allow_all else Verdict(OPTOUT_ROBOTS, f"robots.txt {self.answer}: full disallow (RFC 9309)")
        for agent in agents:
            if not self.rules.can_fetch(url, agent):
                return Verdict(OPTOUT_ROBOTS, f"robots.txt disallows {agent}")
        return ALLOWED


def robots_verdict(url: str, answer: RobotsAnswer, agents: Sequence[str]) -> Verdict:
    """May ``url`` be used, given its origin's robots.txt ``answer`` (the body of a 2xx answer, the status code of any
    other, or None when none came) and the user ``agents`` the corpus honours (``policy.robots_agents``)?

    The entry point for one page; to judge many pages of one origin, parse once with :meth:`RobotsFile.of_answer`.
    """
    return RobotsFile.of_answer(answer).verdict(url, agents)
