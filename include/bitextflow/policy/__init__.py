"""What a corpus that may be published honours: site owners' opt-outs and pages that say they were machine translated.

Records in, verdicts out; nothing here fetches or stores (the crawler and the ingest path bring the answers):

- :mod:`~bitextflow.policy.robots`: an origin's robots.txt for the agents the corpus honours (RFC 9309, Protego);
  :func:`~bitextflow.policy.robots.robots_verdict` is the entry point for one URL and one robots.txt answer;
- :mod:`~bitextflow.policy.tdmrep`: TDMRep reservations (W3C community group report), the site file's rules and
  the values of its header and ``<meta>``;
- :mod:`~bitextflow.policy.markup`: what a fetched page says about itself in its headers and markup
  (``tdm-reservation``, ``noai``, machine-translation signals), read with one parse at most;
- :mod:`~bitextflow.policy.optouts`: the policy applied (``bitextflow.config.PolicyConfig``), per origin and page.

Every page set aside gets a reason named in :mod:`~bitextflow.policy.verdict` (``optout_robots``, ``optout_tdmrep``,
``optout_noai``, ``machine_translated``), the names under which the crawl and extract counts report them.
"""

from bitextflow.policy.markup import PageSignals, read_page
from bitextflow.policy.optouts import OptOuts, SiteFiles
from bitextflow.policy.robots import RobotsFile, robots_verdict
from bitextflow.policy.tdmrep import TdmRepFile
from bitextflow.policy.verdict import ALLOWED, MACHINE_TRANSLATED, OPTOUT_NOAI, OPTOUT_ROBOTS, OPTOUT_TDMREP, Verdict

__all__ = [
    "ALLOWED",
    "MACHINE_TRANSLATED",
    "OPTOUT_NOAI",
    "OPTOUT_ROBOTS",
    "OPTOUT_TDMREP",
    "OptOuts",
    "PageSignals",
    "RobotsFile",
    "SiteFiles",
    "TdmRepFile",
    "Verdict",
    "read_page",
    "robots_verdict",
]
