"""Stage ``cc_fetch``: the selected records of a Common Crawl index run, read from their WARC files by byte range
into the run's WARC shards, one site partition per task (docs/commoncrawl.md).

The plan writes ``cc_fetch/cc-NNNNN.inputs.json`` for each site partition holding records: the ``cc_records``
files and row groups to read, of its records and of its hosts' robots.txt captures. A task first learns the site
files of its records' origins, as the crawl learns a host's before fetching from it: each robots.txt capture read
by byte range (:func:`bitextflow.catalog.cc_record_checks.captured_site_files`), an origin without one as
``policy.unknown_robots_on_ingest`` says (:func:`bitextflow.catalog.site_files.learned_optouts`: ``fetch`` asks the
site now, through the crawler's guarded fetcher, cached in ``cc_fetch/site-files/``). It then streams its
partition's records in index order through one admission point (:class:`bitextflow.catalog.ccindex.Admission`: URLs
captured before, the site's opt-outs, the per-site cap), cuts them into shards of about ``crawl.warc_max_bytes`` by
the lengths the index gives, and fetches each shard's records with ``crawl.index.fetch_concurrency`` ranged GETs in
flight, each tried ``fetch_attempts`` times with backoff; a record whose page opts itself out (a TDMRep reservation
or ``noai`` in its headers or markup: :func:`bitextflow.catalog.cc_record_checks.declared_optout`) is set aside, counted, as
the crawler sets aside such a page, and so is a record whose ``WARC-Target-URI`` is not its row's URL
(``record_url_mismatch``). A row the index gives no valid location (``index_*``: a ``warc_filename`` with ``../``, a
length that is not positive or longer than ``crawl.max_body_bytes``) is dropped at the admission point, never
requested; cc_records drops them already. The robots.txt captures are counted as ``cc_fetch_robots``
(``cc-NNNNN-robots.counts.json``). A shard is the kept records' bytes as stored (each a gzip member, so the shard is
a valid ``.warc.gz``), written whole as ``cc_fetch/cc-NNNNN-SSSSS.warc.gz``: no record of a page opted out reaches
it, so extract judges none again. Beside it, ``cc-NNNNN-SSSSS.locations.json`` gives each record's offset in the
shard and its place in Common Crawl, which a released document names (``source.commoncrawl``). Each shard's site
partition is the partition's, so extract writes one partition per file and ``partition`` reads one row group of it.

Resumable: after each shard the task writes ``cc-NNNNN.checkpoint.json`` (each shard's plan digest and counts).
A retry after a kill plans the same shards (the same records in the same order give the same keys and bytes),
keeps those the checkpoint lists with the same plan, and fetches the rest; shards of an earlier plan that this
one does not write are deleted.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from bitextflow.catalog.cc_locations import location_problem, shard_locations
from bitextflow.catalog.cc_record_checks import captured_site_files, record_verdict
from bitextflow.catalog.ccindex import Admission, CrawlIndex
from bitextflow.catalog.site_files import learned_optouts
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.policy import OptOuts
from bitextflow.stages.cc_sites import IndexStage
from bitextflow.storage.layout import CC_ROBOTS_RECORDS, CC_WARC_SHARDS, fetch_name, fetched_locations_key, fetched_warc_name
from bitextflow.storage.tables import partition_holders, read_partition
from bitextflow.text.urls import origin_of


def plan_digest(records: Sequence[dict[str, Any]]) -> str:
    """What a shard holds, as the index says: its records' WARC files, offsets and lengths in order."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(f"{record['warc_filename']}\t{record['warc_record_offset']}\t{record['warc_record_length']}\n".encode())
    return digest.hexdigest()


class CcFetch(IndexStage):
    name = "cc_fetch"
    after = "cc_records"
    outputs = CC_WARC_SHARDS
    partitioning = "shard"
    outputs_per_input = "many"
    help = "fetch the selected records of the Common Crawl index by byte range into WARC shards, by site partition"

    def plan(self, records_keys: Sequence[str]) -> list[str]:
        """One task input per site partition holding records: its ``inputs.json`` key, written here."""
        ctx = self.ctx
        keys = sorted(records_keys)
        robots_keys = [key for key in keys if CC_ROBOTS_RECORDS.match(key.rsplit("/", 1)[-1])]
        pages_keys = [key for key in keys if key not in robots_keys]
        holders = partition_holders(ctx.store, pages_keys)
        if not holders:
            raise StageError(
                f"none of the {len(pages_keys)} cc_records files of run {ctx.run_id!r} holds a record of a selected "
                f"site in {ctx.config.source} or {ctx.config.target} (see the cc_records counts)"
            )
        robots = partition_holders(ctx.store, robots_keys)

        def sources(held: list[tuple[int, str, list[int]]]) -> list[dict[str, Any]]:
            return [{"records": key, "row_groups": groups} for _, key, groups in held]

        return [
            ctx.store.put_json(
                ctx.key(self.name, f"{fetch_name(partition)}.inputs.json"),
                {"partition": partition, "shards": sources(held), "robots": sources(robots.get(partition, []))},
            )
            for partition, held in holders.items()
        ]

    def setup(self) -> None:
        self.index = CrawlIndex(self.ctx.store, self.ctx.config)

    def run(self, inputs_key: str) -> list[str]:
        """Returns the partition's WARC shard keys, in order."""
        ctx = self.ctx
        settings = ctx.config.crawl.index
        plan = ctx.store.get_json(inputs_key)
        partition = plan["partition"]
        checkpoint_key = ctx.key(self.name, f"{fetch_name(partition)}.checkpoint.json")
        done: dict[str, dict[str, Any]] = ctx.store.get_json(checkpoint_key)["shards"] if ctx.store.exists(checkpoint_key) else {}
        counts = StageCounts(self.name)
        written: list[str] = []
        planned: list[str] = []

        def tables(sources: list[dict[str, Any]]) -> Iterator[pa.Table]:
            """The partition's rows of ``cc_records`` files, in order."""
            for source in sources:
                for table, _ in read_partition(ctx.store, source["records"], partition, source["row_groups"]):
                    yield table

        def fetch(record: dict[str, Any]) -> bytes | None:
            return self.index.fetch(
                record["warc_filename"], record["warc_record_offset"], record["warc_record_length"],
                settings.fetch_attempts, settings.fetch_backoff_seconds,
            )  # fmt: skip

        def fetch_page(record: dict[str, Any]) -> tuple[bytes | None, str | None]:
            """The record's bytes, and the reason it is set aside: another URL's, or its page opts itself out."""
            data = fetch(record)
            if data is None:
                return None, None
            return data, record_verdict(optouts, data, record["url"], ctx.config.extract.max_page_bytes)

        def shard(records: list[dict[str, Any]], pool: ThreadPoolExecutor) -> None:
            name = fetched_warc_name(partition, len(planned))
            key = ctx.key(self.name, name)
            planned.append(key)
            digest = plan_digest(records)
            entry = done.get(name)
            if entry is None or entry["plan"] != digest or (entry["records"] and not ctx.store.exists(key)):
                results = list(pool.map(fetch_page, records))
                kept = [
                    (record, data)
                    for record, (data, reason) in zip(records, results, strict=True)
                    if data is not None and reason is None
                ]
                if kept:
                    ctx.store.put_bytes(key, b"".join(data for _, data in kept), "application/warc")
                    ctx.store.put_json(fetched_locations_key(key), {"warc": key, "records": shard_locations(kept)})
                entry = {
                    "plan": digest,
                    "records": len(kept),
                    "missing": sum(data is None for data, _ in results),
                    "set_aside": dict(Counter(reason for _, reason in results if reason)),
                }
                done[name] = entry
                ctx.store.put_json(checkpoint_key, {"partition": partition, "shards": done})
            counts.keep(entry["records"])
            counts.drop("warc_missing", entry["missing"])
            for reason, n in entry["set_aside"].items():
                counts.drop(reason, n)
            if entry["records"]:
                written.append(key)

        records: list[dict[str, Any]] = []
        size = 0
        with ThreadPoolExecutor(settings.fetch_concurrency) as pool:
            optouts = self._optouts(partition, tables(plan["robots"]), tables(plan["shards"]), lambda rows: pool.map(fetch, rows))
            admission = Admission(settings.max_captures_per_language, counts, optouts, self.index.max_record_bytes)
            for table in tables(plan["shards"]):
                for record in admission.admitted(table):
                    if records and size + record["warc_record_length"] > ctx.config.crawl.warc_max_bytes:
                        shard(records, pool)
                        records, size = [], 0
                    records.append(record)
                    size += record["warc_record_length"]
            if records:
                shard(records, pool)
        # shards of an earlier attempt with another plan (other settings) are no part of this one
        for key in ctx.store.list_keys(ctx.key(self.name, f"{fetch_name(partition)}-")):
            if CC_WARC_SHARDS.search(key.rsplit("/", 1)[-1]) and key not in written:
                ctx.store.delete_prefix(key)
                ctx.store.delete_prefix(fetched_locations_key(key))
        ctx.write_counts(self.name, fetch_name(partition), counts)
        return written

    def _optouts(
        self,
        partition: int,
        robots: Iterator[pa.Table],
        records: Iterator[pa.Table],
        fetch_all: Callable[[list[dict[str, Any]]], Iterator[bytes | None]],
    ) -> OptOuts:
        """The policy with the site files of every origin of the partition's ``records`` learnt: captured in the
        index's robotstxt subset (``robots``, read by ``fetch_all``), else as the module docstring says."""
        ctx = self.ctx
        origins = {origin_of(url) for table in records for url in table["url"].to_pylist()}
        counts = StageCounts(f"{self.name}_robots")
        captures = []
        for row in (row for table in robots for row in table.to_pylist()):
            location = (row["warc_filename"], row["warc_record_offset"], row["warc_record_length"])
            if reason := location_problem(*location, self.index.max_record_bytes):
                counts.seen()
                counts.drop(reason)
            else:
                captures.append(row)
        found = captured_site_files(captures, list(fetch_all(captures)), ctx.config.crawl.index.crawls, counts)
        ctx.write_counts(self.name, f"{fetch_name(partition)}-robots", counts)
        known = found.site_files(origins)
        return learned_optouts(
            ctx.store, ctx.config, lambda name: ctx.key(self.name, name), origins, known,
            Counter({"captured in the index": len(known)}), fetch_name(partition),
        )  # fmt: skip
