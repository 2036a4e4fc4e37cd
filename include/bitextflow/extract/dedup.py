"""De-duplication of documents within a shard, and of sentences per language.

- Exact: a URL seen before (``duplicate_url``); a main text equal to an earlier one once everything
  but letters is removed (``duplicate_content``), so pages differing only in digits, punctuation or
  spacing (dates, counters, tracking numbers) count as duplicates. The first one is kept.
- Near (ILSP-FC): each document is the list of hashes of its main paragraphs (letters only); two
  documents of the same language whose shared hashes make up more than ``threshold`` of the shorter
  list are near-duplicates, and the longer document is kept (``near_duplicate``).
- Sentences: a sentence whose letters-only form was seen before in the same language.

Only hashes are kept in memory (8 bytes a paragraph), never texts.

Across the shards of a run (:func:`deduplicate_run`, before document alignment): exact letters-only
content (``duplicate_content_cross_shard``) and MinHash LSH near-duplicates (``near_duplicate_lsh``).
"""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from bitextflow.counts import StageCounts
from bitextflow.extract.structure import letters_key

# A paragraph shared by more documents than this (a footer trafilatura let through) is not evidence
# of near-duplication and would make the comparison quadratic.
MAX_POSTINGS = 200


def letters_hash(text: str) -> int:
    """64-bit hash of the letters of ``text`` (0 for a text without letters)."""
    return _key_hash(letters_key(text))


def _key_hash(key: str) -> int:
    if not key:
        return 0
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "big")


class ShardDeduplicator:
    """Feed documents in shard order with :meth:`check_url` and :meth:`add`; ask :meth:`near_duplicates` at the end.

    Paragraph hashes live in two flat arrays (8 + 4 bytes a paragraph), not in Python sets.
    """

    def __init__(self, threshold: float = 0.8):
        self.threshold = threshold
        self._urls: set[str] = set()
        self._contents: set[int] = set()
        self._documents: list[tuple[int, int, int]] = []  # (index, text length, distinct paragraphs)
        self._hashes = array("Q")  # paragraph hash folded with the language
        self._owners = array("i")  # position in _documents

    def check_url(self, url: str) -> str | None:
        """``duplicate_url`` for a URL seen before in the shard, else None (and the URL is remembered)."""
        if url in self._urls:
            return "duplicate_url"
        self._urls.add(url)
        return None

    def add(self, index: int, language: str, paragraph_texts: list[str]) -> str | None:
        """``duplicate_content`` for an exact (letters-only) duplicate, else None; remembers the document."""
        keys = [letters_key(text) for text in paragraph_texts]
        content = _key_hash("".join(keys))  # the letters of the whole text are those of its paragraphs in turn
        if content in self._contents:
            return "duplicate_content"
        self._contents.add(content)
        salt = letters_hash(language)  # documents of different languages never share a key
        hashes = {h ^ salt for h in map(_key_hash, keys) if h}
        if hashes:
            position = len(self._documents)
            self._documents.append((index, sum(len(text) for text in paragraph_texts), len(hashes)))
            self._hashes.extend(hashes)
            self._owners.extend([position] * len(hashes))
        return None

    def near_duplicates(self) -> dict[int, int]:
        """Index of each near-duplicate document -> index of the (longer) document it duplicates."""
        if not self._hashes:
            return {}
        keys = np.frombuffer(self._hashes, dtype=np.uint64)
        owners = np.frombuffer(self._owners, dtype=np.int32)
        order = np.argsort(keys, kind="stable")
        keys, owners = keys[order], owners[order]
        bounds = np.flatnonzero(np.diff(keys)) + 1
        starts, ends = np.concatenate(([0], bounds)), np.concatenate((bounds, [len(keys)]))
        shared: Counter[tuple[int, int]] = Counter()
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            if 2 <= end - start <= MAX_POSTINGS:
                members = owners[start:end].tolist()
                shared.update((a, b) for i, a in enumerate(members) for b in members[i + 1 :])
        dropped: dict[int, int] = {}
        for (a, b), common in sorted(shared.items()):
            (index_a, length_a, size_a), (index_b, length_b, size_b) = self._documents[a], self._documents[b]
            if common / min(size_a, size_b) <= self.threshold:
                continue
            # keep the longer one; on a tie, the earlier one
            loser, winner = (index_a, index_b) if length_a < length_b else (index_b, index_a)
            dropped.setdefault(loser, winner)
        return dropped


class SentenceDeduplicator:
    """Remembers letters-only hashes of sentences per language."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, int]] = set()

    def seen_before(self, language: str, text: str) -> bool:
        key = (language, letters_hash(text))
        if key[1] == 0:
            return False
        if key in self._seen:
            return True
        self._seen.add(key)
        return False


# -- across the shards of a run ----------------------------------------------------------------------
SHINGLE_CHARS = 5


def shingle_hashes(letters: str) -> np.ndarray:
    """32-bit hashes of the distinct ``SHINGLE_CHARS``-letter shingles of a letters-only text.

    Letters, not words: the shingles work the same for scripts written without spaces (Chinese,
    Japanese, Thai), and texts differing only in digits, punctuation or spacing get the same set.
    """
    if not letters:
        return np.zeros(0, dtype=np.uint32)
    points = np.frombuffer(letters.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    width = min(SHINGLE_CHARS, len(points))
    rolling = np.zeros(len(points) - width + 1, dtype=np.uint64)
    for k in range(width):  # polynomial hash of each window; datasketch mixes the bits (fmix) before permuting
        rolling = rolling * np.uint64(1_000_003) + points[k : len(points) - width + 1 + k]
    return np.unique((rolling >> np.uint64(32)) ^ (rolling & np.uint64(0xFFFFFFFF))).astype(np.uint32)


@dataclass
class RunDeduplication:
    kept: pd.DataFrame
    removed: pd.DataFrame  # the documents frame's rows, with drop_reason and duplicate_of set
    counts: StageCounts


def deduplicate_run(documents: pd.DataFrame, threshold: float = 0.8, num_perm: int = 128) -> RunDeduplication:
    """Exact and near-duplicate documents across all the shards of a run (``records.DOCUMENTS`` rows).

    - ``duplicate_url_cross_shard`` (the same URL, so the same ``doc_id``) and
      ``duplicate_content_cross_shard`` (the same letters-only main text) as an earlier document (in the
      order of ``documents``: the shards' order, then the order in the shard), which is kept;
    - ``near_duplicate_lsh``: MinHash (Broder, 1997, "On the resemblance and containment of
      documents") of the letters-only ``SHINGLE_CHARS``-shingles of the main text, candidates from LSH
      banding (datasketch ``MinHashLSH``, per language), confirmed when the estimated Jaccard similarity
      reaches ``threshold``. Documents are visited longest first, so the longer one is always kept.
    """
    from datasketch import MinHash, MinHashLSH

    counts = StageCounts("extract_documents_cross_shard")
    counts.seen(len(documents))
    documents = documents.reset_index(drop=True)
    letters = [
        letters_key("\n".join(p["text"] for p in paragraphs if not p["boilerplate"] and p["type"] != "title"))
        for paragraphs in documents["paragraphs"]
    ]
    reasons = [""] * len(documents)
    duplicate_of = [""] * len(documents)
    first_with: dict[str, int] = {}
    for index, (doc_id, key) in enumerate(zip(documents["doc_id"], letters, strict=True)):
        content = hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest()
        if (first := first_with.setdefault(doc_id, index)) != index:  # the same URL in two shards
            reasons[index], duplicate_of[index] = "duplicate_url_cross_shard", doc_id
        elif key and (first := first_with.setdefault(content, index)) != index:
            reasons[index], duplicate_of[index] = "duplicate_content_cross_shard", documents.at[first, "doc_id"]
    indexes: dict[str, MinHashLSH] = {}
    sketches: dict[str, MinHash] = {}
    for index in sorted(range(len(documents)), key=lambda i: (-len(letters[i]), i)):
        if reasons[index] or not letters[index]:
            continue
        sketch = MinHash(num_perm=num_perm, hashfunc=int)
        sketch.update_batch(shingle_hashes(letters[index]).tolist())
        language = documents.at[index, "language"]
        if language not in indexes:
            indexes[language] = MinHashLSH(threshold=threshold, num_perm=num_perm)
        similar = [(-sketch.jaccard(sketches[other]), other) for other in indexes[language].query(sketch)]
        similar = [(negative, other) for negative, other in similar if -negative >= threshold]
        if similar:  # the most similar one; on a tie the smallest doc_id
            reasons[index], duplicate_of[index] = "near_duplicate_lsh", min(similar)[1]
            continue
        doc_id = documents.at[index, "doc_id"]
        indexes[language].insert(doc_id, sketch)
        sketches[doc_id] = sketch
    dropped = np.array([bool(reason) for reason in reasons], dtype=bool)
    for reason in reasons:
        if reason:
            counts.drop(reason)
    counts.keep(int((~dropped).sum()))
    removed = documents[dropped].copy()
    removed["drop_reason"] = [reason for reason in reasons if reason]
    removed["duplicate_of"] = [other for other, reason in zip(duplicate_of, reasons, strict=True) if reason]
    return RunDeduplication(documents[~dropped].reset_index(drop=True), removed.reset_index(drop=True), counts)
