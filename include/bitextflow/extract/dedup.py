"""De-duplication of documents within a shard, and of sentences per language.

- Exact: a URL seen before (``duplicate_url``); a main text equal to an earlier one once everything
  but letters is removed (``duplicate_content``), so pages differing only in digits, punctuation or
  spacing (dates, counters, tracking numbers) count as duplicates. The first one is kept.
- Near (ILSP-FC): each document is the list of hashes of its main paragraphs (letters only); two
  documents of the same language whose shared hashes make up more than ``threshold`` of the shorter
  list are near-duplicates, and the longer document is kept (``near_duplicate``). A page partly translated
  into another language is not of its original's language here (:func:`comparison_language`).
- Sentences: a sentence whose letters-only form was seen before in the same language.

Only hashes are kept in memory (8 bytes a paragraph), never texts.

Across the shards of a run, before document alignment: the same URL twice, exact letters-only content
(``duplicate_content_cross_shard``) and MinHash LSH near-duplicates (``near_duplicate_lsh``), found
across site partitions with bounded memory: each partition's documents are sketched
(:func:`sketch_documents`) where they are gathered, and the search (:func:`find_run_duplicates`) reads
the run's sketches without their signatures (about 100 bytes a document), fetching signatures only
for the documents that share an LSH band.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from bitextflow.counts import StageCounts
from bitextflow.extract.structure import letters_key
from bitextflow.text.languages import UNKNOWN, normalise_language
from bitextflow.text.lengths import PARTLY_TRANSLATED_SHARE, language_shares

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
        """``duplicate_content`` for an exact (letters-only) duplicate, else None; remembers the document under
        ``language``, the one it is compared under (:func:`comparison_language`)."""
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


#: A document's MinHash sketch: what the run-level search reads of it (the signature only for candidates).
SKETCHES = pa.schema(
    [
        ("doc_id", pa.string()),
        ("language", pa.string()),  # the language it is compared under (:func:`comparison_language`)
        ("order", pa.int64()),  # the document's place in the run: shard, then row (the first of twins is kept)
        ("letters", pa.int64()),  # length of the letters-only main text (the longer of near-twins is kept)
        ("content", pa.binary(16)),  # digest of that text; null for a text without letters
        ("bands", pa.list_(pa.uint64())),  # one hash per LSH band of the signature; empty without letters
        ("signature", pa.binary()),  # the MinHash values (uint64, little-endian); empty without letters
    ]
)
SEARCH_COLUMNS = ["doc_id", "language", "order", "letters", "content", "bands"]  # what the search reads


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows per band) that datasketch's ``MinHashLSH`` picks for ``threshold`` and ``num_perm``, so that a
    search over stored bands finds the candidates its index would."""
    from datasketch import MinHashLSH

    index = MinHashLSH(threshold=threshold, num_perm=num_perm)
    return index.b, index.r


def comparison_language(language: str, parts: Iterable[tuple[str, str]]) -> str:
    """The language under which a document is compared with others for near-duplicates: its own, with each other
    language that holds :data:`~bitextflow.text.lengths.PARTLY_TRANSLATED_SHARE` of its main text (``en+ja``) from its
    main paragraphs' ``(text, language)``. A partly translated page shares most of its text with its original and is
    identified as the original's language, yet it is the original's translation, which alignment pairs: it is never
    set aside as a copy (the Japanese installation guide's ``ch04s03.html``, 14% Japanese, was)."""
    shares = language_shares((text, normalise_language(code)) for text, code in parts)
    own = normalise_language(language)
    others = sorted(code for code, share in shares.items() if code not in (own, UNKNOWN) and share >= PARTLY_TRANSLATED_SHARE)
    return "+".join([language, *others])


def main_text_letters(paragraphs: Any) -> str:
    """The letters-only main text of a document's paragraphs (boilerplate and title left out)."""
    return letters_key("\n".join(p["text"] for p in paragraphs if _main(p)))


def _main(paragraph: Mapping[str, Any]) -> bool:
    return not paragraph["boilerplate"] and paragraph["type"] != "title"


def sketch_documents(documents: pa.Table, orders: Sequence[int], threshold: float = 0.8, num_perm: int = 128) -> pa.Table:
    """:data:`SKETCHES` rows of ``documents`` (``records.DOCUMENTS`` rows) whose places in the run are ``orders``.

    MinHash (Broder, 1997, "On the resemblance and containment of documents") of the letters-only
    ``SHINGLE_CHARS``-shingles of the main text, cut into LSH bands as datasketch's ``MinHashLSH`` cuts them.
    """
    from datasketch import MinHash

    bands, rows = lsh_bands(threshold, num_perm)
    template = MinHash(num_perm=num_perm, hashfunc=int)  # its permutations, drawn once instead of per document
    columns: dict[str, list[Any]] = {name: [] for name in SKETCHES.names}
    every_paragraph = documents["paragraphs"].to_pylist()
    texts = (main_text_letters(paragraphs) for paragraphs in every_paragraph)
    languages = [
        comparison_language(language, ((p["text"], p["language"]) for p in paragraphs if _main(p)))
        for language, paragraphs in zip(documents["language"].to_pylist(), every_paragraph, strict=True)
    ]
    doc_ids = documents["doc_id"].to_pylist()
    for order, doc_id, language, letters in zip(orders, doc_ids, languages, texts, strict=True):
        band_hashes: list[int] = []
        signature = b""
        if letters:
            sketch = MinHash(num_perm=num_perm, hashfunc=int, permutations=template.permutations, scheme=template.scheme)
            sketch.update_batch(shingle_hashes(letters).tolist())
            values = sketch.hashvalues.astype("<u8")
            signature = values.tobytes()
            band_hashes = [_band_hash(values[band * rows : (band + 1) * rows]) for band in range(bands)]
        columns["doc_id"].append(doc_id)
        columns["language"].append(language)
        columns["order"].append(int(order))
        columns["letters"].append(len(letters))
        columns["content"].append(hashlib.blake2b(letters.encode("utf-8"), digest_size=16).digest() if letters else None)
        columns["bands"].append(band_hashes)
        columns["signature"].append(signature)
    return pa.table(columns, schema=SKETCHES)


def _band_hash(values: np.ndarray) -> int:
    return int.from_bytes(hashlib.blake2b(values.tobytes(), digest_size=8).digest(), "little")


@dataclass(frozen=True)
class Duplicate:
    """Why a document is set aside across the run, and the document kept instead."""

    reason: str
    duplicate_of: str


SignatureLookup = Callable[[set[str]], dict[str, np.ndarray]]


def find_run_duplicates(sketches: pa.Table, signatures: SignatureLookup, threshold: float = 0.8) -> dict[int, Duplicate]:
    """The documents of a run to set aside, by ``order``, from their sketches (:data:`SKETCHES` columns; the
    signature is not needed: ``signatures`` fetches those of the candidates only, so memory follows the run's
    near-duplicates, not its documents).

    - ``duplicate_url_cross_shard`` (the same URL, so the same ``doc_id``) and ``duplicate_content_cross_shard``
      (the same letters-only main text) as a document earlier in the run (``order``), which is kept;
    - ``near_duplicate_lsh``: documents of one language visited longest first (then in run order); a document
      whose candidates among those kept so far (sharing an LSH band) include one whose estimated Jaccard
      similarity reaches ``threshold`` is a near-duplicate of the most similar (on a tie, the smallest doc_id).
      This is what inserting the kept ones into datasketch's ``MinHashLSH`` and querying it finds.
    """
    frame = sketches.select(SEARCH_COLUMNS).to_pandas().sort_values("order", kind="stable").reset_index(drop=True)
    found: dict[int, Duplicate] = {}
    repeated_url = frame["doc_id"].duplicated()
    for order, doc_id in zip(frame.loc[repeated_url, "order"], frame.loc[repeated_url, "doc_id"], strict=True):
        found[int(order)] = Duplicate("duplicate_url_cross_shard", doc_id)
    frame = frame[~repeated_url]
    with_content = frame[frame["content"].notna()]
    first_of_content = with_content.drop_duplicates("content").set_index("content")["doc_id"]
    repeated = with_content[with_content["content"].duplicated()]
    for order, content in zip(repeated["order"], repeated["content"], strict=True):
        found[int(order)] = Duplicate("duplicate_content_cross_shard", first_of_content[content])
    frame = frame[(frame["letters"] > 0) & ~frame["order"].isin(list(found))]
    # visiting order: longest first, then run order
    frame = frame.sort_values(["letters", "order"], ascending=[False, True], kind="stable").reset_index(drop=True)
    earlier = _earlier_candidates(frame)
    if not earlier:
        return found
    doc_ids, orders = frame["doc_id"].tolist(), frame["order"].tolist()
    involved = set(earlier) | {other for others in earlier.values() for other in others}
    values = signatures({doc_ids[rank] for rank in involved})
    kept: set[int] = set()
    for rank in range(len(frame)):
        similar = []
        for other in earlier.get(rank, ()):
            if other in kept:
                agreeing = np.count_nonzero(values[doc_ids[rank]] == values[doc_ids[other]])
                if (similarity := agreeing / len(values[doc_ids[rank]])) >= threshold:
                    similar.append((-similarity, doc_ids[other]))
        if similar:
            found[int(orders[rank])] = Duplicate("near_duplicate_lsh", min(similar)[1])
        else:
            kept.add(rank)
    return found


def _earlier_candidates(frame: pd.DataFrame) -> dict[int, set[int]]:
    """For each visiting rank (row of ``frame``), the earlier ranks that share an LSH band in its language."""
    if frame.empty:
        return {}
    bands = np.array(frame["bands"].tolist(), dtype=np.uint64)
    languages = pd.factorize(frame["language"])[0].astype(np.uint64)
    ranks = np.arange(len(frame))
    earlier: dict[int, set[int]] = {}
    for band in range(bands.shape[1]):
        order = np.lexsort((ranks, bands[:, band], languages))
        key_language, key_band = languages[order], bands[order, band]
        starts = np.flatnonzero(np.r_[True, (key_language[1:] != key_language[:-1]) | (key_band[1:] != key_band[:-1])])
        ends = np.r_[starts[1:], len(order)]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            members = order[start:end].tolist()  # in visiting order
            for position in range(1, len(members)):
                earlier.setdefault(members[position], set()).update(members[:position])
    return earlier


@dataclass
class RunDeduplication:
    kept: pd.DataFrame
    removed: pd.DataFrame  # the documents frame's rows, with drop_reason and duplicate_of set
    counts: StageCounts


def deduplication_counts(documents: int, duplicates: Iterable[Duplicate]) -> StageCounts:
    """The counts of the run-level pass: every document in, the duplicates dropped by reason, the rest kept."""
    counts = StageCounts("extract_documents_cross_shard")
    counts.seen(documents)
    dropped = 0
    for duplicate in duplicates:
        counts.drop(duplicate.reason)
        dropped += 1
    counts.keep(documents - dropped)
    return counts


def set_aside(
    documents: pd.DataFrame, orders: Iterable[int], found: Mapping[int, Duplicate]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``documents`` (whose rows have ``orders``) split into those kept and those in ``found``, the latter with
    ``drop_reason`` and ``duplicate_of``."""
    decisions = [found.get(int(order)) for order in orders]
    dropped = np.array([decision is not None for decision in decisions], dtype=bool)
    removed = documents[dropped].copy()
    removed["drop_reason"] = [decision.reason for decision in decisions if decision is not None]
    removed["duplicate_of"] = [decision.duplicate_of for decision in decisions if decision is not None]
    return documents[~dropped].reset_index(drop=True), removed.reset_index(drop=True)


def deduplicate_run(documents: pd.DataFrame, threshold: float = 0.8, num_perm: int = 128) -> RunDeduplication:
    """Exact and near-duplicate documents across all the shards of a run (``records.DOCUMENTS`` rows, in run order),
    in one process: :func:`sketch_documents` and :func:`find_run_duplicates` on a frame (tests, small runs)."""
    documents = documents.reset_index(drop=True)
    table = pa.Table.from_pandas(documents[["doc_id", "language", "paragraphs"]], preserve_index=False)
    sketches = sketch_documents(table, range(len(documents)), threshold, num_perm)
    by_id = dict(
        zip(
            sketches["doc_id"].to_pylist(),
            (np.frombuffer(raw, dtype="<u8") for raw in sketches["signature"].to_pylist()),
            strict=True,
        )
    )
    found = find_run_duplicates(sketches, lambda wanted: {doc_id: by_id[doc_id] for doc_id in wanted}, threshold)
    kept, removed = set_aside(documents, range(len(documents)), found)
    return RunDeduplication(kept, removed, deduplication_counts(len(documents), found.values()))
