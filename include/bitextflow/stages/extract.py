"""Stage ``extract``: one WARC shard -> documents, rejected documents and sentences (Parquet).

The WARC is streamed from the store through a bounded buffer, never copied whole (see
:class:`bitextflow.storage.ObjectReader` and :mod:`bitextflow.extract.shard`). Documents and sentences
are grouped by site partition inside each file; the ``partition`` stage gathers each partition's rows
from every shard.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bitextflow.catalog.site_files import shard_optouts
from bitextflow.catalog.warcs import warc_object
from bitextflow.config import PairConfig
from bitextflow.extract import extract_shard
from bitextflow.extract.export import export_documents
from bitextflow.extract.warc import WARC_READ_BUFFER
from bitextflow.stages.base import Resources, Stage, shard_name
from bitextflow.storage.layout import DOCUMENT_SHARDS

_PARQUET = "application/vnd.apache.parquet"


class Extract(Stage):
    name = "extract"
    after = "crawl"
    outputs = DOCUMENT_SHARDS
    partitioning = "shard"
    resources = Resources(concurrency=4)
    help = "WARC shards -> documents and sentences, cleaned, language-tagged, de-duplicated"

    @classmethod
    def reads(cls, config: PairConfig) -> str | None:
        """The crawl's WARC shards (or the files of crawl.warcs), or cc_fetch's in a run from a Common Crawl index."""
        return "cc_fetch" if config.crawl.index is not None else cls.after

    @classmethod
    def max_tasks(cls, config: PairConfig) -> int | None:
        return config.extract.max_tasks

    def _crawl_key(self, name: str) -> str:
        return self.ctx.key("crawl", name)

    def run(self, warc_key: str) -> str:
        """Returns the shard's documents key."""
        ctx = self.ctx
        shard = shard_name(warc_key)
        # an ingested WARC may be in another bucket, or on another endpoint (crawl.warc_buckets)
        store, key = warc_object(ctx.store, warc_key, ctx.config.crawl.warc_buckets)
        # ingested pages were judged by no crawler: their sites' robots.txt and TDMRep files are learnt first (a crawl,
        # and cc_fetch from an index, keep the pages opted out out of their shards)
        optouts = shard_optouts(ctx.store, ctx.config, self._crawl_key, store, key) if ctx.config.crawl.warcs else None
        with tempfile.TemporaryDirectory(prefix="bitextflow-extract-") as tmp, store.open_read(key, WARC_READ_BUFFER) as warc:
            result = extract_shard(
                warc, Path(tmp) / "out", warc_key=warc_key, languages={ctx.config.source, ctx.config.target}, config=ctx.config.extract, domain=ctx.config.domain,
                policy=ctx.config.policy, optouts=optouts,
            )  # fmt: skip
            ctx.store.put_file(ctx.key("extract", f"{shard}.sentences.parquet"), result.sentences, _PARQUET)
            ctx.store.put_file(ctx.key("extract", f"{shard}.documents.rejected.parquet"), result.rejected, _PARQUET)
            documents_key = ctx.store.put_file(ctx.key("extract", f"{shard}.documents.parquet"), result.documents, _PARQUET)
            for name, data, content_type in export_documents(
                result.documents, ctx.config.extract.export_formats, ctx.config.domain.name
            ):
                ctx.store.put_bytes(ctx.key("extract", f"export/{shard}/{name}"), data, content_type)
        ctx.write_counts("extract", f"{shard}.documents", result.document_counts)
        ctx.write_counts("extract", f"{shard}.sentences", result.sentence_counts)
        return documents_key
