"""Where everything of a run lives in the bucket: one place for every key a stage writes or reads.

``<pair>/<run_id>/<stage>/<name>``: each stage writes under its own folder; ``<name>`` is a shard's
output (named after its input shard), a ``<shard>.counts.json`` beside it, or a side output
(rejected rows, duplicates, reports). Releases live apart, under ``releases/<pair>/v<N>/``, and
published models under ``models/<pair>/<kind>/v<N>/``.
"""

from __future__ import annotations

import re
from pathlib import Path

from bitextflow.errors import StorageError

#: The crawl's log (URL, outcome, CLD2 language per fetch), in the crawl stage's folder; one per host group
#: (``crawl-log.<group>.jsonl.gz``) when the crawl has several.
CRAWL_LOG = "crawl-log.jsonl.gz"
CRAWL_LOGS = re.compile(r"^crawl-log(\.hosts-\d+)?\.jsonl\.gz$")
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


_KEPT = re.compile(r"[A-Za-z0-9_.-]")
_ESCAPE = "~"
_ESCAPED = re.compile(r"~([0-9A-F]{2})")


def safe_key_part(text: str) -> str:
    """A run id or name as one key component that needs no URL escaping, one to one: letters, digits, ``_``,
    ``-`` and ``.`` stay, every other byte of the UTF-8 text (``/``, ``:``, ``+``, ``~``, and a leading ``.``,
    so that no component is ``.`` or ``..``) becomes ``~XX``. Two run ids never share a prefix
    (``T00:00`` and ``T00/00`` are ``T00~3A00`` and ``T00~2F00``); :func:`text_of_key_part` reads one back."""
    if not text:
        raise ValueError("an empty run id or name cannot be a storage key component")
    parts = []
    for index, char in enumerate(text):
        if _KEPT.fullmatch(char) and not (index == 0 and char == "."):
            parts.append(char)
        else:
            parts.extend(f"{_ESCAPE}{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(parts)


def text_of_key_part(part: str) -> str:
    """The run id or name that :func:`safe_key_part` turned into ``part``."""
    raw = bytearray()
    position = 0
    for match in _ESCAPED.finditer(part):
        raw += part[position : match.start()].encode("ascii")
        raw.append(int(match.group(1), 16))
        position = match.end()
    raw += part[position:].encode("ascii")
    return raw.decode("utf-8")


def stage_key(pair: str, run_id: str, stage: str, name: str) -> str:
    """``<pair>/<run_id>/<stage>/<name>`` (``stage`` and ``name`` empty: the run's prefix)."""
    return f"{pair}/{safe_key_part(run_id)}/{stage}/{name}"


def run_prefix(pair: str, run_id: str) -> str:
    return f"{pair}/{safe_key_part(run_id)}/"


def local_path(root: Path, relative_key: str) -> Path:
    """Where an object of ``relative_key`` (a key below a downloaded prefix) goes under the local folder ``root``;
    a key that would land outside ``root`` (``..``, an absolute path) is refused, not followed."""
    base = root.resolve()
    target = (base / relative_key).resolve()
    if relative_key.startswith("/") or not target.is_relative_to(base):
        raise StorageError(f"object key {relative_key!r} would be written outside {root}; refusing to download it")
    return target


def data_docs_key(pair: str, run_id: str, gate: str) -> str:
    """Where the Data Docs site of one gate of a run starts (``index.html``); the Airflow UI links to it."""
    return stage_key(pair, run_id, "gate", f"data_docs/{gate}/index.html")
