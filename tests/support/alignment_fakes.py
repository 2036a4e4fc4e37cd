"""Deterministic fakes shared by the sentence aligners' tests (test_align_embedding, test_align_hybrid)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

#: Every 97th source sentence (from the 6th) has no translation in ``spread_deletions``.
DELETION_STRIDE, DELETION_OFFSET = 97, 5


def word_vector(word: str, dim: int) -> np.ndarray:
    """A random vector seeded by the word: the same word gives the same vector in every test and run."""
    seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dim)


def covers(beads, n: int, m: int) -> bool:
    """Whether ``beads`` use every source and target sentence once, in order."""
    return [i for b in beads for i in b.src] == list(range(n)) and [j for b in beads for j in b.tgt] == list(range(m))


def spread_deletions(
    n: int, sentence: Callable[[int], str], target: Callable[[int], str]
) -> tuple[list[str], list[str], set[int]]:
    """``n`` source sentences, their targets less about one in a hundred, and the source indexes left untranslated."""
    deleted = {k for k in range(n) if k % DELETION_STRIDE == DELETION_OFFSET}
    return [sentence(k) for k in range(n)], [target(k) for k in range(n) if k not in deleted], deleted
