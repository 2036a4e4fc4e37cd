"""Stage ``cc_fetch``: the selected records of a Common Crawl index run, read from their WARC files by byte range
into the run's WARC shards, one site partition per task (docs/commoncrawl.md).

The plan writes ``cc_fetch/cc-NNNNN.inputs.json`` for each site partition holding records: the ``cc_records``
files and row groups to read. A task streams its partition's records in index order through one admission point
(:class:`bitextflow.catalog.ccindex.Admission`: URLs captured before, the per-site cap), cuts them into shards of
about ``crawl.warc_max_bytes`` by the lengths the index gives, and fetches each shard's records with
``crawl.index.fetch_concurrency`` ranged GETs in flight, each tried ``fetch_attempts`` times with backoff. A shard
is the records' bytes as stored (each a gzip member, so the shard is a valid ``.warc.gz``), written whole as
``cc_fetch/cc-NNNNN-SSSSS.warc.gz``. Each shard's site partition is the partition's, so extract writes one
partition per file and ``partition`` reads one row group of it.

Resumable: after each shard the task writes ``cc-NNNNN.checkpoint.json`` (each shard's plan digest and counts).
A retry after a kill plans the same shards (the same records in the same order give the same keys and bytes),
keeps those the checkpoint lists with the same plan, and fetches the rest; shards of an earlier plan that this
one does not write are deleted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bitextflow.catalog.ccindex import Admission, CrawlIndex
from bitextflow.counts import StageCounts
from bitextflow.errors import StageError
from bitextflow.stages.cc_sites import IndexStage
from bitextflow.storage.layout import CC_WARC_SHARDS, fetch_name, fetched_warc_name
from bitextflow.storage.tables import partition_holders, read_partition


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
        holders = partition_holders(ctx.store, sorted(records_keys))
        if not holders:
            raise StageError(
                f"none of the {len(records_keys)} cc_records files of run {ctx.run_id!r} holds a record of a selected "
                f"site in {ctx.config.source} or {ctx.config.target} (see the cc_records counts)"
            )
        return [
            ctx.store.put_json(
                ctx.key(self.name, f"{fetch_name(partition)}.inputs.json"),
                {"partition": partition, "shards": [{"records": key, "row_groups": groups} for _, key, groups in held]},
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
        admission = Admission(settings.max_captures_per_language, counts)
        written: list[str] = []
        planned: list[str] = []

        def fetch(record: dict[str, Any]) -> bytes | None:
            return self.index.fetch(
                record["warc_filename"], record["warc_record_offset"], record["warc_record_length"],
                settings.fetch_attempts, settings.fetch_backoff_seconds,
            )  # fmt: skip

        def shard(records: list[dict[str, Any]], pool: ThreadPoolExecutor) -> None:
            name = fetched_warc_name(partition, len(planned))
            key = ctx.key(self.name, name)
            planned.append(key)
            digest = plan_digest(records)
            entry = done.get(name)
            if entry is None or entry["plan"] != digest or (entry["records"] and not ctx.store.exists(key)):
                data = list(pool.map(fetch, records))
                fetched = [record for record in data if record is not None]
                if fetched:
                    ctx.store.put_bytes(key, b"".join(fetched), "application/warc")
                entry = {"plan": digest, "records": len(fetched), "missing": len(data) - len(fetched)}
                done[name] = entry
                ctx.store.put_json(checkpoint_key, {"partition": partition, "shards": done})
            counts.keep(entry["records"])
            counts.drop("warc_missing", entry["missing"])
            if entry["records"]:
                written.append(key)

        records: list[dict[str, Any]] = []
        size = 0
        with ThreadPoolExecutor(settings.fetch_concurrency) as pool:
            for source in plan["shards"]:
                for table, _ in read_partition(ctx.store, source["records"], partition, source["row_groups"]):
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
        ctx.write_counts(self.name, fetch_name(partition), counts)
        return written
