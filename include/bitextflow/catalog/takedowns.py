"""The deployment's takedown list, kept in its bucket at :data:`TAKEDOWNS_KEY` (``takedowns/list.jsonl``).

One list per deployment (bucket), for every pair: the gate of every run sets aside what it names, and
``bitextflow releases redact`` publishes a version of an existing release without it. The format is
:mod:`bitextflow.redaction.takedowns`; ``bitextflow takedowns add`` appends entries, or the operator edits the
object directly (an invalid line fails the next run's gate, naming the line).
"""

from __future__ import annotations

from collections.abc import Sequence

from bitextflow.redaction.takedowns import TakedownEntry, TakedownList
from bitextflow.storage import ObjectStore

TAKEDOWNS_KEY = "takedowns/list.jsonl"


def read_takedowns(store: ObjectStore) -> TakedownList:
    """The deployment's list; empty when it has none."""
    if not store.exists(TAKEDOWNS_KEY):
        return TakedownList()
    return TakedownList.parse(store.get_bytes(TAKEDOWNS_KEY), store.uri(TAKEDOWNS_KEY))


def add_takedowns(store: ObjectStore, entries: Sequence[TakedownEntry]) -> TakedownList:
    """The list with ``entries`` appended, written back; returns it. (Two operators adding at the same moment can
    lose one addition: S3 has no portable compare-and-swap; add entries from one place.)"""
    updated = read_takedowns(store).with_entries(entries)
    store.put_bytes(TAKEDOWNS_KEY, updated.to_jsonl(), "application/jsonl; charset=utf-8")
    return updated
