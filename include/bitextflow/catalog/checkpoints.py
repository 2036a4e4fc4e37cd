"""Crawl checkpoints in the object store, under the run's ``crawl/`` prefix.

- ``crawl/checkpoint.json.gz``: the state (frontier, seen-set, hosts, counts, scorer, WARC position);
  written last at every checkpoint, so it is the commit point;
- ``crawl/log/part-NNNNN.jsonl.gz``: the crawl-log lines of each checkpoint interval, merged into
  ``crawl/crawl-log.jsonl.gz`` when the crawl ends;
- ``crawl/seen/part-NNNNN.txt.gz``: the URLs first seen in each checkpoint interval, one per line (the
  seen-set is their union: a checkpoint writes only what is new).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from typing import Any

from bitextflow.storage import ObjectStore
from bitextflow.storage.layout import CRAWL_LOGS
from bitextflow.storage.tables import stage_outputs

STATE_NAME = "checkpoint.json.gz"
LOG_PART = "log/part-{:05d}.jsonl.gz"
SEEN_PART = "seen/part-{:05d}.txt.gz"


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return gzip.compress(lines.encode("utf-8"), mtime=0)


class ObjectStoreCheckpoints:
    """A :class:`bitextflow.crawl.crawl_state.CheckpointStore` in the object store; ``key(name)`` gives the object key."""

    def __init__(self, store: ObjectStore, key: Callable[[str], str]):
        self.store = store
        self.key = key

    def load(self) -> dict[str, Any] | None:
        key = self.key(STATE_NAME)
        if not self.store.exists(key):
            return None
        return json.loads(gzip.decompress(self.store.get_bytes(key)))

    def save(self, state: dict[str, Any]) -> None:
        data = gzip.compress(json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), mtime=0)
        self.store.put_bytes(self.key(STATE_NAME), data, "application/gzip")

    def save_log(self, part: int, entries: list[dict[str, Any]]) -> None:
        self.store.put_bytes(self.key(LOG_PART.format(part)), _jsonl(entries), "application/gzip")

    def save_seen(self, part: int, urls: list[str]) -> None:
        # canonical URLs hold no line break (percent-encoded), so one per line is unambiguous
        data = gzip.compress("".join(url + "\n" for url in urls).encode("utf-8"), mtime=0)
        self.store.put_bytes(self.key(SEEN_PART.format(part)), data, "application/gzip")

    def load_seen(self, part: int) -> list[str]:
        text = gzip.decompress(self.store.get_bytes(self.key(SEEN_PART.format(part)))).decode("utf-8")
        return [url for url in text.split("\n") if url]

    def merged_log(self, parts: int) -> bytes:
        """Every log part, in order, as one gzip JSON-lines object."""
        chunks = [gzip.decompress(self.store.get_bytes(self.key(LOG_PART.format(i)))) for i in range(parts)]
        return gzip.compress(b"".join(chunks), mtime=0)


def crawl_log(store: ObjectStore, pair: str, run_id: str) -> Iterator[dict[str, Any]]:
    """The crawl-log lines of a run, every host group's in turn, streamed (none when the run ingested WARCs)."""
    for key in stage_outputs(store, pair, run_id, "crawl", CRAWL_LOGS):
        with store.open_read(key) as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
            yield from (json.loads(line) for line in lines if line.strip())


class CrawlLog:
    """A run's crawl log (:func:`crawl_log`), streamed from the store each time it is iterated; false when the run
    has none (it ingested WARCs, or its outputs are gone)."""

    def __init__(self, store: ObjectStore, pair: str, run_id: str):
        self.store, self.pair, self.run_id = store, pair, run_id

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return crawl_log(self.store, self.pair, self.run_id)

    def __bool__(self) -> bool:
        return bool(stage_outputs(self.store, self.pair, self.run_id, "crawl", CRAWL_LOGS))
