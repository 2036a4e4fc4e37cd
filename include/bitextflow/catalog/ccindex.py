"""Common Crawl's columnar index as a run's source (``crawl.index``): the sites whose captures hold both languages
of the pair, which of their captures to fetch, and the fetch of one record by byte range.

The index is Common Crawl's ``cc-index-table`` (or any table with its columns and layout): Parquet files under
``<table>/crawl=<crawl>/subset=<subset>/``, one row per capture, with ``url``, ``url_host_registered_domain``,
``content_languages`` (CLD2's ISO 639-3 codes, most of the page first), ``content_mime_detected``,
``fetch_status`` and where the record lies: ``warc_filename``, ``warc_record_offset``, ``warc_record_length``.

Queries run where the index is, with Arrow's dataset scanner over S3 (:meth:`ObjectStore.arrow_filesystem`): it
reads the footer of a file, skips the row groups whose statistics rule the filter out, and fetches only the
column chunks of the projected columns, by coalesced ranged GETs. The site decision is a map-reduce: per index
file, each site's captures per language (:meth:`CrawlIndex.site_counts`); per site partition, the sums and the
rule (:func:`selected_sites`); per index file again, the captures of the selected sites (:meth:`CrawlIndex.records`).

A capture counts for a language when that language is its primary one (the first of ``content_languages``), as
in the language statistics Common Crawl publishes per crawl.

The opt-outs of the policy (:mod:`bitextflow.policy`) are applied as the crawl applies them: a site's verdict (its
robots.txt, from the crawl's ``robotstxt`` subset: :meth:`CrawlIndex.robots_captures`, :func:`captured_site_files`)
at the admission point before a record is fetched (:class:`Admission`), the page's own declarations (TDMRep,
``noai``) once its record is fetched (:func:`declared_optout`); a record set aside never reaches a WARC shard.

The index's rows are not trusted: a row whose ``warc_filename`` is not a plain relative ``.warc.gz`` key (``../``,
an absolute or empty segment, an escape), whose offset is negative or whose length is not positive or longer than
``crawl.max_body_bytes`` is dropped by reason (:func:`bitextflow.catalog.cc_locations.location_problem`) before any request (S3 answers a range it
cannot read, ``bytes=10-9``, with the whole object); a fetched record whose ``WARC-Target-URI`` is not the row's URL
is set aside (:func:`record_verdict`): a row could otherwise put another page, which its site opts out of, under an
admitted URL.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from bitextflow.catalog.cc_locations import LOCATION, located, location_problem
from bitextflow.catalog.warcs import warc_object
from bitextflow.config import MAX_BODY_BYTES, CommonCrawlIndex, PairConfig
from bitextflow.counts import StageCounts
from bitextflow.errors import MissingObjectError, StageError, StorageError
from bitextflow.hashing import SeenHashes
from bitextflow.policy import OptOuts
from bitextflow.storage import ObjectStore
from bitextflow.text.languages import three_letter_code
from bitextflow.text.urls import site_bucket, site_partition

log = logging.getLogger(__name__)

#: The one subset whose captures are pages (Common Crawl's others: ``robotstxt``, ``crawldiagnostics``).
PAGES_SUBSET = "warc"
#: The subset of every host's robots.txt captures (any status: a 404 or a redirect is an answer too).
ROBOTS_SUBSET = "robotstxt"
_CRAWL_OF_KEY = re.compile(r"(?:^|/)crawl=([^/]+)/")
_BATCH_ROWS = 65_536
# Partial site counts are merged whenever this many are held, so a task holds about one file's sites.
_PARTIALS_HELD = 16

#: Sites with their captures: all of them (after the MIME and status filters) and those whose primary language is
#: the pair's source or target; the largest of each in one crawl (a recapture in a later crawl is not a new page).
SITES = pa.schema(
    [
        ("partition", pa.int32()),
        ("domain", pa.string()),
        ("captures", pa.int64()),
        ("source", pa.int64()),
        ("target", pa.int64()),
    ]
)
#: Each site's captures in one index file (one crawl's); only sites with a capture in one of the two languages.
SITE_COUNTS = pa.schema([*SITES, ("crawl", pa.string())])
_COUNTED = ("captures", "source", "target")
#: The captures of the selected sites to fetch, in index order within each site partition.
RECORDS = pa.schema(
    [
        ("partition", pa.int32()),
        ("url", pa.string()),
        ("domain", pa.string()),
        ("language", pa.string()),
        ("crawl", pa.string()),
        ("warc_filename", pa.string()),
        ("warc_record_offset", pa.int64()),
        ("warc_record_length", pa.int64()),
    ]
)
#: The robots.txt captures of the selected sites' hosts, sorted by the site partition of their URL (as the records).
ROBOTS = pa.schema([RECORDS.field(name) for name in ("partition", "url", "crawl", "warc_filename", "warc_record_offset",
                                                      "warc_record_length")])  # fmt: skip
#: The counts of the robots.txt captures found (all kept: a lookup, not a filter of pages), beside cc_records'.
ROBOTS_COUNTS = "cc_records_robots"


def crawl_of(uri: str) -> str:
    """The crawl an index file belongs to, from its ``crawl=<crawl>/`` folder."""
    match = _CRAWL_OF_KEY.search(uri)
    if match is None:
        raise StageError(f"crawl.index: {uri} is in no crawl=<crawl>/ folder; the table must be laid out as Common Crawl's")
    return match.group(1)


def _index_code(language: str) -> str:
    code = three_letter_code(language)
    if code is None:
        raise StageError(f"crawl.index: language {language!r} has no ISO 639-3 code, which the index's content_languages use")
    return code


def primary_languages(content_languages: pa.Array, pair: Mapping[str, str]) -> pa.Array:
    """Per capture, which language of ``pair`` (index code -> pair code) is its primary one, else null."""
    first = pc.list_element(pc.split_pattern(content_languages, ",", max_splits=1), 0)
    chosen = pa.nulls(len(content_languages), pa.string())
    for index_code, code in pair.items():
        chosen = pc.if_else(pc.equal(first, index_code).fill_null(False), code, chosen)
    return chosen


@dataclass(frozen=True)
class SiteRule:
    """When a site is bilingual enough to fetch: ``min_captures`` in each language, and each language at least
    ``min_share`` of the site's captures."""

    min_captures: int
    min_share: float

    def verdicts(self, sites: pa.Table) -> pa.Array:
        """Per site (``captures``, ``source``, ``target`` columns): null when selected, else the reason it is not."""
        fewest = pc.min_element_wise(sites["source"], sites["target"])
        share = pc.divide(pc.cast(fewest, pa.float64()), pc.cast(pc.max_element_wise(sites["captures"], 1), pa.float64()))
        verdict = pc.if_else(pc.less(share, self.min_share), "below_min_share", pa.scalar(None, pa.string()))
        return pc.if_else(pc.less(fewest, self.min_captures), "below_min_captures", verdict)


def selected_sites(counts: pa.Table, rule: SiteRule, stage_counts: StageCounts) -> pa.Table:
    """The sites of one partition that ``rule`` selects (:data:`SITES`), from their per-file counts (summed per crawl
    here, then the largest of the crawls); counted by reason."""
    sites = _aggregated(_aggregated(counts, ["partition", "domain", "crawl"], "sum"), ["partition", "domain"], "max")
    sites = sites.select(SITES.names).cast(SITES)
    verdicts = rule.verdicts(sites)
    stage_counts.seen(sites.num_rows)
    for reason, n in Counter(verdicts.drop_null().to_pylist()).items():
        stage_counts.drop(reason, n)
    chosen = sites.filter(pc.is_null(verdicts))
    stage_counts.keep(chosen.num_rows)
    return chosen


def _aggregated(counts: pa.Table, keys: list[str], how: str) -> pa.Table:
    """``counts`` with one row per ``keys``, the counted columns aggregated ``how`` (sum, max), sorted by ``keys``."""
    grouped = counts.group_by(keys, use_threads=False).aggregate([(column, how) for column in _COUNTED])
    grouped = grouped.rename_columns([name.removesuffix(f"_{how}") for name in grouped.column_names])
    return grouped.sort_by([(key, "ascending") for key in keys])


class CrawlIndex:
    """The index of a pair's ``crawl.index`` and the WARC files it points into, read through this run's store (or
    the store ``crawl.warc_buckets`` names for their buckets)."""

    def __init__(self, store: ObjectStore, config: PairConfig):
        if config.crawl.index is None:
            raise StageError(f"{config.pair}: the pair config has no crawl.index; the cc_* stages read one")
        self.settings: CommonCrawlIndex = config.crawl.index
        self.partitions = config.extract.site_partitions
        self.languages = {_index_code(config.source): config.source, _index_code(config.target): config.target}
        self.source, self.target = config.source, config.target
        #: The longest record fetched: what one fetch of the crawl may buffer.
        self.max_record_bytes = config.crawl.max_body_bytes
        self._table_store, self._table_prefix = warc_object(store, self.settings.table, config.crawl.warc_buckets)
        self._warc_store, self._warc_prefix = warc_object(store, self.settings.warc_root, config.crawl.warc_buckets)
        self._filesystem = None

    # -- the index's files ------------------------------------------------------------------------
    def files(self, subset: str = PAGES_SUBSET) -> list[str]:
        """Every Parquet file of ``subset`` in each crawl, crawl by crawl as listed, each crawl's in key order. Every
        crawl must have pages; one without a robotstxt subset leaves its hosts' robots.txt to
        ``policy.unknown_robots_on_ingest``."""
        files = []
        for crawl in self.settings.crawls:
            folder = f"{self._table_prefix}crawl={crawl}/subset={subset}/"
            keys = sorted(key for key in self._table_store.iter_keys(folder) if key.endswith(".parquet"))
            if not keys and subset == PAGES_SUBSET:
                raise StageError(
                    f"crawl.index: no Parquet file under {self._table_store.uri(folder)}; check crawl.index.crawls "
                    f"({crawl}) and crawl.index.table"
                )
            if not keys:
                log.warning("crawl.index: no %s subset under %s: robots.txt of its hosts as policy.unknown_robots_on_ingest "
                            "says", subset, self._table_store.uri(folder))  # fmt: skip
            files.extend(self._table_store.uri(key) for key in keys)
        return files

    def _dataset(self, uri: str) -> ds.Dataset:
        _, key = warc_object(self._table_store, uri)
        if self._filesystem is None:
            self._filesystem = self._table_store.arrow_filesystem()
        try:
            return ds.dataset(f"{self._table_store.bucket}/{key}", filesystem=self._filesystem, format="parquet")
        except (OSError, pa.ArrowInvalid) as exc:
            raise StorageError(f"crawl.index: cannot read the index file {uri}: {' '.join(str(exc).split())[:200]}") from None

    def _captures(self, uri: str, columns: list[str], only: ds.Expression | None = None) -> Iterator[pa.RecordBatch]:
        """The captures of one file that pass the MIME and status filters (and ``only``), ``columns`` only."""
        wanted = ds.field("fetch_status").isin(self.settings.statuses) & ds.field("content_mime_detected").isin(
            self.settings.mime_types
        )
        yield from self._scan(uri, columns, wanted if only is None else wanted & only)

    def _scan(self, uri: str, columns: list[str], wanted: ds.Expression) -> Iterator[pa.RecordBatch]:
        scanner = self._dataset(uri).scanner(columns=columns, filter=wanted, batch_size=_BATCH_ROWS)
        try:
            yield from scanner.to_batches()
        except (OSError, pa.ArrowInvalid) as exc:
            raise StorageError(f"crawl.index: reading the index file {uri} failed: {' '.join(str(exc).split())[:200]}") from None

    # -- the map steps ----------------------------------------------------------------------------
    def site_counts(self, uri: str) -> tuple[pa.Table, StageCounts]:
        """Each site's captures per language in one index file (:data:`SITE_COUNTS`, sites with a capture in either
        language), and the file's captures counted: in = its rows; kept = captures in a language of the pair."""
        counts = StageCounts("cc_sites")
        counts.seen(self._dataset(uri).count_rows())
        partials: list[pa.Table] = []
        passed = 0
        for batch in self._captures(uri, ["url_host_registered_domain", "content_languages"]):
            passed += batch.num_rows
            language = primary_languages(batch.column("content_languages"), self.languages)
            partials.append(
                pa.table(
                    {
                        "domain": batch.column("url_host_registered_domain"),
                        "captures": pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows),
                        "source": pc.cast(pc.equal(language, self.source).fill_null(False), pa.int64()),
                        "target": pc.cast(pc.equal(language, self.target).fill_null(False), pa.int64()),
                    }
                ).filter(pc.is_valid(batch.column("url_host_registered_domain")))
            )
            if len(partials) >= _PARTIALS_HELD:
                partials = [_aggregated(pa.concat_tables(partials), ["domain"], "sum")]
        if not partials:
            return SITE_COUNTS.empty_table(), counts
        sites = _aggregated(pa.concat_tables(partials), ["domain"], "sum")
        sites = sites.filter(pc.greater(pc.add(sites["source"], sites["target"]), 0))
        in_pair = pc.sum(sites["source"]).as_py() or 0
        in_pair += pc.sum(sites["target"]).as_py() or 0
        counts.drop("status_or_mime", counts.items_in - passed)
        counts.drop("other_language", passed - in_pair)
        counts.keep(in_pair)
        buckets = pa.array([site_bucket(domain, self.partitions) for domain in sites["domain"].to_pylist()], pa.int32())
        sites = sites.append_column("partition", buckets).append_column(
            "crawl", pa.repeat(pa.scalar(crawl_of(uri)), sites.num_rows)
        )
        return sites.select(SITE_COUNTS.names).cast(SITE_COUNTS).sort_by(
            [("partition", "ascending"), ("domain", "ascending")]
        ), counts

    def records(self, uri: str, sites: pa.Array) -> Iterator[tuple[pa.Table, StageCounts]]:
        """The captures of ``sites`` (registered domains) in one index file whose primary language is one of the
        pair's (:data:`RECORDS`), in batches, each sorted by site partition (index order within one), with its counts."""
        crawl = crawl_of(uri)
        only = ds.field("url_host_registered_domain").isin(sites)
        for batch in self._captures(uri, ["url", "url_host_registered_domain", "content_languages", *LOCATION], only):
            counts = StageCounts("cc_records")
            counts.seen(batch.num_rows)
            language = primary_languages(batch.column("content_languages"), self.languages)
            kept = pa.Table.from_batches([batch]).append_column("language", language).filter(pc.is_valid(language))
            counts.drop("other_language", batch.num_rows - kept.num_rows)
            kept = located(kept, self.max_record_bytes, counts)
            counts.keep(kept.num_rows)
            yield self._by_partition(kept.rename_columns({"url_host_registered_domain": "domain"}), crawl, RECORDS), counts

    def robots_captures(self, uri: str, sites: pa.Array) -> Iterator[tuple[pa.Table, StageCounts]]:
        """The robots.txt captures of the hosts of ``sites`` (registered domains) in one file of a crawl's robotstxt
        subset, whatever their status (:data:`ROBOTS`), in batches sorted by site partition, each with its counts."""
        crawl = crawl_of(uri)
        for batch in self._scan(uri, ["url", *LOCATION], ds.field("url_host_registered_domain").isin(sites)):
            counts = StageCounts(ROBOTS_COUNTS)
            counts.seen(batch.num_rows)
            kept = located(pa.Table.from_batches([batch]), self.max_record_bytes, counts)
            counts.keep(kept.num_rows)
            yield self._by_partition(kept, crawl, ROBOTS), counts

    def _by_partition(self, captures: pa.Table, crawl: str, schema: pa.Schema) -> pa.Table:
        """``captures`` of one crawl as ``schema``'s rows, with the site partition of each URL, sorted by it (stable:
        index order within a partition)."""
        partitions = [site_partition(url, self.partitions) for url in captures["url"].to_pylist()]
        table = captures.append_column("partition", pa.array(partitions, pa.int32()))
        table = table.append_column("crawl", pa.repeat(pa.scalar(crawl), table.num_rows)).select(schema.names).cast(schema)
        return table.take(pc.sort_indices(table, [("partition", "ascending")]))

    # -- the fetch ----------------------------------------------------------------------------------
    def fetch(self, warc_filename: str, offset: int, length: int, attempts: int, backoff_s: float) -> bytes | None:
        """One record's bytes by a ranged GET, tried up to ``attempts`` times with exponential backoff and jitter;
        None when the WARC file (or the range) does not exist, which no retry mends. A location
        :func:`location_problem` refuses is never requested (cc_records and the admission point drop such rows)."""
        if reason := location_problem(warc_filename, offset, length, self.max_record_bytes):
            raise StageError(
                f"cc_fetch: refused to fetch {warc_filename!r:.200} bytes {offset}+{length} ({reason}); the index row is "
                "invalid: run cc_records again, which drops such rows"
            )
        key = self._warc_prefix + warc_filename
        for attempt in range(attempts):
            try:
                data = self._warc_store.get_range(key, offset, length)
                if len(data) == length:
                    return data
                problem = f"{len(data)} bytes where the index says {length}"
            except MissingObjectError:
                return None
            except StorageError as exc:
                problem = str(exc)
            if attempt + 1 < attempts:
                time.sleep(backoff_s * 2**attempt * (1 + random.random()))
        raise StageError(
            f"cc_fetch: {self._warc_store.uri(key)} bytes {offset}+{length} failed {attempts} times ({problem}); "
            "the task resumes from its checkpoint when retried"
        )


class Admission:
    """The one point every selected record passes before it is fetched: a verdict per record, counted by reason
    (the caller counts what it keeps: the records it fetched).

    A URL captured before (an earlier crawl listed, or twice in one) is not fetched again; a page its site opts out
    of the corpus is not fetched (``optouts``, the policy with the site files of the partition's origins learnt:
    robots.txt for the agents honoured, ``optout_robots``, then a ``/.well-known/tdmrep.json`` reservation,
    ``optout_tdmrep``; None judges records by URL and cap alone); and each site fetches at most ``cap`` records per
    language, the first in index order that its site allows. A record whose location :func:`location_problem`
    refuses (``max_record_bytes`` long at most) takes no place: neither its URL nor its site's cap. Memory: 8 bytes a
    URL of the partition (in :class:`SeenHashes`) and a counter per site and language.
    """

    def __init__(self, cap: int, counts: StageCounts, optouts: OptOuts | None = None, max_record_bytes: int = MAX_BODY_BYTES):
        self.cap = cap
        self.counts = counts
        self.optouts = optouts
        self.max_record_bytes = max_record_bytes
        self._urls = SeenHashes()
        self._per_site: Counter[tuple[str, str]] = Counter()

    def admitted(self, batch: pa.Table) -> Iterator[dict]:
        """The records of ``batch`` (:data:`RECORDS` rows) that may be fetched, in order; the others counted."""
        rows = batch.to_pylist()
        problems = [
            location_problem(row["warc_filename"], row["warc_record_offset"], row["warc_record_length"], self.max_record_bytes)
            for row in rows
        ]
        new = iter(self._urls.add(_url_hash(row["url"]) for row, problem in zip(rows, problems, strict=True) if problem is None))
        for record, problem in zip(rows, problems, strict=True):
            self.counts.seen()
            reason = problem or self.verdict(record, bool(next(new)))
            if reason is None:
                yield record
            else:
                self.counts.drop(reason)

    def verdict(self, record: Mapping[str, object], first_capture: bool) -> str | None:
        if not first_capture:
            return "same_url_captured_before"
        if self.optouts is not None and (reason := self.optouts.site_verdict(str(record["url"])).reason):
            return reason
        site = (str(record["domain"]), str(record["language"]))
        if self._per_site[site] >= self.cap:
            return "site_language_cap"
        self._per_site[site] += 1
        return None


def _url_hash(url: str) -> int:
    return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big")
