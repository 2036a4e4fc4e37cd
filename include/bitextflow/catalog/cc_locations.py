"""Where a Common Crawl index row says its record is (``warc_filename``, ``warc_record_offset``,
``warc_record_length``), checked before anything is fetched: the index is remote data, and a row naming ``../``, a
negative offset or a length S3 cannot serve as a range (answered with the whole object) is refused and counted by
reason (docs/security.md). Once fetched, each record's place in the run's WARC shard is kept beside the shard with
the row that located it (:func:`shard_locations`, :func:`index_records`), so that a released document names its Common
Crawl record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bitextflow.config import MAX_BODY_BYTES
from bitextflow.counts import StageCounts
from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import fetched_locations_key

#: The index columns that locate a record.
LOCATION = ["warc_filename", "warc_record_offset", "warc_record_length"]
#: A ``warc_filename`` fetched: a key relative to ``crawl.index.warc_root`` of plain segments (none empty, none ``.``
#: or ``..``, no escape or backslash) ending ``.warc.gz`` (each record its own gzip member: the shards join them), as
#: Common Crawl's ``crawl-data/CC-MAIN-.../warc/CC-MAIN-...-00000.warc.gz``. Linear in RE2 and in Python's ``re``.
WARC_FILENAME = r"^(?:[A-Za-z0-9_][A-Za-z0-9_.=+-]*/)*[A-Za-z0-9_][A-Za-z0-9_.=+-]*\.warc\.gz$"
WARC_FILENAME_MAX = 1024
_WARC_FILENAME = re.compile(WARC_FILENAME)


def location_problem(filename: object, offset: object, length: object, max_length: int = MAX_BODY_BYTES) -> str | None:
    """Why one index row's record may not be fetched (a reason counted), else None: its ``warc_filename`` is no plain
    relative ``.warc.gz`` key (:data:`WARC_FILENAME`), its offset is negative or missing, its length is missing, zero or
    negative (a range S3 cannot read, answered with the whole object) or longer than ``max_length``."""
    if not isinstance(filename, str) or len(filename) > WARC_FILENAME_MAX or not _WARC_FILENAME.fullmatch(filename):
        return "index_warc_filename_invalid"
    if not isinstance(offset, int) or offset < 0:
        return "index_offset_invalid"
    if not isinstance(length, int) or length <= 0:
        return "index_length_invalid"
    if length > max_length:
        return "index_length_too_large"
    return None


def location_verdicts(rows: pa.Table, max_length: int) -> pa.Array:
    """:func:`location_problem` of every row of ``rows`` (``warc_filename``, ``warc_record_offset``,
    ``warc_record_length`` columns) at once: null where the record may be fetched, else the reason."""
    name, offset, length = (rows[column] for column in LOCATION)
    none = pa.scalar(None, pa.string())
    verdict = pc.if_else(pc.greater(length, max_length).fill_null(False), "index_length_too_large", none)
    verdict = pc.if_else(pc.less_equal(length, 0).fill_null(True), "index_length_invalid", verdict)
    verdict = pc.if_else(pc.less(offset, 0).fill_null(True), "index_offset_invalid", verdict)
    named = pc.and_(pc.match_substring_regex(name, WARC_FILENAME), pc.less_equal(pc.utf8_length(name), WARC_FILENAME_MAX))
    return pc.if_else(named.fill_null(False), verdict, "index_warc_filename_invalid")


def located(rows: pa.Table, max_length: int, counts: StageCounts) -> pa.Table:
    """``rows`` whose records may be fetched (:func:`location_verdicts`); the others dropped from ``counts`` by reason."""
    verdicts = location_verdicts(rows, max_length)
    for reason, n in Counter(verdicts.drop_null().to_pylist()).items():
        counts.drop(reason, n)
    return rows.filter(pc.is_null(verdicts))


def shard_locations(kept: Sequence[tuple[Mapping[str, Any], bytes]]) -> list[dict[str, Any]]:
    """The records of a shard made of ``kept`` (each index row and the bytes fetched for it, in shard order): each
    record's offset in the shard and where the index says it is."""
    located, offset = [], 0
    for row, data in kept:
        located.append({"offset": offset} | {column: row[column] for column in LOCATION})
        offset += len(data)
    return located


def index_records(store: ObjectStore, warc_key: str) -> dict[int, dict[str, Any]]:
    """The Common Crawl record of each record of a fetched shard, by its offset in the shard (``{}`` for a shard
    fetched before the locations were kept, or not fetched from an index): ``warc_filename``, ``offset``, ``length``."""
    key = fetched_locations_key(warc_key)
    if not store.exists(key):
        return {}
    return {
        int(entry["offset"]): {
            "warc_filename": entry["warc_filename"],
            "offset": int(entry["warc_record_offset"]),
            "length": int(entry["warc_record_length"]),
        }
        for entry in store.get_json(key)["records"]
    }
