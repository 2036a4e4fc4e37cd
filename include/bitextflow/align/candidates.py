"""Candidate document pairs without an all-pairs blow-up: blocking by web site, top-k by similarity.

Shared by the content and structure methods of document alignment (:mod:`bitextflow.align.combined`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence

import numpy as np
from scipy import sparse

from bitextflow.records import Document
from bitextflow.text.urls import site_key

#: Similarity cells computed at once (rows of side a x all of side b): bounds memory, not the result.
CHUNK_CELLS = 4_000_000


def by_site(docs_a: Sequence[Document], docs_b: Sequence[Document]) -> Iterator[tuple[str, list[Document], list[Document]]]:
    """Each site that has documents on both sides, with its documents of each side, sorted by site."""
    sites_a: defaultdict[str, list[Document]] = defaultdict(list)
    sites_b: defaultdict[str, list[Document]] = defaultdict(list)
    for document in docs_a:
        sites_a[site_key(document.url)].append(document)
    for document in docs_b:
        sites_b[site_key(document.url)].append(document)
    for site in sorted(sites_a.keys() & sites_b.keys()):
        yield site, sites_a[site], sites_b[site]


def text_length(document: Document) -> int:
    """Characters of the document's title and main paragraphs."""
    return sum(len(text) for _type, text in document.content_paragraphs)


def top_k_similar(
    vectors_a: np.ndarray | sparse.spmatrix, vectors_b: np.ndarray | sparse.spmatrix, k: int, min_score: float
) -> Iterator[tuple[int, int, float]]:
    """``(row of a, row of b, dot product)`` for the ``k`` best rows of b of every row of a, at least ``min_score``.

    Rows are L2-normalised by the caller, so the dot product is the cosine. Side a is taken in chunks
    of ``CHUNK_CELLS / len(b)`` rows: memory stays bounded whatever the site's size, and time is the
    matrix product's (sparse for TF-IDF), never a Python loop over pairs.
    """
    rows_a, rows_b = vectors_a.shape[0], vectors_b.shape[0]
    if rows_a == 0 or rows_b == 0 or k <= 0:
        return
    k = min(k, rows_b)
    step = max(1, CHUNK_CELLS // rows_b)
    for start in range(0, rows_a, step):
        block = vectors_a[start : start + step] @ vectors_b.T
        scores = np.asarray(block.toarray() if sparse.issparse(block) else block, dtype=np.float64)
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for offset, row in enumerate(best):
            for column in row:
                score = float(scores[offset, column])
                if score >= min_score:
                    yield start + offset, int(column), score
