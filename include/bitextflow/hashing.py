"""Content digests of files (release manifests, model stamps and dictionary manifests share one reader), and the set
of 64-bit hashes the run-level tasks keep of every pair, sentence or document of a run."""

import hashlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray


def tree_sha256(folder: Path, exclude: frozenset[str] = frozenset()) -> str:
    """One digest over every file's relative path and bytes, in path order (files named in ``exclude`` left out)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name not in exclude):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(bytes.fromhex(file_sha256(path)))
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks so large corpora and models need no memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class SeenHashes:
    """64-bit hashes seen so far, in sorted NumPy runs: 8 bytes a hash, where a Python set of ints takes about 70.

    What a run-level task (the pair gate, the release) remembers of every item of the run, so that its memory grows
    as slowly as it can with the run. Runs merge as in a log-structured merge tree (a run merges into the one
    before it while that one is at most twice its size), so ``n`` hashes added in chunks cost ``O(n log n)`` in all
    and a lookup searches ``O(log n)`` runs.
    """

    def __init__(self) -> None:
        self._runs: list[NDArray[np.uint64]] = []

    def __len__(self) -> int:
        return sum(len(run) for run in self._runs)

    def add(self, hashes: Iterable[int]) -> NDArray[np.bool_]:
        """Adds ``hashes`` (each in ``0 .. 2**64 - 1``); for each, in order, whether it is new: neither added before
        nor earlier in ``hashes``."""
        values = np.fromiter(hashes, dtype=np.uint64)
        unique, first_index = np.unique(values, return_index=True)
        known = np.zeros(len(unique), dtype=bool)
        for run in self._runs:
            known |= run[np.searchsorted(run, unique).clip(max=len(run) - 1)] == unique
        new = np.zeros(len(values), dtype=bool)
        new[first_index[~known]] = True
        self._push(unique[~known])
        return new

    def _push(self, run: NDArray[np.uint64]) -> None:
        if not len(run):
            return
        self._runs.append(run)
        while len(self._runs) > 1 and len(self._runs[-2]) <= 2 * len(self._runs[-1]):
            newer, older = self._runs.pop(), self._runs.pop()
            merged = np.concatenate([older, newer])
            merged.sort(kind="mergesort")  # two sorted runs, no value in both
            self._runs.append(merged)
