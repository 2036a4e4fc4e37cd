"""A generated Common Crawl: WARC files of many small sites and a columnar index over them with Common Crawl's
schema and layout, so that a run from an index (``crawl.index``), its tests and its demo work offline.

Into one bucket (``commoncrawl`` by default, a stand-in for Common Crawl's), per crawl:

- ``crawl-data/<crawl>/segments/<segment>/warc/<crawl>-<n>.warc.gz``: the page captures, each record its own gzip
  member as in Common Crawl's files, shuffled across files so that a file holds records of many sites;
- ``crawl-data/<crawl>/segments/<segment>/robotstxt/...warc.gz``: a robots.txt capture per host, its rules in turn
  a ``Disallow`` of a path no page has, GPTBot's opt-out of the whole host, ``Disallow: /es/`` for every agent, and a
  404 (every seventh host);
- ``cc-index/table/cc-main/warc/crawl=<crawl>/subset={warc,robotstxt}/part-NNNNN.c000.gz.parquet``: one row per
  capture with the columns of Common Crawl's cc-index-table that bitextflow reads (``url_surtkey``, ``url``,
  ``url_host_name``, ``url_host_registered_domain``, ``content_languages``, ``content_mime_detected``,
  ``fetch_status``, ``warc_filename``, ``warc_record_offset``, ``warc_record_length``), sorted by SURT URL and cut
  into files and row groups as Common Crawl's are.

Site k (``site0007.org``: a registered domain on a real public suffix, so that every host of a site is one site
partition; nothing is ever fetched from these names) is of kind ``KINDS[k % 10]``: bilingual (English pages and
their Spanish translations, on ``www.``, an English page on ``blog.``; one bilingual kind marks its Spanish pages
``spa,eng``), English only, Spanish only, English and French, and English sites whose Spanish captures do not count:
too few, secondary (``eng,spa``), or refused by the status and MIME filters (404s, PDFs). Page texts are the
parallel sentences of :mod:`bitextflow_local.localsite.warcs`, so a run aligns real translations. A bilingual site
also has a translated pair of pages that opt themselves out: the English one by ``<meta name="tdm-reservation"
content="1">``, the Spanish one by an ``X-Robots-Tag: noai`` header. A second crawl captures a third of the pages
again (a URL is fetched once). The same arguments give the same bytes.

:meth:`GeneratedIndex.selected` is what an en-es run fetches under the default policy, and
:meth:`GeneratedIndex.set_aside` what it sets aside, by reason: the truth, by construction, that the tests compare a run
with.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.parquet as pq

from bitextflow.storage import ObjectStore
from bitextflow_local.localsite.warcs import WarcPage, parallel_text, warc_record

BUCKET = "commoncrawl"
TABLE_PREFIX = "cc-index/table/cc-main/warc/"
CRAWLS = ("CC-MAIN-2099-01",)
#: What each site is, by its number modulo 10: the bilingual kinds are selected by an en-es run.
KINDS = (
    "bilingual",
    "english",
    "english-few-spanish",
    "english",
    "spanish",
    "bilingual-mixed",
    "english-spanish-filtered",
    "english-secondary-spanish",
    "english-french",
    "english",
)
BILINGUAL_KINDS = frozenset({"bilingual", "bilingual-mixed"})
PAGES = 6  # pages per language of a site (translated pairs on a bilingual one)
#: The selection settings under which exactly the bilingual sites qualify: 6 captures a language on them, at most
#: 2 counted Spanish captures on the others.
MIN_CAPTURES = 3
_SEGMENT = "1700000000000.00"
_FRENCH = "Le paquet {n} installe la configuration du réseau du système, version {n}."
#: The robots.txt rules hosts take in turn, each with the path prefix it refuses to the agents a corpus honours by
#: default (``*`` and GPTBot among them); a 404 refuses nothing.
_ROBOTS = (
    (b"User-agent: *\nDisallow: /private/\n", "/private/"),
    (b"User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nAllow: /\n", "/"),
    (b"User-agent: *\nDisallow: /es/\n", "/es/"),
)
_RESERVED_META = '<meta name="tdm-reservation" content="1">'


@dataclass(frozen=True)
class Capture:
    """One row of the index: a capture and where its record lies."""

    url: str
    host: str
    domain: str
    content_languages: str
    mime: str
    status: int
    subset: str = "warc"
    body: bytes | None = field(default=None, repr=False)
    lang: str = "en"
    text: str = ""
    #: more HTTP headers of the response, and markup in the page's <head>
    headers: tuple[tuple[str, str], ...] = ()
    head: str = ""
    #: the reason the page opts itself out by its headers or markup, "" when it does not
    declares: str = ""
    #: of a robots.txt: the path prefix it refuses to the agents honoured by default, "" when none
    refuses: str = ""

    @property
    def surt(self) -> str:
        path = self.url.split(self.host, 1)[1]
        return ",".join(reversed(self.host.split("."))) + ")" + path


@dataclass(frozen=True)
class Located:
    """A capture of one crawl with its record's place: the index row."""

    capture: Capture
    crawl: str
    warc_filename: str
    offset: int
    length: int


@dataclass(frozen=True)
class GeneratedIndex:
    """What :func:`build_index` wrote: where, and the truth the tests and benchmarks measure a run against."""

    bucket: str
    crawls: tuple[str, ...]
    located: tuple[Located, ...]
    warc_bytes: dict[str, int]
    sites: int

    @property
    def table(self) -> str:
        return f"s3://{self.bucket}/{TABLE_PREFIX}"

    @property
    def warc_root(self) -> str:
        return f"s3://{self.bucket}/"

    @property
    def bilingual_sites(self) -> set[str]:
        return {site_domain(k) for k in range(self.sites) if KINDS[k % len(KINDS)] in BILINGUAL_KINDS}

    @property
    def index_rows(self) -> int:
        return sum(1 for row in self.located if row.capture.subset == "warc")

    def refused(self, host: str) -> str:
        """The path prefix the host's robots.txt refuses to the agents honoured by default, "" when none."""
        return next(row.capture.refuses for row in self.located if row.capture.subset == "robotstxt" and row.capture.host == host)

    def _admitted(self) -> Iterator[tuple[Located, str]]:
        """The captures an en-es run with :data:`MIN_CAPTURES` admits: the bilingual sites' pages in English or Spanish
        (status 200, HTML), each URL once, from the first crawl that has it; each with the reason the default policy
        sets it aside ("" when it does not): robots.txt first, then what the page says itself."""
        seen: set[str] = set()
        refused = {row.capture.host: row.capture.refuses for row in self.located if row.capture.subset == "robotstxt"}
        for row in self.located:
            capture = row.capture
            if (
                capture.subset == "warc"
                and capture.domain in self.bilingual_sites
                and capture.status == 200
                and capture.mime == "text/html"
                and capture.content_languages.split(",")[0] in ("eng", "spa")
                and capture.url not in seen
            ):
                seen.add(capture.url)
                prefix = refused[capture.host]
                yield row, "optout_robots" if prefix and urlsplit(capture.url).path.startswith(prefix) else capture.declares

    def selected(self) -> list[Located]:
        """The captures an en-es run fetches into its WARC shards: those it admits and the default policy keeps."""
        return [row for row, reason in self._admitted() if not reason]

    def set_aside(self) -> dict[str, str]:
        """URL -> reason of the captures an en-es run admits and the default policy sets aside."""
        return {row.capture.url: reason for row, reason in self._admitted() if reason}

    def ranged_reads(self) -> list[Located]:
        """Every record an en-es run reads by byte range: the robots.txt captures of the bilingual sites' hosts (every
        crawl's), and the pages their robots.txt allows (including those that then set themselves aside)."""
        robots = [row for row in self.located if row.capture.subset == "robotstxt" and row.capture.domain in self.bilingual_sites]
        return robots + [row for row, reason in self._admitted() if reason != "optout_robots"]

    def overrides(self) -> dict[str, object]:
        """The pair-config settings that read this index (``--set`` of ``bitextflow run``)."""
        return {
            "crawl.seeds": [],
            "crawl.index": {
                "table": self.table,
                "warc_root": self.warc_root,
                "crawls": list(self.crawls),
                "min_captures": MIN_CAPTURES,
            },
        }


def site_domain(k: int) -> str:
    return f"site{k:04d}.org"


def site_captures(k: int) -> Iterator[Capture]:
    """The page captures of site ``k`` (see the module docstring for its kind)."""
    kind = KINDS[k % len(KINDS)]
    domain = site_domain(k)
    www = f"www.{domain}"

    def page(lang: str, n: int, languages: str, status: int = 200, mime: str = "text/html", host: str = www, **optout) -> Capture:
        pair = k * 100 + n
        text = {"en": parallel_text(pair, 0), "es": parallel_text(pair, 1), "fr": _FRENCH.format(n=pair)}[lang]
        url = f"http://{host}/{lang}/page-{n}.html"
        return Capture(url, host, domain, languages, mime, status, lang=lang, text=text, **optout)

    english = 0 if kind == "spanish" else PAGES
    for n in range(english):
        yield page("en", n, "eng")
    if kind in BILINGUAL_KINDS:
        yield page("en", PAGES, "eng", host=f"blog.{domain}")
        for n in range(PAGES):
            yield page("es", n, "spa,eng" if kind == "bilingual-mixed" else "spa")
        yield page("es", PAGES, "spa", status=404)
        yield page("en", PAGES + 1, "eng", head=_RESERVED_META, declares="optout_tdmrep")
        yield page("es", PAGES + 1, "spa", headers=(("X-Robots-Tag", "noai"),), declares="optout_noai")
    elif kind == "spanish":
        for n in range(PAGES):
            yield page("es", n, "spa")
    elif kind == "english-few-spanish":
        for n in range(MIN_CAPTURES - 1):
            yield page("es", n, "spa")
    elif kind == "english-spanish-filtered":
        for n in range(PAGES - 1):
            yield page("es", n, "spa", status=404)
        yield page("es", PAGES - 1, "spa", mime="application/pdf")
    elif kind == "english-secondary-spanish":
        for n in range(PAGES):
            yield page("es", n, "eng,spa")
    elif kind == "english-french":
        for n in range(PAGES):
            yield page("fr", n, "fra")


def robots_captures(captures: Sequence[Capture]) -> Iterator[Capture]:
    """A robots.txt capture per host: three kinds of rules in turn, and a 404 for every seventh host."""
    hosts = sorted({capture.host: capture.domain for capture in captures}.items())
    for number, (host, domain) in enumerate(hosts):
        body, refuses = (b"Not found\n", "") if number % 7 == 6 else _ROBOTS[number % len(_ROBOTS)]
        status = 404 if number % 7 == 6 else 200
        yield Capture(f"http://{host}/robots.txt", host, domain, "", "text/plain", status, "robotstxt", body, refuses=refuses)


def build_index(
    store: ObjectStore,
    sites: int = 40,
    crawls: Sequence[str] = CRAWLS,
    records_per_warc: int = 40,
    index_files: int = 4,
    rows_per_group: int = 64,
    seed: int = 0,
) -> GeneratedIndex:
    """Write the WARC files and the index of ``sites`` sites for each of ``crawls`` into ``store``'s bucket."""
    pages = [capture for k in range(sites) for capture in site_captures(k)]
    robots = list(robots_captures(pages))
    located: list[Located] = []
    warc_bytes: dict[str, int] = {}
    for number, crawl in enumerate(crawls):
        captured = pages if number == 0 else [c for c in pages if _digest(f"{crawl}:{c.url}") % 3 == 0]
        for subset, captures in (("warc", captured), ("robotstxt", robots)):
            rows = write_subset(store, crawl, subset, captures, records_per_warc, index_files, rows_per_group, seed)
            for row in rows:
                warc_bytes[row.warc_filename] = max(warc_bytes.get(row.warc_filename, 0), row.offset + row.length)
            located.extend(rows)
    return GeneratedIndex(store.bucket, tuple(crawls), tuple(located), warc_bytes, sites)


def write_subset(
    store: ObjectStore,
    crawl: str,
    subset: str,
    captures: Sequence[Capture],
    records_per_warc: int = 40,
    index_files: int = 1,
    rows_per_group: int = 64,
    seed: int = 0,
) -> list[Located]:
    """The WARC files and index files of one subset (``warc``, ``robotstxt``) of a crawl, holding ``captures``."""
    rows = _write_warcs(store, crawl, subset, captures, records_per_warc, random.Random(f"{seed}:{crawl}:{subset}"))
    _write_index(store, crawl, subset, rows, index_files, rows_per_group)
    return rows


def _write_warcs(
    store: ObjectStore, crawl: str, subset: str, captures: Sequence[Capture], per_file: int, rng: random.Random
) -> list[Located]:
    order = list(captures)
    rng.shuffle(order)
    rows = []
    for start in range(0, len(order), per_file):
        name = f"crawl-data/{crawl}/segments/{_SEGMENT}/{subset}/{crawl}-{start // per_file:05d}.warc.gz"
        buffer = io.BytesIO()
        for capture in order[start : start + per_file]:
            status = "200 OK" if capture.status == 200 else f"{capture.status} Not Found"
            content_type = "text/plain" if capture.subset == "robotstxt" else f"{capture.mime}; charset=utf-8"
            page = WarcPage(capture.url, capture.lang, capture.text)
            record = warc_record(page, status, content_type, capture.body, capture.headers, capture.head)
            rows.append(Located(capture, crawl, name, buffer.tell(), len(record)))
            buffer.write(record)
        store.put_bytes(name, buffer.getvalue(), "application/warc")
    return rows


def _write_index(store: ObjectStore, crawl: str, subset: str, rows: Sequence[Located], files: int, rows_per_group: int) -> None:
    ordered = sorted(rows, key=lambda row: row.capture.surt)
    table = pa.table(
        {
            "url_surtkey": [row.capture.surt for row in ordered],
            "url": [row.capture.url for row in ordered],
            "url_host_name": [row.capture.host for row in ordered],
            "url_host_registered_domain": [row.capture.domain for row in ordered],
            "content_languages": [row.capture.content_languages or None for row in ordered],
            "content_mime_detected": [row.capture.mime for row in ordered],
            "fetch_status": pa.array([row.capture.status for row in ordered], pa.int16()),
            "warc_filename": [row.warc_filename for row in ordered],
            "warc_record_offset": pa.array([row.offset for row in ordered], pa.int32()),
            "warc_record_length": pa.array([row.length for row in ordered], pa.int32()),
        }
    )
    size = -(-table.num_rows // files)
    for number in range(files):
        buffer = io.BytesIO()
        pq.write_table(table.slice(number * size, size), buffer, row_group_size=rows_per_group, compression="gzip")
        key = f"{TABLE_PREFIX}crawl={crawl}/subset={subset}/part-{number:05d}.c000.gz.parquet"
        store.put_bytes(key, buffer.getvalue(), "application/vnd.apache.parquet")


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha1(text.encode(), usedforsecurity=False).digest()[:8], "big")
