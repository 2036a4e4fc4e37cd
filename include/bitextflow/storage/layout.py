"""Where everything of a run lives in the bucket: one place for every key a stage writes or reads.

``<pair>/<run_id>/<stage>/<name>``: each stage writes under its own folder; ``<name>`` is a shard's
output (named after its input shard), a ``<shard>.counts.json`` beside it, or a side output
(rejected rows, duplicates, reports). Releases live apart, under ``releases/<pair>/v<N>/``, and
published models under ``models/<pair>/<kind>/v<N>/``.
"""

from __future__ import annotations

import re

#: The crawl's log (URL, outcome, CLD2 language per fetch), in the crawl stage's folder.
CRAWL_LOG = "crawl-log.jsonl.gz"
#: Sentence pairs an incremental run carries over from the previous release (align_documents folder).
CARRIED_SENTENCE_PAIRS = "carried-sentence-pairs.parquet"

# Output shards of each stage, by name (a folder also holds side outputs: rejected rows, counts, reports).
WARC_SHARDS = re.compile(r"\.warc\.gz$")
DOCUMENT_SHARDS = re.compile(r"\.documents\.parquet$")
SENTENCE_SHARDS = re.compile(r"\.sentences\.parquet$")
DOCUMENT_PAIR_SHARDS = re.compile(r"^docpairs-\d+\.parquet$")
#: The run's document pairs as released: the shards plus those an incremental run carried over.
RELEASED_DOCUMENT_PAIRS = re.compile(r"^docpairs-(\d+|carried)\.parquet$")
SENTENCE_PAIR_SHARDS = re.compile(r"^sentpairs-\d+\.parquet$")
GATED_PAIRS = re.compile(r"^sentence_pairs\.parquet$")


def safe_key_part(text: str) -> str:
    """A run id or name turned into a key component that needs no URL escaping."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "_"


def stage_key(pair: str, run_id: str, stage: str, name: str) -> str:
    """``<pair>/<run_id>/<stage>/<name>`` (``stage`` and ``name`` empty: the run's prefix)."""
    return f"{pair}/{safe_key_part(run_id)}/{stage}/{name}"


def run_prefix(pair: str, run_id: str) -> str:
    return f"{pair}/{safe_key_part(run_id)}/"


def data_docs_key(pair: str, run_id: str, gate: str) -> str:
    """Where the Data Docs site of one gate of a run starts (``index.html``); the Airflow UI links to it."""
    return stage_key(pair, run_id, "gate", f"data_docs/{gate}/index.html")
