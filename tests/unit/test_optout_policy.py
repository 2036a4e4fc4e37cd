"""The opt-out policy's decisions, one table per signal: robots.txt (RFC 9309, hostile spellings included), TDMRep
(site file, header, ``<meta>`` and their priority), ``noai`` directives, the machine-translation signals, and the
robots.txt captures of a crawl (redirects between them)."""

from __future__ import annotations

import json

import pytest

from bitextflow.config import DEFAULT_ROBOTS_AGENTS, PolicyConfig
from bitextflow.policy import OptOuts, SiteFiles, read_page, robots_verdict
from bitextflow.policy.captures import SiteFileCaptures
from bitextflow.policy.markup import MT_SIGNALS
from bitextflow.policy.robots import ROBOTS_MAX_BYTES, robots_body
from bitextflow.policy.tdmrep import TdmRepFile
from bitextflow.text.urls import origin_of

AGENTS = list(DEFAULT_ROBOTS_AGENTS)
SITE = "https://example.org"
PADDING = b"# padding, a comment line of the kind generated robots.txt files repeat\n" * 8_000  # > 500 KiB

ROBOTS_CASES = [
    # (case, robots.txt answer, path, the reason it is set aside or "")
    ("empty disallow allows all", b"User-agent: *\nDisallow:\n", "/a", ""),
    ("everything for everyone", b"User-agent: *\nDisallow: /\n", "/a", "optout_robots"),
    ("an AI agent, upper case", b"USER-AGENT: gptbot\nDISALLOW: /\n", "/a", "optout_robots"),
    ("spaces around names and values", b"  User-agent :  CCBot  \n  Disallow :   /private  \n", "/private/a", "optout_robots"),
    ("no space after the colon", b"User-agent:ClaudeBot\nDisallow:/\n", "/a", "optout_robots"),
    ("CRLF lines", b"User-agent: *\r\nDisallow: /x\r\n", "/x/1", "optout_robots"),
    ("a byte order mark", b"\xef\xbb\xbfUser-agent: *\nDisallow: /\n", "/a", "optout_robots"),
    ("a group of several agents", b"User-agent: Bytespider\nUser-agent: Amazonbot\nDisallow: /\n", "/a", "optout_robots"),
    (
        "one agent's groups merged (first)",
        b"User-agent: GPTBot\nDisallow: /a\n\nUser-agent: *\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /b\n",
        "/a/1",
        "optout_robots",
    ),
    (
        "one agent's groups merged (second)",
        b"User-agent: GPTBot\nDisallow: /a\n\nUser-agent: *\nAllow: /\n\nUser-agent: GPTBot\nDisallow: /b\n",
        "/b/1",
        "optout_robots",
    ),
    ("one agent's groups merged (neither)", b"User-agent: GPTBot\nDisallow: /a\n\nUser-agent: GPTBot\nDisallow: /b\n", "/c", ""),
    ("wildcard with end anchor", b"User-agent: *\nDisallow: /*.pdf$\n", "/docs/a.pdf", "optout_robots"),
    ("the anchor ends the match", b"User-agent: *\nDisallow: /*.pdf$\n", "/docs/a.pdf?page=2", ""),
    ("paths are case-sensitive", b"User-agent: *\nDisallow: /*.pdf$\n", "/docs/a.PDF", ""),
    ("an exact path", b"User-agent: *\nDisallow: /exact$\n", "/exact", "optout_robots"),
    ("an exact path, longer URL", b"User-agent: *\nDisallow: /exact$\n", "/exact/more", ""),
    ("the longest rule wins", b"User-agent: *\nDisallow: /docs/\nAllow: /docs/public/\n", "/docs/public/a", ""),
    ("a search-engine-only site", b"User-agent: Googlebot\nAllow: /\n\nUser-agent: *\nDisallow: /\n", "/a", "optout_robots"),
    ("another crawler's ban is not ours", b"User-agent: Googlebot\nDisallow: /\n", "/a", ""),
    ("a token that is not a crawler", b"User-agent: Google-Extended\nDisallow: /\n", "/a", "optout_robots"),
    ("no robots.txt (404)", 404, "/a", ""),
    ("forbidden robots.txt (403): unavailable, RFC 9309", 403, "/a", ""),
    ("too many requests (429): unreachable, as Google", 429, "/a", "optout_robots"),
    ("server error (503)", 503, "/a", "optout_robots"),
    ("no answer at all", None, "/a", "optout_robots"),
    ("a redirect whose target is unknown", 301, "/a", ""),
    ("a 2xx with no body", 200, "/a", ""),
    ("rules beyond 500 KiB are ignored", PADDING + b"User-agent: *\nDisallow: /\n", "/a", ""),
    ("rules within 500 KiB count", b"User-agent: *\nDisallow: /\n" + PADDING, "/a", "optout_robots"),
    ("garbage", b"\x00\xff<html>not robots</html>", "/a", ""),
]


@pytest.mark.parametrize(
    ("answer", "path", "reason"), [case[1:] for case in ROBOTS_CASES], ids=[case[0] for case in ROBOTS_CASES]
)
def test_robots_decisions(answer, path, reason):
    assert robots_verdict(SITE + path, answer, AGENTS).reason == reason


def test_robots_body_is_cut_at_a_line_within_500_kib_and_decoded():
    text = robots_body(PADDING + b"User-agent: *\n")
    assert len(text.encode()) <= ROBOTS_MAX_BYTES and text.endswith("\n")
    assert robots_body("\ufeffUser-agent: *") == "User-agent: *"


def test_the_own_agent_is_honoured_and_an_empty_list_honours_only_it():
    optouts = OptOuts(PolicyConfig(robots_agents=[]), own_agent="bitextflow/0.1 (+https://example.org)")
    optouts.learn(SiteFiles(SITE, b"User-agent: bitextflow\nDisallow: /mine\n\nUser-agent: GPTBot\nDisallow: /\n"))
    assert optouts.site_verdict(SITE + "/mine").reason == "optout_robots"
    assert optouts.site_verdict(SITE + "/other").allowed, "GPTBot is not honoured with robots_agents: []"


def test_a_site_never_learnt_is_set_aside_and_origins_are_normalised():
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles("https://example.org", b""))
    assert optouts.site_verdict("HTTPS://Example.ORG:443/a").allowed
    assert optouts.site_verdict("https://example.org:8443/a").reason == "optout_robots"
    assert origin_of("http://user:pw@Example.com:80/x?y") == "http://example.com"
    assert origin_of("http://[::1]:8080/") == "http://[::1]:8080"


TDMREP_FILE = b"""[
  {"location": "/free/", "tdm-reservation": 0},
  {"location": "/", "tdm-reservation": 1, "tdm-policy": "https://example.org/policy.json"}
]"""
TDMREP_CASES = [
    # (case, tdmrep.json answer, path, headers, page head, the reason it is set aside or "")
    ("the file reserves everything", b'[{"location": "/", "tdm-reservation": 1}]', "/a", [], "", "optout_tdmrep"),
    ("the first matching rule wins", TDMREP_FILE, "/free/a", [], "", ""),
    ("a later rule applies when the first does not match", TDMREP_FILE, "/other", [], "", "optout_tdmrep"),
    ("wildcard and end anchor", b'[{"location": "/img/*.jpg$", "tdm-reservation": 1}]', "/img/x/a.jpg", [], "", "optout_tdmrep"),
    ("the anchor ends the match", b'[{"location": "/img/*.jpg$", "tdm-reservation": 1}]', "/img/a.jpg.html", [], "", ""),
    (
        "encoded unreserved characters match",
        b'[{"location": "/~ana/", "tdm-reservation": 1}]',
        "/%7Eana/page",
        [],
        "",
        "optout_tdmrep",
    ),
    ("locations are case-sensitive", b'[{"location": "/Docs/", "tdm-reservation": 1}]', "/docs/a", [], "", ""),
    ("no file (404)", 404, "/a", [], "", ""),
    ("not JSON", b"<html>oops</html>", "/a", [], "", ""),
    ("an object, not an array", b'{"location": "/", "tdm-reservation": 1}', "/a", [], "", ""),
    ("a value that is a protocol error is unset", b'[{"location": "/", "tdm-reservation": 2}]', "/a", [], "", ""),
    ("a string value", b'[{"location": "/", "tdm-reservation": "1"}]', "/a", [], "", "optout_tdmrep"),
    (
        "a broken rule is skipped, not the file",
        b'[{"tdm-reservation": 0}, {"location": "/", "tdm-reservation": 1}]',
        "/a",
        [],
        "",
        "optout_tdmrep",
    ),
    ("the header", None, "/a", [("TDM-Reservation", " 1 ")], "", "optout_tdmrep"),
    ("a header that is a protocol error", None, "/a", [("tdm-reservation", "yes")], "", ""),
    ("the meta", None, "/a", [], '<meta name="TDM-Reservation" content="1">', "optout_tdmrep"),
    ("the meta supersedes the header", None, "/a", [("tdm-reservation", "1")], '<meta name="tdm-reservation" content="0">', ""),
    ("the header supersedes the file", b'[{"location": "/", "tdm-reservation": 1}]', "/a", [("tdm-reservation", "0")], "", ""),
    (
        "the meta supersedes the file",
        b'[{"location": "/", "tdm-reservation": 0}]',
        "/a",
        [],
        '<meta name="tdm-reservation" content="1">',
        "optout_tdmrep",
    ),
]


@pytest.mark.parametrize(
    ("tdmrep", "path", "headers", "head", "reason"), [case[1:] for case in TDMREP_CASES], ids=[case[0] for case in TDMREP_CASES]
)
def test_tdmrep_decisions_of_an_ingested_page(tdmrep, path, headers, head, reason):
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles(SITE, 404, tdmrep))
    url = SITE + path
    assert optouts.verdict(url, optouts.read(url, headers, page(head))).reason == reason


def test_the_crawl_does_not_fetch_what_the_site_file_reserves_and_tdmrep_can_be_turned_off():
    optouts = OptOuts(PolicyConfig())
    optouts.learn(SiteFiles(SITE, 404, TDMREP_FILE))
    assert optouts.site_verdict(SITE + "/other").reason == "optout_tdmrep"
    assert optouts.site_verdict(SITE + "/free/a").allowed
    ignoring = OptOuts(PolicyConfig(honour_tdmrep=False))
    ignoring.learn(SiteFiles(SITE, 404, TDMREP_FILE))
    url = SITE + "/other"
    assert ignoring.verdict(url, ignoring.read(url, [("tdm-reservation", "1")], page(""))).allowed
    assert TdmRepFile.of_answer(b"[]").reservation(url) is None


NOAI_CASES = [
    # (case, headers, page head, page body, the reason it is set aside or "")
    ("robots meta", [], '<meta name="robots" content="noai">', "", "optout_noai"),
    ("robots meta, mixed case and spaces", [], '<meta name="Robots" content=" NoAI ,  NoImageAI ">', "", "optout_noai"),
    ("space-separated directives", [], '<meta name="robots" content="noai noimageai">', "", "optout_noai"),
    ("noimageai reserves images only", [], '<meta name="robots" content="noimageai">', "", ""),
    ("a meta named after an honoured agent", [], '<meta name="GPTBot" content="noai">', "", "optout_noai"),
    ("a meta named after another crawler", [], '<meta name="googlebot" content="noai">', "", ""),
    ("a meta in the body", [], "", '<meta name="robots" content="noai">', "optout_noai"),
    ("the word in the text only", [], "", "<p>Our noai policy: see robots.</p>", ""),
    ("X-Robots-Tag", [("X-Robots-Tag", "noai")], "", "", "optout_noai"),
    ("X-Robots-Tag among others", [("x-robots-tag", "noindex, NOAI")], "", "", "optout_noai"),
    ("X-Robots-Tag for an honoured agent", [("X-Robots-Tag", "GPTBot: noai")], "", "", "optout_noai"),
    ("X-Robots-Tag for another crawler", [("X-Robots-Tag", "googlebot: noai")], "", "", ""),
    ("X-Robots-Tag with a valued directive", [("X-Robots-Tag", "max-snippet: 20, noai")], "", "", "optout_noai"),
]


@pytest.mark.parametrize(
    ("headers", "head", "body", "reason"), [case[1:] for case in NOAI_CASES], ids=[case[0] for case in NOAI_CASES]
)
def test_noai_decisions(headers, head, body, reason):
    optouts = OptOuts(PolicyConfig())
    signals = optouts.read(SITE + "/a", headers, page(head, body))
    assert optouts.page_verdict(SITE + "/a", signals).reason == reason
    assert OptOuts(PolicyConfig(honour_noai=False)).page_verdict(SITE + "/a", signals).allowed


MT_CASES = [
    # (case, URL, headers, the page's <html> attributes, head, body, the signal or "")
    ("x-mtfrom on html", SITE, [], 'lang="es-x-mtfrom-en"', "", "", "lang-x-mtfrom"),
    ("x-mtfrom on body, region and case", SITE, [], "", "", '<body lang="zh-CN-X-MTFROM-EN"><p>x</p></body>', "lang-x-mtfrom"),
    ("x-mtfrom in xml:lang", SITE, [], 'xml:lang="de-x-mtfrom-fr"', "", "", "lang-x-mtfrom"),
    ("x-mtfrom in the Content-Language header", SITE, [("Content-Language", "fr, es-x-mtfrom-en")], "", "", "", "lang-x-mtfrom"),
    (
        "x-mtfrom in a content-language meta",
        SITE,
        [],
        "",
        '<meta http-equiv="Content-Language" content="es-x-mtfrom-en">',
        "",
        "lang-x-mtfrom",
    ),
    ("BCP 47 extension T with t0", SITE, [], 'lang="ja-t-de-t0-und"', "", "", "lang-t0"),
    ("extension T without t0 (transliteration)", SITE, [], 'lang="ru-t-ru-latn"', "", "", ""),
    ("a plain language tag", SITE, [], 'lang="es-ES"', "", "", ""),
    ("Google's translate.goog proxy", "https://example-org.translate.goog", [], "", "", "", "mt-proxy-url"),
    ("Google's older proxy", "https://translate.googleusercontent.com", [], "", "", "", "mt-proxy-url"),
    ("Google Translate's page wrapper", "https://translate.google.com/translate?u=x&sl=en", [], "", "", "", "mt-proxy-url"),
    ("Bing's wrapper", "https://www.translatetheweb.com", [], "", "", "", "mt-proxy-url"),
    ("a DOM translated by Google's widget", SITE, [], 'class="translated-ltr"', "", "", "google-translated-dom"),
    ("translation-stats meta", SITE, [], "", '<meta name="translation-stats" content="1">', "", "translation-stats-meta"),
    ("Weglot's script", SITE, [], "", '<script src="https://cdn.weglot.com/weglot.min.js"></script>', "", "weglot"),
    ("ConveyThis' element", SITE, [], "", "", '<div id="conveythis-wrapper"></div>', "conveythis"),
    ("GTranslate's wrapper", SITE, [], "", "", '<div class="gtranslate_wrapper"></div>', "gtranslate"),
    ("a generator meta naming GTranslate", SITE, [], "", '<meta name="generator" content="GTranslate 3.0">', "", "gtranslate"),
    (
        "Google Website Translator's script alone",
        SITE,
        [],
        "",
        '<script src="//translate.google.com/translate_a/element.js"></script>',
        "",
        "",
    ),
    (
        "a service named in the text or a link",
        SITE,
        [],
        "",
        "",
        '<p>We tried Weglot and <a href="https://gtranslate.io">GTranslate</a>.</p>',
        "",
    ),
    ("no signal", SITE, [], 'lang="en"', "<title>Plain</title>", "", ""),
]


@pytest.mark.parametrize(
    ("origin", "headers", "attributes", "head", "body", "signal"),
    [case[1:] for case in MT_CASES],
    ids=[case[0] for case in MT_CASES],
)
def test_machine_translation_signals(origin, headers, attributes, head, body, signal):
    html = f"<html {attributes}><head>{head}</head>{body or '<body><p>Text.</p></body>'}</html>".encode()
    assert read_page(origin + "/page.html", headers, html, AGENTS).machine_translation == signal


def test_a_page_without_any_signal_is_not_parsed_and_bad_markup_is_no_signal():
    assert read_page(SITE, [], b"\x00\xff<<<mtfrom>>>", AGENTS).machine_translation == ""
    assert read_page(SITE, [], b"", AGENTS) == read_page(SITE, [("Content-Type", "text/html")], page(""), AGENTS)


def page(head: str, body: str = "") -> bytes:
    return f"<html><head><title>A page</title>{head}</head><body>{body}<p>Text of the page.</p></body></html>".encode()


CAPTURE_CASES = [
    # (case, captured responses (url, status, headers, body), the origin asked for, its robots.txt answer)
    ("a plain capture", [("http://a.test/robots.txt", 200, [], b"User-agent: *")], "http://a.test", b"User-agent: *"),
    (
        "the first capture counts",
        [("http://a.test/robots.txt", 404, [], b""), ("http://a.test/robots.txt", 200, [], b"x")],
        "http://a.test",
        404,
    ),
    (
        "a redirect stands for its captured target",
        [
            ("http://a.test/robots.txt", 301, [("Location", "https://a.test/robots.txt")], b""),
            ("https://a.test/robots.txt", 200, [], b"rules"),
        ],
        "http://a.test",
        b"rules",
    ),
    (
        "a relative redirect",
        [
            ("http://a.test/robots.txt", 302, [("location", "//www.a.test/robots.txt")], b""),
            ("http://www.a.test/robots.txt", 503, [], b""),
        ],
        "http://a.test",
        503,
    ),
    (
        "a redirect whose target nobody captured",
        [("http://a.test/robots.txt", 301, [("Location", "https://a.test/robots.txt")], b"")],
        "http://a.test",
        301,
    ),
    (
        "a redirect elsewhere than a robots.txt",
        [("http://a.test/robots.txt", 301, [("Location", "/home")], b""), ("http://a.test/home", 200, [], b"")],
        "http://a.test",
        301,
    ),
    ("a query is not the file", [("http://a.test/robots.txt?x=1", 200, [], b"x")], "http://a.test", "not captured"),
    ("another origin's file", [("http://b.test/robots.txt", 200, [], b"x")], "http://a.test", "not captured"),
]


@pytest.mark.parametrize(
    ("responses", "origin", "answer"), [case[1:] for case in CAPTURE_CASES], ids=[case[0] for case in CAPTURE_CASES]
)
def test_captured_robots_txt(responses, origin, answer):
    captures = SiteFileCaptures()
    for url, status, headers, body in responses:
        captures.add(url, status, headers, body)
    found = captures.site_files([origin])
    assert (found[origin].robots if origin in found else "not captured") == answer


def test_site_files_round_trip_through_json_and_keep_their_verdicts():
    captures = SiteFileCaptures()
    captures.add("https://a.test/robots.txt", 200, [], b"User-agent: *\nDisallow: /x\n")
    captures.add("https://a.test/.well-known/tdmrep.json", 200, [], b'[{"location": "/y", "tdm-reservation": 1}]')
    captures.add("https://a.test/page.html", 200, [], b"<p>a page</p>")
    assert len(captures) == 1
    for files in (*captures.site_files().values(), SiteFiles("https://a.test", None), SiteFiles("https://a.test", 404, 500)):
        copy = SiteFiles.from_json(json.loads(json.dumps(files.to_json())))
        judges = []
        for known in (files, copy):
            optouts = OptOuts(PolicyConfig())
            optouts.learn(known)
            judges.append([optouts.site_verdict(f"https://a.test{path}").reason for path in ("/x", "/y", "/z")])
        assert judges[0] == judges[1], files


def test_every_machine_translation_signal_has_a_case():
    assert {case[-1] for case in MT_CASES} - {""} == set(MT_SIGNALS)
