"""The frontier: URLs waiting to be fetched, one priority queue per host, serialisable for checkpoints.

Order within a host: seeds, sitemaps and script files first, then the declared language versions of fetched pages (promoted by
:meth:`Frontier.promote`), then higher priority, then first come (so equal priorities are breadth first). A priority can be raised or lowered while the URL waits (a scorer learns something);
the heap keeps the old item, which is skipped when it surfaces (lazy deletion).
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Entry:
    url: str
    host: str
    depth: int
    parent: str | None
    priority: float
    seed: bool = False
    predicted_language: str = ""
    redirects: list[str] = field(default_factory=list)  # URLs that redirected to this one, in order
    seq: int = 0
    sitemap: bool = False  # a sitemap to read, not a page
    declared: bool = False  # the declared language version of a fetched page
    script: bool = False  # a script file to read links from (crawl.script_links), not a page

    @property
    def resource(self) -> bool:
        """A file the crawl reads URLs from (a sitemap, a script), not a page."""
        return self.sitemap or self.script

    def sort_key(self) -> tuple[int, float, int]:
        return (0 if self.seed or self.resource else 1 if self.declared else 2, -self.priority, self.seq)


class Frontier:
    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._heaps: dict[str, list[tuple[int, float, int, str]]] = {}
        self._waiting: Counter[str] = Counter()  # URLs waiting per host
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, url: str) -> bool:
        return url in self._entries

    def waiting(self, host: str) -> int:
        """How many URLs of ``host`` wait (``crawl.max_frontier_per_host`` bounds it)."""
        return self._waiting[host]

    def get(self, url: str) -> Entry | None:
        return self._entries.get(url)

    def _push_item(self, entry: Entry) -> None:
        self._seq += 1
        entry.seq = self._seq
        heapq.heappush(self._heaps.setdefault(entry.host, []), (*entry.sort_key(), entry.url))

    def push(self, entry: Entry) -> None:
        if entry.url in self._entries:
            raise ValueError(f"{entry.url} is already queued")
        self._entries[entry.url] = entry
        self._waiting[entry.host] += 1
        self._push_item(entry)

    def reprioritise(self, url: str, priority: float) -> None:
        entry = self._entries.get(url)
        if entry is not None and entry.priority != priority:
            entry.priority = priority
            self._push_item(entry)

    def promote(self, url: str) -> bool:
        """Put a waiting URL ahead of every URL of its host that is neither a seed nor a sitemap (a fetched page
        declares it as its version in the other language); False when it is not waiting."""
        entry = self._entries.get(url)
        if entry is None:
            return False
        if not entry.declared:
            entry.declared = True
            self._push_item(entry)
        return True

    def _clean_top(self, host: str) -> tuple[int, float, int, str] | None:
        heap = self._heaps.get(host)
        while heap:
            rank, negative, seq, url = heap[0]
            entry = self._entries.get(url)
            if entry is not None and entry.seq == seq:
                return heap[0]
            heapq.heappop(heap)
        self._heaps.pop(host, None)
        return None

    def peek_key(self, host: str) -> tuple[int, float, int] | None:
        """Sort key of the host's next URL (lower is sooner), or None when the host has none."""
        top = self._clean_top(host)
        return None if top is None else top[:3]

    def peek(self, host: str) -> Entry | None:
        """The host's next URL, left in place."""
        top = self._clean_top(host)
        return None if top is None else self._entries[top[3]]

    def pop(self, host: str) -> Entry | None:
        top = self._clean_top(host)
        if top is None:
            return None
        heapq.heappop(self._heaps[host])
        self._waiting[host] -= 1
        return self._entries.pop(top[3])

    def hosts(self) -> list[str]:
        return list(self._heaps)

    def drop_host(self, host: str) -> list[Entry]:
        """Remove and return every URL waiting for ``host``."""
        dropped = [entry for entry in self._entries.values() if entry.host == host]
        for entry in dropped:
            del self._entries[entry.url]
        self._heaps.pop(host, None)
        self._waiting.pop(host, None)
        return dropped

    def drain(self) -> list[Entry]:
        """Remove and return every waiting URL (end of the crawl)."""
        entries = list(self._entries.values())
        self._entries.clear()
        self._heaps.clear()
        self._waiting.clear()
        return entries

    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    # -- checkpoints --------------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        ordered = sorted(self._entries.values(), key=lambda e: e.seq)
        return {"seq": self._seq, "entries": [asdict(entry) for entry in ordered]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Frontier:
        frontier = cls()
        for data in state["entries"]:
            entry = Entry(**data)
            frontier._entries[entry.url] = entry
            frontier._waiting[entry.host] += 1
            heapq.heappush(frontier._heaps.setdefault(entry.host, []), (*entry.sort_key(), entry.url))
        frontier._seq = max(state["seq"], max((e.seq for e in frontier._entries.values()), default=0))
        return frontier
