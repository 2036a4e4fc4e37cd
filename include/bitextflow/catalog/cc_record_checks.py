"""What a record fetched by its Common Crawl index row holds, read before its page is kept: the site files of the
robotstxt subset (:func:`captured_site_files`), a page's own opt-out (:func:`declared_optout`), and whether the record
is the row's page at all (:func:`record_verdict`: an index row is remote data, docs/security.md)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from bitextflow.counts import StageCounts
from bitextflow.extract.documents import PAGE_TYPES
from bitextflow.extract.warc import iter_responses
from bitextflow.policy import OptOuts
from bitextflow.policy.captures import SiteFileCaptures
from bitextflow.policy.robots import ROBOTS_MAX_BYTES


def captured_site_files(
    captures: Sequence[Mapping[str, Any]],
    records: Sequence[bytes | None],
    crawls: Sequence[str],
    counts: StageCounts | None = None,
) -> SiteFileCaptures:
    """The site files of the robotstxt subset: :data:`bitextflow.catalog.ccindex.ROBOTS` rows with their fetched records (None: not found). An
    origin's robots.txt is its capture in the first crawl of ``crawls`` that holds one, the first in index order
    there (a URL is fetched from the first crawl listed too); a redirect stands for its target's capture
    (:class:`SiteFileCaptures`). A record that does not parse is no capture, nor one holding a response whose
    ``WARC-Target-URI`` is not its row's URL. ``counts`` gets each capture: kept, or dropped by reason."""
    counts = counts if counts is not None else StageCounts("robots_captures")
    rank = {crawl: position for position, crawl in enumerate(crawls)}
    found = SiteFileCaptures()
    unparsed = StageCounts("robots_captures")  # what the origins' robots.txt cannot come from is no page's count
    for capture, record in sorted(zip(captures, records, strict=True), key=lambda pair: rank[pair[0]["crawl"]]):
        counts.seen()
        if record is None:
            counts.drop("warc_missing")
            continue
        responses = list(iter_responses(io.BytesIO(record), unparsed, ROBOTS_MAX_BYTES))
        if any(response.url != capture["url"] for response in responses):
            counts.drop("record_url_mismatch")
            continue
        counts.keep()
        for response in responses:
            found.add(response.url, response.status, response.headers, response.body)
    return found


def declared_optout(optouts: OptOuts, record: bytes, max_page_bytes: int) -> str | None:
    """The reason a fetched record's page opts itself out (a TDMRep reservation in its header or ``<meta>``, a
    ``noai`` directive: :meth:`OptOuts.page_verdict`), else None. Read as extract reads a page: a 200 response of
    an HTML type; any other record, or one that does not parse, is left to extract, which counts it."""
    response = next(iter_responses(io.BytesIO(record), StageCounts("declared_optout"), max_page_bytes), None)
    if response is None or response.status != 200 or response.mime not in PAGE_TYPES:
        return None
    return optouts.page_verdict(response.url, optouts.read(response.url, response.headers, response.body)).reason or None


def record_verdict(optouts: OptOuts, record: bytes, url: str, max_page_bytes: int) -> str | None:
    """The reason a fetched record is set aside, else None: it holds a response whose ``WARC-Target-URI`` is not
    ``url``, its index row's (``record_url_mismatch``: the row points at another page's record, or its range spans
    other records), or its page opts itself out (:func:`declared_optout`)."""
    first = None
    for response in iter_responses(io.BytesIO(record), StageCounts("record_verdict"), max_page_bytes):
        if response.url != url:
            return "record_url_mismatch"
        first = first or response
    if first is None or first.status != 200 or first.mime not in PAGE_TYPES:
        return None
    return optouts.page_verdict(first.url, optouts.read(first.url, first.headers, first.body)).reason or None
