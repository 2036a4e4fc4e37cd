"""Site-wide files (robots.txt, ``/.well-known/tdmrep.json``) a hostile host serves: deep, long, repetitive. None may
escape the policy's error handling or hold the crawl's event loop (docs/security.md, "Crawling the web")."""

from __future__ import annotations

import pytest

from bitextflow.config import PolicyConfig
from bitextflow.policy import OptOuts, SiteFiles
from bitextflow.policy.tdmrep import TdmRepFile
from tests.support import cpu_clock

SITE = "https://example.org"


def test_a_dozen_wildcards_in_a_location_match_in_linear_time():
    # re turned each * into a backtracking .*: this took more than 20 s of CPU against one 60-character link
    hostile = b'[{"location": "/' + b"*a" * 12 + b'b", "tdm-reservation": 1}]'
    site = TdmRepFile.of_answer(hostile)
    with cpu_clock() as seconds:
        for length in (25, 60, 5_000):
            assert site.reservation(f"{SITE}/{'a' * length}") is None
        assert site.reservation(f"{SITE}/{'a' * 30}b") == 1
    assert seconds() < 1, f"matching took {seconds():.1f} s of CPU"


@pytest.mark.parametrize(
    ("location", "path", "matches"),
    [
        ("/", "/a", True),
        ("/a*", "/a", True),
        ("/a*b", "/axxb", True),
        ("/a*b", "/axxbc", True),
        ("/a*b$", "/axxbc", False),
        ("/a*b$", "/abab", True),
        ("/*a*a$", "/ba", False),
        ("/*a*a$", "/baa", True),
        ("/x$", "/x", True),
        ("/x$", "/xy", False),
        ("*", "/anything", True),
        ("/a**b", "/ab", True),
        ("/ab*ba$", "/aba", False),
    ],
)
def test_locations_keep_their_robots_txt_meaning(location, path, matches):
    site = TdmRepFile.of_answer(f'[{{"location": "{location}", "tdm-reservation": 1}}]')
    assert (site.reservation(SITE + path) == 1) is matches


@pytest.mark.parametrize("body", [b"[" * 100_000, b'[{"location": "/", "x": ' + b"[" * 100_000, b"{" + b'"a":{' * 50_000])
def test_a_deeply_nested_tdmrep_json_is_unreadable_and_reserves_the_site(body):
    # json.loads raised RecursionError, which the ValueError handler let through: the crawl died on every retry
    site = TdmRepFile.of_answer(body)
    assert site.unreadable == "tdmrep_too_deep"
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles(SITE, 404, body))  # the stored copy, as extract and cc_fetch read it
    assert optouts.site_verdict(SITE + "/a").reason == "optout_tdmrep"
    assert optouts.verdict(SITE + "/a", optouts.read(SITE + "/a", [], b"<html></html>")).reason == "optout_tdmrep"


@pytest.mark.parametrize(
    ("answer", "unreadable", "reservation"),
    [
        (503, "tdmrep_unreachable", 1),
        (429, "tdmrep_unreachable", 1),
        (0, "tdmrep_unreachable", 1),  # no answer after the fetcher's retries (a timeout, a refused connection)
        (b"[" + b'{"location": "/free/", "tdm-reservation": 0},' * 12_000 + b"]", "tdmrep_too_large", 1),
        (404, "", None),
        (None, "", None),  # never fetched (not honoured, or a capture that holds none)
    ],
)
def test_tdmrep_fails_closed_as_robots_txt_does(answer, unreadable, reservation):
    # a 5xx, a timeout or a file cut at its limit meant "no reservation" for the whole crawl
    site = TdmRepFile.of_answer(answer)
    assert (site.unreadable, site.reservation(SITE + "/free/a")) == (unreadable, reservation)
