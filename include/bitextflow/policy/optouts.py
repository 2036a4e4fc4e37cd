"""The opt-outs a corpus honours (:class:`bitextflow.config.PolicyConfig`), applied to pages, crawled or ingested.

A page is judged twice, in this order (the first reason found is its count's):

1. by its site (:meth:`OptOuts.site_verdict`, before a crawler fetches it): the origin's robots.txt for every agent
   honoured (``optout_robots``), then the origin's ``/.well-known/tdmrep.json`` rules (``optout_tdmrep``);
2. by what it says itself (:meth:`OptOuts.page_verdict`, once fetched or read from a WARC file): its TDMRep
   reservation (the ``<meta>``, else the header, else the site file: the report's priority; ``optout_tdmrep``) and
   its ``noai`` directive (``optout_noai``).

A crawler never fetches a page its site reserves, so a header or ``<meta>`` that would lift the site file's
reservation for that page (TDMRep lets them) is not seen: the reservation stands. An ingested page is judged with
all three. A page of an origin whose files were never learnt (:meth:`OptOuts.learn`) is set aside by robots: the
crawler learns every origin before fetching from it, the ingest path before extracting.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bitextflow.config import PolicyConfig
from bitextflow.policy.markup import PageSignals, read_page
from bitextflow.policy.robots import RobotsAnswer, RobotsFile
from bitextflow.policy.tdmrep import TdmRepFile
from bitextflow.policy.verdict import ALLOWED, OPTOUT_NOAI, OPTOUT_ROBOTS, OPTOUT_TDMREP, Verdict
from bitextflow.text.urls import origin_of


@dataclass(frozen=True)
class SiteFiles:
    """An origin's site-wide files as fetched or captured: each the body of a 2xx answer, the status of any other,
    or None (no answer); ``source`` says where they came from (``capture``, ``fetch``, ``assumed``), for logs."""

    origin: str
    robots: RobotsAnswer
    tdmrep: bytes | str | int | None = None
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """A JSON object (bodies as UTF-8 text: robots.txt and tdmrep.json are UTF-8 by their specifications)."""
        return {
            "origin": self.origin,
            "robots": _answer_json(self.robots),
            "tdmrep": _answer_json(self.tdmrep),
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SiteFiles:
        return cls(data["origin"], _answer_of(data["robots"]), _answer_of(data["tdmrep"]), data.get("source", ""))


def _answer_json(answer: bytes | str | int | None) -> dict[str, Any] | None:
    if answer is None or isinstance(answer, int):
        return None if answer is None else {"status": answer}
    return {"status": 200, "text": answer.decode("utf-8", errors="replace") if isinstance(answer, bytes) else answer}


def _answer_of(data: dict[str, Any] | None) -> str | int | None:
    return None if data is None else data.get("text", data["status"])


@dataclass(frozen=True)
class _Site:
    robots: RobotsFile
    tdmrep: TdmRepFile


_NOT_LEARNT = Verdict(OPTOUT_ROBOTS, "robots.txt of the site was never read")


class OptOuts:
    """The policy, with the site files learnt so far (one parse per origin); see the module docstring.

    ``own_agent``: the user agent of the crawl (``crawl.user_agent``), whose rules a page must pass too.
    """

    def __init__(self, config: PolicyConfig, own_agent: str = ""):
        self.config = config
        self.agents = tuple(dict.fromkeys([*config.robots_agents, *([own_agent] if own_agent else [])]))
        self._sites: dict[str, _Site] = {}

    def learn(self, files: SiteFiles) -> None:
        self.learn_parsed(files.origin, RobotsFile.of_answer(files.robots), TdmRepFile.of_answer(files.tdmrep))

    def learn_parsed(self, origin: str, robots: RobotsFile, tdmrep: TdmRepFile | None = None) -> None:
        """An origin's files already parsed (the crawler parses robots.txt for its own agent first)."""
        self._sites[origin] = _Site(robots, tdmrep or TdmRepFile())

    def knows(self, origin: str) -> bool:
        return origin in self._sites

    def read(self, url: str, headers: Iterable[tuple[str, str]], body: bytes) -> PageSignals:
        """What a page says about itself (:func:`bitextflow.policy.markup.read_page`) for the agents honoured."""
        return read_page(url, headers, body, self.agents)

    def site_verdict(self, url: str) -> Verdict:
        """What the page's site says of it: robots.txt, then the TDMRep site file."""
        site = self._sites.get(origin_of(url))
        if site is None:
            return _NOT_LEARNT
        verdict = site.robots.verdict(url, self.agents)
        if verdict.allowed and self.config.honour_tdmrep and site.tdmrep.reservation(url) == 1:
            return Verdict(OPTOUT_TDMREP, "reserved by /.well-known/tdmrep.json")
        return verdict

    def page_verdict(self, url: str, signals: PageSignals) -> Verdict:
        """What the page says of itself (its reservation superseding the site file's, as TDMRep orders), then noai."""
        if self.config.honour_tdmrep:
            reservation = signals.tdm_reservation
            if reservation is None and (site := self._sites.get(origin_of(url))) is not None:
                reservation = site.tdmrep.reservation(url)
            if reservation == 1:
                return Verdict(OPTOUT_TDMREP, "tdm-reservation: 1")
        if self.config.honour_noai and "noai" in signals.robots_directives:
            return Verdict(OPTOUT_NOAI, "noai")
        return ALLOWED

    def verdict(self, url: str, signals: PageSignals) -> Verdict:
        """Both judgements of a page read from a WARC file, which has all the declarations at once: the site's
        robots.txt, then the page's reservation (a header or ``<meta>`` superseding the site file, which a crawler
        cannot wait for) and its noai directive."""
        site = self._sites.get(origin_of(url))
        if site is None:
            return _NOT_LEARNT
        robots = site.robots.verdict(url, self.agents)
        return robots if not robots.allowed else self.page_verdict(url, signals)
