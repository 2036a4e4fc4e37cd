"""Property-based fuzzing: hostile inputs through the crawler's decoding and link extraction, the site files a remote
host serves (robots.txt, ``/.well-known/tdmrep.json``, sitemaps: generated deep, long and repetitive) and the extract
stage's document builder (hypothesis, derandomised so every run sees the same inputs).

How many inputs is the hypothesis profile's ``max_examples`` (tests/conftest.py): 2,500 in ``make test`` (profile
``ci``), 10,000 in ``make fuzz`` (profile ``fuzz``), shared among the targets as :data:`SHARES` says. Every target must
come back without an exception, and every input it refuses must be counted under a named reason: the extract stage's
catch-all (``extraction_error``, an exception nobody foresaw) must never be taken. The examples each test ran are
checked against its quota, so the inputs are real. The site-file targets get fewer inputs than the page targets (4%
each: 100 in ``ci``, 400 in ``fuzz``): each is up to a few hundred KB, and each must be read within a CPU bound
(:data:`SITE_FILE_CPU_S`), as the crawl's event loop reads it.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections import Counter

import webencodings
from hypothesis import given, settings
from hypothesis import strategies as st

from bitextflow.config import ExtractConfig
from bitextflow.counts import StageCounts
from bitextflow.crawl.fetcher import _Decoder, _Refused
from bitextflow.crawl.sitemaps import MAX_URLS, parse_sitemap
from bitextflow.crawl.urls import host_of, normalise_url, parse_html, predicted_language
from bitextflow.extract.documents import iter_documents
from bitextflow.policy.robots import RobotsFile
from bitextflow.policy.tdmrep import TdmRepFile
from tests.support import cpu_clock

RAN: Counter[str] = Counter()
REFUSED: Counter[str] = Counter()  # by named reason, over every input of the module (printed by the last test)
SHARES = {"pages": 0.27, "urls": 0.27, "bodies": 0.13, "warcs": 0.21, "robots": 0.04, "tdmrep": 0.04, "sitemaps": 0.04}
INPUTS = settings.default.max_examples  # the loaded profile's
QUOTAS = {name: round(share * INPUTS) for name, share in SHARES.items()}


def _settings(name: str) -> settings:
    """The loaded profile's settings (derandomised, no deadline) with the target's quota of inputs."""
    return settings(max_examples=QUOTAS[name])


# -- the pieces hostile input is made of ------------------------------------------------------------------
HOSTILE_LABELS = ["undefined", "punycode", "utf-7", "unicode_escape", "raw_unicode_escape", "rot13", "idna", "hex",
                  "base64", "zlib", "bz2", "uu", "x-user-defined", "replacement", "utf-16", "", " ", "utf8\0", "é"]  # fmt: skip
charsets = st.one_of(st.sampled_from(sorted(webencodings.LABELS)), st.sampled_from(HOSTILE_LABELS), st.text(max_size=12))
words = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
hosts = st.one_of(
    st.sampled_from(
        [
            "example.com",
            "EXAMPLE.com.",
            "127.0.0.1",
            "[::1]",
            "[fe80::1%25eth0]",
            "xn--bcher-kva.de",
            "bücher.de",
            "a..b",
            ".",
            "-x-.org",
            "169.254.169.254",
            "[2002:7f00:1::]",
            "0x7f.1",
            "例え.テスト",
        ]
    ),  # fmt: skip
    st.from_regex(r"[a-z0-9.\-]{1,20}", fullmatch=True),
)
urls = st.builds(
    lambda scheme, user, host, port, path, query, fragment: f"{scheme}{user}{host}{port}{path}{query}{fragment}",
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "javascript:", "//", "", "mailto:", "data:text/html,"]),
    st.sampled_from(["", "user@", "user:pw@", "@", "a@b@", "%40@"]),
    hosts,
    st.sampled_from(["", ":80", ":443", ":8080", ":0", ":99999", ":x", ":"]),
    st.one_of(
        st.sampled_from(["", "/", "/a/../b", "/./.", "/%2e%2e/", "/es/index.html", "/ü ber", "\\evil"]),
        words.map(lambda w: "/" + w),
    ),
    st.sampled_from(["", "?", "?lang=es", "?utm_source=x&b=2&a=1", "?a=%zz"]),
    st.sampled_from(["", "#", "#top"]),
)
fragments = st.one_of(
    words,
    urls.map(lambda url: f'<a href="{url}">x</a>'),
    st.tuples(urls, words, st.sampled_from(["", "es", "en-GB", "x" * 300])).map(
        lambda t: f'<a href="{t[0]}" hreflang="{t[2]}">{t[1]}</a>'
    ),
    charsets.map(lambda label: f'<meta charset="{label}">'),
    charsets.map(lambda label: f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'),
    charsets.map(lambda label: f'<?xml version="1.0" encoding="{label}"?>'),
    urls.map(lambda url: f'<base href="{url}">'),
    words.map(lambda text: f"<title>{text}</title>"),
    words.map(lambda text: f"<p>{text}"),
    st.sampled_from(
        [
            "<html>",
            "</body>",
            "<script>",
            "</p></p>",
            "<!--",
            "-->",
            "<![CDATA[",
            "<a",
            "<table><tr><td>",
            "&#0;",
            "&#x110000;",
            "&nbsp;",
            "\0",
            "\ufeff",
            "<svg><a href='/s'>s</a></svg>",
            "<noscript><a href=/n>n</a>",
        ]
    ),  # fmt: skip
)
html_texts = st.lists(fragments, max_size=30).map("".join)
page_bytes = st.one_of(
    st.tuples(html_texts, st.sampled_from(["utf-8", "latin-1", "utf-16", "cp1252", "shift_jis", "koi8-r"])).map(
        lambda t: t[0].encode(t[1], errors="replace")
    ),
    st.binary(max_size=2_000),
    st.tuples(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b""]), html_texts).map(lambda t: t[0] + t[1].encode()),
)
content_types = st.one_of(
    st.just(""),
    st.tuples(st.sampled_from(["text/html", "TEXT/HTML", "application/xhtml+xml", "text/plain", "image/png", ""]), charsets).map(
        lambda t: f"{t[0]}; charset={t[1]}"
    ),
    st.text(max_size=40),
)


# -- the crawler --------------------------------------------------------------------------------------------
@_settings("pages")
@given(page_bytes, content_types, urls)
def test_the_crawler_reads_any_page_and_only_ever_follows_canonical_http_links(body, content_type, base):
    RAN["pages"] += 1
    base_url = normalise_url(base) or "http://example.com/"
    page = parse_html(body, base_url, content_type)
    if page is None:
        REFUSED["page: nothing to parse"] += 1
    for link in [] if page is None else page.links:
        assert link.url.startswith(("http://", "https://")) and "@" not in host_of(link.url), link.url
        assert normalise_url(link.url) == link.url, "a followed link is canonical"


@_settings("urls")
@given(st.one_of(urls, st.text(max_size=80)), st.one_of(st.none(), urls))
def test_any_url_canonicalises_to_one_string_or_is_refused(url, base):
    RAN["urls"] += 1
    canonical = normalise_url(url, base)
    if canonical is None:
        REFUSED["url: not crawlable"] += 1
    else:
        assert normalise_url(canonical) == canonical, f"{url!r} -> {canonical!r} is not a fixed point"
        host = host_of(canonical)
        assert host and "@" not in host and not host.split(":")[0].endswith(".")
        predicted_language(canonical)


def _gzip_members(parts: list[bytes]) -> bytes:
    return b"".join(gzip.compress(part) for part in parts)


bodies = st.one_of(
    st.tuples(st.just("gzip"), st.lists(st.binary(max_size=300), min_size=1, max_size=4).map(_gzip_members)),
    st.tuples(st.sampled_from(["gzip", "x-gzip", "deflate"]), st.binary(max_size=600)),
    st.tuples(st.just("deflate"), st.binary(max_size=300).map(zlib.compress)),
    st.tuples(st.sampled_from(["br", "zstd", "compress", "identity", "", "gzip, gzip", "GZIP "]), st.binary(max_size=200)),
)


@_settings("bodies")
@given(bodies, st.integers(1, 64), st.integers(1, 2_000))
def test_any_encoded_body_decodes_within_its_limit_or_is_refused_by_name(encoded, chunk, limit):
    RAN["bodies"] += 1
    encoding, body = encoded
    try:
        decoder = _Decoder(encoding)
        out = b""
        for start in range(0, len(body), chunk):
            out += decoder.feed(body[start : start + chunk], limit + 1 - len(out))
            if len(out) > limit:
                break
    except _Refused as refused:
        assert refused.error in ("unsupported_encoding", "decoding_error")
        REFUSED[f"body: {refused.error}"] += 1
        return
    assert len(out) <= limit + 1


# -- the site files a remote host serves: deep, long, repetitive ------------------------------------------
#: Most CPU seconds one site file may take to read (and judge a handful of URLs by): the crawl reads it in its event loop.
SITE_FILE_CPU_S = 2.0
#: ... and a sitemap as much again per URL it lists (each canonicalised, with its alternates).
SITEMAP_URL_CPU_S = 60e-6
SITE_FILE_MAX_BYTES = 10_000_000
PROBE_PATHS = ["/", "/es/index.html", "/a/b/c?x=1", "/" + "a" * 2_000, "/" + "a/" * 500 + "$", "/%2A/%7E/%24"]


@st.composite
def repeated(draw, piece: st.SearchStrategy[str], most: int = 5_000) -> str:
    """``piece`` drawn once and repeated up to ``most`` times: the long lines and repetitive files a host may serve."""
    return draw(piece) * draw(st.one_of(st.integers(1, 8), st.integers(1, most)))


wildcards = st.sampled_from(["*", "*a", "a*", "$", "*$", "/*", "**", "?", "%2A", "%", "\\", "é", "\0", "/a"])
pattern_parts = st.one_of(wildcards, words, repeated(wildcards, 2_000))
patterns = st.lists(pattern_parts, max_size=6).map(lambda parts: "/" + "".join(parts))
robots_lines = st.one_of(
    st.tuples(st.sampled_from(["User-agent", "user-agent", "USER-AGENT", "User-Agent "]),
              st.one_of(st.sampled_from(["*", "CCBot", "GPTBot", "bitextflow", ""]), words)).map(lambda t: f"{t[0]}: {t[1]}"),
    st.tuples(st.sampled_from(["Disallow", "Allow", "disallow", "Noindex"]), patterns).map(lambda t: f"{t[0]}: {t[1]}"),
    st.sampled_from(["Crawl-delay: 10", "Crawl-delay: -1", "Crawl-delay: 1e308", "Request-rate: 1/0", "Sitemap: /s.xml",
                     "Host: example.com", "#", ":", "::::", "\ufeff", "\r", "Disallow:", "User-agent:"]),
    words,
)  # fmt: skip
robots_files = st.one_of(
    st.lists(robots_lines, max_size=40).map("\n".join),
    st.tuples(st.lists(robots_lines, min_size=1, max_size=6).map("\n".join), st.integers(1, 3_000)).map(
        lambda t: "\n".join([t[0]] * t[1])  # a group repeated: many agents, many rules
    ),
    repeated(robots_lines, 20_000),  # one line run on: a very long line
)


@_settings("robots")
@given(robots_files, st.sampled_from(["utf-8", "latin-1", "utf-16"]))
def test_any_robots_txt_is_read_within_its_bound_and_judges_every_url(text, charset):
    RAN["robots"] += 1
    with cpu_clock() as cpu:
        robots = RobotsFile.of_answer(text.encode(charset, errors="replace"))
        verdicts = [robots.verdict(f"http://example.com{path}", ["CCBot", "GPTBot"]) for path in PROBE_PATHS]
    assert cpu() < SITE_FILE_CPU_S, f"a robots.txt of {len(text)} characters took {cpu():.2f} s of CPU"
    assert {verdict.reason for verdict in verdicts} <= {"", "optout_robots"}
    REFUSED.update(f"robots: {verdict.reason}" for verdict in verdicts if verdict.reason)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), words, patterns),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(words, children, max_size=4)),
    max_leaves=12,
)
tdm_rules = st.fixed_dictionaries(
    {"location": st.one_of(patterns, words, st.integers()),
     "tdm-reservation": st.one_of(st.sampled_from([0, 1, "0", "1", 2, -1, None, True, 1.0]), json_values)},
    optional={"tdm-policy": st.one_of(words, json_values)},
).map(lambda rule: json.dumps(rule))  # fmt: skip
tdmrep_files = st.one_of(
    st.lists(tdm_rules, max_size=20).map(lambda rules: "[" + ",".join(rules) + "]"),
    st.tuples(tdm_rules, st.integers(1, 20_000)).map(lambda t: "[" + ",".join([t[0]] * t[1]) + "]"),  # long, repetitive
    st.tuples(st.sampled_from(["[", '{"a":', '[{"location":']), st.integers(1, 200_000)).map(
        lambda t: t[0] * t[1]  # deeper than any parser goes, unclosed
    ),
    st.integers(1, 100_000).map(lambda depth: "[" * depth + "]" * depth),  # deep and well formed
    json_values.map(lambda value: json.dumps(value)),
    st.text(max_size=200),
)


@_settings("tdmrep")
@given(tdmrep_files)
def test_any_tdmrep_json_is_read_within_its_bound_or_is_unreadable_by_name(text):
    RAN["tdmrep"] += 1
    with cpu_clock() as cpu:
        site = TdmRepFile.of_answer(text.encode("utf-8", errors="replace"))
        reservations = [site.reservation(f"http://example.com{path}") for path in PROBE_PATHS]
    assert cpu() < SITE_FILE_CPU_S, f"a tdmrep.json of {len(text)} characters took {cpu():.2f} s of CPU"
    assert site.unreadable in ("", "tdmrep_too_deep", "tdmrep_too_large")
    assert set(reservations) <= {None, 0, 1}
    if site.unreadable:
        REFUSED[f"tdmrep: {site.unreadable}"] += 1
        assert set(reservations) == {1}, "an unreadable file reserves every page"


locations = st.one_of(urls, words, repeated(st.sampled_from(["a\n", "&amp;", "&#x41;", "%41", "/a", " "]), 50_000))
url_entries = st.builds(
    lambda loc, links: f"<url><loc>{loc}</loc>{links}</url>",
    locations,
    st.lists(st.builds(lambda lang, href: f'<xhtml:link rel="alternate" hreflang="{lang}" href="{href}"/>',
                       st.sampled_from(["es", "en", "x-default", "", "e\"s"]), urls), max_size=3).map("".join),
)  # fmt: skip
URLSET = '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">'


@st.composite
def sitemap_bodies(draw) -> bytes:
    kind = draw(st.sampled_from(["urlset", "repeated", "deep", "index", "text", "doctype", "feed", "junk"]))
    if kind == "urlset":
        text = URLSET + "".join(draw(st.lists(url_entries, max_size=10))) + "</urlset>"
    elif kind == "repeated":  # many entries: past the protocol's 50,000 URLs
        text = URLSET + draw(url_entries) * draw(st.integers(1, 60_000)) + "</urlset>"
    elif kind == "deep":  # deeper than libxml2 goes
        depth = draw(st.integers(1, 20_000))
        name = draw(st.sampled_from(["url", "a", "loc", "sitemap"]))
        text = URLSET + f"<{name}>" * depth + draw(locations) + f"</{name}>" * draw(st.integers(0, depth)) + "</urlset>"
    elif kind == "index":
        children = draw(st.lists(locations, max_size=5))
        text = "<sitemapindex>" + "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in children) + "</sitemapindex>"
    elif kind == "text":
        text = "\n".join(draw(st.lists(st.one_of(urls, locations), max_size=50)))
    elif kind == "doctype":  # entity expansion: refused with its DOCTYPE
        text = '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY a "' + "x" * 1_000 + '"><!ENTITY b "&a;&a;&a;&a;">]>'
        text += URLSET.split("?>", 1)[1] + "<url><loc>http://example.com/&b;&b;</loc></url></urlset>"
    elif kind == "feed":
        text = "<rss><channel>" + "".join(f"<item><link>{loc}</link></item>" for loc in draw(st.lists(locations, max_size=5)))
        text += "</channel></rss>"
    else:
        return draw(st.binary(max_size=2_000))
    body = text.encode("utf-8", errors="replace")
    return gzip.compress(body, compresslevel=1) if draw(st.booleans()) else body


@_settings("sitemaps")
@given(sitemap_bodies())
def test_any_sitemap_is_read_within_its_bounds_or_is_refused_by_name(body):
    RAN["sitemaps"] += 1
    with cpu_clock() as cpu:
        sitemap = parse_sitemap(body, "http://example.com/sitemap.xml", SITE_FILE_MAX_BYTES)
    listed = len(sitemap.pages) + len(sitemap.sitemaps) + sitemap.over_limit
    # linear in what it lists: 50,000 repeated entries (420 KB) take 2.4 s, each URL canonicalised with its alternates
    assert cpu() < SITE_FILE_CPU_S + SITEMAP_URL_CPU_S * listed, (
        f"a sitemap of {len(body)} bytes ({listed} URLs) took {cpu():.2f} s"
    )
    assert sitemap.error in ("", "decoding_error", "not_a_sitemap")
    assert len(sitemap.pages) + len(sitemap.sitemaps) <= MAX_URLS
    for url in [page.url for page in sitemap.pages] + sitemap.sitemaps:
        assert url.startswith(("http://", "https://")) and normalise_url(url) == url, url
    if sitemap.error:
        REFUSED[f"sitemap: {sitemap.error}"] += 1
    if sitemap.over_limit:
        REFUSED["sitemap: url_limit"] += 1


# -- the extract stage's document builder over WARC records -------------------------------------------------
def _record(url: str, status: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    http = f"HTTP/1.1 {status}\r\n".encode() + b"".join(f"{k}: {v}\r\n".encode("utf-8", "replace") for k, v in headers)
    block = http + b"\r\n" + body
    warc = (
        "WARC/1.1\r\nWARC-Type: response\r\n"
        f"WARC-Target-URI: {url}\r\nWARC-Date: 2026-11-25T00:00:00Z\r\nWARC-Record-ID: <urn:uuid:{abs(hash(block))}>\r\n"
        f"Content-Type: application/http; msgtype=response\r\nContent-Length: {len(block)}\r\n\r\n"
    )
    return warc.encode("utf-8", "replace") + block + b"\r\n\r\n"


SENTENCES = [
    "The package manager resolves dependencies and downloads the archives from the mirrors.",
    "El gestor de paquetes resuelve las dependencias y descarga los archivos de las réplicas.",
    "Le gestionnaire de paquets résout les dépendances et télécharge les archives des miroirs.",
    "Die Paketverwaltung löst Abhängigkeiten auf und lädt die Archive von den Spiegeln herunter.",
]
# Pages with a main text, so that most records get past the status and type checks into extraction,
# language identification and sentence splitting, with hostile pieces mixed in.
article_texts = st.builds(
    lambda title, paragraphs, noise: f"<html><head><title>{title}</title>{noise}</head><body><main><h1>{title}</h1>"
    + "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs) + f"</main>{noise}</body></html>",
    words,
    st.lists(st.lists(st.one_of(st.sampled_from(SENTENCES), words), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=8),
    html_texts,
)  # fmt: skip
payloads = st.one_of(
    page_bytes,
    st.tuples(article_texts, st.sampled_from(["utf-8", "latin-1", "utf-16", "cp1252"])).map(
        lambda t: t[0].encode(t[1], errors="replace")
    ),
)
html_type = st.sampled_from(["text/html", "text/html; charset=utf-8", "application/xhtml+xml"]).map(
    lambda value: ("Content-Type", value)
)
records = st.builds(
    _record,
    st.one_of(urls, st.text(max_size=30)),
    st.sampled_from(["200 OK"] * 6 + ["200", "404 Not Found", "301 Moved", "999 X", "abc", "200 OK\r\nX: y"]),
    st.tuples(
        st.one_of(html_type, html_type, html_type, content_types.map(lambda value: ("Content-Type", value))),
        st.lists(
            st.one_of(
                content_types.map(lambda value: ("Content-Type", value)),
                st.tuples(
                    st.sampled_from(["Content-Encoding", "Transfer-Encoding", "Content-Length", "X-Junk"]), st.text(max_size=20)
                ),
            ),
            max_size=3,
        ),
    ).map(lambda headers: [headers[0], *headers[1]]),
    payloads,
)


@st.composite
def warc_files(draw) -> bytes:
    members = draw(st.lists(records, min_size=0, max_size=3))
    compressed = draw(st.booleans())
    data = b"".join(gzip.compress(member) if compressed else member for member in members)
    damage = draw(st.sampled_from(["none", "cut", "garbage", "flip"]))
    if data and damage == "cut":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif damage == "garbage":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=64)) + data[at:]
    elif data and damage == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    return data


@_settings("warcs")
@given(warc_files())
def test_the_document_builder_counts_every_refusal_by_name(data):
    RAN["warcs"] += 1
    counts = StageCounts("extract")
    documents = list(iter_documents(io.BytesIO(data), counts, ExtractConfig(plain_text=True)))
    summary = counts.to_dict()
    REFUSED.update(summary["dropped"])
    RAN["documents built"] += summary["kept"]
    assert "extraction_error" not in summary["dropped"], "a page took the catch-all: an exception nobody foresaw"
    assert summary["kept"] == len(documents)
    assert summary["in"] == summary["kept"] + sum(summary["dropped"].values())


def test_the_fuzzers_ran_every_input_of_the_profile():
    """Runs after the fuzz tests of this module (pytest keeps file order); skipped when run alone."""
    if not set(QUOTAS) <= set(RAN):
        import pytest

        pytest.skip("run the whole module to count its inputs")
    assert all(RAN[name] >= quota for name, quota in QUOTAS.items()), RAN
    assert sum(RAN[name] for name in QUOTAS) >= INPUTS
    print(f"fuzz inputs: {dict(RAN)}; refused by reason: {dict(REFUSED.most_common())}")
