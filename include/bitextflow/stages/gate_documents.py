"""Stage ``gate_documents``: Great Expectations suites on the documents and sentences of every extract shard."""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow import records
from bitextflow.quality import documents_check, sentences_check
from bitextflow.stages.base import Stage
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import DOCUMENT_SHARDS
from bitextflow.storage.tables import read_tables


class GateDocuments(Stage):
    name = "gate_documents"
    after = "extract"
    outputs = DOCUMENT_SHARDS
    output_folder = "extract"
    partitioning = "run"
    gate = "documents"
    asset = "documents"
    help = "validate the documents and sentences of every extract shard"

    def run(self, documents_keys: Sequence[str]) -> list[str]:
        """Judge the shards together; passes the keys on unchanged."""
        ctx = self.ctx
        documents = read_tables(ctx.store, list(documents_keys), records.DOCUMENTS)
        sentences = read_tables(ctx.store, sorted(set(documents["sentences_key"].dropna())), records.SENTENCES)
        languages = (ctx.config.source, ctx.config.target)
        judge(ctx, "documents", [documents_check(documents, ctx.config.gate, languages), sentences_check(sentences, languages)])
        return list(documents_keys)
