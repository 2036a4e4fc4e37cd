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
#: The language versions the crawled pages and sitemaps declare (one JSON line per URL: ``{"url", "alternates":
#: {language: url}}``), in the crawl stage's folder; one per host group, as the log. Document alignment reads them.
DECLARED_VERSIONS = "declared-versions.jsonl.gz"
DECLARED_VERSION_FILES = re.compile(r"^declared-versions(\.hosts-\d+)?\.jsonl\.gz$")

# Output shards of each stage, by name (a folder also holds side outputs: rejected rows, counts, reports).
WARC_SHARDS = re.compile(r"\.warc\.gz$")
#: A run from a Common Crawl index (``crawl.index``): the index files it reads, in order (``cc_sites/index-files.json``),
#: each file's site counts (``cc_sites/index-NNNNN.sites.parquet``), the sites selected (``cc_select/sites.parquet``),
#: each file's records of those sites (``cc_records/index-NNNNN.records.parquet``) and each file of the robotstxt subset's
#: robots.txt captures of their hosts (``cc_records/robots-NNNNN.records.parquet``), and each site partition's fetched
#: records (``cc_fetch/cc-<partition>-<shard>.warc.gz``), with the partition's inputs and checkpoint beside.
CC_INDEX_FILES = "index-files.json"
CC_SITE_COUNTS = re.compile(r"^index-\d{5}\.sites\.parquet$")
CC_SELECTED_SITES = "sites.parquet"
CC_SELECTED = re.compile(r"^sites\.parquet$")
CC_RECORDS = re.compile(r"^(index|robots)-\d{5}\.records\.parquet$")
CC_ROBOTS_RECORDS = re.compile(r"^robots-\d{5}\.records\.parquet$")
CC_WARC_SHARDS = re.compile(r"^cc-\d{5}-\d{5}\.warc\.gz$")
DOCUMENT_SHARDS = re.compile(r"\.documents\.parquet$")
#: Extraction's rejected documents of each shard (``extract/<shard>.documents.rejected.parquet``), with reason and twin.
REJECTED_DOCUMENT_SHARDS = re.compile(r"\.documents\.rejected\.parquet$")
SENTENCE_SHARDS = re.compile(r"\.sentences\.parquet$")
#: A site partition's task list (``partitions/part-NNNNN.inputs.json``: the extract shards holding it).
PARTITION_INPUTS = re.compile(r"^part-\d{5}\.inputs\.json$")
#: A site partition's documents, gathered from every extract shard (``partitions/part-NNNNN.documents.parquet``).
PARTITION_DOCUMENTS = re.compile(r"^part-\d{5}\.documents\.parquet$")
#: A partition's document pairs, in shards for sentence alignment: ``docpairs-<partition>-<shard>.parquet``.
DOCUMENT_PAIR_SHARDS = re.compile(r"^docpairs-part-\d{5}-\d{5}\.parquet$")
#: The run's document pairs as released: the shards plus those an incremental run carried over, per partition.
RELEASED_DOCUMENT_PAIRS = re.compile(r"^docpairs-part-\d{5}-(\d{5}|carried)\.parquet$")
SENTENCE_PAIR_SHARDS = re.compile(r"^sentpairs-part-\d{5}-\d{5}\.parquet$")
#: A partition's annotated documents, the monolingual corpus (``monolingual/part-NNNNN.documents.parquet``).
ANNOTATED_DOCUMENT_SHARDS = re.compile(r"^part-\d{5}\.documents\.parquet$")
#: The gated pairs of a run, one file per site partition (``gate/part-NNNNN.sentence_pairs.parquet``).
GATED_PAIRS = re.compile(r"^part-\d{5}\.sentence_pairs\.parquet$")
#: The reports of a run's gate suites (``gate/<suite>.report.json``).
GATE_REPORTS = re.compile(r"\.report\.json$")
_PARTITION_OF_NAME = re.compile(r"part-(\d{5})")
#: The partition stage's plan (``partitions/plan.json``): P and the partitions that hold documents.
PARTITION_PLAN = "plan.json"
#: The deduplicate stage's count of the copies of each kept document (``deduplicate/copies.parquet``).
COPIES_NAME = "copies.parquet"
#: The gate's manifest (``gate/sentence_pairs.outputs.json``): the gated pairs it wrote.
GATED_OUTPUTS = "sentence_pairs.outputs.json"


def partition_name(partition: int) -> str:
    """``part-00003``: how a site partition is named in keys (five digits sort in partition order)."""
    return f"part-{partition:05d}"


def index_file_name(position: int) -> str:
    """``index-00042``: how the 43rd file of a run's index is named in keys (five digits sort in index order)."""
    return f"index-{position:05d}"


def robots_file_name(position: int) -> str:
    """``robots-00002``: how the third file of a run's robotstxt subset is named in keys."""
    return f"robots-{position:05d}"


def fetch_name(partition: int) -> str:
    """``cc-00003``: how the cc_fetch task of site partition 3 names its inputs, checkpoint and counts."""
    return f"cc-{partition:05d}"


def fetched_warc_name(partition: int, shard: int) -> str:
    """``cc-00003-00001.warc.gz``: the second WARC shard of site partition 3's fetched records."""
    return f"{fetch_name(partition)}-{shard:05d}.warc.gz"


def fetched_locations_key(warc_key: str) -> str:
    """``.../cc-00003-00001.locations.json``: where each record of the fetched WARC shard ``warc_key`` sits in Common
    Crawl (:func:`bitextflow.catalog.cc_locations.shard_locations`)."""
    return warc_key.removesuffix(".warc.gz") + ".locations.json"


def duplicates_name(partition: int) -> str:
    """The run-level duplicates found among one partition's documents (deduplicate folder)."""
    return f"{partition_name(partition)}.duplicates.parquet"


def carried_sentence_pairs_name(partition: int) -> str:
    """Sentence pairs an incremental run carries over from the previous release for one partition (align_documents)."""
    return f"{partition_name(partition)}.carried-sentence-pairs.parquet"


def partition_outputs_name(partition: int) -> str:
    """One ``align_documents`` task's manifest (``align_documents/part-NNNNN.outputs.json``): what it wrote."""
    return f"{partition_name(partition)}.outputs.json"


def partition_of_key(key: str) -> int:
    """The site partition a partitioned output belongs to, read from its name (``.../docpairs-part-00003-00001...``)."""
    match = _PARTITION_OF_NAME.search(Path(key).name)
    if match is None:
        raise StorageError(f"{key!r} is not a site partition's output (no part-NNNNN in its name)")
    return int(match.group(1))


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
    """The run id or name that :func:`safe_key_part` turned into ``part``; a text that no run id becomes (a byte
    that is not UTF-8, ``~FF``; a character that would have been escaped, ``é``; an escape of a kept one, ``~41``)
    is a :class:`StorageError`, so that a key or a URL path names one run or none."""
    raw = bytearray()
    position = 0
    try:
        for match in _ESCAPED.finditer(part):
            raw += part[position : match.start()].encode("ascii")
            raw.append(int(match.group(1), 16))
            position = match.end()
        raw += part[position:].encode("ascii")
        text = raw.decode("utf-8")
        canonical = safe_key_part(text)
    except ValueError:  # UnicodeError, an empty part
        canonical, text = None, ""
    if canonical != part:
        raise StorageError(f"{part!r} is not a run id as a storage key component (see safe_key_part)")
    return text


def stage_key(pair: str, run_id: str, stage: str, name: str) -> str:
    """``<pair>/<run_id>/<stage>/<name>`` (``name`` empty: the stage's folder; the run's own prefix is
    :func:`run_prefix`: ``<pair>/<run_id>//`` names no key on S3, and SeaweedFS lists only its first 1,000)."""
    if not stage:
        raise ValueError("a stage key needs a stage; the run's prefix is run_prefix(pair, run_id)")
    return f"{pair}/{safe_key_part(run_id)}/{stage}/{name}"


def run_prefix(pair: str, run_id: str) -> str:
    return f"{pair}/{safe_key_part(run_id)}/"


def local_path(root: Path, relative_key: str) -> Path:
    """Where an object of ``relative_key`` (a key below a downloaded prefix) goes under the local folder ``root``;
    a key that would land outside ``root`` (``..``, an absolute path) or on ``root`` itself is refused, not followed."""
    base = root.resolve()
    target = (base / relative_key).resolve()
    if relative_key.startswith("/") or not target.is_relative_to(base) or target == base:
        raise StorageError(f"object key {relative_key!r} would be written outside {root}; refusing to download it")
    return target


def data_docs_key(pair: str, run_id: str, gate: str) -> str:
    """Where the Data Docs site of one gate of a run starts (``index.html``); the Airflow UI links to it."""
    return stage_key(pair, run_id, "gate", f"data_docs/{gate}/index.html")


#: Where a deployment's Airflow API server serves what a user opens from the UI (the bitextflow plugin's routes).
API_SERVER_PREFIX = "/bitextflow"


def data_docs_path(bucket: str, pair: str, run_id: str, gate: str) -> str:
    """The path, on the Airflow API server, of one gate's Data Docs for one run."""
    return f"{API_SERVER_PREFIX}/data-docs/{bucket}/{data_docs_key(pair, run_id, gate)}"


def release_report_path(bucket: str, pair: str, run_id: str) -> str:
    """The path, on the Airflow API server, of the report of the release a run published."""
    return f"{API_SERVER_PREFIX}/reports/{bucket}/{pair}/{safe_key_part(run_id)}"
