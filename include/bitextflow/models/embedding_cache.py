"""A machine's cache of sentence vectors: a sentence is embedded once on a machine, not once per run.

Runs embed the same text again and again: a pair's runs over pages that did not change (a scheduled re-crawl, a
backfill, a rerun with another aligner or threshold), and the pairs that share a language (the English side of en-es
and of en-fr is the same text, and multilingual-e5 embeds a sentence the same whatever its translation). The ``embed``
stage looks each distinct sentence of a shard up here first and encodes only the rest (``embed.cache``).

One SQLite file per encoder (:attr:`SentenceEncoder.identity`: the model folder, its weights' size and modification
time, the runtime and its precision, the input prefix), a row per text: its 8-byte hash
(:func:`bitextflow.models.vectors.text_hash`) and its float16 vector, the bytes a run stores. SQLite in WAL mode lets
the tasks of a machine read and write at once; the folder must be on a local disk, since SQLite's locks do not hold
over NFS. Past ``max_bytes`` the oldest rows go first. A cache that cannot be read or written is a warning, never a
failed task: the stage encodes what the cache could not give.

What a cached vector is: the one the encoder made for that text in an earlier batch. The ``onnx-int8`` runtime
quantizes a batch's activations with one scale, so the same text in another batch comes out slightly apart (a cosine
of 0.9987 on average, 0.997 at worst, over 600 of the local site's sentences; docs/architecture.md): a run on a warm
cache may decide a borderline pair otherwise than a cold run. Within a run, and for a task run again, a warm cache
makes every vector the same.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from bitextflow.models.vectors import pack, text_hash, unpack

if TYPE_CHECKING:
    from bitextflow.models.encoder import SentenceEncoder

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Hashes per SELECT: under SQLite's bound on a statement's parameters (999 before 3.32).
_LOOKUP_CHUNK = 900
#: How long a writer waits for another task's write to end before giving up on the cache for this batch.
_BUSY_TIMEOUT_S = 60
_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (text_hash BLOB PRIMARY KEY, vector BLOB NOT NULL)"


class EmbeddingCache:
    """Stored vectors of one encoder, by text hash, in ``folder/<identity>.sqlite``, at most ``max_bytes`` of them."""

    def __init__(self, folder: Path, identity: str, max_bytes: int) -> None:
        self.path = Path(folder) / f"{identity}.sqlite"
        self.max_bytes = max_bytes
        self.usable = True

    def _using(self, action: str, work: Callable[[sqlite3.Connection], T], otherwise: T) -> T:
        """``work`` done in one transaction, or ``otherwise`` once the cache failed (the warning names the file and the
        way out)."""
        if not self.usable:
            return otherwise
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)) as connection:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                done = work(connection)
                connection.commit()
                return done
        except (sqlite3.Error, OSError) as exc:
            self.usable = False
            log.warning(
                "embedding cache %s cannot be %s (%s): embedding without it; delete the file if it is damaged, or set "
                "embed.cache: false", self.path, action, exc,
            )  # fmt: skip
            return otherwise

    def get(self, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
        """The stored vectors (float16 bytes) of those of ``hashes`` the cache has."""

        def lookup(connection: sqlite3.Connection) -> dict[bytes, bytes]:
            found: dict[bytes, bytes] = {}
            for start in range(0, len(hashes), _LOOKUP_CHUNK):
                chunk = hashes[start : start + _LOOKUP_CHUNK]
                query = f"SELECT text_hash, vector FROM vectors WHERE text_hash IN ({','.join('?' * len(chunk))})"
                found.update(connection.execute(query, chunk).fetchall())
            return found

        return self._using("read", lookup, {})

    def put(self, hashes: Sequence[bytes], vectors: Sequence[bytes]) -> None:
        """Store vectors (a text already stored keeps its vector), then drop the oldest rows past ``max_bytes``."""

        def store(connection: sqlite3.Connection) -> None:
            connection.executemany(
                "INSERT OR IGNORE INTO vectors (text_hash, vector) VALUES (?, ?)", zip(hashes, vectors, strict=True)
            )
            page_size, pages, free = (
                connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_size", "page_count", "freelist_count")
            )
            excess = (pages - free) * page_size - self.max_bytes
            if excess > 0:
                # a row is about a vector and a hash long, plus the hash's index entry
                oldest = excess // (len(vectors[0]) + 2 * len(hashes[0])) + 1
                connection.execute(
                    "DELETE FROM vectors WHERE rowid IN (SELECT rowid FROM vectors ORDER BY rowid LIMIT ?)", (oldest,)
                )
                log.info(
                    "embedding cache %s: dropped its %d oldest vectors to stay under %d bytes", self.path, oldest, self.max_bytes
                )

        if hashes:
            self._using("written", store, None)


def encode_through_cache(encoder: SentenceEncoder, texts: Sequence[str], cache: EmbeddingCache | None) -> tuple[np.ndarray, int]:
    """The vectors of the distinct ``texts``, the cache's where it has them and the encoder's for the rest, which it
    then keeps; with how many came from the cache. Rows from the cache are its float16 as float32: they store as they
    were stored."""
    if cache is None:
        return encoder.encode(texts), 0
    hashes = [text_hash(text) for text in texts]
    stored = cache.get(hashes)
    missing = [index for index, digest in enumerate(hashes) if digest not in stored]
    made = pack(encoder.encode([texts[index] for index in missing]))
    cache.put([hashes[index] for index in missing], made)
    stored.update(zip((hashes[index] for index in missing), made, strict=True))
    return unpack([stored[digest] for digest in hashes]).reshape(len(texts), encoder.dim), len(texts) - len(missing)
