"""Sentence vectors stored once per run and looked up by the stages that use them.

A run embeds each sentence once (the ``embed`` stage) and stores the vectors compactly: float16 (768 bytes for
multilingual-e5-small's 384 dimensions; a cosine of 0.99999 to the float32 vector), keyed by a 64-bit hash of the
sentence's text. :class:`VectorTable` serves them through the encoder protocol (``encode(texts) -> rows``), so an
aligner that takes an encoder takes the table instead, and sentence pairs carry their sides' vectors to the scorer
and the classifier (:func:`bead_vector` makes a side of several sentences).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from bitextflow.models.encoder import SentenceEncoder

#: Bytes a 64-bit text hash takes: collisions stay out of reach (one in 10**19 pairs) at 8 bytes a sentence.
HASH_BYTES = 8
STORED_DTYPE = np.dtype("<f2")


def text_hash(text: str) -> bytes:
    """The identity of a sentence's text: 8 bytes of BLAKE2b over its stripped UTF-8 (aligners strip what they embed)."""
    return hashlib.blake2b(text.strip().encode("utf-8", "surrogatepass"), digest_size=HASH_BYTES).digest()


def pack(vectors: np.ndarray) -> list[bytes]:
    """Each row as float16 bytes (the stored form)."""
    stored = np.ascontiguousarray(vectors, dtype=STORED_DTYPE)
    return [row.tobytes() for row in stored]


def unpack(blobs: Sequence[bytes]) -> np.ndarray:
    """Stored rows back as a float32 matrix, one row per blob."""
    if not len(blobs):
        return np.zeros((0, 0), dtype=np.float32)
    return np.frombuffer(b"".join(blobs), dtype=STORED_DTYPE).reshape(len(blobs), -1).astype(np.float32)


def pair_vectors(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray] | None:
    """The two sides' vectors of a frame of sentence pairs (``vector_a``, ``vector_b``), or None when a pair has none (a
    run that does not embed once, a pair from before the ``embed`` stage)."""
    if not {"vector_a", "vector_b"} <= set(pairs.columns) or pairs[["vector_a", "vector_b"]].isna().any(axis=None):
        return None
    return unpack(list(pairs["vector_a"])), unpack(list(pairs["vector_b"]))


def bead_vector(vectors: np.ndarray) -> np.ndarray:
    """The vector of a side made of several sentences: the normalised mean of theirs, as the hybrid aligner scores an
    overlap (:mod:`bitextflow.align.hybrid`), so that a sentence is embedded once however it is aligned."""
    mean = vectors.mean(axis=0)
    return (mean / max(float(np.linalg.norm(mean)), 1e-12)).astype(np.float32)


def embeddings_frame(texts: Sequence[str], vectors: np.ndarray) -> pd.DataFrame:
    """A table of ``texts``' vectors (the ``SENTENCE_EMBEDDINGS`` columns), ordered by hash for deterministic bytes."""
    frame = pd.DataFrame({"text_hash": [text_hash(text) for text in texts], "vector": pack(vectors)})
    return frame.sort_values("text_hash", kind="stable", ignore_index=True)


class VectorTable:
    """Stored sentence vectors as an encoder: ``encode(texts)`` returns each text's row.

    A text the table lacks (Vecalign's overlaps of several sentences, a text changed after the run embedded it) is
    embedded by ``fallback``, the real encoder, made on first need and counted in ``misses``; with no fallback a
    missing text is an error naming how many.
    """

    def __init__(
        self, hashes: Sequence[bytes], vectors: np.ndarray, fallback: Callable[[], SentenceEncoder] | None = None
    ) -> None:
        self.rows = {digest: row for row, digest in enumerate(hashes)}
        self.vectors = vectors
        self._fallback = fallback
        self._encoder: SentenceEncoder | None = None
        self.misses = 0

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, fallback: Callable[[], SentenceEncoder] | None = None) -> VectorTable:
        return cls(list(frame["text_hash"]), unpack(list(frame["vector"])), fallback)

    def __len__(self) -> int:
        return len(self.rows)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self.rows.get(text_hash(text)) for text in texts]
        missing = [index for index, row in enumerate(rows) if row is None]
        dim = self.vectors.shape[1] if len(self.vectors) else 0
        found = self.vectors[[row for row in rows if row is not None]]
        if not missing:
            return found.reshape(len(texts), dim)
        if self._fallback is None:
            raise KeyError(f"{len(missing)} of {len(texts)} texts have no stored vector")
        if self._encoder is None:
            self._encoder = self._fallback()
        self.misses += len(missing)
        encoded = np.asarray(self._encoder.encode([texts[index] for index in missing]), dtype=np.float32)
        result = np.empty((len(texts), encoded.shape[1]), dtype=np.float32)
        present = [index for index, row in enumerate(rows) if row is not None]
        result[present] = found
        result[missing] = encoded
        return result
