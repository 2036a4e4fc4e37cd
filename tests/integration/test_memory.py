"""Peak memory of a task does not grow with the run: a real measurement of a child process (VmHWM).

One ``align_sentences`` task aligns the same 20 document pairs in a run whose site partition holds 1x and
5x as many other documents: the task reads the sentences of its own documents only, so its peak RSS may not
grow by more than a quarter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from bitextflow import records
from bitextflow.config import load_pair_config
from bitextflow.extract.shard import SENTENCE_BATCH
from bitextflow.records import DocumentPair, Sentence
from bitextflow.stages.registry import REGISTRY, run_context
from bitextflow.storage.layout import stage_key
from bitextflow.storage.tables import write_table
from tests.support import ROOT, write_partition_documents

PAIRED_DOCUMENTS = 20
SENTENCES_PER_DOCUMENT = 40
ENGLISH = "The package {n} installs the configuration files of the network interfaces of system {d}."
SPANISH = "El paquete {n} instala los archivos de configuración de las interfaces de red del sistema {d}."
ALIGNER = {"align.sentence_aligner": "gale-church"}

TASK = """
import json, re, sys
from bitextflow.config import load_pair_config
from bitextflow.stages.align_sentences import AlignSentences
from bitextflow.stages.registry import run_context
from bitextflow.storage import ObjectStore
config = load_pair_config(sys.argv[1]).with_overrides(json.loads(sys.argv[4]))
task = AlignSentences(run_context(config, ObjectStore.from_env("bitextflow"), sys.argv[2]))
task.setup()
key = task.run(sys.argv[3])
# VmHWM is this process's own peak; ru_maxrss would also count the parent's memory at fork time
peak = int(re.search(r"VmHWM:\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))
print(json.dumps({"key": key, "max_rss_kib": peak}))
"""


def _run_of(store, tmp_path, run_id: str, scale: int) -> str:
    """A site partition holding the 20 paired documents among ``scale`` times 1,000 others; returns the task's input."""
    rows = [
        Sentence(doc, f"http://h/{doc}", language, 0, "p", n, template.format(n=n, d=doc), False, partition=0)
        for language, template in (("en", ENGLISH), ("es", SPANISH))
        for doc in (f"{language}{d}" for d in range(PAIRED_DOCUMENTS + 500 * scale))
        for n in range(SENTENCES_PER_DOCUMENT)
    ]
    table = pa.Table.from_pandas(records.frame_of(rows, records.SENTENCES), schema=records.SENTENCES, preserve_index=False)
    local = tmp_path / f"{run_id}.parquet"
    pq.write_table(table, local, row_group_size=SENTENCE_BATCH)  # as the partition stage writes: row groups of a batch
    store.put_file(stage_key("en-es", run_id, "partitions", "part-00000.sentences.parquet"), local)
    documents = stage_key("en-es", run_id, "partitions", "part-00000.documents.parquet")
    write_partition_documents(store, documents, records.frame_of(rows, records.SENTENCES))
    pairs = [DocumentPair(f"en{d}", f"es{d}", f"http://h/en{d}", f"http://h/es{d}", partition=0) for d in range(PAIRED_DOCUMENTS)]
    key = stage_key("en-es", run_id, "align_documents", "docpairs-part-00000-00000.parquet")
    write_table(store, key, records.frame_of(pairs, records.DOCUMENT_PAIRS), records.DOCUMENT_PAIRS)
    # the shipped config embeds the paired documents' sentences once, before the measured task reads their vectors
    config = load_pair_config(ROOT / "include" / "pairs" / "en-es.yaml").with_overrides(ALIGNER)
    (embedded,) = REGISTRY.run(run_context(config, store, run_id), "embed", [key])
    return embedded


def _peak_rss_kib(s3_env, run_id: str, docpairs_key: str) -> int:
    result = subprocess.run(
        [sys.executable, "-c", TASK, str(ROOT / "include" / "pairs" / "en-es.yaml"), run_id, docpairs_key, json.dumps(ALIGNER)],
        capture_output=True, text=True, env={**os.environ, **s3_env}, check=True, timeout=600,
    )  # fmt: skip
    return json.loads(result.stdout.strip().splitlines()[-1])["max_rss_kib"]


def test_align_sentences_peak_memory_is_flat_when_the_run_is_five_times_larger(s3_env, store, tmp_path):
    small, large = _run_of(store, tmp_path, "memory_1x", 1), _run_of(store, tmp_path, "memory_5x", 5)
    at_1x, at_5x = _peak_rss_kib(s3_env, "memory_1x", small), _peak_rss_kib(s3_env, "memory_5x", large)
    print(f"align_sentences peak RSS: {at_1x / 1024:.0f} MiB at 1x, {at_5x / 1024:.0f} MiB at 5x")
    assert at_5x <= 1.25 * at_1x, f"peak RSS {at_1x / 1024:.0f} MiB at 1x, {at_5x / 1024:.0f} MiB at 5x"
