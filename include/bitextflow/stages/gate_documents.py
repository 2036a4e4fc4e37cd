"""Stage ``gate_documents``: Great Expectations suites on the documents and sentences of every site partition,
then on the run as a whole, from the partitions' summaries.

Each partition is read and judged in turn (``documents.part-NNNNN``, ``sentences.part-NNNNN``), so the task holds
one partition at a time; what only the whole run can show (both of the pair's languages present, enough
documents) is judged on the summaries the ``partition`` stage wrote (suite ``documents``). One Data Docs site
lists every suite.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from bitextflow.quality import Check, documents_check, run_documents_check, sentences_check
from bitextflow.stages.base import Stage
from bitextflow.stages.gating import judge
from bitextflow.storage.layout import PARTITION_DOCUMENTS, partition_name, partition_of_key
from bitextflow.storage.tables import read_table


class GateDocuments(Stage):
    name = "gate_documents"
    after = "partition"
    outputs = PARTITION_DOCUMENTS
    output_folder = "partitions"
    partitioning = "run"
    gate = "documents"
    asset = "documents"
    help = "validate the documents and sentences of every site partition, and the run's"

    def run(self, documents_keys: Sequence[str]) -> list[str]:
        """Judge the partitions one by one, then the run; passes the keys on unchanged."""
        judge(self.ctx, "documents", self._checks(sorted(documents_keys)))
        return list(documents_keys)

    def _checks(self, documents_keys: list[str]) -> Iterator[Check]:
        ctx = self.ctx
        languages = (ctx.config.source, ctx.config.target)
        summaries = []
        for key in documents_keys:
            name = partition_name(partition_of_key(key))
            yield documents_check(read_table(ctx.store, key), ctx.config.gate, suite=f"documents.{name}")
            sentences = read_table(ctx.store, ctx.key("partitions", f"{name}.sentences.parquet"))
            yield sentences_check(sentences, languages, suite=f"sentences.{name}")
            summaries.append(ctx.store.get_json(ctx.key("partitions", f"{name}.summary.json")))
        yield run_documents_check(summaries, ctx.config.gate, languages)
